//! The input bar (`n` or `:`): pick a project, type a task (several lines if need be), Enter
//! dispatches. An error keeps the bar open with the text in it; Esc hides the bar but keeps the
//! draft, so nothing typed is ever lost. Also the confirm popup for killing a job, and retry.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui_textarea::TextArea;

use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::model::job::Standing;
use crate::tui::effect::Effect;
use crate::tui::input::{Multiline, multiline_key, text_of};

pub struct Draft {
    pub projects: Vec<String>,
    pub project: usize,
    pub task: TextArea<'static>,
    pub error: Option<String>,
    pub sending: bool,
}

impl Draft {
    pub fn project_name(&self) -> Option<&str> {
        self.projects.get(self.project).map(String::as_str)
    }

    pub fn text(&self) -> String {
        text_of(&self.task)
    }
}

/// What the confirm popup asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    Kill(JobId),
}

impl App {
    pub(super) fn open_dispatch_bar(&mut self) -> Vec<Effect> {
        if self.opts.read_only {
            self.message = Some("read-only: this cockpit cannot start jobs".into());
            return vec![];
        }
        if self.opts.dispatch_projects.is_empty() {
            self.message = Some(
                "no projects are configured: add [projects.NAME] path = \"...\" to the config"
                    .into(),
            );
            return vec![];
        }
        if self.draft.is_none() {
            let projects = self.opts.dispatch_projects.clone();
            // The project filter preselects its project.
            let project = match self.projects.as_slice() {
                [one] => projects.iter().position(|p| p == one).unwrap_or(0),
                _ => 0,
            };
            let mut task = TextArea::default();
            task.set_cursor_line_style(ratatui::style::Style::new());
            self.draft = Some(Draft {
                projects,
                project,
                task,
                error: None,
                sending: false,
            });
        }
        self.mode = Mode::Dispatch;
        vec![]
    }

    pub(super) fn on_dispatch_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(draft) = self.draft.as_mut() else {
            self.mode = Mode::Normal;
            return vec![];
        };
        match key.code {
            // Hidden, not discarded: `n` brings it back as it was.
            KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Tab => draft.project = (draft.project + 1) % draft.projects.len().max(1),
            KeyCode::BackTab => {
                draft.project =
                    (draft.project + draft.projects.len().max(1) - 1) % draft.projects.len().max(1)
            }
            _ => {
                if multiline_key(&mut draft.task, key) != Multiline::Send {
                    return vec![];
                }
                let task = draft.text();
                if task.trim().is_empty() {
                    draft.error = Some("type what the agent should do".into());
                    return vec![];
                }
                if draft.sending {
                    return vec![];
                }
                let Some(project) = draft.project_name().map(str::to_owned) else {
                    return vec![];
                };
                draft.sending = true;
                draft.error = None;
                return vec![Effect::Dispatch {
                    project,
                    task,
                    retry_of: None,
                }];
            }
        }
        vec![]
    }

    /// A dispatch came back: the new job is selected once it appears; an error stays in the bar.
    pub(super) fn on_dispatched(
        &mut self,
        result: Result<(Option<JobId>, String), String>,
    ) -> Vec<Effect> {
        match result {
            Ok((id, message)) => {
                let from_bar = self.draft.as_ref().is_some_and(|d| d.sending);
                if from_bar {
                    self.draft = None;
                    if self.mode == Mode::Dispatch {
                        self.mode = Mode::Normal;
                    }
                }
                self.message = Some(message);
                self.select_when_seen = id;
                let mut effects = self.refresh_view();
                effects.push(Effect::SyncQueue);
                effects
            }
            Err(e) => {
                match self.draft.as_mut().filter(|d| d.sending) {
                    Some(d) => {
                        d.sending = false;
                        d.error = Some(e);
                    }
                    None => self.message = Some(e),
                }
                vec![]
            }
        }
    }

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

    pub(super) fn on_confirm_key(&mut self, key: &KeyEvent, what: Confirm) -> Vec<Effect> {
        self.mode = Mode::Normal;
        match (key.code, what) {
            (KeyCode::Char('y' | 'Y'), Confirm::Kill(id)) => {
                self.message = Some(format!("stopping {id}…"));
                vec![Effect::Kill(id)]
            }
            _ => vec![],
        }
    }

    pub(super) fn retry_selected(&mut self) -> Vec<Effect> {
        let Some(job) = self.selected_job() else {
            return vec![];
        };
        if self.opts.read_only {
            self.message = Some("read-only: this cockpit cannot start jobs".into());
            return vec![];
        }
        if job.id.is_queued() {
            self.message = Some(queued_note(job));
            return vec![];
        }
        if job.status.is_active() {
            self.message = Some(format!(
                "job {} is still {}: kill it first (K)",
                job.id, job.status
            ));
            return vec![];
        }
        if job.standing() == Standing::AnswerThenRetry
            && job.question.is_some()
            && !self.answered_here(&job.id)
        {
            self.message = Some(format!(
                "job {} stopped for an answer: answer it first (Enter), then retry",
                job.id
            ));
            return vec![];
        }
        vec![Effect::Retry(job.id.clone())]
    }

    fn answered_here(&self, id: &JobId) -> bool {
        self.answered.iter().any(|(j, _)| j == id)
    }
}

/// What a queued task's row says to kill and retry: it has no agent yet.
fn queued_note(job: &crate::jobs::Job) -> String {
    let id = job.shown_id();
    format!("{id} is queued: no agent runs yet (`luzia queue cancel {id}` takes it off the queue)")
}
