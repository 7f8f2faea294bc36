//! Prometheus metrics, served at `GET /metrics` in the text format.
//!
//! Label values are fixed, short vocabularies (routes, statuses, causes, outcomes): never a
//! tenant id, event id or header text, so the series count stays bounded.

use std::time::Duration;

use doorman_domain::{Acknowledgement, Handled, NotSent, RetryReason, Unavailability};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Cause {
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Limit {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: &'static str,
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteStatus, Counter>,
    acknowledgement_seconds: Family<Route, Histogram>,
    rejections: Family<Cause, Counter>,
    claims: Family<OutcomeLabel, Counter>,
    unavailable: Family<Reason, Counter>,
    busy: Family<Limit, Counter>,
    installs: Family<OutcomeLabel, Counter>,
    in_flight: Gauge,
    unknown_workspaces: Counter,
    rate_limited: Counter,
    retries: Family<Reason, Counter>,
    dispatches: Family<OutcomeLabel, Counter>,
    dispatch_seconds: Histogram,
    dispatches_in_flight: Gauge,
    open_circuits: Gauge,
    directory_listening: Gauge,
    directory_remembered: Gauge,
    directory_lookups: Mirrored,
    directory_notices: Mirrored,
    receipts_stranded: Gauge,
    receipts_failed_recent: Gauge,
    ready: Gauge,
    redeliveries: Family<OutcomeLabel, Counter>,
    redeliveries_in_flight: Gauge,
    redeliveries_given_up: Counter,
    operational_webhooks: Family<OutcomeLabel, Counter>,
}

/// Gauges read from their owners at scrape time.
#[derive(Debug, Clone, Copy)]
pub struct Gauges {
    pub open_circuits: usize,
    pub in_flight: usize,
    pub directory_listening: bool,
    pub directory_remembered: usize,
    /// Resolves the directory made in the database since start.
    pub directory_lookups: u64,
    /// Change notices the directory applied since start.
    pub directory_notices: u64,
}

/// A counter whose owner keeps the count (the directory): each scrape adds what is new.
#[derive(Debug, Default)]
struct Mirrored {
    counter: Counter,
    seen: std::sync::atomic::AtomicU64,
}

impl Mirrored {
    fn mirror(&self, total: u64) {
        let seen = self.seen.fetch_max(total, std::sync::atomic::Ordering::Relaxed);
        self.counter.inc_by(total.saturating_sub(seen));
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("doorman");
        let requests = Family::<RouteStatus, Counter>::default();
        registry.register("http_requests", "Slack requests answered, by route and status", requests.clone());
        let acknowledgement_seconds = Family::<Route, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_5, 2.0, 14))
        });
        registry.register(
            "acknowledgement_seconds",
            "Time from a request's arrival to its answer (Slack allows 3 s)",
            acknowledgement_seconds.clone(),
        );
        let rejections = Family::<Cause, Counter>::default();
        registry.register("rejections", "Requests refused before any work, by cause", rejections.clone());
        let claims = Family::<OutcomeLabel, Counter>::default();
        registry.register("claims", "Numbered events claimed or found duplicate", claims.clone());
        let unavailable = Family::<Reason, Counter>::default();
        registry.register("unavailable", "Deliveries answered 503, by reason", unavailable.clone());
        let busy = Family::<Limit, Counter>::default();
        registry.register(
            "busy",
            "Deliveries answered 503 because work in flight was at its bound, by bound (tenant or process)",
            busy.clone(),
        );
        let installs = Family::<OutcomeLabel, Counter>::default();
        registry.register("slack_installs", "Slack app install steps, by outcome", installs.clone());
        let in_flight = Gauge::default();
        registry.register(
            "in_flight",
            "Deliveries holding a place in the bounded work (from acknowledgement to the end of their dispatch)",
            in_flight.clone(),
        );
        let unknown_workspaces = Counter::default();
        registry.register(
            "unknown_workspaces",
            "Deliveries for workspaces no tenant has linked",
            unknown_workspaces.clone(),
        );
        let rate_limited = Counter::default();
        registry.register("app_rate_limited", "app_rate_limited notices from Slack", rate_limited.clone());
        let retries = Family::<Reason, Counter>::default();
        registry.register("retries", "Deliveries Slack marked as retries, by stated reason", retries.clone());
        let dispatches = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "dispatches",
            "Jobs handled after the answer, by outcome: delivered, delivered_unrecorded, failed, and for claims whose commit was not confirmed claimed_elsewhere or unsettled (nothing sent)",
            dispatches.clone(),
        );
        let dispatch_seconds = Histogram::new(exponential_buckets(0.005, 2.0, 15));
        registry.register(
            "dispatch_seconds",
            "Time an agent took to take a dispatch",
            dispatch_seconds.clone(),
        );
        let dispatches_in_flight = Gauge::default();
        registry.register(
            "dispatches_in_flight",
            "Dispatches started and not yet finished (their receipt written), counted before the answer",
            dispatches_in_flight.clone(),
        );
        let open_circuits = Gauge::default();
        registry.register("open_circuits", "Tenants whose agent circuit is open", open_circuits.clone());
        let directory_listening = Gauge::default();
        registry.register(
            "directory_listening",
            "1 while the directory listener is subscribed and workspaces are served from memory; 0 while every resolve goes to the database",
            directory_listening.clone(),
        );
        let directory_remembered = Gauge::default();
        registry.register(
            "directory_remembered_workspaces",
            "Workspaces (linked or not) the directory has in memory",
            directory_remembered.clone(),
        );
        let directory_lookups = Mirrored::default();
        registry.register(
            "directory_lookups",
            "Resolves that went to the database because the directory's memory did not have them (once per workspace while the listener is subscribed)",
            directory_lookups.counter.clone(),
        );
        let directory_notices = Mirrored::default();
        registry.register(
            "directory_notices",
            "Directory change notices received (each makes the directory forget what it names)",
            directory_notices.counter.clone(),
        );
        let receipts_stranded = Gauge::default();
        registry.register(
            "receipts_stranded",
            "Receipts of every tenant acknowledged over 10 minutes ago, never handled, no failure (recounted once a minute)",
            receipts_stranded.clone(),
        );
        let receipts_failed_recent = Gauge::default();
        registry.register(
            "receipts_failed_recent",
            "Receipts of every tenant whose dispatch failed in the last hour and that are not handled (recounted once a minute)",
            receipts_failed_recent.clone(),
        );
        let ready = Gauge::default();
        registry.register(
            "ready",
            "1 while the database answers and has every migration (checked once a minute and by /readyz)",
            ready.clone(),
        );
        let redeliveries = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "redeliveries",
            "Redeliveries of tenants with redelivery on (ADR 26) that ended, by outcome (as doorman_dispatches)",
            redeliveries.clone(),
        );
        let redeliveries_in_flight = Gauge::default();
        registry.register(
            "redeliveries_in_flight",
            "Redeliveries taken by this process and not yet ended",
            redeliveries_in_flight.clone(),
        );
        let redeliveries_given_up = Counter::default();
        registry.register(
            "redeliveries_given_up",
            "Events whose redelivery schedule was spent without the agent taking them: failed for good",
            redeliveries_given_up.clone(),
        );
        let operational_webhooks = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "operational_webhooks",
            "Attempts to send an operational event to the operational webhook, by outcome: delivered, failed (to be retried on its schedule), given_up (the last, failed)",
            operational_webhooks.clone(),
        );
        Self {
            registry,
            operational_webhooks,
            redeliveries,
            redeliveries_in_flight,
            redeliveries_given_up,
            receipts_stranded,
            receipts_failed_recent,
            ready,
            requests,
            acknowledgement_seconds,
            rejections,
            claims,
            unavailable,
            busy,
            installs,
            in_flight,
            unknown_workspaces,
            rate_limited,
            retries,
            dispatches,
            dispatch_seconds,
            dispatches_in_flight,
            open_circuits,
            directory_listening,
            directory_remembered,
            directory_lookups,
            directory_notices,
        }
    }

    pub fn answered(&self, route: &'static str, status: u16, elapsed: Duration) {
        self.requests.get_or_create(&RouteStatus { route, status }).inc();
        self.acknowledgement_seconds.get_or_create(&Route { route }).observe(elapsed.as_secs_f64());
    }

    pub fn receipt_counts(&self, stranded: i64, failed_recent: i64) {
        self.receipts_stranded.set(stranded);
        self.receipts_failed_recent.set(failed_recent);
    }

    pub fn readiness(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    pub fn install(&self, outcome: &'static str) {
        self.installs.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn rejected(&self, cause: &'static str) {
        self.rejections.get_or_create(&Cause { cause }).inc();
    }

    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    pub fn retried(&self, reason: Option<RetryReason>) {
        let reason = reason.map_or("unstated", RetryReason::as_str);
        self.retries.get_or_create(&Reason { reason }).inc();
    }

    pub fn acknowledged(&self, ack: &Acknowledgement) {
        let claim = |outcome| {
            self.claims.get_or_create(&OutcomeLabel { outcome }).inc();
        };
        match ack {
            Acknowledgement::Ignored => {
                self.unknown_workspaces.inc();
            }
            Acknowledgement::Replayed { .. } => self.rejected("replayed"),
            Acknowledgement::Unavailable(why) => {
                if let Unavailability::Busy { limit, .. } = why {
                    self.busy.get_or_create(&Limit { limit: limit.as_str() }).inc();
                }
                self.unavailable.get_or_create(&Reason { reason: why.as_str() }).inc();
            }
            Acknowledgement::Duplicate { .. } => claim("duplicate"),
            Acknowledgement::Accepted { numbered: true, .. } => claim("claimed"),
            Acknowledgement::Accepted { numbered: false, .. } => {}
        }
    }

    pub fn dispatch_started(&self) {
        self.dispatches_in_flight.inc();
    }

    pub fn dispatch_finished(&self, handled: &Handled, elapsed: Duration) {
        self.dispatches_in_flight.dec();
        self.dispatches.get_or_create(&OutcomeLabel { outcome: outcome(handled) }).inc();
        self.dispatch_seconds.observe(elapsed.as_secs_f64());
    }

    pub fn redelivery_started(&self) {
        self.redeliveries_in_flight.inc();
    }

    /// A redelivery ended (it was counted as a dispatch too).
    pub fn redelivery_finished(&self, handled: &Handled) {
        self.redeliveries_in_flight.dec();
        self.redeliveries.get_or_create(&OutcomeLabel { outcome: outcome(handled) }).inc();
    }

    pub fn redeliveries_given_up(&self, count: usize) {
        self.redeliveries_given_up.inc_by(u64::try_from(count).unwrap_or(u64::MAX));
    }

    /// An attempt to send an operational event ended: `delivered`, `failed` or `given_up`.
    pub fn operational_webhook(&self, outcome: &'static str) {
        self.operational_webhooks.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// Renders every metric, with the gauges read at scrape time.
    pub fn render(&self, gauges: &Gauges) -> String {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.open_circuits.set(count(gauges.open_circuits));
        self.in_flight.set(count(gauges.in_flight));
        self.directory_listening.set(i64::from(gauges.directory_listening));
        self.directory_remembered.set(count(gauges.directory_remembered));
        self.directory_lookups.mirror(gauges.directory_lookups);
        self.directory_notices.mirror(gauges.directory_notices);
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A handled job's outcome word, for the dispatch and redelivery counters.
fn outcome(handled: &Handled) -> &'static str {
    match handled {
        Handled::Delivered { .. } => "delivered",
        Handled::DeliveredUnrecorded(_) => "delivered_unrecorded",
        Handled::Failed { .. } => "failed",
        Handled::NotSent(NotSent::ClaimedElsewhere) => "claimed_elsewhere",
        Handled::NotSent(NotSent::Unsettled(_)) => "unsettled",
    }
}
