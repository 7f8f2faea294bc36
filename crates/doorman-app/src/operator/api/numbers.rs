//! Whole numbers in request bodies. JSON Schema counts `4395.0` as the integer 4395, and so do
//! clients that keep every number as a float; serde would refuse it. These take it, and refuse
//! a fractional, negative or out-of-range number as a wrong type (400).

use serde::Deserialize;
use serde::de::{Deserializer, Error};

/// An optional whole number of seconds (`null` or absent: `None`).
pub fn optional_whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else { return Ok(None) };
    if let Some(whole) = number.as_u64() {
        return Ok(Some(whole));
    }
    match number.as_f64() {
        Some(f) if f.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&f) => Ok(Some(f as u64)),
        _ => Err(D::Error::custom("expected a whole number")),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "super::optional_whole")]
        n: Option<u64>,
    }

    fn n(json: &str) -> Result<Option<u64>, serde_json::Error> {
        serde_json::from_str::<Body>(json).map(|b| b.n)
    }

    #[test]
    fn a_whole_number_is_taken_however_it_is_written_and_nothing_else() {
        assert_eq!(n(r#"{"n": 4395}"#).unwrap(), Some(4395));
        assert_eq!(n(r#"{"n": 4395.0}"#).unwrap(), Some(4395));
        assert_eq!(n(r#"{"n": 4.395e3}"#).unwrap(), Some(4395));
        assert_eq!(n(r#"{"n": null}"#).unwrap(), None);
        assert_eq!(n("{}").unwrap(), None);
        for refused in [r#"{"n": 4395.5}"#, r#"{"n": -1}"#, r#"{"n": "60"}"#, r#"{"n": 1e300}"#] {
            assert!(n(refused).is_err(), "{refused}");
        }
    }
}
