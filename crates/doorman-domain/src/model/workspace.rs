//! Which workspace (installation) a delivery belongs to.

use std::fmt;

use super::text::check_label;
use crate::errors::ValidationError;

/// A team or enterprise id as the platform spells it (`T0123ABCD`, `E0123ABCD`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceId(String);

impl WorkspaceId {
    pub fn new(id: impl Into<String>) -> Result<Self, ValidationError> {
        let id = id.into();
        check_label("workspace id", &id)?;
        Ok(Self(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The installation a delivery is for: a team (workspace), an enterprise (an org-wide
/// install has no team), or both (a team inside an enterprise grid).
///
/// At least one id is always present; the constructor refuses a reference to nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkspaceRef {
    team_id: Option<WorkspaceId>,
    enterprise_id: Option<WorkspaceId>,
    enterprise_install: bool,
}

impl WorkspaceRef {
    pub fn new(
        team_id: Option<WorkspaceId>,
        enterprise_id: Option<WorkspaceId>,
        enterprise_install: bool,
    ) -> Result<Self, ValidationError> {
        if team_id.is_none() && enterprise_id.is_none() {
            return Err(ValidationError::new("workspace", "has neither a team nor an enterprise id"));
        }
        if enterprise_install && enterprise_id.is_none() {
            return Err(ValidationError::new(
                "workspace",
                "is an enterprise install without an enterprise id",
            ));
        }
        Ok(Self { team_id, enterprise_id, enterprise_install })
    }

    /// A single workspace (team) install.
    pub fn team(team_id: WorkspaceId) -> Self {
        Self { team_id: Some(team_id), enterprise_id: None, enterprise_install: false }
    }

    pub fn team_id(&self) -> Option<&WorkspaceId> {
        self.team_id.as_ref()
    }

    pub fn enterprise_id(&self) -> Option<&WorkspaceId> {
        self.enterprise_id.as_ref()
    }

    /// True for an org-wide install: the app was installed on the enterprise, and the
    /// enterprise id (not a team id) is what names the installation.
    pub fn is_enterprise_install(&self) -> bool {
        self.enterprise_install
    }
}

impl fmt::Display for WorkspaceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.team_id, &self.enterprise_id) {
            (Some(t), Some(e)) => write!(f, "{t}@{e}"),
            (Some(t), None) => write!(f, "{t}"),
            (None, Some(e)) => write!(f, "{e} (org-wide)"),
            // The constructor refuses this; printing something beats panicking in a log line.
            (None, None) => f.write_str("(no workspace)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> WorkspaceId {
        WorkspaceId::new(s).unwrap()
    }

    #[test]
    fn a_workspace_needs_a_team_or_an_enterprise() {
        assert!(WorkspaceRef::new(None, None, false).is_err());
        assert!(WorkspaceRef::new(Some(id("T1")), None, false).is_ok());
        assert!(WorkspaceRef::new(None, Some(id("E1")), true).is_ok());
    }

    #[test]
    fn an_enterprise_install_needs_the_enterprise_id() {
        assert!(WorkspaceRef::new(Some(id("T1")), None, true).is_err());
    }

    #[test]
    fn workspace_ids_are_bounded_and_free_of_controls() {
        assert!(WorkspaceId::new("").is_err());
        assert!(WorkspaceId::new("T\u{0}").is_err());
        assert!(WorkspaceId::new("x".repeat(256)).is_err());
    }
}
