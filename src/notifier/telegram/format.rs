//! The words the bridge posts: a question's or gate's message and its buttons, the line that
//! closes it (who answered, how), and how a Telegram user is named and recorded. Plain text
//! only (no `parse_mode`): an agent's words are never read as markup. Agent text is made plain
//! and capped first, as everywhere in luzia.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::press::Action;
use super::state::{Countdown, What};
use crate::jobs::Job;
use crate::jobs::hitl::operator::{Decision, Response, Scope, decision_verb};
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

/// The line saying since when it waits: how long ago, as of `now`, to the step the countdown
/// shows (`25m ago`); `now: None` (a settled post) the clock time alone.
fn since(t: Option<DateTime<Utc>>, now: Option<DateTime<Utc>>) -> String {
    t.map_or_else(String::new, |t| match now {
        Some(now) => format!("Waiting since {} ({})\n", clock(t), ago(now - t)),
        None => format!("Waiting since {}\n", clock(t)),
    })
}

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The step, in minutes, a time `ms` ahead or ago is shown to: the minute within the hour, ten
/// minutes within the day, the hour beyond. A message about a deadline a day away is then
/// edited once an hour, not once a minute.
fn step_minutes(ms: i64) -> i64 {
    if ms <= HOUR_MS {
        1
    } else if ms <= DAY_MS {
        10
    } else {
        60
    }
}

/// `25m`, `1h40m`, `2d05h`.
fn minutes_words(m: i64) -> String {
    let (d, h, mm) = (m / 1440, m / 60 % 24, m % 60);
    if d > 0 {
        format!("{d}d{h:02}h")
    } else if h > 0 {
        format!("{h}h{mm:02}m")
    } else {
        format!("{mm}m")
    }
}

/// `left` rounded up to its step, in minutes, and that step; none once it is up.
fn rounded_up(left: chrono::Duration) -> Option<(i64, i64)> {
    let ms = left.num_milliseconds();
    if ms <= 0 {
        return None;
    }
    let step = step_minutes(ms);
    let step_ms = step * MINUTE_MS;
    Some(((ms - 1) / step_ms * step + step, step))
}

/// How soon something `left` ahead happens, as a post says it: rounded up to its step
/// (`in 25m`, `in 1h40m`, `in 2d05h`), `within a minute` in the last one, `time is up` after.
/// Rounded up, so the words never promise more time than is left.
pub fn time_left(left: chrono::Duration) -> String {
    match rounded_up(left) {
        None => TIME_IS_UP.into(),
        Some((1, _)) => "within a minute".into(),
        Some((m, _)) => format!("in {}", minutes_words(m)),
    }
}

/// What [`time_left`] says once the time is up: the last words it changes to.
pub const TIME_IS_UP: &str = "time is up";

/// How much later [`time_left`]'s words for `left` change; none once the time is up.
pub fn time_left_changes_in(left: chrono::Duration) -> Option<chrono::Duration> {
    let (m, step) = rounded_up(left)?;
    Some(left - chrono::Duration::minutes(m - step))
}

/// How long ago, rounded down to the same steps: `just now`, `25m ago`, `1h40m ago`.
fn ago(elapsed: chrono::Duration) -> String {
    let ms = elapsed.num_milliseconds();
    if ms < MINUTE_MS {
        return "just now".into();
    }
    let step = step_minutes(ms);
    format!("{} ago", minutes_words(ms / MINUTE_MS / step * step))
}

/// The lines of a post with a deadline that tell time, as of `now` (`None`: settled, the clock
/// times alone): since when it waits, and what is taken when, and how soon.
pub fn clock_lines(what: What, c: &Countdown, now: Option<DateTime<Utc>>) -> String {
    let soon = now.map_or_else(String::new, |now| {
        format!(" ({})", time_left(c.deadline - now))
    });
    let at = clock(c.deadline);
    let then = match (what, &c.default) {
        (What::Question, Some(default)) => {
            format!("If nobody answers, the agent takes '{default}' at {at}{soon}\n")
        }
        (What::Question, None) => {
            format!("If nobody answers, the agent stops waiting at {at}{soon}\n")
        }
        (What::Gate, _) => format!("If nobody decides, it approves itself at {at}{soon}\n"),
    };
    format!("{}{then}", since(c.since, now))
}

/// Appends to `t` the lines that tell time of a post waiting since `since`, with `deadline`
/// (and, for a question, the `default` then taken): its countdown, if it has a deadline.
fn push_clock(
    t: &mut String,
    what: What,
    since_: Option<DateTime<Utc>>,
    deadline: Option<DateTime<Utc>>,
    default: Option<String>,
    now: DateTime<Utc>,
) -> Option<Countdown> {
    let Some(deadline) = deadline else {
        t.push_str(&since(since_, Some(now)));
        return None;
    };
    let mut c = Countdown {
        deadline,
        since: since_,
        default,
        at: t.len(),
        len: 0,
        shown: time_left(deadline - now),
        edited: None,
    };
    let lines = clock_lines(what, &c, Some(now));
    c.len = lines.len();
    t.push_str(&lines);
    Some(c)
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

/// A question's message, and its countdown if it has a default and a deadline.
pub fn question_text(job: &Job, q: &Question, now: DateTime<Utc>) -> (String, Option<Countdown>) {
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
    let countdown = match &q.default_if_timeout {
        Some(default) => {
            let default = ellipsize(&plain_text(default), 200);
            push_clock(
                &mut t,
                What::Question,
                q.asked_at,
                q.deadline(),
                Some(default),
                now,
            )
        }
        None => push_clock(&mut t, What::Question, q.asked_at, None, None, now),
    };
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
    (t, countdown)
}

/// A gate's message, and its countdown if it approves itself.
pub fn gate_text(job: &Job, g: &Gate, now: DateTime<Utc>) -> (String, Option<Countdown>) {
    let mut t = heading(job, "🚦 Approval");
    t.push_str(&format!(
        "Gate '{}': {}\n\n",
        ellipsize(&plain_text(&g.gate), 200),
        ellipsize(&plain_text(&g.description), QUESTION_CAP)
    ));
    t.push_str(&context(&g.context));
    let countdown = push_clock(
        &mut t,
        What::Gate,
        g.awaiting_since,
        g.deadline(),
        None,
        now,
    );
    if countdown.is_none() {
        t.push_str("It waits until someone decides.\n");
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
    (t, countdown)
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
