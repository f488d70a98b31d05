//! The inbox: every pending question and approval gate, oldest first, answered one after the
//! other in a popup. The popup carries the job and the question it answers, so an answer can
//! never land on the wrong one.

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui_textarea::TextArea;

use super::{App, Mode};
use crate::jobs::model::job::Standing;
use crate::jobs::model::waiting::QuestionType;
use crate::jobs::{Job, JobId};
use crate::tui::effect::Effect;
use crate::tui::input::{Multiline, multiline_key, text_of};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxKind {
    Question,
    Gate,
}

/// One thing waiting for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub job: JobId,
    pub kind: InboxKind,
    pub since: Option<DateTime<Utc>>,
}

pub struct Inbox {
    pub item: Item,
    /// The question id (or gate name) the popup was opened for: an answer goes to it alone.
    pub target: String,
    /// The highlighted option of a choice.
    pub selected: usize,
    /// Free text being typed: a text answer, or the reason for a denial.
    pub editor: Option<TextArea<'static>>,
    /// The outcome of the last answer: (succeeded, what to say).
    pub result: Option<(bool, String)>,
    pub sending: bool,
}

impl Inbox {
    pub fn editing_reason(&self) -> bool {
        self.item.kind == InboxKind::Gate && self.editor.is_some()
    }
}

fn editor() -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_cursor_line_style(ratatui::style::Style::new());
    t
}

impl App {
    /// Questions and gates someone can still answer, oldest first (orphaned ones are not).
    pub fn inbox_items(&self) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        for job in self
            .jobs
            .values()
            .filter(|j| super::jobs_view::in_projects(j, &self.projects))
        {
            if job.standing() == Standing::Orphaned {
                continue;
            }
            let done = |target: &str| {
                self.answered
                    .iter()
                    .any(|(j, t)| *j == job.id && t == target)
            };
            if let Some(q) = job.question.as_ref().filter(|q| !done(&q.id)) {
                items.push(Item {
                    job: job.id.clone(),
                    kind: InboxKind::Question,
                    since: q.asked_at,
                });
            }
            if let Some(g) = job.gate.as_ref().filter(|g| !done(&g.gate)) {
                items.push(Item {
                    job: job.id.clone(),
                    kind: InboxKind::Gate,
                    since: g.awaiting_since,
                });
            }
        }
        items.sort_by(|a, b| a.since.cmp(&b.since).then_with(|| a.job.cmp(&b.job)));
        items
    }

    /// Opens the inbox on the job's item, or on the oldest one.
    pub(super) fn open_inbox(&mut self, on: Option<&JobId>) -> Vec<Effect> {
        let items = self.inbox_items();
        let item = on
            .and_then(|id| items.iter().find(|i| &i.job == id))
            .or(items.first())
            .cloned();
        match item {
            Some(item) => self.show_item(item, None),
            None => {
                self.message = Some("nothing is waiting for you".into());
                vec![]
            }
        }
    }

    fn show_item(&mut self, item: Item, result: Option<(bool, String)>) -> Vec<Effect> {
        let Some(job) = self.jobs.get(&item.job) else {
            return vec![];
        };
        let (target, editor) = match item.kind {
            InboxKind::Question => {
                let q = job
                    .question
                    .as_ref()
                    .expect("listed because it has a question");
                (q.id.clone(), (q.kind == QuestionType::Text).then(editor))
            }
            InboxKind::Gate => (
                job.gate.as_ref().map_or(String::new(), |g| g.gate.clone()),
                None,
            ),
        };
        let job_id = item.job.clone();
        self.inbox = Some(Inbox {
            item,
            target,
            selected: 0,
            editor,
            result,
            sending: false,
        });
        self.mode = Mode::Inbox;
        // Show the job's output under the popup: the last lines are part of the question.
        match self.view.iter().position(|v| *v == job_id) {
            Some(i) => self.select_index(i),
            None => vec![],
        }
    }

    /// Moves to the next (or previous) item after `current`, or closes the inbox when none is left.
    fn advance(&mut self, forward: bool, result: Option<(bool, String)>) -> Vec<Effect> {
        let items = self.inbox_items();
        let current = self.inbox.as_ref().map(|i| i.item.clone());
        let pos = current
            .as_ref()
            .and_then(|c| items.iter().position(|i| i == c));
        let next = match (pos, forward) {
            (Some(p), true) => items.get(p + 1).or(items.first()),
            (Some(p), false) => {
                items.get(p.checked_sub(1).unwrap_or(items.len().saturating_sub(1)))
            }
            (None, _) => items.first(),
        }
        .filter(|n| Some(*n) != current.as_ref())
        .cloned();
        match next {
            Some(item) => self.show_item(item, result),
            None => {
                self.close_inbox();
                self.message = result
                    .map(|(_, m)| m)
                    .or(Some("nothing else is waiting for you".into()));
                vec![]
            }
        }
    }

    fn close_inbox(&mut self) {
        self.inbox = None;
        self.mode = Mode::Normal;
    }

    pub(super) fn on_inbox_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(inbox) = self.inbox.as_mut() else {
            self.mode = Mode::Normal;
            return vec![];
        };
        if inbox.editor.is_some() {
            match key.code {
                KeyCode::Esc if inbox.editing_reason() => {
                    inbox.editor = None;
                    return vec![];
                }
                KeyCode::Esc => {
                    self.close_inbox();
                    return vec![];
                }
                KeyCode::Tab | KeyCode::BackTab => {
                    return self.advance(key.code == KeyCode::Tab, None);
                }
                _ => {
                    let editor = inbox.editor.as_mut().expect("checked");
                    if multiline_key(editor, key) == Multiline::Send {
                        let text = text_of(editor);
                        return self.submit(Submission::Text(text));
                    }
                }
            }
            return vec![];
        }
        match key.code {
            KeyCode::Esc => {
                self.close_inbox();
                vec![]
            }
            KeyCode::Tab | KeyCode::Right => self.advance(true, None),
            KeyCode::BackTab | KeyCode::Left => self.advance(false, None),
            _ => match inbox.item.kind {
                InboxKind::Question => self.on_question_key(key),
                InboxKind::Gate => self.on_gate_key(key),
            },
        }
    }

    fn current_job(&self) -> Option<&Job> {
        self.inbox.as_ref().and_then(|i| self.jobs.get(&i.item.job))
    }

    fn on_question_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(q) = self.current_job().and_then(|j| j.question.clone()) else {
            return vec![];
        };
        let inbox = self.inbox.as_mut().expect("inbox open");
        let last = q.options.len().saturating_sub(1);
        match (q.kind, key.code) {
            (QuestionType::Choice, KeyCode::Up | KeyCode::Char('k')) => {
                inbox.selected = inbox.selected.saturating_sub(1)
            }
            (QuestionType::Choice, KeyCode::Down | KeyCode::Char('j')) => {
                inbox.selected = (inbox.selected + 1).min(last)
            }
            (QuestionType::Choice, KeyCode::Char(c @ '1'..='9')) => {
                let n = c as usize - '1' as usize;
                if n <= last {
                    inbox.selected = n;
                }
            }
            (QuestionType::Choice, KeyCode::Enter) => {
                let choice = q.options.get(inbox.selected).cloned().unwrap_or_default();
                return self.submit(Submission::Text(choice));
            }
            (QuestionType::Confirm, KeyCode::Char('y' | 'Y')) => {
                return self.submit(Submission::Text("yes".into()));
            }
            (QuestionType::Confirm, KeyCode::Char('n' | 'N')) => {
                return self.submit(Submission::Text("no".into()));
            }
            _ => {}
        }
        vec![]
    }

    fn on_gate_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Char('a') => self.submit(Submission::Approve),
            KeyCode::Char('d') => {
                if let Some(inbox) = self.inbox.as_mut() {
                    inbox.editor = Some(editor());
                }
                vec![]
            }
            _ => vec![],
        }
    }

    fn submit(&mut self, what: Submission) -> Vec<Effect> {
        let read_only = self.opts.read_only;
        let Some(inbox) = self.inbox.as_mut() else {
            return vec![];
        };
        if read_only {
            inbox.result = Some((false, "read-only: this cockpit cannot answer".into()));
            return vec![];
        }
        if inbox.sending {
            return vec![];
        }
        let job = inbox.item.job.clone();
        let target = inbox.target.clone();
        let effect = match (inbox.item.kind, what) {
            (InboxKind::Question, Submission::Text(answer)) => Effect::Answer {
                job,
                question_id: target,
                answer,
            },
            (InboxKind::Gate, Submission::Approve) => Effect::Decide {
                job,
                gate: target,
                approved: true,
                reason: String::new(),
            },
            (InboxKind::Gate, Submission::Text(reason)) if reason.trim().is_empty() => {
                inbox.result = Some((
                    false,
                    "a denial needs a reason: the agent is told it word for word".into(),
                ));
                return vec![];
            }
            (InboxKind::Gate, Submission::Text(reason)) => Effect::Decide {
                job,
                gate: target,
                approved: false,
                reason,
            },
            (InboxKind::Question, Submission::Approve) => return vec![],
        };
        inbox.sending = true;
        inbox.result = None;
        vec![effect]
    }

    /// The outcome of an answer or decision came back.
    pub(super) fn on_answered(&mut self, job: JobId, ok: bool, message: String) -> Vec<Effect> {
        let open_on_it = self.inbox.as_ref().is_some_and(|i| i.item.job == job);
        if !open_on_it {
            self.message = Some(message);
            return vec![];
        }
        if ok {
            // Done here: go on to the next one, saying what happened to this one. Until the job
            // is read again its files still show the question: remember it is answered.
            let target = self
                .inbox
                .as_ref()
                .map(|i| i.target.clone())
                .unwrap_or_default();
            self.answered.push((job, target));
            self.advance(true, Some((true, message)))
        } else {
            let inbox = self.inbox.as_mut().expect("checked");
            inbox.sending = false;
            inbox.result = Some((false, message));
            vec![]
        }
    }
}

enum Submission {
    Text(String),
    Approve,
}
