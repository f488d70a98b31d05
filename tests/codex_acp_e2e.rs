//! Codex through the Agent Client Protocol (Zed's adapter `codex-acp`, chosen with `[agent] kind
//! = "codex"`), end to end: the real luzia, the real adapter and the Codex it embeds, against a
//! scripted OpenAI Responses API on 127.0.0.1 and a fresh HOME whose `~/.codex/config.toml` says
//! what a user writes: the provider, and an approval policy that asks before a command runs.
//! The job shows its output while it runs; the command becomes a gate; approving runs it,
//! denying stops it; `luzia reply` continues the same session; `luzia
//! kill` stops it and leaves no gate pending.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::acp::{Agent, World};
use common::agents::{CODEX_ACP, agent_or_skip};
use common::fake_responses::{self, FakeResponses};
use common::http::Reply;
use serde_json::json;

/// What a user adds to the provider's config so that Codex asks before it runs a command
/// (`untrusted`: every command but a few read-only ones) and runs an approved one as it is
/// (its sandbox needs bubblewrap, which a server may not have; the gate is the check).
const ASKING: &str = "approval_policy = \"untrusted\"\nsandbox_mode = \"danger-full-access\"\n";

fn world(codex_acp: &Path, api: &FakeResponses) -> World {
    World::new(None, |base| {
        let home = base.join("home");
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::write(
            home.join(".codex/config.toml"),
            format!("{ASKING}{}", api.codex_config()),
        )
        .unwrap();
        Agent {
            kind: "codex",
            command: vec![codex_acp.to_str().unwrap().to_owned()],
            env: vec![
                ("HOME".into(), home.to_str().unwrap().to_owned()),
                (fake_responses::KEY_VAR.into(), fake_responses::KEY.into()),
            ],
        }
    })
}

fn shell(command: &str) -> Reply {
    Reply::tool("exec_command", json!({"cmd": command}))
}

fn marker(w: &World) -> PathBuf {
    w.project().join("marker.txt")
}

#[test]
fn codex_an_approved_command_runs_and_a_reply_continues_the_session() {
    let test = "codex_an_approved_command_runs";
    let Some(codex) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    let api = FakeResponses::start(vec![
        shell("echo approved > marker.txt"),
        Reply::text("The marker is written."),
    ]);
    let w = world(&codex, &api);
    let id = w.run("Write the marker.");
    let gate = w.wait_gate(&id);
    assert_eq!(
        gate["gate"], "execute: echo approved > marker.txt",
        "{gate}"
    );
    // Live: while the job waits at its gate, its log already tells what it is doing.
    let log = w.log(&id);
    assert!(log.contains("── Codex session "), "{log}");
    assert!(
        log.contains("▶ execute  echo approved > marker.txt"),
        "{log}"
    );
    assert!(!log.contains("exit:"), "{log}");
    assert!(!marker(&w).exists(), "nothing runs before it is approved");
    w.ok(&["approve", &id]);
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert_eq!(fs::read_to_string(marker(&w)).unwrap(), "approved\n");
    let log = w.log(&id);
    assert!(log.contains("  ✓ approved by "), "{log}");
    assert!(
        log.contains("The marker is written.\n── success · "),
        "{log}"
    );
    let meta = w.meta(&id);
    let session = meta["session_id"].as_str().unwrap().to_owned();
    assert!(!session.is_empty(), "{meta}");
    assert_eq!(meta["agent"], codex.to_str().unwrap());
    assert_eq!(meta["usage"]["outcome"], "success", "{meta}");

    api.push(vec![Reply::text("Still the same session.")]);
    let next = w.reply(&id, "Is the marker there?");
    let job = w.wait_finished(&next);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&next));
    let meta = w.meta(&next);
    assert_eq!(
        (meta["session_id"].as_str(), meta["resumes"].as_str()),
        (Some(session.as_str()), Some(id.as_str()))
    );
    let log = w.log(&next);
    assert!(
        log.contains(&format!("── Codex session {session} (continued)")),
        "{log}"
    );
    assert!(log.contains("Still the same session."), "{log}");
    assert!(
        !log.contains("The marker is written.") && !log.contains("▶"),
        "the replayed history is kept out: {log}"
    );
    let last = api.requests().pop().unwrap().to_string();
    assert!(
        last.contains("echo approved > marker.txt") && last.contains("Is the marker there?"),
        "the model was given the old turns with the new one: {last}"
    );
}

#[test]
fn codex_a_denied_command_does_not_run() {
    let Some(codex) = agent_or_skip("codex_a_denied_command_does_not_run", &CODEX_ACP) else {
        return;
    };
    let api = FakeResponses::start(vec![shell("echo denied > marker.txt")]);
    let w = world(&codex, &api);
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    w.ok(&["deny", &id, "--reason", "not today"]);
    let job = w.wait_finished(&id);
    assert!(!marker(&w).exists(), "denied: nothing ran");
    // Codex ends its turn at a rejection (`cancelled`): the job ends as the operator decided.
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert_eq!(job["usage"]["outcome"], "denied", "{job}");
    let log = w.log(&id);
    assert!(
        log.contains(": not today (the agent is told only that it was rejected)\n── denied: the agent ended its turn at the denied request"),
        "{log}"
    );
}

#[test]
fn codex_a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(codex) = agent_or_skip("codex_a_kill_cancels_the_turn", &CODEX_ACP) else {
        return;
    };
    let api = FakeResponses::start(vec![shell("echo killed > marker.txt")]);
    let w = world(&codex, &api);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id, &marker(&w));
}
