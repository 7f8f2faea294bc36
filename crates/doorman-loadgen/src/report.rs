//! Printing the figures: each run as it ends, then per configuration the floor and a table
//! of every run side by side (with `--compare`, the earlier binary's runs beside the new).

#![allow(clippy::print_stdout)]

mod backlog;

pub use backlog::BacklogComparison;

use crate::Args;
use crate::busy::BusyResult;
use crate::cpu;
use crate::fixed::FixedResult;
use crate::floor::FloorResult;
use crate::load::ServiceResult;

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// `spent` per event in µs, as a table cell (`-` when `/proc` was not readable).
fn cpu_per(spent: Option<std::time::Duration>, events: usize) -> String {
    spent.map_or("-".to_owned(), |s| format!("{:.0}", cpu::micros_per(s, events)))
}

/// One run of one binary.
pub struct Report {
    pub label: &'static str,
    pub round: usize,
    pub concurrency: usize,
    pub payload_bytes: usize,
    pub service: ServiceResult,
    pub peak_rss_kib: Option<u64>,
    /// p50, p90, p99 of `/slack/events` as the server measured them (bucket bounds), ms.
    pub server_latency: Option<Vec<f64>>,
    pub url_verification: Option<FixedResult>,
    pub unlinked: Option<FixedResult>,
}

impl Report {
    /// Nothing lost, nothing doubled, nothing stranded.
    pub fn correct(&self) -> bool {
        let s = &self.service;
        s.lost == 0 && s.doubled_events == 0 && s.stranded == 0 && s.commands_dispatched == s.commands_acked
    }

    fn acknowledged(&self) -> u64 {
        self.service.statuses.iter().filter(|(code, _)| (200..300).contains(*code)).map(|(_, n)| n).sum()
    }

    fn acknowledged_per_s(&self) -> f64 {
        self.acknowledged() as f64 / self.service.answered_in.as_secs_f64()
    }

    fn numbered_per_s(&self) -> f64 {
        self.service.numbered_acked as f64 / self.service.handled_in.as_secs_f64()
    }

    pub fn print(&self, args: &Args) {
        let s = &self.service;
        let non_2xx: Vec<String> = s
            .statuses
            .iter()
            .filter(|(code, _)| !(200..300).contains(*code))
            .map(|(code, n)| if *code == 0 { format!("no answer: {n}") } else { format!("{code}: {n}") })
            .collect();
        println!(
            "== {} (round {}) · concurrency {} · payload {} B · {} unique deliveries ({:.0}% re-delivered 1-3x, {:.0}% commands) · {} tenants · pool {}+{}",
            self.label,
            self.round,
            self.concurrency,
            self.payload_bytes,
            args.events,
            args.redeliver_share * 100.0,
            args.command_share * 100.0,
            args.tenants,
            args.pool_size,
            args.background_pool_size,
        );
        println!(
            "service   deliveries sent {}  non-2xx [{}]",
            s.deliveries,
            if non_2xx.is_empty() { "none".into() } else { non_2xx.join(", ") }
        );
        println!(
            "          ack latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            ms(s.latency.value_at_quantile(0.5)),
            ms(s.latency.value_at_quantile(0.9)),
            ms(s.latency.value_at_quantile(0.99)),
            ms(s.latency.max())
        );
        if let Some(q) = &self.server_latency {
            println!(
                "          as the server measured it (histogram bounds) ms: p50 <= {:.1}  p90 <= {:.1}  p99 <= {:.1}",
                q[0], q[1], q[2]
            );
        }
        println!(
            "          acknowledged deliveries/s {:.0} (until the last answer, {:.2} s)",
            self.acknowledged_per_s(),
            s.answered_in.as_secs_f64()
        );
        println!(
            "          numbered events handled/s {:.0} (until the last dispatch, {:.2} s)",
            self.numbered_per_s(),
            s.handled_in.as_secs_f64()
        );
        println!(
            "          numbered acked {}  lost {}  doubled {} (+{} dispatches)  stranded {}  failed {}  commands acked {} dispatched {}",
            s.numbered_acked,
            s.lost,
            s.doubled_events,
            s.extra_dispatches,
            s.stranded,
            s.failed,
            s.commands_acked,
            s.commands_dispatched
        );
        if let Some(spent) = s.pg_cpu {
            println!(
                "database  PostgreSQL CPU {:.0} ms: {:.0} µs per acknowledged delivery, {:.0} µs per numbered event",
                spent.as_secs_f64() * 1000.0,
                cpu::micros_per(spent, self.acknowledged() as usize),
                cpu::micros_per(spent, s.numbered_acked),
            );
        }
        match self.peak_rss_kib {
            Some(kib) => println!("          server peak RSS {:.1} MiB", kib as f64 / 1024.0),
            None => println!("          server peak RSS unknown"),
        }
        for (name, fixed) in
            [("url_verification", &self.url_verification), ("unlinked workspace", &self.unlinked)]
        {
            if let Some(f) = fixed {
                let other: u64 = f.statuses.iter().filter(|(code, _)| **code != 200).map(|(_, n)| n).sum();
                println!(
                    "edge      {name}: answers/s {:.0}  p50 {:.2} ms  p99 {:.2} ms  (non-200: {other})",
                    f.per_second(),
                    ms(f.latency.value_at_quantile(0.5)),
                    ms(f.latency.value_at_quantile(0.99)),
                );
            }
        }
        if let (Some(url), Some(unlinked)) = (&self.url_verification, &self.unlinked) {
            println!(
                "          unlinked ÷ url_verification = {:.2}",
                unlinked.per_second() / url.per_second()
            );
        }
        println!(
            "verdict   {}",
            if self.correct() { "nothing lost, nothing doubled" } else { "LOST OR DOUBLED EVENTS" }
        );
        println!();
    }
}

/// The figures of one run that the side-by-side table shows.
pub struct RunFigures {
    pub report: Report,
    acknowledged_per_s: f64,
    numbered_per_s: f64,
}

impl From<Report> for RunFigures {
    fn from(report: Report) -> Self {
        Self {
            acknowledged_per_s: report.acknowledged_per_s(),
            numbered_per_s: report.numbered_per_s(),
            report,
        }
    }
}

/// Every run of one configuration, and the floor measured after them.
pub struct Comparison {
    concurrency: usize,
    payload_bytes: usize,
    pub runs: Vec<RunFigures>,
    pub floor: Option<FloorResult>,
}

impl Comparison {
    pub fn new(concurrency: usize, payload_bytes: usize) -> Self {
        Self { concurrency, payload_bytes, runs: Vec::new(), floor: None }
    }

    pub fn print(&self, _args: &Args) {
        println!("== side by side · concurrency {} · payload {} B", self.concurrency, self.payload_bytes);
        let floor_per_s = self.floor.as_ref().map(|f| f.events as f64 / f.elapsed.as_secs_f64());
        if let Some(f) = &self.floor {
            println!(
                "floor     resolve+claim+complete events/s {:.0} ({} events in {:.2} s); resolve+claim ms: p50 {:.2}  p99 {:.2}; PostgreSQL CPU {} µs per event",
                floor_per_s.unwrap_or(f64::NAN),
                f.events,
                f.elapsed.as_secs_f64(),
                ms(f.ack_sql.value_at_quantile(0.5)),
                ms(f.ack_sql.value_at_quantile(0.99)),
                cpu_per(f.pg_cpu, f.events),
            );
        }
        println!(
            "| binary | round | acked deliveries/s | p50 ms | p99 ms | numbered handled/s ÷ floor | lost/doubled/stranded | peak RSS MiB | PostgreSQL CPU µs per numbered event | url_verification/s | unlinked/s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for run in &self.runs {
            let r = &run.report;
            let s = &r.service;
            let rate = |f: &Option<FixedResult>| {
                f.as_ref().map_or("-".to_owned(), |f| format!("{:.0}", f.per_second()))
            };
            println!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {} | {}/{}/{} | {} | {} | {} | {} |",
                r.label,
                r.round,
                run.acknowledged_per_s,
                ms(s.latency.value_at_quantile(0.5)),
                ms(s.latency.value_at_quantile(0.99)),
                floor_per_s.map_or("-".to_owned(), |f| format!("{:.2}", run.numbered_per_s / f)),
                s.lost,
                s.doubled_events,
                s.stranded,
                r.peak_rss_kib.map_or("-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0)),
                cpu_per(s.pg_cpu, s.numbered_acked),
                rate(&r.url_verification),
                rate(&r.unlinked),
            );
        }
        let mean = |label: &str| {
            let rates: Vec<f64> =
                self.runs.iter().filter(|r| r.report.label == label).map(|r| r.acknowledged_per_s).collect();
            (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
        };
        if let (Some(old), Some(new)) = (mean("old"), mean("new")) {
            println!("new ÷ old acknowledged deliveries/s (means of the rounds) = {:.2}", new / old);
        }
        println!();
    }
}

/// The busy shape's runs side by side ([`crate::busy`]).
pub struct BusyComparison {
    pub overload: bool,
    pub runs: Vec<(&'static str, usize, BusyResult)>,
}

impl BusyComparison {
    pub fn print_run(label: &str, round: usize, r: &BusyResult) {
        println!(
            "== {label} (round {round}) · {} shape · {} connections back to back · {:.1} s",
            if r.overload { "overload (agent holds every dispatch)" } else { "busy" },
            r.connections,
            r.window.as_secs_f64()
        );
        let statuses: Vec<String> = r.statuses.iter().map(|(code, n)| format!("{code}: {n}")).collect();
        let reasons: Vec<String> = r.unavailable.iter().map(|(why, n)| format!("{why}: {n}")).collect();
        println!(
            "answers   {} [{}]  503 by reason [{}]",
            r.answered(),
            statuses.join(", "),
            if reasons.is_empty() { "none".into() } else { reasons.join(", ") }
        );
        println!(
            "          2xx/s {:.0}  503 busy/s {:.0}  latency ms: p50 {:.2}  p99 {:.2}  max {:.2}",
            r.ok_per_s(),
            r.busy_per_s(),
            ms(r.latency.value_at_quantile(0.5)),
            ms(r.latency.value_at_quantile(0.99)),
            ms(r.latency.max())
        );
        println!(
            "          acknowledged {}  handled {}  lost {}  doubled {}  stranded {}  server log lines {}",
            r.acknowledged, r.handled, r.lost, r.doubled, r.stranded, r.log_lines
        );
        let s = &r.spent;
        println!(
            "cpu       µs per handled event: server {}  PostgreSQL {}  agent {}  load generator {}",
            cpu_per(s.server, r.handled),
            cpu_per(s.postgres, r.handled),
            cpu_per(s.agent, r.handled),
            cpu_per(s.loadgen, r.handled)
        );
        println!(
            "          µs per answer: server {}  PostgreSQL {}",
            cpu_per(s.server, r.answered() as usize),
            cpu_per(s.postgres, r.answered() as usize)
        );
        println!(
            "          server peak RSS {}",
            r.peak_rss_kib.map_or("unknown".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
        println!(
            "verdict   {}",
            if r.correct() { "nothing lost, nothing doubled" } else { "LOST OR DOUBLED EVENTS" }
        );
        println!();
    }

    pub fn print(&self) {
        if self.overload {
            println!("== side by side · overload (the agent holds every dispatch)");
            println!(
                "| binary | round | answers/s | 503 busy/s | p99 ms | server CPU µs per answer | PostgreSQL CPU µs per answer | server log lines |"
            );
            println!("|---|---|---|---|---|---|---|---|");
            for (label, round, r) in &self.runs {
                println!(
                    "| {label} | {round} | {:.0} | {:.0} | {:.2} | {} | {} | {} |",
                    r.answered() as f64 / r.window.as_secs_f64(),
                    r.busy_per_s(),
                    ms(r.latency.value_at_quantile(0.99)),
                    cpu_per(r.spent.server, r.answered() as usize),
                    cpu_per(r.spent.postgres, r.answered() as usize),
                    r.log_lines
                );
            }
        } else {
            println!("== side by side · busy (connections back to back, the agent answers at once)");
            println!(
                "| binary | round | 2xx/s | p50 ms | p99 ms | 503 by reason | handled | lost/doubled/stranded | peak RSS MiB | CPU µs per handled event: server / PostgreSQL / agent / load generator | server log lines |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|");
            for (label, round, r) in &self.runs {
                let reasons: Vec<String> =
                    r.unavailable.iter().map(|(why, n)| format!("{why} {n}")).collect();
                println!(
                    "| {label} | {round} | {:.0} | {:.2} | {:.2} | {} | {} | {}/{}/{} | {} | {} / {} / {} / {} | {} |",
                    r.ok_per_s(),
                    ms(r.latency.value_at_quantile(0.5)),
                    ms(r.latency.value_at_quantile(0.99)),
                    if reasons.is_empty() { "0".into() } else { reasons.join(", ") },
                    r.handled,
                    r.lost,
                    r.doubled,
                    r.stranded,
                    r.peak_rss_kib.map_or("-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0)),
                    cpu_per(r.spent.server, r.handled),
                    cpu_per(r.spent.postgres, r.handled),
                    cpu_per(r.spent.agent, r.handled),
                    cpu_per(r.spent.loadgen, r.handled),
                    r.log_lines
                );
            }
        }
        let mean = |label: &str| {
            let rates: Vec<f64> = self
                .runs
                .iter()
                .filter(|(l, _, _)| *l == label)
                .map(|(_, _, r)| if self.overload { r.busy_per_s() } else { r.ok_per_s() })
                .collect();
            (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
        };
        if let (Some(old), Some(new)) = (mean("old"), mean("new")) {
            let what = if self.overload { "503 busy/s" } else { "2xx/s" };
            println!("new ÷ old {what} (means of the rounds) = {:.2}", new / old);
        }
        println!();
    }
}
