//! How a question or gate that went away was settled, as its machine's files say (its answer
//! file, else its history): carried beside the job's record on the line that saw it go, so
//! that another machine can say who answered it and how without asking again.

use serde::{Deserialize, Serialize};

/// What was pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pending {
    Question,
    Gate,
    /// A kind this reader does not know (from a newer luzia).
    #[serde(other)]
    Unknown,
}

/// How it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    /// A question answered (also by its default when its time ran out: `source` says).
    Answered,
    Approved,
    Denied,
    /// The agent stopped waiting before anyone answered.
    Withdrawn,
    /// It timed out with no answer (the agent had no default).
    Unanswered,
    /// A way this reader does not know (from a newer luzia).
    #[serde(other)]
    Unknown,
}

/// What an approval covered: the one request, or (where the gate offered it) every request like
/// it for the rest of the agent's session. Said only for the session: a settlement without it,
/// from an older writer too, covered the one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Covers {
    #[default]
    Once,
    Session,
    /// A scope this reader does not know (from a newer luzia).
    #[serde(other)]
    Unknown,
}

impl Covers {
    fn is_once(&self) -> bool {
        *self == Covers::Once
    }
}

/// One instance settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    pub kind: Pending,
    /// The instance's id (`q1`, a gate's id).
    pub id: String,
    pub how: How,
    /// Who answered or decided, as recorded there (`bruno@host`, `telegram:@ana (222)`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// Through what: `tui`, `cli`, `telegram`, `timeout`, `auto`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The answer, or the reason given with a decision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// What an approval covered (`"scope": "session"`, left out for the one request). Added
    /// within the protocol: an older reader ignores it and says a plain approval.
    #[serde(default, skip_serializing_if = "Covers::is_once")]
    pub scope: Covers,
}
