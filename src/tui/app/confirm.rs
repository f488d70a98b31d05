//! What the operator does to the selected job: kill it (after a confirm popup that carries the
//! action it confirms and the job it is for), or retry it.

use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::model::job::Standing;
use crate::tui::action::{ConfirmAction, Key, NormalAction};
use crate::tui::effect::Effect;

/// What the confirm popup asks, about which job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    Kill(JobId),
}

impl Confirm {
    /// What is done on yes.
    fn effect(self) -> (Effect, String) {
        match self {
            Confirm::Kill(id) => {
                let said = format!("stopping {id}…");
                (Effect::Kill(id), said)
            }
        }
    }
}

impl App {
    pub(super) fn ask_kill(&mut self) -> Vec<Effect> {
        let Some(job) = self.selected_job() else {
            return vec![];
        };
        if self.opts.read_only {
            self.message = Some("read-only: this cockpit cannot kill jobs".into());
        } else if job.id.is_queued() {
            self.message = Some(queued_note(job));
        } else if !job.status.is_active() || job.pid.is_none() {
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
