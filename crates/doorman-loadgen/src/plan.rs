//! The delivery plan: which unique deliveries there are and how each is re-delivered.
//! Deterministic for a seed, so two runs send the same traffic.

/// One unique delivery and its re-deliveries.
#[derive(Debug, Clone)]
pub struct Item {
    pub tenant: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// An Events API callback, with re-deliveries sent alongside the original and after it.
    Event { id: String, concurrent: u32, later: u32 },
    /// A slash command, sent once, with its own trigger id.
    Command { trigger: String },
}

pub fn build(
    run_id: &str,
    events: usize,
    tenants: usize,
    redeliver: f64,
    commands: f64,
    seed: u64,
) -> Vec<Item> {
    let mut rng = XorShift(seed.max(1));
    (0..events)
        .map(|i| {
            let tenant = i % tenants;
            if rng.chance(commands) {
                return Item { tenant, kind: Kind::Command { trigger: format!("{run_id}.{i}") } };
            }
            let (mut concurrent, mut later) = (0, 0);
            if rng.chance(redeliver) {
                for _ in 0..(1 + rng.below(3)) {
                    if rng.chance(0.5) { concurrent += 1 } else { later += 1 }
                }
            }
            Item { tenant, kind: Kind::Event { id: format!("Ev{run_id}{i:07}"), concurrent, later } }
        })
        .collect()
}

/// xorshift64: enough randomness for a traffic mix, no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }

    fn below(&mut self, n: u64) -> u32 {
        (self.next() % n) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(items: &[Item]) -> (usize, usize, u32) {
        let commands = items.iter().filter(|i| matches!(i.kind, Kind::Command { .. })).count();
        let (mut redelivered, mut copies) = (0, 0);
        for item in items {
            if let Kind::Event { concurrent, later, .. } = item.kind
                && concurrent + later > 0
            {
                redelivered += 1;
                copies += concurrent + later;
                assert!((1..=3).contains(&(concurrent + later)), "1 to 3 re-deliveries");
            }
        }
        (commands, redelivered, copies)
    }

    #[test]
    fn the_plan_is_deterministic_for_a_seed_and_has_the_asked_shares() {
        let a = build("r", 20_000, 16, 0.3, 0.05, 7);
        let b = build("r", 20_000, 16, 0.3, 0.05, 7);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "same seed, same traffic");
        let (commands, redelivered, copies) = shares(&a);
        let events = a.len() - commands;
        assert!((900..1100).contains(&commands), "about 5% commands: {commands}");
        let share = redelivered as f64 / events as f64;
        assert!((0.28..0.32).contains(&share), "about 30% re-delivered: {share}");
        assert!(copies as usize > redelivered, "some events re-delivered more than once");
        assert!(a.iter().all(|i| i.tenant < 16));
    }

    #[test]
    fn event_ids_are_unique_within_a_run() {
        let items = build("r", 5_000, 4, 0.3, 0.05, 1);
        let ids: std::collections::HashSet<_> = items
            .iter()
            .filter_map(|i| if let Kind::Event { id, .. } = &i.kind { Some(id.clone()) } else { None })
            .collect();
        let events = items.iter().filter(|i| matches!(i.kind, Kind::Event { .. })).count();
        assert_eq!(ids.len(), events);
    }
}
