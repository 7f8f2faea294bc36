//! The URL's TLS parameters, which tokio-postgres does not read as libpq does, taken out of it.

use super::TlsSettingError;

/// `sslmode` and `sslrootcert` taken out of the URL's query; the URL without them.
pub(super) fn take_tls_parameters(
    url: &str,
) -> Result<(String, Option<String>, Option<String>), TlsSettingError> {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), None, None)) };
    let (mut mode, mut roots, mut kept) = (None, None, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        match name {
            "sslmode" => mode = Some(value),
            "sslrootcert" => roots = Some(value),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((rest, mode, roots))
}

/// `url` with its host (or hosts: a URL may name several) replaced by `host:port`, everything
/// else kept: the login, the database, the parameters (but `host`, `hostaddr` and `port`). A Citus worker is reached as the
/// coordinator is, at the address the cluster's metadata gives it (`pg_dist_node`).
pub(crate) fn on_host(url: &str, host: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let login = authority.rsplit_once('@').map(|(login, _)| format!("{login}@")).unwrap_or_default();
    // An IPv6 address is written in brackets in a URL.
    let host =
        if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_owned() };
    // Parameters that name a server would send the connection elsewhere.
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            !matches!(pair.split_once('=').map_or(*pair, |(name, _)| name), "host" | "hostaddr" | "port")
        })
        .collect();
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    format!("{scheme}://{login}{host}:{port}{path}{query}")
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1..i + 3)) {
            (b'%', Some(hex))
                if std::str::from_utf8(hex).ok().and_then(|h| u8::from_str_radix(h, 16).ok()).is_some() =>
            {
                out.push(u8::from_str_radix(std::str::from_utf8(hex).unwrap_or("00"), 16).unwrap_or(0));
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, mode, roots) =
            take_tls_parameters("postgres://u@h1:5432,h2/db?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=%2Ftmp%2Fca.pem")
                .unwrap();
        assert_eq!(rest, "postgres://u@h1:5432,h2/db?target_session_attrs=read-write");
        assert_eq!((mode.as_deref(), roots.as_deref()), (Some("verify-full"), Some("/tmp/ca.pem")));
        assert_eq!(take_tls_parameters("postgres://u@h/db").unwrap().0, "postgres://u@h/db");
    }

    #[test]
    fn a_worker_is_reached_with_the_coordinators_login_database_and_parameters() {
        assert_eq!(
            on_host(
                "postgres://app:s%40cret@h1:5432,h2:5433/doorman?sslmode=verify-full&target_session_attrs=read-write",
                "w1.internal",
                6432
            ),
            "postgres://app:s%40cret@w1.internal:6432/doorman?sslmode=verify-full&target_session_attrs=read-write"
        );
        assert_eq!(on_host("postgresql://h/db", "10.0.0.7", 5432), "postgresql://10.0.0.7:5432/db");
        assert_eq!(on_host("postgres://u@h", "::1", 5461), "postgres://u@[::1]:5461");
        assert_eq!(on_host("postgres://u@h?sslmode=require", "w", 1), "postgres://u@w:1?sslmode=require");
        assert_eq!(
            on_host(
                "postgres://u@/db?host=/run/postgresql&port=5433&hostaddr=10.0.0.1&sslmode=disable",
                "w",
                1
            ),
            "postgres://u@w:1/db?sslmode=disable",
            "parameters naming a server are the coordinator's, not the node's"
        );
    }
}
