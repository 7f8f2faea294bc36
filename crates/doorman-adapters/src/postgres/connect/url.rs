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
}
