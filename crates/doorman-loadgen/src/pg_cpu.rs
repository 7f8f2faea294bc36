//! PostgreSQL's CPU time, read from `/proc`: the user and system time of every `postgres`
//! process, plus what each collected from its children that exited (backends end with their
//! connections and are reaped by the postmaster). Sampled before and after a run, the
//! difference is what the database spent on it. Linux only (`None` elsewhere); every
//! PostgreSQL on the machine counts, so nothing else should use one during a benchmark.

use std::time::Duration;

/// Clock ticks per second of `/proc/*/stat` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SECOND: u64 = 100;

/// The CPU time all `postgres` processes have used so far.
pub fn sample() -> Option<Duration> {
    let mut ticks = 0u64;
    let mut seen = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some(used) = postgres_ticks(&stat) {
            ticks += used;
            seen = true;
        }
    }
    seen.then(|| Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

/// A process's `utime + stime + cutime + cstime` when its command is `postgres`.
fn postgres_ticks(stat: &str) -> Option<u64> {
    // `pid (comm) state ppid …`: the command may hold spaces and parentheses; the fields after
    // the last `)` are fixed: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let (head, rest) = stat.rsplit_once(')')?;
    if head.split_once('(')?.1 != "postgres" {
        return None;
    }
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field n is at index n - 3.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(field(14)? + field(15)? + field(16)? + field(17)?)
}

/// `spent` spread over `events`, in microseconds.
pub fn micros_per(spent: Duration, events: usize) -> f64 {
    spent.as_secs_f64() * 1e6 / events.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_process_counts_its_own_and_its_reaped_childrens_time() {
        let stat = "812 (postgres) S 1 812 812 0 -1 4194560 2000 50 0 0 120 30 400 100 20 0 1 0 5000 1 2";
        assert_eq!(postgres_ticks(stat), Some(120 + 30 + 400 + 100));
        assert_eq!(postgres_ticks("9 (bash) S 1 9 9 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 1 1 1"), None);
        assert_eq!(postgres_ticks("garbage"), None);
    }
}
