//! A question or gate withdrawn because the agent waiting at it was stopped (SIGTERM, SIGINT,
//! SIGHUP: `luzia kill`, a Bash tool giving up, a closed terminal). Left behind, it would read as
//! pending to nobody's benefit. `luzia ask` and `luzia gate` catch those signals while they
//! wait ([`Interrupt`]), and withdraw their request before they exit:
//!
//! 1. The request file is removed, only if it still asks this instance (under the directory's
//!    lock, like every removal).
//! 2. Then, under the lock again, whatever answer to this instance stands is archived with it
//!    (an operator who published before step 1 was told it stands: the history agrees) and
//!    removed; with none, the request is archived with `"response": null` (`"decision": null`)
//!    and `"withdrawn": {"reason", "at"}`. An operator arriving after step 1 finds the instance
//!    no longer pending and is told it was withdrawn.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::{DECISION_FILE, GATE_FILE, QUESTION_FILE, RESPONSE_FILE};
use crate::jobs::fs::publish::locked;
use crate::jobs::hitl::archive::{self, Approval, Clarification};
use crate::jobs::hitl::published::{Decision, Response, timestamp};
use crate::jobs::model::waiting::{read_gate, read_question};

/// Why a request was withdrawn, in its history record.
#[derive(Clone, Debug, Serialize)]
pub struct Withdrawal {
    pub reason: String,
    pub at: String,
}

impl Withdrawal {
    /// The agent was stopped by `signal` (its number).
    pub fn stopped_by(signal: i32) -> Withdrawal {
        Withdrawal {
            reason: format!("the agent was stopped ({})", signal_name(signal)),
            at: timestamp(chrono::Utc::now()),
        }
    }
}

/// `SIGTERM`, `SIGINT`, `SIGHUP`, or the number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

#[derive(Serialize)]
struct QuestionWithdrawn<'a> {
    clarification: &'a Clarification<'a>,
    response: Option<&'a Response>,
    withdrawn: &'a Withdrawal,
    archived_at: String,
}

#[derive(Serialize)]
struct GateWithdrawn<'a> {
    approval: &'a Approval<'a>,
    decision: Option<&'a Decision>,
    withdrawn: &'a Withdrawal,
    archived_at: String,
}

/// Withdraws question `asked`; returns the answer that stood, if one did.
pub fn question(
    dir: &Path,
    asked: &Clarification,
    why: &Withdrawal,
) -> io::Result<Option<Response>> {
    locked(dir, || {
        let ours = read_question(dir)
            .ok()
            .flatten()
            .is_some_and(|q| q.id == asked.id);
        remove_if(dir, QUESTION_FILE, ours)
    })?;
    locked(dir, || {
        let answer = read_small(&dir.join(RESPONSE_FILE))?
            .and_then(|b| Response::parse(&b))
            .filter(|r| r.question_id == asked.id);
        let record = QuestionWithdrawn {
            clarification: asked,
            response: answer.as_ref(),
            withdrawn: why,
            archived_at: timestamp(chrono::Utc::now()),
        };
        archive::append(dir, &record)?;
        remove_if(dir, RESPONSE_FILE, answer.is_some())?;
        Ok(answer)
    })
}

/// Withdraws gate `asked`; returns the decision that stood, if one did.
pub fn gate(dir: &Path, asked: &Approval, why: &Withdrawal) -> io::Result<Option<Decision>> {
    locked(dir, || {
        let ours = read_gate(dir)
            .ok()
            .flatten()
            .is_some_and(|g| g.id == asked.id);
        remove_if(dir, GATE_FILE, ours)
    })?;
    locked(dir, || {
        let decision = read_small(&dir.join(DECISION_FILE))?
            .and_then(|b| Decision::parse(&b))
            .filter(|d| d.decides(&asked.id, asked.gate));
        let record = GateWithdrawn {
            approval: asked,
            decision: decision.as_ref(),
            withdrawn: why,
            archived_at: timestamp(chrono::Utc::now()),
        };
        archive::append(dir, &record)?;
        remove_if(dir, DECISION_FILE, decision.is_some())?;
        Ok(decision)
    })
}

fn remove_if(dir: &Path, name: &str, yes: bool) -> io::Result<()> {
    if !yes {
        return Ok(());
    }
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The stop signals a waiting agent command catches (SIGTERM, SIGINT, SIGHUP), so that it can
/// withdraw what it waits for before it exits; or none at all ([`Interrupt::none`]).
#[derive(Clone, Default)]
pub struct Interrupt {
    got: Arc<AtomicI32>,
    wakers: Arc<Mutex<Vec<Sender<()>>>>,
}

impl Interrupt {
    /// Never interrupted.
    pub fn none() -> Interrupt {
        Interrupt::default()
    }

    /// Catches SIGTERM, SIGINT and SIGHUP from now on, for the rest of the process: the first
    /// one is recorded and wakes whoever waits (see [`Interrupt::wake`]).
    pub fn on_signals() -> io::Result<Interrupt> {
        use tokio::signal::unix::{SignalKind, signal};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (mut term, mut int, mut hup) = {
            let _inside = rt.enter();
            (
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
                signal(SignalKind::hangup())?,
            )
        };
        let me = Interrupt::none();
        let them = me.clone();
        std::thread::Builder::new()
            .name("luzia-signals".into())
            .spawn(move || {
                let n = rt.block_on(async {
                    tokio::select! {
                        _ = term.recv() => 15,
                        _ = int.recv() => 2,
                        _ = hup.recv() => 1,
                    }
                });
                them.got.store(n, Ordering::SeqCst);
                if let Ok(wakers) = them.wakers.lock() {
                    for w in wakers.iter() {
                        let _ = w.send(());
                    }
                }
            })?;
        Ok(me)
    }

    /// The signal received, if one was.
    pub fn received(&self) -> Option<i32> {
        Some(self.got.load(Ordering::SeqCst)).filter(|&n| n != 0)
    }

    /// Sends on `tx` when a signal arrives (at once if one has).
    pub fn wake(&self, tx: Sender<()>) {
        if let Ok(mut wakers) = self.wakers.lock() {
            wakers.push(tx.clone());
        }
        if self.received().is_some() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::fs::names::HISTORY_FILE;
    use crate::jobs::hitl::history::{Fate, gate_fate, question_fate};
    use crate::jobs::hitl::published::new_token;

    fn asked<'a>(options: &'a [String]) -> Clarification<'a> {
        Clarification {
            id: "q2".into(),
            kind: "text",
            question: "Which one?",
            options,
            context: "",
            asked_at: timestamp(chrono::Utc::now()),
            timeout_minutes: None,
            default_if_timeout: None,
        }
    }

    fn write(dir: &Path, name: &str, value: &impl Serialize) {
        std::fs::write(dir.join(name), serde_json::to_vec(value).unwrap()).unwrap();
    }

    #[test]
    fn a_question_nobody_answered_is_removed_and_recorded_as_withdrawn() {
        let d = tempfile::tempdir().unwrap();
        let q = asked(&[]);
        write(d.path(), QUESTION_FILE, &q);
        let why = Withdrawal::stopped_by(15);
        assert_eq!(question(d.path(), &q, &why).unwrap(), None);
        assert!(!d.path().join(QUESTION_FILE).exists());
        assert_eq!(question_fate(d.path(), "q2").unwrap(), Fate::Withdrawn);
        let history = std::fs::read_to_string(d.path().join(HISTORY_FILE)).unwrap();
        assert!(
            history.contains(r#""withdrawn":{"reason":"the agent was stopped (SIGTERM)""#),
            "{history}"
        );
    }

    #[test]
    fn another_instance_s_request_stays_and_an_answer_that_stood_is_kept_on_record() {
        let d = tempfile::tempdir().unwrap();
        let q = asked(&[]);
        let newer = Clarification {
            id: "q3".into(),
            ..asked(&[])
        };
        write(d.path(), QUESTION_FILE, &newer);
        let answer = Response {
            question_id: "q2".into(),
            answer: "the blue one".into(),
            answered_by: "op@h".into(),
            answered_at: timestamp(chrono::Utc::now()),
            source: "cli".into(),
            token: new_token(),
        };
        write(d.path(), RESPONSE_FILE, &answer);
        let got = question(d.path(), &q, &Withdrawal::stopped_by(1)).unwrap();
        assert_eq!(
            got.as_ref().map(|r| r.answer.as_str()),
            Some("the blue one")
        );
        assert!(d.path().join(QUESTION_FILE).exists(), "q3 is not ours");
        assert!(!d.path().join(RESPONSE_FILE).exists());
        assert_eq!(
            question_fate(d.path(), "q2").unwrap(),
            Fate::Settled(answer)
        );
    }

    #[test]
    fn a_gate_is_withdrawn_the_same_way() {
        let d = tempfile::tempdir().unwrap();
        let g = Approval {
            id: "g1".into(),
            gate: "deploy",
            description: "ship it",
            context: "",
            awaiting_since: timestamp(chrono::Utc::now()),
            auto_approve_after_minutes: None,
        };
        write(d.path(), GATE_FILE, &g);
        assert_eq!(
            gate(d.path(), &g, &Withdrawal::stopped_by(2)).unwrap(),
            None
        );
        assert!(!d.path().join(GATE_FILE).exists());
        assert_eq!(gate_fate(d.path(), "g1").unwrap(), Fate::Withdrawn);
    }

    #[test]
    fn an_interrupt_that_never_comes_wakes_nobody() {
        let i = Interrupt::none();
        let (tx, rx) = std::sync::mpsc::channel();
        i.wake(tx);
        assert!(rx.try_recv().is_err());
        assert_eq!(i.received(), None);
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(9), "signal 9");
    }
}
