//! Unmerged worktree jobs whose changes touch the same files, flagged to each other in the
//! table (`overlaps 182001-ab`). The app keeps which jobs are unmerged worktree jobs, from the
//! jobs it reads; when that set changes, it asks the review worker (which reads the paths each
//! recorded, off the loop) and shows what it answers.

use std::collections::{BTreeMap, BTreeSet};

use super::App;
use crate::jobs::JobId;
use crate::jobs::review::overlap::is_unmerged_worktree;
use crate::tui::effect::Effect;

#[derive(Debug, Default)]
pub struct Overlap {
    /// The unmerged worktree jobs, as last read.
    unmerged: BTreeSet<JobId>,
    /// Each job that overlaps others, with what its row says (`overlaps 182001-ab (a.txt)`).
    pub found: BTreeMap<JobId, String>,
}

impl App {
    /// After `ids` were read: asks again when one became, or stopped being, an unmerged
    /// worktree job.
    pub(super) fn overlap_after_read(&mut self, ids: &[JobId]) -> Vec<Effect> {
        let mut moved = false;
        for id in ids {
            let now = self.jobs.get(id).is_some_and(|j| is_unmerged_worktree(j));
            moved |= match now {
                true => self.overlap.unmerged.insert(id.clone()),
                false => self.overlap.unmerged.remove(id),
            };
        }
        if !moved {
            return vec![];
        }
        if self.overlap.unmerged.len() < 2 {
            // Nothing to overlap with: nothing to ask.
            if !self.overlap.found.is_empty() {
                self.overlap.found.clear();
                self.changes += 1;
            }
            return vec![];
        }
        vec![Effect::CheckOverlaps(
            self.overlap.unmerged.iter().cloned().collect(),
        )]
    }

    pub(super) fn on_overlaps(&mut self, found: BTreeMap<JobId, String>) {
        if found != self.overlap.found {
            self.overlap.found = found;
            self.changes += 1;
            self.dirty = true;
        }
    }
}
