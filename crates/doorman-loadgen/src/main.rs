//! `doorman-loadgen`: measures Doorman's acknowledgement path under load and a retry storm,
//! against the PostgreSQL floor, in one run. `just bench` runs it; `docs/benchmarks.md`
//! explains the method and records the figures.
//!
//! Shapes (`--shape`): `mixed` (below), `busy` (connections sending unique events back to back
//! with an agent that answers at once, [`busy`]) and `overload` (the same with an agent that
//! holds every dispatch, so nearly every answer is a 503 "busy"); `backlog` (the busy load
//! without and with a second tenant's backlog of due redeliveries, side by side, [`backlog`]).
//!
//! For each configuration of the mixed shape (concurrency × payload size) it: starts a fresh `doorman serve`
//! (release build) on loopback against a fresh database with tenants whose agent is this
//! process's fake agent; sends signed Events API deliveries, a share re-delivered 1–3 times
//! (some concurrently with the original, some after its answer) and a share of slash
//! commands; waits for every dispatch; checks nothing was lost or doubled; reads the
//! server's peak RSS; then drives the same SQL a numbered event costs (resolve, claim,
//! complete) straight at the database at the same concurrency: the floor.

mod backlog;
mod busy;
mod cpu;
mod fixed;
mod floor;
mod load;
mod plan;
mod report;
mod setup;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::report::{BacklogComparison, BusyComparison, Comparison, Report, RunFigures};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "doorman-loadgen",
    about = "Benchmark Doorman's acknowledgement path against the PostgreSQL floor"
)]
pub struct Args {
    /// The `doorman` binary to start (a release build).
    #[arg(long, default_value = "target/release/doorman")]
    pub server: PathBuf,
    /// Another `doorman` binary (say, an earlier commit's release build) measured in the same
    /// run, alternating with `--server`: old, new, old, new, …
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Runs of each binary per configuration (default: 2 with --compare, else 1).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Seconds each edge path (url_verification, an unlinked workspace) is driven after the
    /// load; 0 skips them.
    #[arg(long, default_value_t = 5)]
    pub edge_seconds: u64,
    /// A PostgreSQL server URL; a fresh `doorman_bench` database is created on it.
    #[arg(long, env = "TEST_DATABASE_URL", default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pub database_server: String,
    /// With `--database-server` a Citus coordinator: its workers' server URLs (comma-separated).
    /// The bench database is made on every node with the extension, the workers are added, and
    /// each binary's `doorman migrate` distributes the receipts (ADR 22).
    #[arg(long, value_delimiter = ',')]
    pub citus_workers: Vec<String>,
    /// Unique deliveries per configuration (before re-deliveries).
    #[arg(long, default_value_t = 20_000)]
    pub events: usize,
    /// Concurrent requests in flight; a comma-separated list runs each.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub concurrency: Vec<usize>,
    /// Events API payload size in bytes; a comma-separated list runs each.
    #[arg(long, value_delimiter = ',', default_value = "1024")]
    pub payload_bytes: Vec<usize>,
    /// Share of numbered events re-delivered 1 to 3 times.
    #[arg(long, default_value_t = 0.3)]
    pub redeliver_share: f64,
    /// Share of unique deliveries that are slash commands (unnumbered).
    #[arg(long, default_value_t = 0.05)]
    pub command_share: f64,
    /// Tenants (each with one workspace) the events are spread over.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub tenants: u16,
    /// The server's acknowledgement pool; the floor gets this plus the background pool.
    #[arg(long, default_value_t = 8)]
    pub pool_size: u32,
    /// The server's background pool (completions and failures).
    #[arg(long, default_value_t = 4)]
    pub background_pool_size: u32,
    /// Extra environment for the server, `KEY=VALUE` (repeatable), e.g. `TOKIO_WORKER_THREADS=1`.
    #[arg(long = "server-env")]
    pub server_env: Vec<String>,
    /// Seed for the delivery plan, so runs are comparable.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Which loads to run, in order: `mixed`, `busy`, `overload`, `backlog` (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "mixed,busy")]
    pub shape: Vec<Shape>,
    /// The busy, overload and backlog shapes: connections, each sending as soon as it is
    /// answered.
    #[arg(long, default_value_t = 64)]
    pub busy_connections: usize,
    /// The busy, overload and backlog shapes: unique pre-signed events available to send.
    #[arg(long, default_value_t = 60_000)]
    pub busy_events: usize,
    /// The busy, overload and backlog shapes: seconds the connections send.
    #[arg(long, default_value_t = 8)]
    pub busy_seconds: u64,
    /// The busy, overload and backlog shapes: tenants (the events go to the first).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub busy_tenants: u16,
    /// The backlog shape: failed events of the backlog tenant, all due at once, in each run
    /// with a backlog. The shape measures `--server` alone (`--compare` is not used).
    #[arg(long, default_value_t = 10_000)]
    pub backlog_events: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    Mixed,
    Busy,
    Overload,
    Backlog,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // Each binary under a label; with --compare the earlier one goes first in every round.
    let mut binaries = vec![("new", args.server.clone())];
    if let Some(old) = &args.compare {
        binaries.insert(0, ("old", old.clone()));
    }
    let rounds = args.rounds.unwrap_or(if args.compare.is_some() { 2 } else { 1 }).max(1);
    let mut failed_targets = false;
    for shape in args.shape.clone() {
        failed_targets |= match shape {
            Shape::Mixed => !mixed(&args, &binaries, rounds).await?,
            Shape::Busy => !busy(&args, &binaries, rounds, false).await?,
            Shape::Overload => !busy(&args, &binaries, rounds, true).await?,
            Shape::Backlog => !backlog_compare(&args, rounds).await?,
        };
    }
    if failed_targets {
        anyhow::bail!("a run lost or doubled events (see above)");
    }
    Ok(())
}

/// The backlog shape: both runs ([`backlog::measure`]), `rounds` times, then the side-by-side
/// table. True when no live event was lost or doubled.
async fn backlog_compare(args: &Args, rounds: usize) -> anyhow::Result<bool> {
    let mut comparison = BacklogComparison { seeded: args.backlog_events, runs: Vec::new() };
    for round in 1..=rounds {
        for with_backlog in [false, true] {
            let run = backlog::measure(args, round, with_backlog).await?;
            BacklogComparison::print_run(&run);
            comparison.runs.push(run);
        }
    }
    comparison.print();
    Ok(comparison.runs.iter().all(|run| run.live.correct()))
}

/// The busy or overload shape, each binary in turn, `rounds` times. True when nothing was
/// lost or doubled.
async fn busy(
    args: &Args,
    binaries: &[(&'static str, PathBuf)],
    rounds: usize,
    overload: bool,
) -> anyhow::Result<bool> {
    let mut comparison = BusyComparison { overload, runs: Vec::new() };
    let env = busy::server_env();
    for round in 1..=rounds {
        for (label, binary) in binaries {
            let run = setup::Run::prepare_with(args, Some(binary), args.busy_tenants, &env).await?;
            let window = Duration::from_secs(args.busy_seconds);
            let events = busy::Events::sign(&run, args.busy_events);
            let result = busy::run(&run, &events, args.busy_connections, window, overload).await?;
            run.finish().await?;
            BusyComparison::print_run(label, round, &result);
            comparison.runs.push((label, round, result));
        }
    }
    comparison.print();
    Ok(comparison.runs.iter().all(|(_, _, r)| r.correct()))
}

/// The mixed shape over every configuration. True when nothing was lost or doubled.
async fn mixed(args: &Args, binaries: &[(&'static str, PathBuf)], rounds: usize) -> anyhow::Result<bool> {
    let mut failed_targets = false;
    for &concurrency in &args.concurrency {
        for &payload_bytes in &args.payload_bytes {
            let mut comparison = Comparison::new(concurrency, payload_bytes);
            for round in 1..=rounds {
                for (label, binary) in binaries {
                    let figures = measure(args, binary, label, round, concurrency, payload_bytes).await?;
                    failed_targets |= !figures.report.correct();
                    comparison.runs.push(figures);
                }
            }
            let run = setup::Run::prepare(args, None).await?;
            comparison.floor = Some(floor::run(args, &run, concurrency).await?);
            run.finish().await?;
            comparison.print(args);
        }
    }
    Ok(!failed_targets)
}

/// One run: a fresh database and server, the load, then the edge paths.
async fn measure(
    args: &Args,
    binary: &std::path::Path,
    label: &'static str,
    round: usize,
    concurrency: usize,
    payload_bytes: usize,
) -> anyhow::Result<RunFigures> {
    let mut run = setup::Run::prepare(args, Some(binary)).await?;
    let service = load::run(args, &run, concurrency, payload_bytes).await?;
    let server = run.server.take().expect("started by prepare");
    // Read before the edge paths, so they describe the load alone.
    let peak_rss_kib = server.peak_rss_kib();
    let server_latency = server.server_side_latency("events", &[0.5, 0.9, 0.99]).await;
    let (url_verification, unlinked) = if args.edge_seconds > 0 {
        let seconds = Duration::from_secs(args.edge_seconds);
        let url_verification =
            fixed::run(server.base(), concurrency, fixed::url_verification(), seconds).await?;
        let unlinked = fixed::run(server.base(), concurrency, fixed::unlinked_event(), seconds).await?;
        (Some(url_verification), Some(unlinked))
    } else {
        (None, None)
    };
    server.stop().await;
    run.finish().await?;
    let report = Report {
        label,
        round,
        concurrency,
        payload_bytes,
        service,
        peak_rss_kib,
        server_latency,
        url_verification,
        unlinked,
    };
    report.print(args);
    Ok(RunFigures::from(report))
}
