//! The inbox: every pending question and approval gate, oldest first, answered one after the
//! other in a popup. The popup carries the job and the question it answers, so an answer can
//! never land on the wrong one. Its keys are in `keys`.

mod keys;

use chrono::{DateTime, Utc};

use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::hitl::operator::Scope;
use crate::jobs::model::job::Standing;
use crate::jobs::model::waiting::QuestionType;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbox {
    pub item: Item,
    /// The question or gate id the popup was opened for: an answer goes to it alone.
    pub target: String,
    /// The highlighted option of a choice.
    pub selected: usize,
    /// The options picked so far of a choice of several (by index).
    pub picked: Vec<usize>,
    /// Free text being typed: a text answer, or the reason for a denial.
    pub editor: Option<TextInput>,
    /// The outcome of the last answer: (succeeded, what to say).
    pub result: Option<(bool, String)>,
    pub sending: bool,
}

impl Inbox {
    pub fn editing_reason(&self) -> bool {
        self.item.kind == InboxKind::Gate && self.editor.is_some()
    }
}

/// Answers given from here whose jobs have not been read again yet: (job, question or gate id).
/// Until then the job's files still show the question, which must not be offered again.
#[derive(Clone, Debug, Default)]
pub struct Answered(Vec<(JobId, String)>);

impl Answered {
    fn contains(&self, job: &JobId, target: &str) -> bool {
        self.0.iter().any(|(j, t)| j == job && t == target)
    }

    /// Whether anything of the job was answered here.
    pub fn any_for(&self, job: &JobId) -> bool {
        self.0.iter().any(|(j, _)| j == job)
    }

    /// Forgets answers whose questions are gone from disk (archived by the agent).
    pub fn forget_gone(&mut self, jobs: &crate::tui::app::Jobs) {
        self.0.retain(|(id, target)| {
            jobs.get(id).is_some_and(|j| {
                j.question.as_ref().is_some_and(|q| q.id == *target)
                    || j.gate.as_ref().is_some_and(|g| g.id == *target)
            })
        });
    }
}

/// What is sent: a text (an option, an answer, a reason for a denial) or an approval (once, or
/// for the session).
enum Submission {
    Text(String),
    Approve(Scope),
}

impl App {
    /// Questions and gates someone can still answer, oldest first (orphaned ones are not).
    pub fn inbox_items(&self) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        let projects = &self.table.projects;
        for job in self
            .jobs
            .values()
            .filter(|j| super::table::view::in_projects(j, projects))
        {
            if job.standing() == Standing::Orphaned {
                continue;
            }
            let open = |target: &str| !self.answered.contains(&job.id, target);
            if let Some(q) = job.question.as_ref().filter(|q| open(&q.id)) {
                items.push(Item {
                    job: job.id.clone(),
                    kind: InboxKind::Question,
                    since: q.asked_at,
                });
            }
            if let Some(g) = job.gate.as_ref().filter(|g| open(&g.id)) {
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
        let (target, editor) = match (item.kind, &job.question, &job.gate) {
            (InboxKind::Question, Some(q), _) => (
                q.id.clone(),
                (q.kind == QuestionType::Text).then(TextInput::lines),
            ),
            (InboxKind::Gate, _, Some(g)) => (g.id.clone(), None),
            _ => return vec![],
        };
        let job_id = item.job.clone();
        self.mode = Mode::Inbox(Inbox {
            item,
            target,
            selected: 0,
            picked: Vec::new(),
            editor,
            result,
            sending: false,
        });
        // Show the job's output under the popup: the last lines are part of the question.
        match self.table.view.iter().position(|v| *v == job_id) {
            Some(i) => self.select_index(i),
            None => vec![],
        }
    }

    fn inbox(&mut self) -> Option<&mut Inbox> {
        match &mut self.mode {
            Mode::Inbox(inbox) => Some(inbox),
            _ => None,
        }
    }

    /// Moves to the next (or previous) item after the one shown, or closes the inbox when none
    /// is left.
    fn advance(&mut self, forward: bool, result: Option<(bool, String)>) -> Vec<Effect> {
        let items = self.inbox_items();
        let current = self.inbox().map(|i| i.item.clone());
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
                self.mode = Mode::Normal;
                self.message = result
                    .map(|(_, m)| m)
                    .or(Some("nothing else is waiting for you".into()));
                vec![]
            }
        }
    }

    fn submit(&mut self, what: Submission) -> Vec<Effect> {
        let read_only = self.opts.read_only;
        let Some(inbox) = self.inbox() else {
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
            (InboxKind::Gate, Submission::Approve(scope)) => Effect::Decide {
                job,
                gate_id: target,
                approved: true,
                scope,
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
                gate_id: target,
                approved: false,
                scope: Scope::Once,
                reason,
            },
            (InboxKind::Question, Submission::Approve(_)) => return vec![],
        };
        inbox.sending = true;
        inbox.result = None;
        vec![effect]
    }

    /// The outcome of an answer or decision came back.
    pub(super) fn on_answered(&mut self, job: JobId, ok: bool, message: String) -> Vec<Effect> {
        let Some(inbox) = self.inbox().filter(|i| i.item.job == job) else {
            self.message = Some(message);
            return vec![];
        };
        if ok {
            // Done here: go on to the next one, saying what happened to this one. Until the job
            // is read again its files still show the question: remember it is answered.
            let target = inbox.target.clone();
            self.answered.0.push((job, target));
            self.advance(true, Some((true, message)))
        } else {
            inbox.sending = false;
            inbox.result = Some((false, message));
            vec![]
        }
    }
}

#[cfg(test)]
mod tests;
