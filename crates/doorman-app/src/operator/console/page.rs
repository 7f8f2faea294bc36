//! Rendering: a page's template into an HTML answer, and what every signed-in page shows
//! around its content (who is signed in, where they may go, the sign-out form, a notice).

use std::borrow::Borrow;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;
use chrono::{DateTime, Utc};

use super::ConsoleError;

/// A rendered page; a template that fails to render (a bug) is a 500 with no detail.
pub fn html(status: StatusCode, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => HttpResponse::build(status).content_type("text/html; charset=utf-8").body(body),
        Err(error) => {
            tracing::error!(error = %error, "a console page failed to render");
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("internal error")
        }
    }
}

/// 200 with the page.
pub fn ok(page: &impl Template) -> Result<HttpResponse, ConsoleError> {
    Ok(html(StatusCode::OK, page))
}

/// Around every signed-in page.
#[derive(Debug, Clone)]
pub struct Chrome {
    /// The key the session acts as, by name.
    pub key_name: String,
    /// The form token every change posts (`csrf`).
    pub csrf: String,
    /// `Some(id)`: the session sees this tenant only.
    pub only_tenant: Option<String>,
    /// Whether the session may change anything.
    pub may_write: bool,
    /// Whether the session may manage keys (a key for every tenant, not read-only).
    pub manage_keys: bool,
    /// What the last form did, in words chosen here (never text from the request).
    pub notice: Option<&'static str>,
}

/// The notice for `?done=<word>` after a form redirected back.
pub fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "created" => "Tenant created.",
        "renamed" => "Tenant renamed.",
        "deleted" => {
            "Tenant deleted, with its workspace links, installations, agent, keys and receipts; its audit entries are kept."
        }
        "deleted-receipts-left" => {
            "Tenant deleted; deleting some of its receipts stopped (its tenant.purge audit entry says why): the next doorman receipts prune deletes them."
        }
        "linked" => "Workspace linked.",
        "unlinked" => "Workspace unlinked.",
        "agent-set" => "Agent saved.",
        "paused" => "Agent paused: new events are answered 503 until it is resumed, and Slack re-sends them.",
        "resumed" => "Agent resumed.",
        "payloads-on" => "Payloads are kept for replay from now on.",
        "payloads-off" => "Payloads are no longer kept.",
        "redelivery-on" => "Redelivery is on: events that were not handled are sent again on its schedule.",
        "redelivery-off" => "Redelivery is off: events are no longer sent again.",
        "portals-payloads-on" => {
            "Read-only portal keys made to read payloads now see this tenant's payloads on its events' pages."
        }
        "portals-payloads-off" => "Read-only portals no longer see this tenant's payloads.",
        "revoked" => "Key revoked: its sessions are ended.",
        _ => return None,
    })
}

/// A listing's total in words: `1 event`, `1,000 events`, `more than 1,000 events`.
pub fn total(total: doorman_domain::Total, one: &str, many: &str) -> String {
    let count = thousands(total.count);
    match (total.lower_bound, total.count) {
        (true, _) => format!("more than {count} {many}"),
        (false, 1) => format!("1 {one}"),
        (false, _) => format!("{count} {many}"),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The query string of a listing's next page: its filters that are set, then the cursor.
pub fn next_page(filters: &[(&str, &str)], cursor: &impl doorman_domain::Cursor) -> String {
    let mut next = form_urlencoded::Serializer::new(String::new());
    for (name, value) in filters.iter().filter(|(_, value)| !value.is_empty()) {
        next.append_pair(name, value);
    }
    next.append_pair("cursor", &cursor.encode()).finish()
}

/// What a path segment keeps as it is (RFC 3986's unreserved characters); everything else is
/// percent-encoded, `/`, `?`, `#` and `%` included, so that an id holding any of them is one
/// segment of a link that leads back to it.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `text` as one segment of a link's path (an event's id, a workspace's).
pub fn segment(text: impl AsRef<str>) -> String {
    percent_encoding::utf8_percent_encode(text.as_ref(), SEGMENT).to_string()
}

/// An instant as every page shows it, and the one place it is formatted: a `<time>` whose
/// `datetime` is the instant in RFC 3339 (UTC, `Z`) and whose text and `title` say it in UTC,
/// `2026-12-01 10:00:00 UTC`. `console.js` rewrites the text into the browser's own zone and
/// leaves the title (the UTC, on hover); without the script the UTC text stays. An instant
/// that is not there is a dash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    at: Option<DateTime<Utc>>,
    /// To the millisecond (an event's own times), or to the second.
    millis: bool,
}

/// Markup made here from an instant's digits alone: nothing in it needs escaping.
impl askama::filters::HtmlSafe for Time {}

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(at) = self.at else { return f.write_str("—") };
        let (machine, words) = if self.millis {
            ("%Y-%m-%dT%H:%M:%S%.3fZ", "%Y-%m-%d %H:%M:%S%.3f UTC")
        } else {
            ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M:%S UTC")
        };
        let words = at.format(words);
        write!(f, r#"<time datetime="{}" title="{words}">{words}</time>"#, at.format(machine))
    }
}

/// An instant, to the second.
pub fn when(at: impl Borrow<DateTime<Utc>>) -> Time {
    Time { at: Some(*at.borrow()), millis: false }
}

/// An optional instant, to the second, or a dash.
pub fn maybe(at: impl Borrow<Option<DateTime<Utc>>>) -> Time {
    Time { at: *at.borrow(), millis: false }
}

/// An instant to the millisecond (an event's claim, its dispatches' starts and ends).
pub fn when_ms(at: impl Borrow<DateTime<Utc>>) -> Time {
    Time { at: Some(*at.borrow()), millis: true }
}

/// An optional instant to the millisecond, or a dash.
pub fn maybe_ms(at: impl Borrow<Option<DateTime<Utc>>>) -> Time {
    Time { at: *at.borrow(), millis: true }
}

#[cfg(test)]
mod tests {
    use doorman_domain::{Cursor, TenantCursor};

    use super::*;

    #[test]
    fn a_total_is_said_in_words_with_thousands_and_more_than_beyond_the_cap() {
        use doorman_domain::Total;
        let said = |count, lower_bound| total(Total { count, lower_bound }, "event", "events");
        assert_eq!(said(0, false), "0 events");
        assert_eq!(said(1, false), "1 event");
        assert_eq!(said(999, false), "999 events");
        assert_eq!(said(1000, false), "1,000 events");
        assert_eq!(said(1000, true), "more than 1,000 events");
        assert_eq!(said(1_234_567, false), "1,234,567 events");
    }

    #[test]
    fn a_segment_keeps_only_unreserved_characters() {
        assert_eq!(segment("Ev0A1b-._~"), "Ev0A1b-._~");
        assert_eq!(segment("Ev/<%?# x+&\""), "Ev%2F%3C%25%3F%23%20x%2B%26%22");
    }

    #[test]
    fn an_instant_is_a_time_element_in_utc_to_the_second_or_the_millisecond() {
        let at = DateTime::from_timestamp_millis(1_796_119_200_042).unwrap();
        assert_eq!(
            when(at).to_string(),
            r#"<time datetime="2026-12-01T10:00:00Z" title="2026-12-01 10:00:00 UTC">2026-12-01 10:00:00 UTC</time>"#
        );
        assert_eq!(
            when_ms(at).to_string(),
            r#"<time datetime="2026-12-01T10:00:00.042Z" title="2026-12-01 10:00:00.042 UTC">2026-12-01 10:00:00.042 UTC</time>"#
        );
        assert_eq!(maybe(Some(at)), when(at));
        assert_eq!(maybe_ms(Some(at)), when_ms(at));
        assert_eq!((maybe(None).to_string(), maybe_ms(None).to_string()), ("—".into(), "—".into()));
    }

    /// A page shows the markup as it is, not escaped (askama escapes what is not marked safe).
    #[test]
    fn a_template_shows_the_time_element_unescaped() {
        #[derive(askama::Template)]
        #[template(source = "<td>{{ at }}</td>", ext = "html")]
        struct Cell {
            at: Time,
        }
        let at = DateTime::from_timestamp(1_796_119_200, 0).unwrap();
        let cell = askama::Template::render(&Cell { at: when(at) }).unwrap();
        assert_eq!(cell, format!("<td>{}</td>", when(at)));
    }

    #[test]
    fn a_next_page_keeps_the_filters_that_are_set_encoded_and_then_the_cursor() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let cursor = TenantCursor::from_position(at, "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11").unwrap();
        let next = next_page(&[("name", "a&b c"), ("since", "")], &cursor);
        assert_eq!(next, format!("name=a%26b+c&cursor={}", cursor.encode()));
        assert_eq!(next_page(&[], &cursor), format!("cursor={}", cursor.encode()));
    }
}
