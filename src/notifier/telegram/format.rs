//! The words the bridge posts: a question's or gate's message and its buttons, the line that
//! closes it (who answered, how), and how a Telegram user is named and recorded. Plain text
//! only (no `parse_mode`): an agent's words are never read as markup. Agent text is made plain
//! and capped first, as everywhere in luzia.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::press::Action;
use crate::jobs::Job;
use crate::jobs::hitl::operator::{Decision, Response, Scope, decision_verb};
use crate::jobs::model::time::format_duration;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::text::sanitize::{ellipsize, plain_text};
use crate::jobs::wire::{Covers, How, Settlement};

/// Telegram's limit is 4096 characters a message: the agent's words get most of it.
const QUESTION_CAP: usize = 2500;
const CONTEXT_CAP: usize = 800;
/// At most this many options become buttons; more are answered by a reply.
pub const MAX_BUTTONS: usize = 20;
/// A button's label.
const LABEL_CAP: usize = 60;

/// A Telegram user, as an update names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub username: Option<String>,
    pub first_name: String,
}

impl User {
    /// `@bruno`, else their first name: how the chat is told who did it.
    pub fn name(&self) -> String {
        match &self.username {
            Some(u) => format!("@{}", plain_text(u)),
            None if !self.first_name.is_empty() => plain_text(&self.first_name),
            None => format!("user {}", self.id),
        }
    }

    /// What an answer records as its author: `telegram:@bruno (111)`.
    pub fn recorded(&self) -> String {
        format!("telegram:{} ({})", self.name(), self.id)
    }
}

fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or_else(String::new, |t| {
        format!(
            "Waiting since {} ({} ago)\n",
            clock(t),
            format_duration((now - t).num_seconds().max(0))
        )
    })
}

fn heading(job: &Job, what: &str) -> String {
    let host = job
        .id
        .host()
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    format!(
        "{what} · job {}{host} · project {}\nTask: {}\n\n",
        job.id.local_id(),
        plain_text(job.project()),
        ellipsize(&plain_text(job.task()), 300)
    )
}

fn context(text: &str) -> String {
    match plain_text(text).trim() {
        "" => String::new(),
        c => format!("Context: {}\n", ellipsize(c, CONTEXT_CAP)),
    }
}

/// Whether each option of `q` is a button.
pub fn has_buttons(q: &Question) -> bool {
    match q.kind {
        QuestionType::Choice => !q.multi_select && (1..=MAX_BUTTONS).contains(&q.options.len()),
        QuestionType::Confirm => true,
        QuestionType::Text => false,
    }
}

/// A question's message.
pub fn question_text(job: &Job, q: &Question, now: DateTime<Utc>) -> String {
    let mut t = heading(job, "❓ Question");
    if !q.header.is_empty() {
        t.push_str(&format!("{}\n", plain_text(&q.header)));
    }
    t.push_str(&ellipsize(&plain_text(&q.question), QUESTION_CAP));
    t.push_str("\n\n");
    if matches!(q.kind, QuestionType::Choice) {
        for (i, o) in q.options.iter().enumerate() {
            let about = q
                .descriptions
                .get(i)
                .map(|d| plain_text(d))
                .filter(|d| !d.is_empty())
                .map(|d| format!(" — {}", ellipsize(&d, 200)))
                .unwrap_or_default();
            t.push_str(&format!(
                "{}. {}{about}\n",
                i + 1,
                ellipsize(&plain_text(o), 200)
            ));
        }
        t.push('\n');
    }
    t.push_str(&context(&q.context));
    t.push_str(&since(q.asked_at, now));
    if let (Some(default), Some(at)) = (&q.default_if_timeout, q.deadline()) {
        t.push_str(&format!(
            "If nobody answers, the agent takes '{}' at {} (in {})\n",
            ellipsize(&plain_text(default), 200),
            clock(at),
            format_duration((at - now).num_seconds().max(0))
        ));
    }
    t.push('\n');
    t.push_str(match q.kind {
        QuestionType::Choice if q.multi_select => {
            "Reply to this message with the numbers of your choices, such as 1,3."
        }
        QuestionType::Choice if has_buttons(q) => {
            "Tap an option, or reply to this message with your answer."
        }
        QuestionType::Choice => "Reply to this message with an option or its number.",
        QuestionType::Confirm => "Tap Yes or No, or reply to this message.",
        QuestionType::Text => "Reply to this message with your answer.",
    });
    t
}

/// A gate's message.
pub fn gate_text(job: &Job, g: &Gate, now: DateTime<Utc>) -> String {
    let mut t = heading(job, "🚦 Approval");
    t.push_str(&format!(
        "Gate '{}': {}\n\n",
        ellipsize(&plain_text(&g.gate), 200),
        ellipsize(&plain_text(&g.description), QUESTION_CAP)
    ));
    t.push_str(&context(&g.context));
    t.push_str(&since(g.awaiting_since, now));
    match g.deadline() {
        Some(at) => t.push_str(&format!(
            "If nobody decides, it approves itself at {} (in {})\n",
            clock(at),
            format_duration((at - now).num_seconds().max(0))
        )),
        None => t.push_str("It waits until someone decides.\n"),
    }
    match &g.allow_session {
        Some(covers) => {
            let covers = match plain_text(covers).trim() {
                "" => "the agent then stops asking for requests like this one".to_owned(),
                c => format!("'{}'", ellipsize(c, CONTEXT_CAP)),
            };
            t.push_str(&format!("It may be approved for the session: {covers}\n"));
            t.push_str(
                "\nApprove (this request), Approve for session, or Deny. To deny with a reason, \
                 reply to this message with it.",
            );
        }
        None => {
            t.push_str("\nApprove or Deny. To deny with a reason, reply to this message with it.");
        }
    }
    t
}

fn button(text: &str, data: String) -> Value {
    json!({"text": text, "callback_data": data})
}

/// A question's buttons (`None`: it is answered by a reply).
pub fn question_keyboard(serial: u64, q: &Question) -> Option<Value> {
    if !has_buttons(q) {
        return None;
    }
    let rows: Vec<Value> = match q.kind {
        QuestionType::Confirm => vec![json!([
            button("Yes", Action::Yes.data(serial)),
            button("No", Action::No.data(serial))
        ])],
        _ => q
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let label = format!("{}. {}", i + 1, ellipsize(&plain_text(o), LABEL_CAP));
                json!([button(&label, Action::Option(i).data(serial))])
            })
            .collect(),
    };
    Some(json!({"inline_keyboard": rows}))
}

/// A gate's buttons: Approve and Deny, and below them, where the gate offers it, Approve for
/// session (a row of its own: three labels in one row are cut short on a phone).
pub fn gate_keyboard(serial: u64, session: bool) -> Value {
    let mut rows = vec![json!([
        button("✅ Approve", Action::Approve.data(serial)),
        button("⛔ Deny", Action::Deny.data(serial))
    ])];
    if session {
        rows.push(json!([button(
            "✅ Approve for session",
            Action::ApproveSession.data(serial)
        )]));
    }
    json!({"inline_keyboard": rows})
}

/// The message once closed: as posted, with how it ended below.
pub fn closed_text(posted: &str, outcome: &str) -> String {
    format!("{posted}\n\n— {outcome}")
}

/// How an author recorded as `telegram:@bruno (111)` is named: `@bruno`.
fn telegram_name(by: &str) -> &str {
    let name = by.strip_prefix("telegram:").unwrap_or(by);
    name.rsplit_once(" (").map_or(name, |(n, _)| n)
}

/// Where an answer came from, in words: `in the cockpit by bruno@host`.
fn by_whom(source: &str, by: &str) -> String {
    let by = plain_text(by);
    match source {
        "tui" => format!("in the cockpit by {by}"),
        "cli" => format!("at the command line by {by}"),
        "telegram" => format!("by {} from Telegram", telegram_name(&by)),
        "" => format!("by {by}"),
        other => format!("by {by} ({})", plain_text(other)),
    }
}

/// How a question was settled.
pub fn answered(r: &Response) -> String {
    answer_words(&r.source, &r.answered_by, &r.answer)
}

fn answer_words(source: &str, by: &str, answer: &str) -> String {
    let answer = ellipsize(&plain_text(answer), 300);
    match source {
        "timeout" => format!("the agent took the default: '{answer}'"),
        source => format!("answered {}: '{answer}'", by_whom(source, by)),
    }
}

/// How a gate was decided.
pub fn decided(d: &Decision) -> String {
    decision_words(d.verb(), &d.source, &d.decided_by, &d.reason)
}

fn decision_words(verb: &str, source: &str, by: &str, reason: &str) -> String {
    let reason = match reason.trim() {
        "" => String::new(),
        r => format!(": '{}'", ellipsize(&plain_text(r), 300)),
    };
    match source {
        "auto" => format!("{verb} by itself when its time ran out{reason}"),
        source => format!("{verb} {}{reason}", by_whom(source, by)),
    }
}

/// An instance the agent gave up waiting for.
pub const WITHDRAWN: &str = "the agent stopped waiting before anyone answered";
/// An instance whose time ran out with nothing to take.
pub const UNANSWERED: &str = "it timed out with no answer (the agent had no default)";

/// How an instance on another host was settled, as that host's luzia said: the same words as
/// for one here (`None`: a way this luzia does not know).
pub fn settlement_words(s: &Settlement) -> Option<String> {
    match s.how {
        How::Answered => Some(answer_words(&s.source, &s.by, &s.text)),
        How::Approved => {
            // An older luzia says no scope: a plain approval, as it was.
            let scope = match s.scope {
                Covers::Session => Scope::Session,
                Covers::Once | Covers::Unknown => Scope::Once,
            };
            let verb = decision_verb(true, scope);
            Some(decision_words(verb, &s.source, &s.by, &s.text))
        }
        How::Denied => Some(decision_words("denied", &s.source, &s.by, &s.text)),
        How::Withdrawn => Some(WITHDRAWN.into()),
        How::Unanswered => Some(UNANSWERED.into()),
        How::Unknown => None,
    }
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
