//! Shared checks for the short identifiers and labels that arrive from a platform.

use super::ValidationError;

/// The most bytes any identifier or label may have. Generous for Slack (its ids are about
/// a dozen characters) and small enough that nothing hostile is stored or logged at length.
pub const MAX_LEN: usize = 255;

/// Non-empty, at most [`MAX_LEN`] bytes, no control characters. Unicode is allowed: these
/// values are stored and compared verbatim, never interpreted.
pub fn check_label(what: &'static str, value: &str) -> Result<(), ValidationError> {
    check_len(what, value)?;
    if value.chars().any(char::is_control) {
        return Err(ValidationError::new(what, "contains a control character"));
    }
    Ok(())
}

/// Non-empty, at most [`MAX_LEN`] bytes, printable ASCII only (space to tilde).
pub fn check_printable_ascii(what: &'static str, value: &str) -> Result<(), ValidationError> {
    check_len(what, value)?;
    if !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(ValidationError::new(what, "must be printable ASCII"));
    }
    Ok(())
}

fn check_len(what: &'static str, value: &str) -> Result<(), ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::new(what, "is empty"));
    }
    if value.len() > MAX_LEN {
        return Err(ValidationError::new(what, "is longer than 255 bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_of_exactly_the_limit_is_accepted_and_one_more_byte_is_not() {
        assert!(check_label("x", &"a".repeat(MAX_LEN)).is_ok());
        assert!(check_label("x", &"a".repeat(MAX_LEN + 1)).is_err());
    }

    #[test]
    fn labels_allow_unicode_but_not_control_characters() {
        assert!(check_label("x", "café").is_ok());
        assert!(check_label("x", "a\nb").is_err());
        assert!(check_label("x", "").is_err());
    }

    #[test]
    fn printable_ascii_rejects_unicode_and_controls() {
        assert!(check_printable_ascii("x", "Ev0PV52K25").is_ok());
        assert!(check_printable_ascii("x", "Ev é").is_err());
        assert!(check_printable_ascii("x", "Ev\t1").is_err());
    }
}
