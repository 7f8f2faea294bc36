//! Printing a run's figures.

#![allow(clippy::print_stdout)]

use crate::Args;
use crate::floor::FloorResult;
use crate::load::ServiceResult;

pub struct Report {
    pub concurrency: usize,
    pub payload_bytes: usize,
    pub service: ServiceResult,
    pub floor: FloorResult,
    pub peak_rss_kib: Option<u64>,
    /// p50, p90, p99 of `/slack/events` as the server measured them (bucket bounds), ms.
    pub server_latency: Option<Vec<f64>>,
}

impl Report {
    /// Nothing lost, nothing doubled, nothing stranded.
    pub fn correct(&self) -> bool {
        let s = &self.service;
        s.lost == 0 && s.doubled_events == 0 && s.stranded == 0 && s.commands_dispatched == s.commands_acked
    }

    pub fn print(&self, args: &Args) {
        let s = &self.service;
        let ms = |micros: u64| micros as f64 / 1000.0;
        let unique_per_s = (s.numbered_acked + s.commands_acked) as f64 / s.handled_in.as_secs_f64();
        let numbered_per_s = s.numbered_acked as f64 / s.handled_in.as_secs_f64();
        let deliveries_per_s =
            s.statuses.iter().filter(|(code, _)| (200..300).contains(*code)).map(|(_, n)| n).sum::<u64>()
                as f64
                / s.answered_in.as_secs_f64();
        let floor_per_s = self.floor.events as f64 / self.floor.elapsed.as_secs_f64();
        let non_2xx: Vec<String> = s
            .statuses
            .iter()
            .filter(|(code, _)| !(200..300).contains(*code))
            .map(|(code, n)| if *code == 0 { format!("no answer: {n}") } else { format!("{code}: {n}") })
            .collect();

        println!(
            "== concurrency {} · payload {} B · {} unique deliveries ({:.0}% re-delivered 1-3x, {:.0}% commands) · {} tenants · pool {}",
            self.concurrency,
            self.payload_bytes,
            args.events,
            args.redeliver_share * 100.0,
            args.command_share * 100.0,
            args.tenants,
            format_args!("{}+{}", args.pool_size, args.background_pool_size)
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
            "          acknowledged deliveries/s {deliveries_per_s:.0} (until the last answer, {:.2} s)",
            s.answered_in.as_secs_f64()
        );
        println!(
            "          unique events/s {unique_per_s:.0}, numbered events/s {numbered_per_s:.0} (until the last dispatch, {:.2} s)",
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
        match self.peak_rss_kib {
            Some(kib) => println!("          server peak RSS {:.1} MiB", kib as f64 / 1024.0),
            None => println!("          server peak RSS unknown"),
        }
        println!(
            "floor     resolve+claim+complete events/s {floor_per_s:.0} ({} events in {:.2} s)",
            self.floor.events,
            self.floor.elapsed.as_secs_f64()
        );
        let f = &self.floor.ack_sql;
        println!(
            "          resolve+claim (the SQL in an acknowledgement) ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            ms(f.value_at_quantile(0.5)),
            ms(f.value_at_quantile(0.9)),
            ms(f.value_at_quantile(0.99)),
            ms(f.max())
        );
        println!(
            "ratio     numbered events handled/s ÷ floor = {:.2} (strict: end to end, re-deliveries and commands on top)",
            numbered_per_s / floor_per_s
        );
        println!("          acknowledged deliveries/s ÷ floor = {:.2}", deliveries_per_s / floor_per_s);
        println!(
            "verdict   {}",
            if self.correct() { "nothing lost, nothing doubled" } else { "LOST OR DOUBLED EVENTS" }
        );
        println!();
    }
}
