//! Charts drawn on the server (issue 42): a tenant's dispatches by hour as SVG bars, with no
//! script, each bar saying its hour and counts on hover (`<title>`), the chart its totals in
//! words for a screen reader. Geometry only: the template (`console/chart.html`) draws it.

use chrono::{DateTime, Utc};
use doorman_domain::{Activity, ActivityHour};

/// The drawing's size, in SVG units (it scales to the page's width).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 120.0;
/// The gap between bars, as a share of a bar's slot.
const GAP: f64 = 0.15;

/// One chart.
pub struct Chart {
    /// Its id on the page, and its heading.
    pub id: &'static str,
    pub title: &'static str,
    /// What it shows, in words: its totals (the SVG's accessible name).
    pub summary: String,
    /// The tallest bar's value, labelled at the top.
    pub top: String,
    /// The first and last hours, labelled below (as `<time>`s: said in the browser's zone).
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub bars: Vec<Bar>,
}

/// One hour's bar: a lower part (taken, or the mean time) and an upper one (failed).
pub struct Bar {
    pub x: String,
    pub width: String,
    pub low_y: String,
    pub low_height: String,
    pub high_y: String,
    pub high_height: String,
    /// On hover.
    pub tip: String,
}

impl Chart {
    /// The view box, for the template.
    pub fn view_box(&self) -> String {
        format!("0 0 {WIDTH} {HEIGHT}")
    }
}

/// Dispatches taken (lower) and failed (upper), hour by hour.
pub fn volume(id: &'static str, title: &'static str, activity: &Activity) -> Chart {
    let total = activity.total();
    let summary = format!(
        "{} dispatches over {} hours: {} taken, {} failed",
        total.dispatches(),
        activity.hours.len(),
        total.delivered,
        total.failed
    );
    bars(
        id,
        title,
        summary,
        activity,
        |h| (h.delivered, h.failed),
        |h| format!("{}: {} taken, {} failed", hour_label(h), h.delivered, h.failed),
    )
}

/// The mean dispatch time, hour by hour (the hours without a dispatch empty).
pub fn latency(id: &'static str, title: &'static str, activity: &Activity) -> Chart {
    let total = activity.total();
    let summary = match total.mean_ms() {
        Some(mean) => format!(
            "mean dispatch time {mean} ms over {} hours, longest {} ms",
            activity.hours.len(),
            total.dispatch_ms_max
        ),
        None => format!("no dispatch in {} hours", activity.hours.len()),
    };
    bars(
        id,
        title,
        summary,
        activity,
        |h| (h.mean_ms().unwrap_or(0), 0),
        |h| match h.mean_ms() {
            Some(mean) => format!("{}: mean {mean} ms, longest {} ms", hour_label(h), h.dispatch_ms_max),
            None => format!("{}: no dispatch", hour_label(h)),
        },
    )
}

fn bars(
    id: &'static str,
    title: &'static str,
    summary: String,
    activity: &Activity,
    values: impl Fn(&ActivityHour) -> (u64, u64),
    tip: impl Fn(&ActivityHour) -> String,
) -> Chart {
    let tallest = activity.hours.iter().map(|h| values(h).0 + values(h).1).max().unwrap_or(0);
    let scale = if tallest == 0 { 0.0 } else { HEIGHT / tallest as f64 };
    let slot = WIDTH / activity.hours.len().max(1) as f64;
    let units = |v: f64| format!("{v:.1}");
    let bars = activity
        .hours
        .iter()
        .enumerate()
        .map(|(i, hour)| {
            let (low, high) = values(hour);
            let (low_height, high_height) = (low as f64 * scale, high as f64 * scale);
            Bar {
                x: units(i as f64 * slot + slot * GAP / 2.0),
                width: units(slot * (1.0 - GAP)),
                low_y: units(HEIGHT - low_height),
                low_height: units(low_height),
                high_y: units(HEIGHT - low_height - high_height),
                high_height: units(high_height),
                tip: tip(hour),
            }
        })
        .collect();
    Chart {
        id,
        title,
        summary,
        top: tallest.to_string(),
        from: activity.hours.first().map(|h| h.hour),
        to: activity.hours.last().map(|h| h.hour),
        bars,
    }
}

/// An hour in a bar's tip (SVG's `<title>` holds text only: RFC 3339, in UTC).
fn hour_label(hour: &ActivityHour) -> String {
    hour.hour.format("%Y-%m-%dT%H:00Z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tallest_hour_fills_the_chart_and_each_bar_says_its_hour() {
        let now: DateTime<Utc> = "2026-12-06T12:30:00Z".parse().unwrap();
        let busy = ActivityHour {
            delivered: 30,
            failed: 10,
            dispatch_ms: 400,
            dispatch_ms_max: 90,
            ..ActivityHour::empty("2026-12-06T12:00:00Z".parse().unwrap())
        };
        let quiet = ActivityHour {
            delivered: 10,
            dispatch_ms: 50,
            dispatch_ms_max: 5,
            ..ActivityHour::empty("2026-12-06T11:00:00Z".parse().unwrap())
        };
        let activity = Activity::over(now, 4, &[busy, quiet]);
        let chart = volume("day", "Last 24 hours", &activity);
        assert_eq!(chart.bars.len(), 4);
        assert_eq!(chart.summary, "50 dispatches over 4 hours: 40 taken, 10 failed");
        assert_eq!(chart.top, "40");
        let last = &chart.bars[3];
        assert_eq!(
            (last.low_height.as_str(), last.high_height.as_str(), last.high_y.as_str()),
            ("90.0", "30.0", "0.0")
        );
        assert_eq!(last.tip, "2026-12-06T12:00Z: 30 taken, 10 failed");
        assert_eq!(chart.bars[2].low_height, "30.0", "a quarter of the tallest");
        assert_eq!(chart.bars[0].low_height, "0.0", "an empty hour");
        let hour = |text: &str| Some(text.parse::<DateTime<Utc>>().unwrap());
        assert_eq!((chart.from, chart.to), (hour("2026-12-06T09:00:00Z"), hour("2026-12-06T12:00:00Z")));

        let times = latency("day-latency", "Dispatch time", &activity);
        assert_eq!(times.top, "10", "the busy hour's mean, 400 / 40");
        assert_eq!(times.bars[3].tip, "2026-12-06T12:00Z: mean 10 ms, longest 90 ms");
        assert_eq!(times.bars[0].tip, "2026-12-06T09:00Z: no dispatch");
        assert_eq!(times.summary, "mean dispatch time 9 ms over 4 hours, longest 90 ms");
    }
}
