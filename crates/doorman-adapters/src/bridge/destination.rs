//! Where dispatches may go: no server-side request forgery through an agent URL.
//!
//! By default an agent must be reached over `https` at a public address. The check runs on the
//! addresses actually connected to, after DNS (the dispatch client connects only to public
//! ones, [`super::client`]), so a name that resolves to a private address is refused as surely
//! as a private address written in the URL. `DOORMAN_AGENT_ALLOW_PRIVATE=true` lifts both rules
//! for local development and tests. Redirects are never followed, and no proxy is used.

use std::error::Error;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use doorman_domain::AgentUrl;

/// Why a destination is refused. Says what, never the URL (which may carry a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAllowed(pub &'static str);

impl fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Error for NotAllowed {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DestinationPolicy {
    /// Allow `http` and private, loopback and link-local destinations.
    pub allow_private: bool,
}

impl DestinationPolicy {
    /// What can be told from the URL alone: the scheme, and an address written in it.
    pub fn check_url(&self, url: &AgentUrl) -> Result<(), NotAllowed> {
        if self.allow_private {
            return Ok(());
        }
        if url.as_url().scheme() != "https" {
            return Err(NotAllowed("an agent URL must be https (DOORMAN_AGENT_ALLOW_PRIVATE allows http)"));
        }
        match url.as_url().host() {
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip)),
            _ => Ok(()),
        }
    }

    pub fn check_ip(&self, ip: IpAddr) -> Result<(), NotAllowed> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(NotAllowed("the agent's address is not public (DOORMAN_AGENT_ALLOW_PRIVATE allows it)"))
        }
    }

    /// The URL's rules, then every address its host resolves to now: what an operator's
    /// command checks before storing a URL.
    pub async fn check_resolved(&self, url: &AgentUrl) -> Result<(), NotAllowed> {
        self.check_url(url)?;
        if self.allow_private {
            return Ok(());
        }
        let (Some(host), Some(port)) = (url.as_url().host_str(), url.as_url().port_or_known_default()) else {
            return Err(NotAllowed("the agent URL has no host"));
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|_| NotAllowed("the agent's host name does not resolve"))?
            .collect();
        if addrs.is_empty() {
            return Err(NotAllowed("the agent's host name does not resolve"));
        }
        addrs.iter().try_for_each(|a| self.check_ip(a.ip()))
    }
}

/// The operator's use cases ask the same question before storing an agent.
impl doorman_domain::ports::Destinations for DestinationPolicy {
    async fn check(&self, url: &AgentUrl) -> Result<(), String> {
        self.check_resolved(url).await.map_err(|refused| refused.to_string())
    }
}

/// Globally routable: not private, loopback, link-local, shared (CGNAT), unspecified,
/// broadcast, multicast, documentation or reserved space; IPv4 inside IPv6 is judged as IPv4.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x0064 && segments[1] == 0xff9b) // NAT64 (and 64:ff9b:1::/48): an IPv4 address behind it
        // Transition mechanisms that carry an IPv4 address (any, private included) to a relay:
        || segments[0] == 0x2002 // 6to4
        || (segments[0] == 0x2001 && segments[1] == 0x0000) // Teredo
        || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0]) // discard-only
        || (segments[0] == 0x2001 && (segments[1] & 0xffe0) == 0x0020) // ORCHIDv2
        || (segments[0] == 0x2001 && (segments[1] & 0xfff0) == 0x0010) // ORCHID (deprecated)
        || ip.to_ipv4().is_some_and(|v4| !is_public_v4(v4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_not_public() {
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "2001:20::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn by_default_only_https_to_a_public_address_is_allowed() {
        let strict = DestinationPolicy::default();
        let url = |u: &str| AgentUrl::parse(u).unwrap();
        assert!(strict.check_url(&url("https://agent.example/slack")).is_ok());
        assert!(strict.check_url(&url("http://agent.example/slack")).is_err());
        assert!(strict.check_url(&url("https://169.254.169.254/latest/meta-data")).is_err());
        assert!(strict.check_url(&url("https://[::1]:8443/x")).is_err());
        let open = DestinationPolicy { allow_private: true };
        assert!(open.check_url(&url("http://127.0.0.1:9/x")).is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_before_anything_is_stored() {
        let strict = DestinationPolicy::default();
        let error =
            strict.check_resolved(&AgentUrl::parse("https://localhost:8443/x").unwrap()).await.unwrap_err();
        assert!(error.0.contains("not public"), "{error}");
    }
}
