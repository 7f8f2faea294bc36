//! CPU time, read from `/proc` (Linux only; `None` elsewhere), sampled before and after a run:
//! the difference is what each party spent on it.
//!
//! - PostgreSQL: the user and system time of every `postgres` process, plus what each
//!   collected from its children that exited (backends end with their connections and are
//!   reaped by the postmaster). Every PostgreSQL on the machine counts, so nothing else should
//!   use one during a benchmark.
//! - A process (the server under measurement) by its pid.
//! - This process's threads, split by name: the fake agent's (actix names its server threads
//!   `actix-…`, and nothing else in the load generator runs actix) and the rest, the load
//!   generator itself.

use std::time::Duration;

/// Clock ticks per second of `/proc/*/stat` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SECOND: u64 = 100;

/// The prefix of the fake agent's thread names (`actix-server worker 0`, …), as `comm` keeps
/// them (15 bytes).
const AGENT_THREADS: &str = "actix-";

/// The CPU time all `postgres` processes have used so far.
pub fn postgres() -> Option<Duration> {
    let mut ticks = 0u64;
    let mut seen = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some((comm, used)) = ticks_of(&stat, true)
            && comm == "postgres"
        {
            ticks += used;
            seen = true;
        }
    }
    seen.then(|| from_ticks(ticks))
}

/// The CPU time process `pid` has used so far (its own, not its children's).
pub fn process(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    ticks_of(&stat, false).map(|(_, used)| from_ticks(used))
}

/// This process's CPU time so far: the fake agent's threads, and all the others.
#[derive(Debug, Clone, Copy, Default)]
pub struct Own {
    pub agent: Duration,
    pub loadgen: Duration,
}

impl Own {
    pub fn sample() -> Option<Self> {
        let (mut agent, mut rest) = (0u64, 0u64);
        for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            let Some((comm, used)) = ticks_of(&stat, false) else { continue };
            if comm.starts_with(AGENT_THREADS) {
                agent += used;
            } else {
                rest += used;
            }
        }
        Some(Self { agent: from_ticks(agent), loadgen: from_ticks(rest) })
    }

    /// What was spent since `before`.
    pub fn since(self, before: Self) -> Self {
        Self {
            agent: self.agent.saturating_sub(before.agent),
            loadgen: self.loadgen.saturating_sub(before.loadgen),
        }
    }
}

fn from_ticks(ticks: u64) -> Duration {
    Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND)
}

/// A `stat` line's command and `utime + stime` (`+ cutime + cstime` with `children`).
fn ticks_of(stat: &str, children: bool) -> Option<(&str, u64)> {
    // `pid (comm) state ppid …`: the command may hold spaces and parentheses; the fields after
    // the last `)` are fixed: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field n is at index n - 3.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let own = field(14)? + field(15)?;
    Some((comm, if children { own + field(16)? + field(17)? } else { own }))
}

/// `spent` spread over `events`, in microseconds.
pub fn micros_per(spent: Duration, events: usize) -> f64 {
    spent.as_secs_f64() * 1e6 / events.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_counts_its_own_time_and_with_children_its_reaped_childrens() {
        let stat = "812 (postgres) S 1 812 812 0 -1 4194560 2000 50 0 0 120 30 400 100 20 0 1 0 5000 1 2";
        assert_eq!(ticks_of(stat, true), Some(("postgres", 120 + 30 + 400 + 100)));
        assert_eq!(ticks_of(stat, false), Some(("postgres", 120 + 30)));
        let odd = "9 (actix-server wo) S 1 9 9 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1";
        assert_eq!(ticks_of(odd, false), Some(("actix-server wo", 11)));
        assert_eq!(ticks_of("garbage", false), None);
    }
}
