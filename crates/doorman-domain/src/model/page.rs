//! Pages of a listing: at most [`PageLimit::MAX`] items, and an opaque cursor for the next.
//!
//! Listings are keyset-paginated: a cursor is the position of the last item returned (a
//! timestamp and a key), so pages stay correct while rows are added and cost one index range
//! each. To a client a cursor is opaque text, `<microseconds since 1970>.<key>`, of a shape
//! each listing states as a pattern ([`Cursor::pattern`], which the OpenAPI document carries):
//! every text of that shape is taken, as the position it names, and anything else is refused
//! as a bad value of `cursor`.

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

/// How many items a listing selects, counted up to a cap so that counting stays cheap however
/// many there are (a million receipts): exact up to [`Total::CAP`], and beyond it "more than
/// `CAP`" (`lower_bound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    pub count: u64,
    /// There are more than `count`.
    pub lower_bound: bool,
}

impl Total {
    /// The most a listing counts exactly.
    pub const CAP: u64 = 1000;

    /// What a count of at most `CAP + 1` rows says: one past the cap means more than it.
    pub fn of_counted(counted: u64) -> Self {
        if counted > Self::CAP {
            Self { count: Self::CAP, lower_bound: true }
        } else {
            Self { count: counted, lower_bound: false }
        }
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

/// The most digits a cursor's time may have: 17 digits of microseconds reach the year 5138,
/// within what a timestamp holds.
const MAX_TIME_DIGITS: usize = 17;

/// A position in a listing, written to and read from opaque cursor text.
pub trait Cursor: Sized {
    /// The pattern of the key part (ECMA-262, as OpenAPI and JSON Schema read it), which MUST
    /// match exactly the keys `from_position` takes, written as `position` writes them.
    const KEY_PATTERN: &'static str;

    fn position(&self) -> (DateTime<Utc>, String);
    fn from_position(at: DateTime<Utc>, key: &str) -> Option<Self>;

    /// The pattern of this listing's cursors: exactly the texts [`Cursor::decode`] takes.
    fn pattern() -> String {
        format!("^(0|[1-9][0-9]{{0,{}}})\\.{}$", MAX_TIME_DIGITS - 1, Self::KEY_PATTERN)
    }

    fn encode(&self) -> String {
        let (at, key) = self.position();
        format!("{}.{key}", at.timestamp_micros())
    }

    /// The position `text` names: only text as [`Cursor::encode`] writes it (no leading zero,
    /// no other spelling of the key), so what the pattern allows is what is taken.
    fn decode(text: &str) -> Result<Self, ValidationError> {
        let refused = || ValidationError::new("cursor", "is not a cursor this API gives out");
        let (micros, key) = text.split_once('.').ok_or_else(refused)?;
        if micros.is_empty() || micros.len() > MAX_TIME_DIGITS || !micros.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(refused());
        }
        let at = micros.parse::<i64>().ok().and_then(DateTime::from_timestamp_micros).ok_or_else(refused)?;
        let cursor = Self::from_position(at, key).ok_or_else(refused)?;
        if cursor.encode() != text {
            return Err(refused());
        }
        Ok(cursor)
    }
}

/// A UUID as `Display` writes it: lower-case hex, hyphenated.
const UUID_PATTERN: &str = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/// After this tenant (tenants are listed oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantCursor {
    pub created_at: DateTime<Utc>,
    pub id: TenantId,
}

impl Cursor for TenantCursor {
    const KEY_PATTERN: &'static str = UUID_PATTERN;

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
    /// An event id: 1 to 255 printable ASCII characters, but not `.` nor `..`
    /// ([`ExternalEventId::new`] refuses those path steps): three or more of any; two, the
    /// second not a dot, or the first not a dot; one, not a dot.
    const KEY_PATTERN: &'static str = r"([ -~]{3,255}|[ -~][ -\x2d/-~]|[ -\x2d/-~]\.|[ -\x2d/-~])";

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
    const KEY_PATTERN: &'static str = UUID_PATTERN;

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
    /// A row's id: a positive number of at most 18 digits (ids are far below that).
    const KEY_PATTERN: &'static str = "[1-9][0-9]{0,17}";

    fn position(&self) -> (DateTime<Utc>, String) {
        (self.at, self.id.to_string())
    }

    fn from_position(at: DateTime<Utc>, key: &str) -> Option<Self> {
        let id = key.parse().ok().filter(|id: &i64| (1..1_000_000_000_000_000_000).contains(id))?;
        Some(Self { at, id })
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
        let upper = format!("1700000000123456.{}", cursor.id.to_string().to_uppercase());
        for garbage in [
            "",
            "not a cursor",
            "12.not-a-uuid",
            "x",
            &format!("01700000000123456.{}", cursor.id),
            &format!("123456789012345678.{}", cursor.id),
            &format!("-1.{}", cursor.id),
            &upper,
        ] {
            let error = TenantCursor::decode(garbage).unwrap_err();
            assert_eq!(error.what, "cursor", "{garbage}");
        }
        let audit = AuditCursor { at: cursor.created_at, id: 42 };
        assert_eq!(AuditCursor::decode(&audit.encode()).unwrap(), audit);
        for not_a_row in ["1.-4", "1.0", "1.042", "1.+4", "1.1000000000000000000"] {
            assert!(AuditCursor::decode(not_a_row).is_err(), "{not_a_row}");
        }
        assert!(AuditCursor::decode("1.999999999999999999").is_ok(), "18 digits, as the pattern says");
        let event =
            EventCursor { at: cursor.created_at, event_id: ExternalEventId::new("Ev 1/<a>.b").unwrap() };
        assert_eq!(EventCursor::decode(&event.encode()).unwrap(), event);
        assert!(EventCursor::decode("1.Ev\n1").is_err());
        assert!(
            EventCursor::decode("99999999999999999.Ev1").is_ok(),
            "17 digits of time, as the pattern says"
        );
    }

    /// Whether `C::pattern()` allows `text`, and whether `C::decode` takes it: the same, for
    /// each text (the proptest below rarely reaches the short ones, where the two can differ).
    fn described_and_taken<C: Cursor>(text: &str) -> (bool, bool) {
        let pattern = regex_lite::Regex::new(&C::pattern()).expect("the pattern is a regular expression");
        (pattern.is_match(text), C::decode(text).is_ok())
    }

    /// An event id is never `.` or `..` (a path step), so no event cursor names one; the
    /// pattern says so too, or a client holding to it (Schemathesis) meets a 422 it was not
    /// told of. Every other short key is described and taken alike.
    #[test]
    fn an_event_cursor_is_described_exactly_as_it_is_taken_for_short_keys() {
        let printable: Vec<char> = (0x20u8..=0x7e).map(char::from).collect();
        let mut keys: Vec<String> = printable.iter().map(char::to_string).collect();
        for first in &printable {
            keys.extend(printable.iter().map(|second| format!("{first}{second}")));
        }
        keys.extend(["...", ".a.", "a..", "..a"].map(str::to_owned));
        for key in keys {
            let text = format!("1700000000123456.{key}");
            let (described, taken) = described_and_taken::<EventCursor>(&text);
            assert_eq!(described, taken, "{text:?}: described {described}, taken {taken}");
        }
        assert_eq!(described_and_taken::<EventCursor>("1.."), (false, false));
        assert_eq!(described_and_taken::<EventCursor>("1..."), (false, false));
        assert_eq!(described_and_taken::<EventCursor>("1...."), (true, true), "`..` followed by more");
    }

    /// A strategy of every text `C::pattern()` allows (the anchors are the whole text).
    fn allowed<C: Cursor>() -> impl proptest::strategy::Strategy<Value = String> {
        let pattern = C::pattern();
        let inner = pattern.trim_start_matches('^').trim_end_matches('$').to_owned();
        proptest::string::string_regex(&inner).expect("the pattern is a regular expression")
    }

    proptest::proptest! {
        /// What the OpenAPI document's pattern allows, the listing takes (Schemathesis sends
        /// such cursors and expects them accepted), and what it takes it writes back the same.
        #[test]
        fn every_cursor_the_pattern_allows_is_taken(
            tenant in allowed::<TenantCursor>(),
            event in allowed::<EventCursor>(),
            job in allowed::<JobCursor>(),
            audit in allowed::<AuditCursor>(),
        ) {
            proptest::prop_assert_eq!(TenantCursor::decode(&tenant).map(|c| c.encode()), Ok(tenant));
            proptest::prop_assert_eq!(EventCursor::decode(&event).map(|c| c.encode()), Ok(event));
            proptest::prop_assert_eq!(JobCursor::decode(&job).map(|c| c.encode()), Ok(job));
            proptest::prop_assert_eq!(AuditCursor::decode(&audit).map(|c| c.encode()), Ok(audit));
        }
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
