//! The remote luzia's arguments for an answer or a decision, said once for every caller (the
//! cockpit's fleet worker, the Telegram bridge): only the instance named, so an answer to one
//! settled meanwhile is refused there, not given to the next; options joined to their values and
//! the answer after `--`, so that text beginning with `-` stays text.

use crate::jobs::JobId;
use crate::jobs::hitl::operator::{Scope, Verdict};

/// Who an answer is relayed for and through what (`telegram`, `telegram:@bruno (111)`):
/// recorded there as its source and author instead of the ssh user.
#[derive(Clone, Copy, Debug)]
pub struct Relayed<'a> {
    pub source: &'a str,
    pub by: &'a str,
}

fn relay_args(v: &mut Vec<String>, relay: Option<Relayed<'_>>) {
    if let Some(r) = relay {
        v.push(format!("--source={}", r.source));
        v.push(format!("--by={}", r.by));
    }
}

/// `luzia answer ID --question=QN [--source=S --by=W] -- TEXT`.
pub fn answer(
    id: &JobId,
    question_id: &str,
    text: &str,
    relay: Option<Relayed<'_>>,
) -> Vec<String> {
    let mut v = vec![
        "answer".into(),
        id.to_string(),
        format!("--question={question_id}"),
    ];
    relay_args(&mut v, relay);
    v.push("--".into());
    v.push(text.into());
    v
}

/// `luzia approve|deny ID --gate=GN [--always] [--reason=R] [--source=S --by=W]`.
pub fn decide(
    id: &JobId,
    gate_id: &str,
    verdict: Verdict<'_>,
    relay: Option<Relayed<'_>>,
) -> Vec<String> {
    let Verdict {
        approved,
        scope,
        reason,
    } = verdict;
    let mut v = vec![
        if approved { "approve" } else { "deny" }.into(),
        id.to_string(),
        format!("--gate={gate_id}"),
    ];
    if scope == Scope::Session {
        v.push("--always".into());
    }
    // `deny` requires a reason, even an empty one; `approve` takes one only when given.
    if !approved || !reason.is_empty() {
        v.push(format!("--reason={reason}"));
    }
    relay_args(&mut v, relay);
    v
}
