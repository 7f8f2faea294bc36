//! The backlog shape's figures ([`crate::backlog`]): each run as the busy shape prints it with
//! what became of the backlog, then both runs of every round side by side, each round's
//! ratios (with a backlog ÷ without) and their medians, read against issue 41's acceptance.

use super::{BusyComparison, cpu_per, ms};
use crate::backlog::BacklogRun;
use crate::busy::BusyResult;

/// Issue 41's acceptance: live 2xx/s with a backlog at least this share of without it ...
const LEAST_RATE_RATIO: f64 = 0.9;
/// ... and the live p99 with a backlog at most this, in milliseconds.
const MOST_P99_MS: f64 = 20.0;

/// Every run of the backlog shape, in order: (a) then (b) in each round.
pub struct BacklogComparison {
    /// Events seeded in each run with a backlog.
    pub seeded: usize,
    pub runs: Vec<BacklogRun>,
}

fn label(run: &BacklogRun) -> &'static str {
    if run.backlog.is_some() { "backlog" } else { "no backlog" }
}

fn p50_ms(live: &BusyResult) -> f64 {
    ms(live.latency.value_at_quantile(0.5))
}

fn p99_ms(live: &BusyResult) -> f64 {
    ms(live.latency.value_at_quantile(0.99))
}

/// CPU per live event handled, µs (`None` when `/proc` was not readable).
fn cpu_us(spent: Option<std::time::Duration>, live: &BusyResult) -> Option<f64> {
    spent.map(|spent| crate::cpu::micros_per(spent, live.handled))
}

/// The middle value (the mean of the two middle ones for an even count); `None` for none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// One round's (b) ÷ (a).
struct Ratios {
    round: usize,
    rate: f64,
    p50: f64,
    p99: f64,
    server_cpu: Option<f64>,
    postgres_cpu: Option<f64>,
}

impl Ratios {
    fn of(without: &BusyResult, with: &BusyResult, round: usize) -> Self {
        let ratio = |b: Option<f64>, a: Option<f64>| b.zip(a).map(|(b, a)| b / a);
        Self {
            round,
            rate: with.ok_per_s() / without.ok_per_s(),
            p50: p50_ms(with) / p50_ms(without),
            p99: p99_ms(with) / p99_ms(without),
            server_cpu: ratio(cpu_us(with.spent.server, with), cpu_us(without.spent.server, without)),
            postgres_cpu: ratio(cpu_us(with.spent.postgres, with), cpu_us(without.spent.postgres, without)),
        }
    }
}

fn times(ratio: Option<f64>) -> String {
    ratio.map_or("-".to_owned(), |r| format!("{r:.2}×"))
}

impl BacklogComparison {
    pub fn print_run(run: &BacklogRun) {
        BusyComparison::print_run(label(run), run.round, &run.live);
        if let Some(b) = &run.backlog {
            println!(
                "backlog   {} failed events seeded in {:.1} s (before the window), all due once redelivery was on",
                b.seeded,
                b.seeded_in.as_secs_f64()
            );
            println!(
                "          the backlog tenant's agent took {} redeliveries (distinct webhook ids) of {} events in {:.1} s ({:.0}/s); {} left unhandled",
                b.redelivered,
                b.events,
                b.over.as_secs_f64(),
                b.redelivered_per_s(),
                b.left
            );
            println!();
        }
    }

    /// Each round's pair: (a) and the (b) that followed it.
    fn pairs(&self) -> Vec<(&BacklogRun, &BacklogRun)> {
        let without = self.runs.iter().filter(|r| r.backlog.is_none());
        let with = self.runs.iter().filter(|r| r.backlog.is_some());
        without.zip(with).filter(|(a, b)| a.round == b.round).collect()
    }

    pub fn print(&self) {
        println!(
            "== side by side · backlog (the busy load without and with {} due redeliveries of a second tenant)",
            self.seeded
        );
        println!(
            "| run | round | live 2xx/s | p50 ms | p99 ms | redeliveries taken (/s) | left | lost/doubled/stranded | CPU µs per live event: server / PostgreSQL |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for run in &self.runs {
            let r = &run.live;
            let (taken, left) = run.backlog.as_ref().map_or(("-".to_owned(), "-".to_owned()), |b| {
                (format!("{} ({:.0})", b.redelivered, b.redelivered_per_s()), b.left.to_string())
            });
            println!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {taken} | {left} | {}/{}/{} | {} / {} |",
                label(run),
                run.round,
                r.ok_per_s(),
                p50_ms(r),
                p99_ms(r),
                r.lost,
                r.doubled,
                r.stranded,
                cpu_per(r.spent.server, r.handled),
                cpu_per(r.spent.postgres, r.handled),
            );
        }
        let ratios: Vec<Ratios> =
            self.pairs().into_iter().map(|(a, b)| Ratios::of(&a.live, &b.live, a.round)).collect();
        println!();
        println!("backlog ÷ no backlog, each round:");
        println!(
            "| round | live 2xx/s | p50 | p99 | server CPU per live event | PostgreSQL CPU per live event |"
        );
        println!("|---|---|---|---|---|---|");
        for r in &ratios {
            println!(
                "| {} | {} | {} | {} | {} | {} |",
                r.round,
                times(Some(r.rate)),
                times(Some(r.p50)),
                times(Some(r.p99)),
                times(r.server_cpu),
                times(r.postgres_cpu)
            );
        }
        let median_of = |f: fn(&Ratios) -> Option<f64>| median(ratios.iter().filter_map(f).collect());
        println!(
            "medians over {} rounds: live 2xx/s {}, p50 {}, p99 {}, server CPU per live event {}, PostgreSQL CPU per live event {}",
            ratios.len(),
            times(median_of(|r| Some(r.rate))),
            times(median_of(|r| Some(r.p50))),
            times(median_of(|r| Some(r.p99))),
            times(median_of(|r| r.server_cpu)),
            times(median_of(|r| r.postgres_cpu)),
        );
        let rate = median_of(|r| Some(r.rate));
        let p99 = median(self.pairs().iter().map(|(_, b)| p99_ms(&b.live)).collect());
        if let (Some(rate), Some(p99)) = (rate, p99) {
            let verdict = |met: bool| if met { "met" } else { "NOT met" };
            println!(
                "issue 41's acceptance: live 2xx/s with a backlog {rate:.2}× without (at least {LEAST_RATE_RATIO:.2}×: {}); live p99 with a backlog {p99:.2} ms, the rounds' median (at most {MOST_P99_MS:.0} ms: {})",
                verdict(rate >= LEAST_RATE_RATIO),
                verdict(p99 <= MOST_P99_MS)
            );
        }
        println!();
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_two_middle_ones() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(vec![f64::NAN, 1.0]), Some(1.0), "a ratio of a run without figures is left out");
    }
}
