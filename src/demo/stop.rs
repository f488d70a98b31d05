//! The demo's agents stopped when the demo is quit: they are its own, simulated, and nobody
//! would stop them otherwise (they would run on for half an hour). Each goes through the real
//! kill path (`jobs::run::kill`: the stop recorded, SIGTERM to its supervisor, SIGKILL after the
//! grace), all at once, so quitting takes about as long as the slowest one.

use std::path::Path;
use std::time::Duration;

use chrono::Utc;

use crate::jobs::Job;
use crate::jobs::model::scan::scan;
use crate::jobs::model::stop::StopSource;
use crate::jobs::run::kill::{self, KillError};
use crate::jobs::run::queue;

/// How long a demo agent has after SIGTERM before it is killed: a simulated agent ends at
/// once, so this is short; a real agent's default is `kill::DEFAULT_GRACE`.
pub const GRACE: Duration = Duration::from_secs(2);

/// A supervisor that ends starts a queued task; a task started so is stopped in the next round.
const ROUNDS: usize = 3;

/// What stopping the demo's agents did.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Agents stopped.
    pub agents: usize,
    /// What could not be stopped, and why.
    pub failures: Vec<String>,
}

/// Stops every live job of the demo's jobs `root`, after taking what waits in its `queue` out
/// of it (so that nothing new starts as the agents end).
pub fn stop_agents(root: &Path, queue_dir: &Path) -> Stopped {
    let mut stopped = Stopped::default();
    for queued in queue::list(queue_dir).unwrap_or_default() {
        let _ = queue::cancel(queue_dir, &queued.id);
    }
    for _ in 0..ROUNDS {
        let live: Vec<Job> = match scan(root, Utc::now()) {
            Ok(jobs) => jobs
                .into_iter()
                .filter(|j| j.status.is_active() && !j.id.is_queued())
                .collect(),
            Err(e) => {
                stopped.failures.push(e.to_string());
                break;
            }
        };
        if live.is_empty() {
            break;
        }
        let results: Vec<Result<i32, KillError>> = std::thread::scope(|s| {
            let stopping: Vec<_> = live
                .iter()
                .map(|job| s.spawn(move || kill::kill(job, GRACE, StopSource::Tui)))
                .collect();
            stopping.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for result in results {
            match result {
                Ok(_) => stopped.agents += 1,
                // It ended by itself meanwhile: nothing to stop.
                Err(KillError::Finished(_) | KillError::NotRunning(_) | KillError::NoPid(_)) => {}
                Err(e) => stopped.failures.push(e.to_string()),
            }
        }
    }
    stopped
}
