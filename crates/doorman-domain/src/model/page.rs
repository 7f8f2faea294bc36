//! Pages of a listing: at most [`PageLimit::MAX`] items, and an opaque cursor for the next.
//!
//! Listings are keyset-paginated: a cursor is the position of the last item returned (a
//! timestamp and a key), so pages stay correct while rows are added and cost one index range
//! each. To a client a cursor is opaque text (base64url); it decodes only to a position this
//! code wrote, and anything else is refused as a bad value of `cursor`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};

use super::ValidationError;
use super::{ExternalEventId, ReplayJobId, TenantId};

/// How many items one page holds: 1 to 100, 50 unless asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit(u32);

impl PageLimit {
    pub const MAX: u32 = 100;
    pub const DEFAULT: PageLimit = PageLimit(50);

    pub fn new(limit: u32) -> Result<Self, ValidationError> {
        if limit == 0 || limit > Self::MAX {
            return Err(ValidationError::new("limit", "must be between 1 and 100"));
        }
        Ok(Self(limit))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageLimit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Which page to read: the first (no cursor), or the one after a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest<C> {
    pub limit: PageLimit,
    pub after: Option<C>,
}

impl<C> Default for PageRequest<C> {
    /// The first page, of the default size.
    fn default() -> Self {
        Self { limit: PageLimit::DEFAULT, after: None }
    }
}

/// One page, and where the next starts (`None`: this was the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// A page from `items` read with one more than `limit` asked for: the extra one only says
    /// that there is a next page, which starts after the last item kept.
    pub fn from_overfetch(mut items: Vec<T>, limit: PageLimit, position: impl Fn(&T) -> C) -> Self {
        let limit = limit.get() as usize;
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(position)
        } else {
            None
        };
        Self { items, next }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U, C> {
        Page { items: self.items.into_iter().map(f).collect(), next: self.next }
    }
}

/// A position in a listing, written to and read from opaque cursor text.
pub trait Cursor: Sized {
    fn position(&self) -> (DateTime<Utc>, String);
    fn from_position(at: DateTime<Utc>, key: &str) -> Option<Self>;

    fn encode(&self) -> String {
        let (at, key) = self.position();
        URL_SAFE_NO_PAD.encode(format!("{}:{key}", at.timestamp_micros()))
    }

    fn decode(text: &str) -> Result<Self, ValidationError> {
        let refused = || ValidationError::new("cursor", "is not a cursor this API gave out");
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| refused())?;
        let text = String::from_utf8(bytes).map_err(|_| refused())?;
        let (micros, key) = text.split_once(':').ok_or_else(refused)?;
        let at = micros.parse::<i64>().ok().and_then(DateTime::from_timestamp_micros).ok_or_else(refused)?;
        Self::from_position(at, key).ok_or_else(refused)
    }
}

/// After this tenant (tenants are listed oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantCursor {
    pub created_at: DateTime<Utc>,
    pub id: TenantId,
}

impl Cursor for TenantCursor {
    fn position(&self) -> (DateTime<Utc>, String) {
        (self.created_at, self.id.to_string())
    }

    fn from_position(created_at: DateTime<Utc>, key: &str) -> Option<Self> {
        Some(Self { created_at, id: key.parse().ok()? })
    }
}

/// After this event: its failure time (failed events, newest first) or its claim time
/// (stranded events, oldest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCursor {
    pub at: DateTime<Utc>,
    pub event_id: ExternalEventId,
}

impl Cursor for EventCursor {
    fn position(&self) -> (DateTime<Utc>, String) {
        (self.at, self.event_id.as_str().to_owned())
    }

    fn from_position(at: DateTime<Utc>, key: &str) -> Option<Self> {
        Some(Self { at, event_id: ExternalEventId::new(key).ok()? })
    }
}

/// After this replay job (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobCursor {
    pub created_at: DateTime<Utc>,
    pub id: ReplayJobId,
}

impl Cursor for JobCursor {
    fn position(&self) -> (DateTime<Utc>, String) {
        (self.created_at, self.id.to_string())
    }

    fn from_position(created_at: DateTime<Utc>, key: &str) -> Option<Self> {
        Some(Self { created_at, id: key.parse().ok()? })
    }
}

/// After this audit row (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    pub at: DateTime<Utc>,
    pub id: i64,
}

impl Cursor for AuditCursor {
    fn position(&self) -> (DateTime<Utc>, String) {
        (self.at, self.id.to_string())
    }

    fn from_position(at: DateTime<Utc>, key: &str) -> Option<Self> {
        Some(Self { at, id: key.parse().ok().filter(|id: &i64| *id > 0)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_between_one_and_a_hundred() {
        assert!(PageLimit::new(0).is_err());
        assert_eq!(PageLimit::new(100).unwrap().get(), 100);
        assert!(PageLimit::new(101).is_err());
        assert_eq!(PageLimit::default().get(), 50);
    }

    #[test]
    fn a_cursor_round_trips_and_anything_else_is_refused() {
        let cursor = TenantCursor {
            created_at: DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            id: TenantId::generate(),
        };
        assert_eq!(TenantCursor::decode(&cursor.encode()).unwrap(), cursor);
        for garbage in
            ["", "not base64!", &URL_SAFE_NO_PAD.encode("12:not-a-uuid"), &URL_SAFE_NO_PAD.encode("x")]
        {
            let error = TenantCursor::decode(garbage).unwrap_err();
            assert_eq!(error.what, "cursor", "{garbage}");
        }
        let audit = AuditCursor { at: cursor.created_at, id: 42 };
        assert_eq!(AuditCursor::decode(&audit.encode()).unwrap(), audit);
        for not_a_row in ["1:-4", "1:0"] {
            assert!(AuditCursor::decode(&URL_SAFE_NO_PAD.encode(not_a_row)).is_err(), "{not_a_row}");
        }
        let event = EventCursor { at: cursor.created_at, event_id: ExternalEventId::new("Ev1").unwrap() };
        assert_eq!(EventCursor::decode(&event.encode()).unwrap(), event);
        assert!(EventCursor::decode(&URL_SAFE_NO_PAD.encode("1:Ev\n1")).is_err());
    }

    #[test]
    fn an_overfetched_page_keeps_the_limit_and_points_after_its_last_item() {
        let limit = PageLimit::new(2).unwrap();
        let page = Page::from_overfetch(vec![1, 2, 3], limit, |n| *n);
        assert_eq!((page.items, page.next), (vec![1, 2], Some(2)));
        let last = Page::from_overfetch(vec![1, 2], limit, |n| *n);
        assert_eq!(last.next, None);
    }
}
