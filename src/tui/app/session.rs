//! A selected job's Claude Code session: replied to from the input bar (a new job continues it)
//! or opened in this terminal. Offered for a job that has ended (completed, failed, killed,
//! needs input, died) and has a session; the domain checks again when it is done, since the
//! table may be a moment behind.

use super::input_bar::Draft;
use super::{App, Mode};
use crate::jobs::Job;
use crate::jobs::run::session::is_claude;
use crate::tui::action::NormalAction;
use crate::tui::effect::Effect;

impl App {
    /// Opens the input bar to reply to the selected job.
    pub(super) fn open_reply(&mut self) -> Vec<Effect> {
        let Some(job) = self.session_job("reply to") else {
            return vec![];
        };
        let id = job.id.clone();
        match &self.draft {
            Some(d) if d.reply_to.as_ref() == Some(&id) => {}
            Some(d) if !d.text().trim().is_empty() => {
                self.message = Some(format!(
                    "the input bar holds text not sent yet ({} shows it): send or clear it first",
                    self.opts.keymap.first_key(NormalAction::NewTask)
                ));
                return vec![];
            }
            _ => {
                self.draft = Some(Draft {
                    reply_to: Some(id),
                    ..Draft::new(None, Vec::new(), 0)
                });
            }
        }
        self.mode = Mode::InputBar;
        vec![]
    }

    /// Opens the selected job's session in this terminal.
    pub(super) fn attach_selected(&mut self) -> Vec<Effect> {
        match self.session_job("open") {
            Some(job) if job.id.host().is_some() => {
                // The session's files are on that host, and so is `claude --resume`.
                let (id, host) = (job.id.local_id(), job.id.host().unwrap_or_default());
                self.message = Some(format!(
                    "the session of {id} is on {host}: open it there (ssh, then `luzia attach {id}`)"
                ));
                vec![]
            }
            Some(job) => {
                let id = job.id.clone();
                self.message = Some(format!("opening the session of {id}…"));
                vec![Effect::Attach(id)]
            }
            None => vec![],
        }
    }

    /// The selected job, if its session can be continued; else says why not.
    fn session_job(&mut self, what: &str) -> Option<Job> {
        let job = self.selected_job()?.clone();
        let meta = job.meta.clone().unwrap_or_default();
        let refusal = if self.opts.read_only {
            Some(format!(
                "read-only: this cockpit cannot {what} a job's session"
            ))
        } else if job.id.is_queued() {
            Some(format!(
                "{} is queued: it has no session yet",
                job.shown_id()
            ))
        } else if job.status.is_active() {
            Some(format!(
                "job {} is still {}: its session can be continued once it has ended",
                job.id, job.status
            ))
        } else if !is_claude(&meta.agent) || meta.session_id.is_empty() {
            Some(format!(
                "job {} has no Claude Code session to continue ({} starts it over)",
                job.id,
                self.opts.keymap.first_key(NormalAction::Retry)
            ))
        } else {
            None
        };
        match refusal {
            Some(why) => {
                self.message = Some(why);
                None
            }
            None => Some(job),
        }
    }
}
