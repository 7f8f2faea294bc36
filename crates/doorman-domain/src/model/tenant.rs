//! Tenants and the agent each one has behind Doorman.

use std::fmt;

use super::ValidationError;

super::ids::uuid_id!(
    /// A tenant's identity: the key of every row-level-security policy.
    TenantId,
    "tenant id"
);

/// A tenant's display name: 1 to 200 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantName(String);

impl TenantName {
    pub const MAX_CHARS: usize = 200;

    pub fn new(name: impl Into<String>) -> Result<Self, ValidationError> {
        let name = name.into();
        // As given, before trimming: what the API's schema bounds (`maxLength` counts it all).
        if name.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new("tenant name", "is longer than 200 characters"));
        }
        // As given, before trimming: a newline or tab at either end is a control character too.
        if name.chars().any(char::is_control) {
            return Err(ValidationError::new("tenant name", "contains a control character"));
        }
        let name = name.trim();
        if name.is_empty() {
            return Err(ValidationError::new("tenant name", "is empty"));
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

/// Where a tenant's agent listens: an absolute `http` or `https` URL with a host.
///
/// Parsed once, where it enters (the operator's command, the directory reading a row), so the
/// bridge never re-parses it and a bad stored value is refused before anything is claimed.
/// Whether `http` and private addresses are allowed is the bridge's policy, not this type's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentUrl(url::Url);

impl AgentUrl {
    /// The longest URL an operator may give.
    pub const MAX_LEN: usize = 2048;

    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let url =
            url::Url::parse(raw.trim()).map_err(|_| ValidationError::new("agent URL", "is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ValidationError::new("agent URL", "must be http or https"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(ValidationError::new("agent URL", "has no host"));
        }
        Ok(Self(url))
    }

    /// An operator's input (the command line, the admin API): besides [`AgentUrl::parse`], no
    /// whitespace or control character anywhere (a URL parser would quietly strip or encode
    /// them), no credentials (the agent's secret is its own setting, and a URL is logged), and
    /// a host that is an IP address or a DNS name (letters, digits and hyphens between dots).
    /// What is stored keeps being read with [`AgentUrl::parse`].
    pub fn from_operator(raw: &str) -> Result<Self, ValidationError> {
        if raw.chars().count() > Self::MAX_LEN {
            return Err(ValidationError::new("agent URL", "is longer than 2,048 characters"));
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ValidationError::new("agent URL", "must not contain spaces or control characters"));
        }
        let url = Self::parse(raw)?;
        if !url.0.username().is_empty() || url.0.password().is_some() {
            return Err(ValidationError::new(
                "agent URL",
                "must not carry credentials (the agent's secret is `signing_secret`)",
            ));
        }
        if let Some(url::Host::Domain(name)) = url.0.host() {
            let label_ok = |label: &str| {
                (1..=63).contains(&label.len())
                    && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            };
            if !name.split('.').all(label_ok) {
                return Err(ValidationError::new(
                    "agent URL",
                    "its host must be an IP address or a DNS name (letters, digits and hyphens between dots)",
                ));
            }
        }
        Ok(url)
    }

    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The URL as operators see it (the API, the console, the audit trail, the command line):
    /// the whole address dispatches go to, its query included (`…/agent?tenant=globex&v=2`:
    /// an address, not a secret; the agent's secret is its own setting), but never a user or
    /// password, which [`AgentUrl::from_operator`] refuses and a URL stored before that rule
    /// may still carry.
    pub fn shown(&self) -> String {
        let mut url = self.0.clone();
        // Both only fail for a URL that cannot have credentials, which then has none to drop.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.to_string()
    }
}

/// The key an agent uses to verify Doorman's dispatches: `whsec_` followed by base64 of at
/// least 16 bytes, as Standard Webhooks spells it (it recommends 24 to 64).
///
/// It never prints: `Debug` shows a placeholder and errors never quote it, so the secret
/// cannot reach a log line, an error message or a panic by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentSecret(Vec<u8>);

impl AgentSecret {
    const PREFIX: &'static str = "whsec_";
    const MIN_BYTES: usize = 16;

    pub fn parse(secret: &str) -> Result<Self, ValidationError> {
        use base64::Engine;
        let encoded = secret
            .trim()
            .strip_prefix(Self::PREFIX)
            .ok_or(ValidationError::new("agent secret", "must start with `whsec_`"))?;
        // Padding optional and unused trailing bits allowed, as the Standard Webhooks libraries
        // decode it: a secret one of them accepts is accepted here.
        let lenient = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_allow_trailing_bits(true)
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let bytes = lenient
            .decode(encoded)
            .map_err(|_| ValidationError::new("agent secret", "must be `whsec_` followed by base64"))?;
        if bytes.len() < Self::MIN_BYTES {
            return Err(ValidationError::new("agent secret", "must decode to at least 16 bytes"));
        }
        Ok(Self(bytes))
    }

    /// The key's bytes, for the one place that signs with them.
    pub fn expose_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The `whsec_…` form, for the one place that stores it.
    pub fn expose_whsec(&self) -> String {
        use base64::Engine;
        format!("{}{}", Self::PREFIX, base64::engine::general_purpose::STANDARD.encode(&self.0))
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
    pub url: AgentUrl,
    pub secret: AgentSecret,
    /// An operator paused the bridge: deliveries are answered 503 so Slack retries later.
    pub paused: bool,
}

/// A tenant's agent, as the directory found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    /// No agent has been set: nothing can be delivered.
    NotSet,
    /// An agent is stored but its URL or secret does not convert (changed by hand, or under
    /// older rules). Deliveries are refused before anything is claimed.
    Unusable(ValidationError),
    Ready(AgentEndpoint),
}

/// A tenant as the inbound path sees it: who it is and where its agent is, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub agent: Agent,
    /// The app's installation in the workspace resolved, if it was installed (not just linked).
    pub installation: Option<super::Installation>,
    /// The tenant keeps the payloads of its claimed events until they are handled, so an
    /// operator can replay them (`doorman tenant retain-payloads`; off by default).
    pub retain_payloads: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn an_agent_secret_never_prints_and_round_trips() {
        let secret = AgentSecret::parse(SECRET).unwrap();
        assert_eq!(secret.expose_whsec(), SECRET);
        assert_eq!(secret.expose_bytes().len(), 24);
        assert_eq!(secret.expose_bytes()[..3], [0x31, 0xf2, 0x90]);
        assert_eq!(format!("{secret:?}"), "AgentSecret(<redacted>)");
        let endpoint = AgentEndpoint { url: AgentUrl::parse("http://agent").unwrap(), secret, paused: false };
        assert!(!format!("{endpoint:?}").contains("MfKQ9r8"));
        assert!(AgentSecret::parse("whsec_MDEyMzQ1Njc4OWFiY2RlZg==").is_ok(), "16 bytes is enough");
    }

    #[test]
    fn malformed_agent_secrets_are_refused_without_echoing_them() {
        for (bad, problem) in [
            ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "must start with `whsec_`"),
            ("whsec_not base64!", "must be `whsec_` followed by base64"),
            ("whsec_c2hvcnQ=", "must decode to at least 16 bytes"),
            ("whsec_MDEyMzQ1Njc4OWFiY2Rl", "must decode to at least 16 bytes"),
        ] {
            let error = AgentSecret::parse(bad).unwrap_err();
            assert_eq!(error.problem, problem, "{bad}");
            assert!(!error.to_string().contains(bad.trim_start_matches("whsec_")), "{error}");
        }
    }

    #[test]
    fn an_agent_url_is_absolute_http_with_a_host_and_is_shown_whole_without_credentials() {
        assert!(AgentUrl::parse("https://agent.example/slack").is_ok());
        for bad in
            ["agent.example/slack", "ftp://agent.example/x", "file:///etc/passwd", "http://", "not a url"]
        {
            assert!(AgentUrl::parse(bad).is_err(), "{bad}");
        }
        let url = AgentUrl::parse("https://user:pw@agent.example:8443/hook?token=t0k").unwrap();
        assert_eq!(url.shown(), "https://agent.example:8443/hook?token=t0k");
        let operators = AgentUrl::from_operator("https://agent.example/agent?tenant=globex&v=2").unwrap();
        assert_eq!(operators.shown(), "https://agent.example/agent?tenant=globex&v=2");
        assert_eq!(
            url.as_str(),
            "https://user:pw@agent.example:8443/hook?token=t0k",
            "what is dispatched to"
        );
    }

    #[test]
    fn a_tenant_name_is_trimmed_bounded_and_printable() {
        assert_eq!(TenantName::new("  Acme ").unwrap().as_str(), "Acme");
        assert_eq!(TenantName::new("Acme Corp").unwrap().to_string(), "Acme Corp");
        assert!(TenantName::new("   ").is_err());
        assert!(TenantName::new("é".repeat(200)).is_ok());
        assert!(TenantName::new("é".repeat(201)).is_err());
        assert!(TenantName::new("a\nb").is_err());
        // A control character where trimming would drop it is still refused, as the API's
        // schema refuses it.
        assert!(TenantName::new("Acme\n").is_err() && TenantName::new("\tAcme").is_err());
    }

    #[test]
    fn a_tenant_id_parses_only_from_a_uuid() {
        let id = TenantId::generate();
        assert_eq!(id.to_string().parse::<TenantId>().unwrap(), id);
        assert!("not-a-uuid".parse::<TenantId>().is_err());
    }
}
