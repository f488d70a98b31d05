//! What the operator does to the selected job: kill it, merge or discard its change (after a
//! confirm popup that carries the action it confirms and the job it is for), or retry it.

use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::model::job::Standing;
use crate::jobs::model::review::Isolation;
use crate::tui::action::{ConfirmAction, Key, NormalAction};
use crate::tui::effect::{Effect, ReviewOp};

/// What the confirm popup asks, about which job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    Kill(JobId),
    /// Merge or discard the job's change; `preview` is what git will be made to do, as the
    /// domain worked it out when the key was pressed.
    Review {
        job: JobId,
        op: ReviewOp,
        preview: String,
    },
}

impl Confirm {
    /// What is done on yes.
    fn effect(self) -> (Effect, String) {
        match self {
            Confirm::Kill(id) => {
                let said = format!("stopping {id}…");
                (Effect::Kill(id), said)
            }
            Confirm::Review { job, op, .. } => {
                let said = match op {
                    ReviewOp::Merge => format!("merging the change of {job}…"),
                    ReviewOp::Discard => format!("discarding the change of {job}…"),
                };
                (Effect::Review { job, op }, said)
            }
        }
    }
}

impl App {
    pub(super) fn ask_kill(&mut self) -> Vec<Effect> {
        let Some(job) = self.selected_job() else {
            return vec![];
        };
        // A job just started may reach the cockpit before its pid does (here, or from another
        // host): the stop waits for the pid (see `jobs::run::kill`), off the event loop.
        if self.opts.read_only {
            self.message = Some("read-only: this cockpit cannot kill jobs".into());
        } else if job.id.is_queued() {
            self.message = Some(queued_note(job));
        } else if !job.status.is_active() {
            self.message = Some(format!("job {} is not running", job.id));
        } else {
            self.mode = Mode::Confirm(Confirm::Kill(job.id.clone()));
        }
        vec![]
    }

    /// Yes does it; every other key, ctrl-c too, closes the popup having done nothing: what it
    /// asks about cannot be undone.
    pub(super) fn on_confirm_key(&mut self, key: &Key) -> Vec<Effect> {
        let Mode::Confirm(what) = std::mem::replace(&mut self.mode, Mode::Normal) else {
            return vec![];
        };
        let actions = self.opts.keymap.actions::<ConfirmAction>(key);
        if !actions.contains(&ConfirmAction::Yes) {
            return vec![];
        }
        let (effect, said) = what.effect();
        self.message = Some(said);
        vec![effect]
    }

    /// `M` or `X` on the table: about the selected job.
    pub(super) fn ask_review_selected(&mut self, op: ReviewOp) -> Vec<Effect> {
        match self.table.selected.clone() {
            Some(id) => self.ask_review(&id, op),
            None => vec![],
        }
    }

    /// Merging or discarding asks first, showing what will be done: the domain works that out
    /// (off the loop), and its answer opens the popup (`on_review_previewed`). What cannot be
    /// done is said at once where the cockpit already knows it.
    pub(super) fn ask_review(&mut self, id: &JobId, op: ReviewOp) -> Vec<Effect> {
        let Some(job) = self.jobs.get(id) else {
            return vec![];
        };
        let verb = op.verb();
        let refusal = if self.opts.read_only {
            Some(format!("read-only: this cockpit cannot {verb} changes"))
        } else if job.id.is_queued() {
            Some(format!(
                "{} is queued: it has changed nothing yet",
                job.shown_id()
            ))
        } else if job.status.is_active() {
            Some(format!(
                "job {} is still {}: its change is not final ({verb} it once it has ended)",
                job.id, job.status
            ))
        } else if !job
            .meta
            .as_ref()
            .and_then(|m| m.review.as_ref())
            .is_some_and(|r| r.isolation != Isolation::None)
        {
            Some(format!(
                "job {} ran without isolation: there is no change recorded to {verb}",
                job.id
            ))
        } else {
            None
        };
        if let Some(why) = refusal {
            self.message = Some(why);
            return vec![];
        }
        self.message = Some(format!("working out what {verb} would do for {}…", job.id));
        self.review_asked = Some((job.id.clone(), op));
        vec![Effect::PreviewReview {
            job: job.id.clone(),
            op,
        }]
    }

    /// The preview asked for: the popup, if the operator is still where they asked; else what
    /// stands in the way.
    pub(super) fn on_review_previewed(
        &mut self,
        job: JobId,
        op: ReviewOp,
        preview: Result<String, String>,
    ) {
        if self.review_asked.as_ref() != Some(&(job.clone(), op)) {
            return;
        }
        self.review_asked = None;
        match preview {
            Err(why) => self.message = Some(why),
            Ok(preview) if self.mode == Mode::Normal => {
                self.message = None;
                self.mode = Mode::Confirm(Confirm::Review { job, op, preview });
            }
            // Something else was opened meanwhile: it keeps the keyboard.
            Ok(_) => self.message = None,
        }
    }

    /// What the merge or discard did (or why not), and the job's row read again.
    pub(super) fn on_reviewed(
        &mut self,
        job: JobId,
        result: Result<String, String>,
    ) -> Vec<Effect> {
        self.message = Some(result.unwrap_or_else(|e| e));
        vec![Effect::ReadJobs(vec![job])]
    }

    pub(super) fn retry_selected(&mut self) -> Vec<Effect> {
        let Some(job) = self.selected_job() else {
            return vec![];
        };
        let keys = &self.opts.keymap;
        let refusal = if self.opts.read_only {
            Some("read-only: this cockpit cannot start jobs".to_string())
        } else if job.id.is_queued() {
            Some(queued_note(job))
        } else if job.status.is_active() {
            Some(format!(
                "job {} is still {}: kill it first ({})",
                job.id,
                job.status,
                keys.first_key(NormalAction::Kill)
            ))
        } else if job.standing() == Standing::AnswerThenRetry
            && job.question.is_some()
            && !self.answered.any_for(&job.id)
        {
            Some(format!(
                "job {} stopped for an answer: answer it first ({}), then retry",
                job.id,
                keys.first_key(NormalAction::Open)
            ))
        } else {
            None
        };
        match refusal {
            Some(why) => {
                self.message = Some(why);
                vec![]
            }
            None => vec![Effect::Retry(job.id.clone())],
        }
    }
}

/// What a queued task's row says to kill and retry: it has no agent yet.
fn queued_note(job: &crate::jobs::Job) -> String {
    let id = job.shown_id();
    format!("{id} is queued: no agent runs yet (`luzia queue cancel {id}` takes it off the queue)")
}
