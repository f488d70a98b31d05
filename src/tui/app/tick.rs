//! The once-a-second tick: the pids that are polled checked, the alarms whose time has come
//! worked out again, the wall display's rotation. At rest it costs what is due, not what is
//! listed: a process's end is an event (see `effects/exits.rs`), and an alarm is worked out
//! again when its job is read or its next threshold comes.

use super::{App, Mode};
use crate::jobs::Status;
use crate::tui::effect::Effect;

impl App {
    pub(super) fn on_tick(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if !self.output_grew.is_empty() {
            effects.push(Effect::ReadJobs(self.output_grew.drain().collect()));
        }
        // A process that dies changes nothing on disk. Its end is an event where the kernel
        // gives a pidfd for it; the reads worker asks after the others' once a second.
        // Another host's processes are its own to check.
        let local = self.jobs.values().filter(|j| j.id.host().is_none());
        if local
            .clone()
            .any(|j| matches!(j.status, Status::Running | Status::Waiting))
        {
            effects.push(Effect::CheckAlive);
        }
        // While agents run a slot may free up or a task be queued from elsewhere; the queue is
        // also watched, but its directory may not have existed when the cockpit started.
        // A job the usage limit stopped is continued at the reset by the queue's starter.
        let limit_reset = |j: &crate::jobs::Job| {
            j.status == Status::Limited
                && j.continued_by().is_none()
                && j.limit_resets_at()
                    .is_some_and(|t| t + crate::jobs::model::limit::RESUME_MARGIN <= self.now)
        };
        if local
            .clone()
            .any(|j| j.status.is_active() || limit_reset(j))
        {
            effects.push(Effect::SyncQueue);
        }
        // The usage limit's hold lapses at its reset, whoever removes its file: the queue is
        // listed again (its tasks start now) and the header and the rows stop saying it.
        let lapsed = self.holds.standing(self.now).count() < self.holds.0.len();
        if lapsed {
            let now = self.now;
            self.holds.0.retain(|h| h.stands(now));
            self.changes += 1;
            if !effects.contains(&Effect::SyncQueue) {
                effects.push(Effect::SyncQueue);
            }
        }
        // Only moving elapsed times, an alarm raised or cleared, or a rotation need a frame.
        let (alarms_changed, bell) = self.refresh_alarms(self.now, Some(&[]));
        effects.extend(bell);
        if alarms_changed {
            // The alert column shows them.
            self.changes += 1;
        }
        // A host down, or jobs stale: how long for is on screen.
        self.dirty = self.view_has_active() || alarms_changed || lapsed || self.hosts_aging();
        effects.extend(self.cycle());
        effects
    }

    fn view_has_active(&self) -> bool {
        self.table
            .view
            .iter()
            .any(|id| self.jobs.get(id).is_some_and(|j| j.status.is_active()))
    }

    /// The wall display rotates through the jobs that are alive: they are what it is for.
    fn cycle(&mut self) -> Vec<Effect> {
        let Some(every) = self.opts.cycle_secs else {
            return vec![];
        };
        self.cycle_elapsed += 1;
        if self.cycle_elapsed < every.max(1) || self.mode != Mode::Normal {
            return vec![];
        }
        self.cycle_elapsed = 0;
        let live: Vec<usize> = (0..self.table.view.len())
            .filter(|&i| {
                self.jobs
                    .get(&self.table.view[i])
                    .is_some_and(|j| matches!(j.status, Status::Running | Status::Waiting))
            })
            .collect();
        let cur = self.table.selected_index();
        match live.iter().find(|&&i| Some(i) > cur).or(live.first()) {
            Some(&next) => {
                self.dirty = true;
                self.select_index(next)
            }
            None => vec![],
        }
    }
}
