//! `doorman-loadgen`: measures Doorman's acknowledgement path under load and a retry storm,
//! against the PostgreSQL floor, in one run. `just bench` runs it; `docs/benchmarks.md`
//! explains the method and records the figures.
//!
//! For each configuration (concurrency × payload size) it: starts a fresh `doorman serve`
//! (release build) on loopback against a fresh database with tenants whose agent is this
//! process's fake agent; sends signed Events API deliveries, a share re-delivered 1–3 times
//! (some concurrently with the original, some after its answer) and a share of slash
//! commands; waits for every dispatch; checks nothing was lost or doubled; reads the
//! server's peak RSS; then drives the same SQL a numbered event costs (resolve, claim,
//! complete) straight at the database at the same concurrency: the floor.

mod floor;
mod load;
mod plan;
mod report;
mod setup;

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "doorman-loadgen",
    about = "Benchmark Doorman's acknowledgement path against the PostgreSQL floor"
)]
pub struct Args {
    /// The `doorman` binary to start (a release build).
    #[arg(long, default_value = "target/release/doorman")]
    pub server: PathBuf,
    /// A PostgreSQL server URL; a fresh `doorman_bench` database is created on it.
    #[arg(long, env = "TEST_DATABASE_URL", default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pub database_server: String,
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
    /// The server's background (completion) pool.
    #[arg(long, default_value_t = 4)]
    pub background_pool_size: u32,
    /// Seed for the delivery plan, so runs are comparable.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut failed_targets = false;
    for &concurrency in &args.concurrency {
        for &payload_bytes in &args.payload_bytes {
            let mut run = setup::Run::prepare(&args).await?;
            let service = load::run(&args, &run, concurrency, payload_bytes).await?;
            let server = run.server.take().expect("started by prepare");
            let peak_rss = server.peak_rss_kib();
            let server_latency = server.server_side_latency("events", &[0.5, 0.9, 0.99]).await;
            server.stop().await;
            let floor = floor::run(&args, &run, concurrency).await?;
            let report = report::Report {
                concurrency,
                payload_bytes,
                service,
                floor,
                peak_rss_kib: peak_rss,
                server_latency,
            };
            report.print(&args);
            failed_targets |= !report.correct();
            run.finish().await?;
        }
    }
    if failed_targets {
        anyhow::bail!("a run lost or doubled events (see above)");
    }
    Ok(())
}
