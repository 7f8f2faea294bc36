//! Which workspace (installation) a delivery belongs to.

use std::fmt;

use super::ValidationError;
use super::text::check_label;

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

/// What a delivery says of the installation it is for, and what a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The app installed on the enterprise (an org-wide install): named by the enterprise alone.
    OrgWide,
    /// The app installed on one team (perhaps a team inside an enterprise).
    Team,
    /// A delivery that does not say which (`is_enterprise_install` absent): it names a team,
    /// and perhaps the enterprise the team is in. Only deliveries are unstated; a link never is.
    Unstated,
}

impl Scope {
    /// The word the SQL functions take (`doorman_resolve_workspace`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::OrgWide => "org_wide",
            Scope::Team => "team",
            Scope::Unstated => "unstated",
        }
    }
}

/// The installation a delivery is for, or the workspace a link names: a team, an enterprise
/// (an org-wide install has no team), or both (a team inside an enterprise grid).
///
/// The constructors hold the *org-wide rule*: an org-wide install is named by its enterprise
/// alone, so the team id a platform sends with it (where something happened, not who installed
/// the app) is dropped. Slack parsing, the OAuth grant, storage and both operator faces all
/// build references through them. At least one id is always present.
///
/// Which link a delivery goes to (decision 20; `doorman_resolve_workspace` is the one place it
/// is applied): one that says it is for an org-wide install, to the enterprise's org-wide link
/// only; one that says it is for a team's install, to the team's link, else to the org-wide
/// link of its enterprise; an unstated one, to the org-wide link of the enterprise it names
/// first, then to the team's link. And a link is refused when it would take deliveries another
/// tenant's link receives (`doorman_link_taken`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkspaceRef {
    team_id: Option<WorkspaceId>,
    enterprise_id: Option<WorkspaceId>,
    scope: Scope,
}

impl WorkspaceRef {
    /// A link or an installation: org-wide or a team's. `org_wide` claimed without an
    /// enterprise id is read as a plain team install: there is no enterprise to name it by.
    pub fn new(
        team_id: Option<WorkspaceId>,
        enterprise_id: Option<WorkspaceId>,
        org_wide: bool,
    ) -> Result<Self, ValidationError> {
        let org_wide = org_wide && enterprise_id.is_some();
        let team_id = if org_wide { None } else { team_id };
        if team_id.is_none() && enterprise_id.is_none() {
            return Err(ValidationError::new("workspace", "has neither a team nor an enterprise id"));
        }
        let scope = if org_wide || team_id.is_none() { Scope::OrgWide } else { Scope::Team };
        Ok(Self { team_id, enterprise_id, scope })
    }

    /// As a delivery names its installation: `org_wide` is what it says, or `None` when it does
    /// not say. A delivery naming only an enterprise can only be an org-wide install's.
    pub fn delivered(
        team_id: Option<WorkspaceId>,
        enterprise_id: Option<WorkspaceId>,
        org_wide: Option<bool>,
    ) -> Result<Self, ValidationError> {
        match org_wide {
            Some(org_wide) => Self::new(team_id, enterprise_id, org_wide),
            None if team_id.is_none() => Self::new(team_id, enterprise_id, true),
            None => Ok(Self { team_id, enterprise_id, scope: Scope::Unstated }),
        }
    }

    /// As an operator names a workspace: a team (optionally inside an enterprise), or an
    /// enterprise alone for an org-wide install.
    pub fn operator(
        team_id: Option<WorkspaceId>,
        enterprise_id: Option<WorkspaceId>,
    ) -> Result<Self, ValidationError> {
        let org_wide = team_id.is_none();
        Self::new(team_id, enterprise_id, org_wide)
    }

    /// Whether `id` names this workspace the way an operator refers to a link: its team id,
    /// or, for an org-wide install, its enterprise id.
    pub fn is_named_by(&self, id: &WorkspaceId) -> bool {
        self.name() == Some(id)
    }

    /// The id an operator refers to the link by: its team id, or, for an org-wide install,
    /// its enterprise id.
    pub fn name(&self) -> Option<&WorkspaceId> {
        self.team_id.as_ref().or(self.enterprise_id.as_ref())
    }

    /// A single workspace (team) install.
    pub fn team(team_id: WorkspaceId) -> Self {
        Self { team_id: Some(team_id), enterprise_id: None, scope: Scope::Team }
    }

    pub fn team_id(&self) -> Option<&WorkspaceId> {
        self.team_id.as_ref()
    }

    pub fn enterprise_id(&self) -> Option<&WorkspaceId> {
        self.enterprise_id.as_ref()
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// True for an org-wide install: the app was installed on the enterprise, and the
    /// enterprise id (not a team id) is what names the installation.
    pub fn is_enterprise_install(&self) -> bool {
        self.scope == Scope::OrgWide
    }

    /// The same workspace as a link names it: an unstated delivery's team (and enterprise).
    pub fn as_link(&self) -> Self {
        Self { scope: if self.scope == Scope::Unstated { Scope::Team } else { self.scope }, ..self.clone() }
    }
}

impl fmt::Display for WorkspaceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.team_id, &self.enterprise_id) {
            (Some(t), Some(e)) => write!(f, "{t}@{e}")?,
            (Some(t), None) => write!(f, "{t}")?,
            (None, Some(e)) => write!(f, "{e} (org-wide)")?,
            // The constructors refuse this; printing something beats panicking in a log line.
            (None, None) => f.write_str("(no workspace)")?,
        }
        if self.scope == Scope::Unstated {
            f.write_str(" (install not stated)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> WorkspaceId {
        WorkspaceId::new(s).unwrap()
    }

    #[test]
    fn a_workspace_prints_as_team_team_at_enterprise_or_org_wide() {
        let print = |team: Option<&str>, enterprise: Option<&str>, org_wide| {
            WorkspaceRef::new(team.map(id), enterprise.map(id), org_wide).unwrap().to_string()
        };
        assert_eq!(print(Some("T1"), None, false), "T1");
        assert_eq!(print(Some("T1"), Some("E1"), false), "T1@E1");
        assert_eq!(print(Some("T1"), Some("E1"), true), "E1 (org-wide)");
    }

    #[test]
    fn a_workspace_needs_a_team_or_an_enterprise() {
        assert!(WorkspaceRef::new(None, None, false).is_err());
        assert!(WorkspaceRef::new(Some(id("T1")), None, false).is_ok());
        assert!(WorkspaceRef::new(None, Some(id("E1")), true).is_ok());
    }

    #[test]
    fn an_org_wide_install_is_named_by_its_enterprise_alone() {
        let org = WorkspaceRef::new(Some(id("T1")), Some(id("E1")), true).unwrap();
        assert_eq!(org.team_id(), None, "the team is where it happened, not who installed");
        assert!(org.is_enterprise_install());
        assert!(org.is_named_by(&id("E1")) && !org.is_named_by(&id("T1")));
        // Claimed org-wide without an enterprise: read as a plain team.
        let team = WorkspaceRef::new(Some(id("T1")), None, true).unwrap();
        assert_eq!(team.team_id(), Some(&id("T1")));
        assert!(!team.is_enterprise_install());
    }

    #[test]
    fn an_operator_names_an_org_wide_install_by_its_enterprise_alone() {
        let org = WorkspaceRef::operator(None, Some(id("E1"))).unwrap();
        assert!(org.is_enterprise_install());
        let in_grid = WorkspaceRef::operator(Some(id("T1")), Some(id("E1"))).unwrap();
        assert!(!in_grid.is_enterprise_install());
        assert!(in_grid.is_named_by(&id("T1")) && !in_grid.is_named_by(&id("E1")));
        assert!(WorkspaceRef::operator(None, None).is_err());
    }

    #[test]
    fn a_delivery_that_does_not_say_which_install_it_is_for_is_unstated() {
        let unstated = WorkspaceRef::delivered(Some(id("T1")), Some(id("E1")), None).unwrap();
        assert_eq!(unstated.scope(), Scope::Unstated);
        assert_eq!((unstated.team_id(), unstated.enterprise_id()), (Some(&id("T1")), Some(&id("E1"))));
        assert!(!unstated.is_enterprise_install());
        assert_eq!(unstated.to_string(), "T1@E1 (install not stated)");
        assert_eq!(unstated.as_link(), WorkspaceRef::new(Some(id("T1")), Some(id("E1")), false).unwrap());
        let said =
            |flag| WorkspaceRef::delivered(Some(id("T1")), Some(id("E1")), Some(flag)).unwrap().scope();
        assert_eq!((said(true), said(false)), (Scope::OrgWide, Scope::Team));
        let enterprise_only = WorkspaceRef::delivered(None, Some(id("E1")), None).unwrap();
        assert_eq!(
            enterprise_only.scope(),
            Scope::OrgWide,
            "only an org-wide install is named by its enterprise alone"
        );
        assert!(WorkspaceRef::delivered(None, None, None).is_err());
        assert_eq!(Scope::Unstated.as_str(), "unstated");
    }

    #[test]
    fn workspace_ids_are_bounded_and_free_of_controls() {
        assert!(WorkspaceId::new("").is_err());
        assert!(WorkspaceId::new("T\u{0}").is_err());
        assert!(WorkspaceId::new("x".repeat(256)).is_err());
    }
}
