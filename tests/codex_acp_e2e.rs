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
use std::path::Path;

use common::acp::{APPROVED, Agent, DENIED, KILLED, World};
use common::agents::{CODEX_ACP, agent_or_skip};
use common::fake_responses::{self, FakeResponses};
use common::http::Reply;
use serde_json::json;

/// What a user adds to the provider's config so that Codex asks before it runs a command
/// (`untrusted`: every command but a few read-only ones) and runs an approved one as it is
/// (its sandbox needs bubblewrap, which a server may not have; the gate is the check).
const ASKING: &str = "approval_policy = \"untrusted\"\nsandbox_mode = \"danger-full-access\"\n";

fn world(codex_acp: &Path, script: Vec<Reply>) -> World<FakeResponses> {
    World::new(FakeResponses::start(script), None, |base, api| {
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
            home,
            env: vec![(fake_responses::KEY_VAR.into(), fake_responses::KEY.into())],
        }
    })
}

fn shell(command: &str) -> Reply {
    Reply::tool("exec_command", json!({"cmd": command}))
}

#[test]
fn codex_an_approved_command_runs_and_a_reply_continues_the_session() {
    let test = "codex_an_approved_command_runs";
    let Some(codex) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    let w = world(
        &codex,
        vec![shell(APPROVED), Reply::text("The marker is written.")],
    );
    let id = w.run("Write the marker.");
    let live = ["── Codex session ", &format!("▶ execute  {APPROVED}")];
    w.wait_command_gate(&id, &live);
    let ended = w.approve_to_end(&id);
    assert!(!ended.session.is_empty(), "{}", ended.meta);
    assert_eq!(ended.meta["agent"], codex.to_str().unwrap());
    assert_eq!(ended.meta["usage"]["outcome"], "success", "{}", ended.meta);
    // Two requests to the model (the command, then the last words), read from Codex's file.
    assert_tokens(&ended.meta, 2);
    let log = w.log(&id);
    assert!(
        log.contains(" · 1,600 in / 80 out / 200 cache read tokens"),
        "{log}"
    );
    let next = w.reply_continues(&id, &ended, "Codex");
    // The loaded session's totals go on from the first job's: only its own turn is counted.
    assert_tokens(&next.meta, 1);
}

/// The job's `usage` holds the tokens of `requests` responses of the fake API, each of
/// which reports [`fake_responses::INPUT_TOKENS`] in (of them [`fake_responses::CACHED_TOKENS`]
/// cached) and [`fake_responses::OUTPUT_TOKENS`] out: in Claude Code's fields, input without
/// the part read from the cache.
fn assert_tokens(meta: &serde_json::Value, requests: u64) {
    let usage = &meta["usage"];
    let cached = fake_responses::CACHED_TOKENS * requests;
    assert_eq!(
        (
            usage["input_tokens"].as_u64(),
            usage["cache_read_tokens"].as_u64(),
            usage["output_tokens"].as_u64()
        ),
        (
            Some(fake_responses::INPUT_TOKENS * requests - cached),
            Some(cached),
            Some(fake_responses::OUTPUT_TOKENS * requests)
        ),
        "{meta}"
    );
}

#[test]
fn codex_a_denied_command_does_not_run() {
    let Some(codex) = agent_or_skip("codex_a_denied_command_does_not_run", &CODEX_ACP) else {
        return;
    };
    let w = world(&codex, vec![shell(DENIED)]);
    let id = w.run("Write the marker.");
    // Codex ends its turn at a rejection (`cancelled`): the job ends as the operator decided.
    let (job, log) = w.deny_at_gate(&id);
    assert_eq!(job["usage"]["outcome"], "denied", "{job}");
    assert_tokens(&w.meta(&id), 1);
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
    let w = world(&codex, vec![shell(KILLED)]);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id);
}
