//! `luzia ask` and `luzia gate` stopped while they wait (SIGTERM from a kill, SIGINT, SIGHUP from
//! a closed terminal or a shell tool giving up): real processes, real signals. The request is
//! withdrawn (its file removed, the withdrawal in history.jsonl), the process ends as a signal
//! would have ended it (128 + the signal), and an operator who answers afterwards is told the
//! question was withdrawn rather than that it is pending.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + common::HANG_GUARD;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `luzia <args>` as an agent of job `dir`, waits for `request` to appear, sends
/// `signal`, and returns the exit code and stderr.
fn stopped_while_waiting(
    dir: &Path,
    args: &[&str],
    request: &str,
    signal: Signal,
) -> (Option<i32>, String) {
    let mut cmd = Command::new(LUZIA);
    for var in common::LUZIA_VARS {
        cmd.env_remove(var);
    }
    cmd.env("LUZIA_JOB_DIR", dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = common::ChildGuard::new(cmd.spawn().unwrap());
    wait_until(request, || dir.join(request).exists());
    kill_process(Pid::from_raw(child.id() as i32).unwrap(), signal).unwrap();
    let status = child.wait_within(common::HANG_GUARD, "the stopped agent command");
    let mut err = String::new();
    if let Some(mut e) = child.child().stderr.take() {
        use std::io::Read;
        e.read_to_string(&mut err).unwrap();
    }
    (status.code(), err)
}

/// A job directory under a jobs root of its own.
fn job() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("jobs/100000-abcd");
    std::fs::create_dir_all(&dir).unwrap();
    (tmp, dir)
}

fn history(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("history.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_question_is_withdrawn_when_its_agent_is_terminated() {
    let (tmp, dir) = job();
    let dir = dir.as_path();
    let (code, err) = stopped_while_waiting(
        dir,
        &[
            "ask",
            "Which database?",
            "--option",
            "staging",
            "--option",
            "prod",
        ],
        "clarification.json",
        Signal::TERM,
    );
    assert_eq!(code, Some(128 + 15), "{err}");
    assert!(
        err.contains("stopped by SIGTERM while waiting: question q1 in ")
            && err.contains(" was withdrawn"),
        "{err}"
    );
    assert!(!dir.join("clarification.json").exists());
    let records = history(dir);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["clarification"]["id"], "q1");
    assert!(records[0]["response"].is_null());
    assert_eq!(records[0]["withdrawn"], "the agent was stopped (SIGTERM)");
    // Nothing pending is left, and a late answer is told what became of the question.
    let mut answer = Command::new(LUZIA);
    for var in common::LUZIA_VARS {
        answer.env_remove(var);
    }
    let out = answer
        .arg("--jobs-dir")
        .arg(tmp.path().join("jobs"))
        .args(["answer", "100000-abcd", "--question", "q1", "staging"])
        .env("XDG_CONFIG_HOME", tmp.path().join("no-config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("the agent withdrew it before anyone answered"),
        "{said}"
    );
    assert!(!dir.join("response.json").exists(), "nothing published");
    // The next question counts on.
    assert_eq!(
        luzia_next_question(dir),
        "q2",
        "a withdrawn question keeps its id"
    );
}

fn luzia_next_question(dir: &Path) -> String {
    let (code, _) =
        stopped_while_waiting(dir, &["ask", "Again?"], "clarification.json", Signal::INT);
    assert_eq!(code, Some(128 + 2));
    history(dir).last().unwrap()["clarification"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_gate_is_withdrawn_when_its_terminal_hangs_up() {
    let (_tmp, dir) = job();
    let dir = dir.as_path();
    let (code, err) = stopped_while_waiting(
        dir,
        &["gate", "deploy", "ship it to production"],
        "approval.json",
        Signal::HUP,
    );
    assert_eq!(code, Some(128 + 1), "{err}");
    assert!(
        err.contains("stopped by SIGHUP while waiting: gate 'deploy'")
            && err.contains("was withdrawn"),
        "{err}"
    );
    assert!(!dir.join("approval.json").exists());
    let records = history(dir);
    assert_eq!(records[0]["approval"]["gate"], "deploy");
    assert!(records[0]["decision"].is_null());
    assert_eq!(records[0]["withdrawn"], "the agent was stopped (SIGHUP)");
}
