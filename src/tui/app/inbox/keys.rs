//! The inbox's keys: going from one item to the next, picking an option, yes or no, approve
//! or deny; while an answer or a reason is typed, the text input has the keys that edit.
//! The digits 1-9 pick the option of that number, like typing it; in a choice of several,
//! space picks or unpicks the option highlighted and Enter sends what is picked.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{InboxKind, Submission};
use crate::jobs::hitl::operator::Scope;
use crate::jobs::model::waiting::QuestionType;
use crate::tui::action::{InboxAction, Key};
use crate::tui::app::keys::Typed;
use crate::tui::app::{App, Mode};
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;

/// What the item shown asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asks {
    /// A choice among this many options.
    Choice(usize),
    /// A choice of several among this many options.
    Many(usize),
    YesNo,
    /// A gate; `true` when it may be approved for the session.
    Gate(bool),
    /// Nothing to do with keys: the job is gone or asks no more.
    Nothing,
}

impl App {
    pub(in crate::tui::app) fn on_inbox_key(&mut self, ev: &KeyEvent, key: &Key) -> Vec<Effect> {
        let Some(inbox) = self.inbox() else {
            return vec![];
        };
        if inbox.editor.is_some() {
            return match self.typed::<InboxAction>(ev, key) {
                // Ctrl-C: the text typed goes first, then the editor (as Esc closes it).
                Typed::Interrupt if self.clear_answer() => vec![],
                Typed::Interrupt => self.on_typing_action(InboxAction::Close, ev),
                Typed::Act(action) => self.on_typing_action(action, ev),
                Typed::Edit => self.edit_answer(ev),
            };
        }
        let Some(actions) = self.bound::<InboxAction>(key) else {
            return self.ask_quit(key);
        };
        let asks = self.asks();
        for action in actions {
            if let Some(effects) = self.on_inbox_action(action, asks) {
                return effects;
            }
        }
        if let (Asks::Choice(n) | Asks::Many(n), KeyCode::Char(c @ '1'..='9'), KeyModifiers::NONE) =
            (asks, ev.code, ev.modifiers)
        {
            let i = c as usize - '1' as usize;
            if let Some(inbox) = self.inbox().filter(|_| i < n) {
                inbox.selected = i;
            }
        }
        vec![]
    }

    fn asks(&self) -> Asks {
        let Mode::Inbox(inbox) = &self.mode else {
            return Asks::Nothing;
        };
        let Some(job) = self.jobs.get(&inbox.item.job) else {
            return Asks::Nothing;
        };
        match (inbox.item.kind, &job.question) {
            (InboxKind::Gate, _) => Asks::Gate(
                job.gate
                    .as_ref()
                    .is_some_and(|g| g.id == inbox.target && g.allow_session.is_some()),
            ),
            (InboxKind::Question, Some(q)) => match q.kind {
                QuestionType::Choice if q.multi_select => Asks::Many(q.options.len()),
                QuestionType::Choice => Asks::Choice(q.options.len()),
                QuestionType::Confirm => Asks::YesNo,
                QuestionType::Text => Asks::Nothing,
            },
            (InboxKind::Question, None) => Asks::Nothing,
        }
    }

    /// An action while no text is typed; `None` when it does not apply to what is asked.
    fn on_inbox_action(&mut self, action: InboxAction, asks: Asks) -> Option<Vec<Effect>> {
        use InboxAction as A;
        let Mode::Inbox(inbox) = &mut self.mode else {
            return None;
        };
        let effects = match (action, asks) {
            (A::Next | A::Prev, _) => self.advance(action == A::Next, None),
            (A::Close, _) => {
                self.mode = Mode::Normal;
                vec![]
            }
            (A::Help, _) => {
                self.open_help();
                vec![]
            }
            (A::Up, Asks::Choice(_) | Asks::Many(_)) => {
                inbox.selected = inbox.selected.saturating_sub(1);
                vec![]
            }
            (A::Toggle, Asks::Many(n)) if inbox.selected < n => {
                let i = inbox.selected;
                match inbox.picked.iter().position(|p| *p == i) {
                    Some(at) => {
                        inbox.picked.remove(at);
                    }
                    None => inbox.picked.push(i),
                }
                vec![]
            }
            (A::Send, Asks::Many(_)) => {
                let job = self.jobs.get(&inbox.item.job);
                let options = job.and_then(|j| j.question.as_ref()).map(|q| &q.options);
                let answer = options.map(|o| picked_answer(o, &inbox.picked, inbox.selected));
                self.submit(Submission::Text(answer.unwrap_or_default()))
            }
            (A::Down, Asks::Choice(n) | Asks::Many(n)) => {
                inbox.selected = (inbox.selected + 1).min(n.saturating_sub(1));
                vec![]
            }
            (A::Send, Asks::Choice(_)) => {
                let selected = inbox.selected;
                let job = self.jobs.get(&inbox.item.job);
                let options = job.and_then(|j| j.question.as_ref()).map(|q| &q.options);
                let choice = options.and_then(|o| o.get(selected)).cloned();
                self.submit(Submission::Text(choice.unwrap_or_default()))
            }
            (A::Yes, Asks::YesNo) => self.submit(Submission::Text("yes".into())),
            (A::No, Asks::YesNo) => self.submit(Submission::Text("no".into())),
            (A::Approve, Asks::Gate(_)) => self.submit(Submission::Approve(Scope::Once)),
            (A::ApproveSession, Asks::Gate(true)) => {
                self.submit(Submission::Approve(Scope::Session))
            }
            (A::ApproveSession, Asks::Gate(false)) => {
                let once = self.opts.keymap.first_key(A::Approve);
                inbox.result = Some((
                    false,
                    format!(
                        "this gate cannot be approved for the session (its agent did not offer \
                         it): {once} approves it once"
                    ),
                ));
                vec![]
            }
            (A::Deny, Asks::Gate(_)) => {
                inbox.editor = Some(crate::tui::input::TextInput::lines());
                vec![]
            }
            _ => return None,
        };
        Some(effects)
    }

    /// An action while an answer or a reason is typed: the other actions are the text's.
    fn on_typing_action(&mut self, action: InboxAction, ev: &KeyEvent) -> Vec<Effect> {
        use InboxAction as A;
        let Mode::Inbox(inbox) = &mut self.mode else {
            return vec![];
        };
        match action {
            A::Next | A::Prev => self.advance(action == A::Next, None),
            // Out of the reason, back to the gate; a text answer has nothing to go back to.
            A::Close if inbox.editing_reason() => {
                inbox.editor = None;
                vec![]
            }
            A::Close => {
                self.mode = Mode::Normal;
                vec![]
            }
            A::Send => {
                let text = inbox.editor.as_ref().map(|e| e.text()).unwrap_or_default();
                self.submit(Submission::Text(text))
            }
            A::NewLine => {
                if let Some(editor) = inbox.editor.as_mut() {
                    editor.new_line();
                }
                vec![]
            }
            _ => self.edit_answer(ev),
        }
    }

    /// Empties the answer or reason being typed; false when there was nothing to empty.
    fn clear_answer(&mut self) -> bool {
        self.inbox()
            .and_then(|i| i.editor.as_mut())
            .is_some_and(TextInput::clear)
    }

    fn edit_answer(&mut self, ev: &KeyEvent) -> Vec<Effect> {
        if let Some(editor) = self.inbox().and_then(|i| i.editor.as_mut()) {
            editor.edit(ev);
        }
        vec![]
    }
}

/// The answer to a choice of several: the options picked, in their order, `, `-joined (as
/// `luzia answer` takes it); nothing picked sends the highlighted one.
fn picked_answer(options: &[String], picked: &[usize], highlighted: usize) -> String {
    let mut indexes: Vec<usize> = picked.to_vec();
    if indexes.is_empty() {
        indexes.push(highlighted);
    }
    indexes.sort_unstable();
    indexes
        .iter()
        .filter_map(|i| options.get(*i).map(String::as_str))
        .collect::<Vec<_>>()
        .join(", ")
}
