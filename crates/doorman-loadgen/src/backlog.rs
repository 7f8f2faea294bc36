//! The backlog shape: does a backlog of due redeliveries slow live acknowledgements? (Issue
//! 41's acceptance: 10,000 due redeliveries must not lower live acknowledgements by more than
//! 10% or raise their p99 above 20 ms.)
//!
//! One binary (`--server`) against itself, in alternating runs within each round, so the two
//! see the same machine at nearly the same time:
//!
//! - (a) *no backlog*: the busy shape's live load ([`crate::busy`]: one live tenant, 64
//!   connections back to back, the agent answering at once, only 2xx counts), with a second
//!   tenant that has its own agent and redelivery turned on, and nothing to redeliver;
//! - (b) *backlog*: the same, with `--backlog-events` (10,000) failed events of the second
//!   tenant seeded before the window ([`seed`]), every one due the moment its schedule is on.
//!
//! The two runs differ only in the backlog: both turn the second tenant's redelivery on just
//! before the window, so the runner's own passes are in both. Its redeliveries go to its own
//! agent, so the live tenant's agent counts live events alone (lost, doubled) and the backlog's
//! agent counts what the runner sent (distinct webhook ids) while the live load ran. The
//! server runs with redelivery's default budgets unless `--server-env` sets them.

mod seed;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::Args;
use crate::busy::{self, BusyResult};
use crate::setup::Run;

/// The backlog tenant's workspace.
const BACKLOG_TEAM: &str = "TBACKLOG";

/// One run: the live load's figures and, in (b), what became of the backlog.
#[derive(Debug)]
pub struct BacklogRun {
    pub round: usize,
    pub live: BusyResult,
    /// `None` in the run without a backlog.
    pub backlog: Option<Backlog>,
}

/// What became of the backlog over one run.
#[derive(Debug)]
pub struct Backlog {
    /// Failed events seeded, all due once redelivery was on.
    pub seeded: usize,
    /// How long seeding took (before the window).
    pub seeded_in: Duration,
    /// Redeliveries the backlog tenant's agent accepted (distinct webhook ids) ...
    pub redelivered: usize,
    /// ... of how many distinct events,
    pub events: usize,
    /// ... from the moment redelivery was turned on to the end of the run (the window and the
    /// wait for its last live dispatches).
    pub over: Duration,
    /// The backlog's events still unhandled at the end.
    pub left: usize,
}

impl Backlog {
    pub fn redelivered_per_s(&self) -> f64 {
        self.redelivered as f64 / self.over.as_secs_f64()
    }
}

/// One run of (a) or (b): a fresh database and server, as the busy shape has them.
pub async fn measure(args: &Args, round: usize, with_backlog: bool) -> anyhow::Result<BacklogRun> {
    let run =
        Run::prepare_with(args, Some(args.server.as_path()), args.busy_tenants, &busy::server_env()).await?;
    let (tenant, agent) = run.add_tenant_with_own_agent(BACKLOG_TEAM).await?;
    let seeded_in = match with_backlog {
        true => Some(seed::failed_events(&run, tenant, BACKLOG_TEAM, args.backlog_events).await?),
        false => None,
    };
    let events = busy::Events::sign(&run, args.busy_events);
    let window = Duration::from_secs(args.busy_seconds);
    seed::turn_on(&run, tenant).await?;
    let on = Instant::now();
    let live = busy::run(&run, &events, args.busy_connections, window, false).await?;
    let over = on.elapsed();
    let received = agent.received();
    let backlog = match seeded_in {
        Some(seeded_in) => Some(Backlog {
            seeded: args.backlog_events,
            seeded_in,
            redelivered: received.iter().map(|r| &r.webhook_id).collect::<HashSet<_>>().len(),
            events: received
                .iter()
                .filter_map(|r| r.external_event_id.as_ref())
                .collect::<HashSet<_>>()
                .len(),
            over,
            left: seed::left(&run, tenant).await?,
        }),
        None => None,
    };
    // The server stops before the backlog's agent does, so no redelivery in flight fails.
    run.finish().await?;
    drop(agent);
    Ok(BacklogRun { round, live, backlog })
}
