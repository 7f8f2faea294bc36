//! The admin API's own metrics, at its `GET /metrics`: requests by route pattern and status,
//! their latency, readiness. Labels are route patterns (`/admin/v1/tenants/{id}`), never ids.

use std::time::Duration;

use doorman_domain::KeyRefusal;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    reason: &'static str,
}

#[derive(Debug)]
pub struct AdminMetrics {
    registry: Registry,
    requests: Family<Request, Counter>,
    seconds: Histogram,
    ready: Gauge,
    refusals: Family<Refusal, Counter>,
}

impl Default for AdminMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("doorman_admin");
        let requests = Family::<Request, Counter>::default();
        registry.register(
            "http_requests",
            "Admin API requests answered, by method, route and status",
            requests.clone(),
        );
        let seconds = Histogram::new(exponential_buckets(0.000_5, 2.0, 16));
        registry.register(
            "request_seconds",
            "Time from an admin request's arrival to its answer",
            seconds.clone(),
        );
        let ready = Gauge::default();
        registry.register(
            "ready",
            "1 while the database answers and has every migration (as of /readyz)",
            ready.clone(),
        );
        let refusals = Family::<Refusal, Counter>::default();
        registry.register(
            "auth_failures",
            "Requests refused for want of a valid key, by reason (missing, malformed, unknown_key, wrong_secret, revoked, expired)",
            refusals.clone(),
        );
        // Every reason is reported from the start (at 0), so an alert can compare rates.
        for reason in KeyRefusal::ALL {
            let _ = refusals.get_or_create(&Refusal { reason: reason.as_str() });
        }
        Self { registry, requests, seconds, ready, refusals }
    }
}

impl AdminMetrics {
    /// `route`: the matched pattern, or `unmatched`; the label set stays bounded.
    pub fn answered(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let label = Request { method: method.to_owned(), route: route.to_owned(), status };
        self.requests.get_or_create(&label).inc();
        self.seconds.observe(elapsed.as_secs_f64());
    }

    pub fn refused(&self, reason: KeyRefusal) {
        self.refusals.get_or_create(&Refusal { reason: reason.as_str() }).inc();
    }

    pub fn readiness(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
