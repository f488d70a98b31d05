//! How the cockpit learns that a live job's process ended. A process that dies changes nothing
//! on disk, so no file event says so: each live job's processes are watched by pidfd (see
//! `jobs::os::exits`), and the job is read again when the last of them ends. A job whose
//! processes cannot be watched so (no pid yet, pidfds refused or over budget) is polled: asked
//! after once a second, as every live job once was. Kept by the reads worker, beside the reads
//! that say which jobs are live.

use std::collections::HashMap;
use std::time::Duration;

use crate::jobs::JobId;
use crate::jobs::model::process::Processes;
use crate::jobs::os::exits::{ExitSet, ExitWaiter, Refusal, Watched};

use super::reads::Reads;
use super::worker::Worker;

struct Entry {
    processes: Processes,
    /// The pidfds of its processes still watched.
    tokens: Vec<u64>,
    /// Asked after on every tick: some process of it could not be watched by event.
    polled: bool,
}

/// The live jobs, and how the end of each is noticed.
pub struct ExitWatch {
    /// `None` where no epoll set could be made: every live job is polled.
    set: Option<ExitSet>,
    jobs: HashMap<JobId, Entry>,
    by_token: HashMap<u64, JobId>,
    /// Whether a refusal was logged (once is enough: it says why, not which job).
    refusal_logged: bool,
}

impl ExitWatch {
    pub fn new(set: Option<ExitSet>) -> ExitWatch {
        ExitWatch {
            set,
            jobs: HashMap::new(),
            by_token: HashMap::new(),
            refusal_logged: false,
        }
    }

    /// The job as just read: its processes watched while it is live (`Some`), forgotten once it
    /// is not. Returns whether it must be read again at once: none of its processes could be
    /// watched because each had ended meanwhile.
    pub fn update(&mut self, id: &JobId, live: Option<&Processes>) -> bool {
        let Some(processes) = live else {
            self.forget(id);
            return false;
        };
        if self.jobs.get(id).is_some_and(|e| e.processes == *processes) {
            return false;
        }
        self.forget(id);
        let mut entry = Entry {
            processes: processes.clone(),
            tokens: Vec::new(),
            // Nothing to watch yet: it is asked after until it has a process, or its start-up
            // grace is over.
            polled: !processes.is_known(),
        };
        for process in [&processes.main, &processes.agent].into_iter().flatten() {
            let watched = match &mut self.set {
                Some(set) => set.watch(process),
                None => Watched::Unwatchable(Refusal::Budget),
            };
            match watched {
                Watched::Watching(token) => {
                    entry.tokens.push(token);
                    self.by_token.insert(token, id.clone());
                }
                Watched::Ended => {}
                Watched::Unwatchable(why) => {
                    entry.polled = true;
                    self.log_refusal(why);
                }
            }
        }
        let ended = entry.tokens.is_empty() && !entry.polled;
        // Polled until the read says otherwise: whatever the read finds, it is not missed.
        entry.polled |= ended;
        self.jobs.insert(id.clone(), entry);
        ended
    }

    /// Forgets the jobs `keep` does not keep (directories gone).
    pub fn retain(&mut self, keep: impl Fn(&JobId) -> bool) {
        let gone: Vec<JobId> = self.jobs.keys().filter(|id| !keep(id)).cloned().collect();
        for id in gone {
            self.forget(&id);
        }
    }

    fn forget(&mut self, id: &JobId) {
        if let Some(entry) = self.jobs.remove(id) {
            for token in entry.tokens {
                self.by_token.remove(&token);
                if let Some(set) = &mut self.set {
                    set.unwatch(token);
                }
            }
        }
    }

    /// These watched processes ended: the jobs none of whose processes are left to watch, to
    /// be read again (a supervisor's end alone is not its job's while its agent lives on).
    pub fn ended(&mut self, tokens: &[u64]) -> Vec<JobId> {
        let mut read = Vec::new();
        for token in tokens {
            let Some(id) = self.by_token.remove(token) else {
                continue; // forgotten meanwhile
            };
            if let Some(set) = &mut self.set {
                set.unwatch(*token);
            }
            let Some(entry) = self.jobs.get_mut(&id) else {
                continue;
            };
            entry.tokens.retain(|t| t != token);
            if entry.tokens.is_empty() && !entry.polled {
                entry.polled = true;
                read.push(id);
            }
        }
        read
    }

    /// The polled jobs whose processes are gone, or are no longer theirs (or which have none
    /// yet): to be read again.
    pub fn polled_gone(&self) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|(_, e)| e.polled && !e.processes.is_alive())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The epoll set failed: from now on every live job is polled.
    pub fn poll_all(&mut self) {
        self.set = None;
        self.by_token.clear();
        for entry in self.jobs.values_mut() {
            entry.tokens.clear();
            entry.polled = true;
        }
    }

    /// Live jobs watched by event only, and polled ones.
    pub fn counts(&self) -> (usize, usize) {
        let polled = self.jobs.values().filter(|e| e.polled).count();
        (self.jobs.len() - polled, polled)
    }

    fn log_refusal(&mut self, why: Refusal) {
        if !self.refusal_logged {
            self.refusal_logged = true;
            let why = match why {
                Refusal::Budget => "no pidfd left under the limit of open files".to_string(),
                Refusal::Kernel(e) => format!("pidfd_open or epoll refused: {e}"),
            };
            tracing::info!("some live jobs' ends are polled once a second: {why}");
        }
    }
}

/// Starts the thread that waits for watched processes to end and hands their tokens to the
/// reads worker, which reads their jobs again.
pub fn start_waiter(waiter: ExitWaiter, reads: Worker<Reads>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("luzia-exits".into())
        .spawn(move || wait_loop(&waiter, &reads))
        .map(drop)
}

fn wait_loop(waiter: &ExitWaiter, reads: &Worker<Reads>) {
    loop {
        match waiter.wait(None::<Duration>) {
            Ok(tokens) if tokens.is_empty() => {}
            Ok(tokens) => reads.run(move |r| r.exited(&tokens)),
            Err(e) => {
                tracing::warn!("waiting for processes to end failed ({e}): they are polled");
                reads.run(Reads::exits_failed);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
