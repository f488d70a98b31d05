//! A post's countdown kept true: a question with a default, or a gate that approves itself,
//! says how soon (`in 25m`), and while it is open its message is edited when those words change,
//! and only then. Which posts need an edit at an instant, with what text, and when the next one
//! falls due are decided here from the state alone (times in, edits out); the worker makes the
//! calls and sleeps until that instant, and without such a post it does not wake at all.
//!
//! The words change at most once a minute (`format::time_left`); an edit is moreover never
//! made within a minute of the post's last one, except the last, `time is up`, which is made
//! when it is due (but not within [`FINAL_GAP`] of a failed try). A settled post, or one never
//! sent, is not edited for its countdown: its own edit says how it ended.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use super::format::{TIME_IS_UP, clock_lines, time_left, time_left_changes_in};
use super::state::{Countdown, Posted};

/// The least time between two edits of a post's countdown.
pub const MIN_GAP: Duration = Duration::seconds(60);
/// The least time between two tries of the last edit (`time is up`).
pub const FINAL_GAP: Duration = Duration::seconds(5);

/// An edit to make: post `key`'s message gets `text`, and its countdown becomes `countdown`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub key: String,
    pub text: String,
    pub countdown: Countdown,
}

/// What a post's countdown needs at an instant.
#[derive(Debug, PartialEq)]
enum Plan {
    /// An edit now, to this text and countdown.
    Now(String, Countdown),
    /// Nothing before this instant.
    At(DateTime<Utc>),
    /// Nothing ever: no countdown, settled, not sent, or its last words shown.
    Never,
}

/// `p`'s text with its lines that tell time written as of `now` (`None`: settled), and its
/// countdown saying so; none when the text does not hold them where the countdown says (a
/// state file edited by hand).
pub fn retimed(p: &Posted, now: Option<DateTime<Utc>>) -> Option<(String, Countdown)> {
    let c = p.countdown.as_ref()?;
    let head = p.text.get(..c.at)?;
    let tail = p.text.get(c.at.checked_add(c.len)?..)?;
    let lines = clock_lines(p.what, c, now);
    let mut c = c.clone();
    c.len = lines.len();
    if let Some(now) = now {
        c.shown = time_left(c.deadline - now);
    }
    Some((format!("{head}{lines}{tail}"), c))
}

fn plan(p: &Posted, now: DateTime<Utc>) -> Plan {
    let Some(c) = &p.countdown else {
        return Plan::Never;
    };
    if p.closed.is_some() || p.message_id.is_none() || c.shown == TIME_IS_UP {
        return Plan::Never;
    }
    let left = c.deadline - now;
    let want = time_left(left);
    if want == c.shown {
        return time_left_changes_in(left).map_or(Plan::Never, |d| Plan::At(now + d));
    }
    let gap = if want == TIME_IS_UP {
        FINAL_GAP
    } else {
        MIN_GAP
    };
    if let Some(edited) = c.edited
        && now - edited < gap
    {
        return Plan::At(edited + gap);
    }
    match retimed(p, Some(now)) {
        Some((text, mut c)) => {
            c.edited = Some(now);
            Plan::Now(text, c)
        }
        None => Plan::Never,
    }
}

/// The edits due at `now`, by key.
pub fn due(posted: &BTreeMap<String, Posted>, now: DateTime<Utc>) -> Vec<Edit> {
    posted
        .iter()
        .filter_map(|(key, p)| match plan(p, now) {
            Plan::Now(text, countdown) => Some(Edit {
                key: key.clone(),
                text,
                countdown,
            }),
            Plan::At(_) | Plan::Never => None,
        })
        .collect()
}

/// When the next edit falls due (`now` if one is due already); none while no open post has a
/// countdown still to change.
pub fn next_due(posted: &BTreeMap<String, Posted>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    posted
        .values()
        .filter_map(|p| match plan(p, now) {
            Plan::Now(..) => Some(now),
            Plan::At(t) => Some(t),
            Plan::Never => None,
        })
        .min()
}

#[cfg(test)]
#[path = "countdown_tests.rs"]
mod tests;
