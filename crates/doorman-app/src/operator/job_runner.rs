//! The admin process's background runner of replay jobs: it takes the jobs made here at once
//! and those made by other processes (or left by one that stopped) within a second, and runs
//! them one at a time ([`crate::replays::Replays::run_next`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::state::AdminState;

/// How often an idle runner looks for a job another process made.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The admin process's background runner of replay jobs.
#[derive(Debug)]
pub struct Runner {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Runner {
    /// Runs jobs until stopped: those made here at once, those made elsewhere (or left by a
    /// process that stopped) within a second.
    pub fn spawn(state: Arc<AdminState>) -> Self {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                if *stopped.borrow() {
                    return;
                }
                let ran = match state.replays.run_next(&state.operator).await {
                    Ok(ran) => ran,
                    Err(error) => {
                        tracing::warn!(error = %error, "a replay job could not be run; trying again shortly");
                        false
                    }
                };
                if ran {
                    continue;
                }
                tokio::select! {
                    () = state.replays.job_made_here() => {}
                    () = tokio::time::sleep(LOOK_EVERY) => {}
                    _ = stopped.changed() => return,
                }
            }
        });
        Self { stop, task }
    }

    /// Stops taking jobs; a job being run is left after the event in hand (its hold lapses and
    /// another process, or this one after a restart, resumes it), within `grace`.
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            tracing::warn!("a replay job was still running at shutdown; another process will resume it");
        }
    }
}
