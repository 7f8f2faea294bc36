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
    /// A slash command, sent once.
    Command,
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
            let tenant = i % tenants.max(1);
            if rng.chance(commands) {
                return Item { tenant, kind: Kind::Command };
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
