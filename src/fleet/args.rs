//! The remote luzia's arguments for an answer or a decision, said once for every caller (the
//! cockpit's fleet worker, the Telegram bridge): only the instance named, so an answer to one
//! settled meanwhile is refused there, not given to the next; options joined to their values and
//! the answer after `--`, so that text beginning with `-` stays text.
//!
//! Who gave an answer relayed from elsewhere (the cockpit here, Telegram) goes with it as the
//! hidden `--source`/`--by`, so that the host records the person and the way, not its ssh user
//! at its command line. A luzia older than those flags refuses them as clap refuses any unknown
//! option, before doing anything: [`relay_refused`] tells that apart from a refusal of the answer,
//! and [`relayed`] then gives the answer without them rather than lose it.

use crate::jobs::JobId;
use crate::jobs::hitl::operator::{Scope, Verdict};

/// Who an answer is relayed for and through what (`telegram`, `telegram:@bruno (111)`):
/// recorded there as its source and author instead of the ssh user.
#[derive(Clone, Copy, Debug)]
pub struct Relayed<'a> {
    pub source: &'a str,
    pub by: &'a str,
}

/// Whether a remote `luzia` failed only because it does not know the relay flags (a luzia
/// older than them): clap's usage error, exit 2, naming `--source` or `--by` as unexpected. Such
/// a luzia stopped at parsing and did nothing. A refusal of the answer itself (already answered,
/// not an option) is the command's error, exit 1, and is never taken for this.
pub fn relay_refused(code: Option<i32>, stderr: &[u8]) -> bool {
    let stderr = String::from_utf8_lossy(stderr);
    code == Some(CLAP_USAGE)
        && stderr.lines().any(|l| {
            ["--source", "--by"]
                .iter()
                .any(|flag| l.starts_with(&format!("error: unexpected argument '{flag}'")))
        })
}

/// clap's exit status for a command line it cannot parse.
const CLAP_USAGE: i32 = 2;

/// Runs an answer or a decision there with `relay` (`build(Some(relay))`), and once more without
/// it when the luzia there refused the relay flags ([`relay_refused`] on what `run` returned, as
/// `refused` reads it): that host then records the answer as given at its command line by the
/// ssh user, which is less than the truth but keeps the answer. Which arguments are passed is
/// decided here alone, for every caller.
pub fn relayed<T>(
    relay: Relayed<'_>,
    build: impl Fn(Option<Relayed<'_>>) -> Vec<String>,
    mut run: impl FnMut(&[String]) -> T,
    refused: impl Fn(&T) -> bool,
) -> T {
    let first = run(&build(Some(relay)));
    if !refused(&first) {
        return first;
    }
    tracing::info!(
        "the luzia there predates --source/--by: giving the answer without them, as its ssh user's"
    );
    run(&build(None))
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

#[cfg(test)]
mod tests;
