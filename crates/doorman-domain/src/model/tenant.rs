//! Tenants and the agent each one has behind Doorman.

use std::fmt;

use uuid::Uuid;

use crate::errors::ValidationError;

/// A tenant's identity: the key of every row-level-security policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(Uuid);

impl TenantId {
    pub const fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }

    /// A fresh random id, for a tenant being created.
    pub fn generate() -> Self {
        Self(Uuid::new_v4())
    }

    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl std::str::FromStr for TenantId {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self).map_err(|_| ValidationError::new("tenant id", "is not a UUID"))
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A tenant's display name: 1 to 200 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantName(String);

impl TenantName {
    pub const MAX_CHARS: usize = 200;

    pub fn new(name: impl Into<String>) -> Result<Self, ValidationError> {
        let name = name.into();
        let name = name.trim();
        if name.is_empty() {
            return Err(ValidationError::new("tenant name", "is empty"));
        }
        if name.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new("tenant name", "is longer than 200 characters"));
        }
        if name.chars().any(char::is_control) {
            return Err(ValidationError::new("tenant name", "contains a control character"));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The secret an agent uses to verify Doorman's dispatches.
///
/// It never prints: `Debug` and `Display` show a placeholder, so the secret cannot reach a
/// log line, an error message or a panic by accident. Read it with [`AgentSecret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct AgentSecret(String);

impl AgentSecret {
    pub fn new(secret: impl Into<String>) -> Result<Self, ValidationError> {
        let secret = secret.into();
        if secret.is_empty() {
            return Err(ValidationError::new("agent secret", "is empty"));
        }
        Ok(Self(secret))
    }

    /// The secret itself, for the one place that signs with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AgentSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AgentSecret(<redacted>)")
    }
}

/// Where and how to reach a tenant's agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEndpoint {
    /// The agent's URL, as the operator configured it (the bridge adapter validates it).
    pub url: String,
    pub secret: AgentSecret,
    /// An operator paused the bridge: deliveries are answered 503 so Slack retries later.
    pub paused: bool,
}

/// A tenant as the inbound path sees it: who it is and where its agent is, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub agent: Option<AgentEndpoint>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_secret_never_prints() {
        let secret = AgentSecret::new("whsec_c2VjcmV0").unwrap();
        assert!(!format!("{secret:?}").contains("c2VjcmV0"));
        let endpoint = AgentEndpoint { url: "http://agent".into(), secret, paused: false };
        assert!(!format!("{endpoint:?}").contains("c2VjcmV0"));
    }

    #[test]
    fn a_tenant_name_is_trimmed_bounded_and_printable() {
        assert_eq!(TenantName::new("  Acme ").unwrap().as_str(), "Acme");
        assert!(TenantName::new("   ").is_err());
        assert!(TenantName::new("é".repeat(200)).is_ok());
        assert!(TenantName::new("é".repeat(201)).is_err());
        assert!(TenantName::new("a\nb").is_err());
    }

    #[test]
    fn a_tenant_id_parses_only_from_a_uuid() {
        let id = TenantId::generate();
        assert_eq!(id.to_string().parse::<TenantId>().unwrap(), id);
        assert!("not-a-uuid".parse::<TenantId>().is_err());
    }
}
