//! The `AgentBridge` port over HTTP ([`super::client`]).

use std::time::{Duration, Instant};

use doorman_domain::ports::{AgentBridge, Unready};
use doorman_domain::{DispatchError, Installation, Job, Permit, TenantId};

use super::circuit::{CircuitBreaker, CircuitSettings};
use super::client::{DispatchClient, Post, SendError};
use super::destination::{DestinationPolicy, NotAllowed};
use super::document;
use super::limits::{InFlightLimits, LimitSettings};
use super::request;
use super::signing::WebhookKey;
use crate::outbound::HttpClientError;

#[derive(Debug, Clone)]
pub struct BridgeSettings {
    /// The longest a dispatch may take, retries included. An agent's turn can be long.
    pub dispatch_timeout: Duration,
    /// How long establishing a connection may take.
    pub connect_timeout: Duration,
    /// Attempts for a request that provably never reached the agent (connection refused,
    /// DNS or TLS failure before sending).
    pub connect_attempts: u32,
    /// The time within which those attempts must fit; after it, the failure is returned.
    pub connect_retry_budget: Duration,
    pub circuit: CircuitSettings,
    pub limits: LimitSettings,
    pub destinations: DestinationPolicy,
    /// Certificates (DER) trusted for agents besides the platform's: a private CA, or a
    /// test's own.
    pub extra_roots: Vec<Vec<u8>>,
}

impl Default for BridgeSettings {
    fn default() -> Self {
        Self {
            dispatch_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            connect_attempts: 3,
            connect_retry_budget: Duration::from_secs(2),
            circuit: CircuitSettings::default(),
            limits: LimitSettings::default(),
            destinations: DestinationPolicy::default(),
            extra_roots: Vec::new(),
        }
    }
}

/// The most of an agent's answer body that is read so the connection can be reused; Doorman
/// keeps only the status, and for a failure the first KiB (the attempt's record).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub struct HttpAgentBridge {
    client: DispatchClient,
    settings: BridgeSettings,
    circuit: CircuitBreaker,
    limits: InFlightLimits,
}

impl HttpAgentBridge {
    pub fn new(settings: BridgeSettings) -> Result<Self, HttpClientError> {
        // At most this many dispatches of one tenant run at once, so no more connections to
        // its agent are ever needed (nor kept).
        let client = DispatchClient::new(
            settings.destinations,
            settings.connect_timeout,
            settings.limits.per_tenant.get(),
            &settings.extra_roots,
        )
        .map_err(HttpClientError::new)?;
        Ok(Self {
            client,
            circuit: CircuitBreaker::new(settings.circuit),
            limits: InFlightLimits::new(settings.limits),
            settings,
        })
    }

    /// Deliveries holding a place in the bounded work right now.
    pub fn in_flight(&self) -> usize {
        self.limits.in_flight()
    }

    /// Every tenant's circuit that opens or closes from now on (one subscriber per bridge).
    pub fn circuit_changes(&self) -> Option<tokio::sync::mpsc::Receiver<super::circuit::CircuitChange>> {
        self.circuit.subscribe()
    }

    /// Tenants whose circuit is open right now.
    pub fn open_circuits(&self) -> usize {
        self.circuit.open_count(Instant::now())
    }

    async fn send(&self, job: &Job, installation: Option<&Installation>) -> Result<u16, DispatchError> {
        // Both were checked when the directory read them: nothing to re-parse here.
        let key = WebhookKey::new(&job.agent().secret);
        self.settings.destinations.check_url(&job.agent().url).map_err(not_allowed)?;
        let url = job.agent().url.as_url();
        let body = document::render(job, installation)
            .map_err(|e| DispatchError::Internal(format!("payload: {e}")))?;
        let id = message_id(job);

        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let remaining = self.settings.dispatch_timeout.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                return Err(DispatchError::TimedOut(self.settings.dispatch_timeout.as_secs()));
            }
            // Signed afresh each attempt: the timestamp is part of what is signed.
            let signed = key.headers(&id, &body);
            let post = Post { url, headers: &signed.pairs(), body: &body };
            let sent = tokio::time::timeout(remaining, self.client.post(&post, MAX_ANSWER_BYTES)).await;
            match sent {
                Ok(Ok(status)) if (200..300).contains(&status.code) => return Ok(status.code),
                Ok(Ok(status)) => {
                    return Err(DispatchError::Rejected { status: status.code, answer: status.excerpt });
                }
                // The resolver found only addresses that are not public: nothing was sent.
                Ok(Err(SendError::NotAllowed(reason))) => return Err(not_allowed(reason)),
                Ok(Err(SendError::InvalidHeader(name))) => {
                    return Err(DispatchError::Internal(format!("the {name} header would not be one line")));
                }
                // Connecting failed: nothing was sent, so trying again cannot deliver twice.
                Ok(Err(SendError::Connect(kind, reason))) => {
                    let retry_in = Duration::from_millis(100 * 2u64.pow(attempt - 1));
                    let within_budget = started.elapsed() + retry_in < self.settings.connect_retry_budget;
                    if attempt < self.settings.connect_attempts && within_budget {
                        tracing::debug!(tenant.id = %job.tenant(), attempt, error = %reason, "agent unreachable; retrying");
                        tokio::time::sleep(retry_in).await;
                        attempt += 1;
                        continue;
                    }
                    return Err(DispatchError::Unreachable { kind, reason });
                }
                // The request may have reached the agent: never send it again.
                Ok(Err(SendError::Interrupted(reason))) => return Err(DispatchError::Interrupted(reason)),
                Err(_) => return Err(DispatchError::TimedOut(self.settings.dispatch_timeout.as_secs())),
            }
        }
    }
}

impl AgentBridge for HttpAgentBridge {
    /// The circuit first (a half-open one lets one probe through), then a place in the
    /// bounded work. The permit holds both: dropped without a dispatch (a duplicate, say), the
    /// probe's turn and the place go back.
    fn admit(&self, tenant: TenantId) -> Result<Permit, Unready> {
        let probe = self.circuit.admit(tenant, Instant::now()).map_err(|_| Unready::CircuitOpen)?;
        let place = self.limits.try_take(tenant).map_err(Unready::Busy)?;
        Ok(Permit::new((place, probe)))
    }

    async fn dispatch(&self, job: &Job, installation: Option<Installation>) -> Result<u16, DispatchError> {
        let outcome = self.send(job, installation.as_ref()).await;
        match &outcome {
            Ok(_) => self.circuit.record_success(job.tenant()),
            Err(error) => {
                if self.circuit.record_failure(job.tenant(), Instant::now()) {
                    tracing::warn!(
                        tenant.id = %job.tenant(),
                        error = %error,
                        cooldown_s = self.settings.circuit.cooldown.as_secs(),
                        "agent circuit opened: deliveries for this tenant are answered 503 until the cooldown ends"
                    );
                }
            }
        }
        outcome
    }
}

/// `webhook-id`: stable for a numbered event (an agent can deduplicate on it, as Standard
/// Webhooks intends), fresh for an unnumbered one.
fn message_id(job: &Job) -> String {
    match &job.event().external_id {
        Some(id) => request::webhook_id(id),
        None => format!("msg_{}", uuid::Uuid::new_v4().simple()),
    }
}

fn not_allowed(reason: NotAllowed) -> DispatchError {
    DispatchError::DestinationNotAllowed(reason.0.to_owned())
}
