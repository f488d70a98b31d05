//! Qwen Code through the Agent Client Protocol (`qwen --acp`, chosen with `[agent] kind =
//! "qwen"`), end to end: the real luzia and the real CLI, against a scripted Chat Completions
//! API on 127.0.0.1 and a fresh HOME whose `~/.qwen/settings.json` says what a user writes: the
//! kind of login (`openai`: the key, endpoint and model from `OPENAI_*`) and the approval mode
//! under which a shell command asks first. The job shows its output while it runs; the command
//! becomes a gate; approving runs it, denying blocks it; tokens are recorded; `luzia reply`
//! continues the same session; `luzia kill` stops it and leaves no gate pending.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::acp::{APPROVED, Agent, DENIED, KILLED, WAIT, World};
use common::agents::{QWEN, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::http::Reply;
use serde_json::json;

fn world(qwen: &Path, script: Vec<Reply>) -> World<FakeChat> {
    World::new(FakeChat::start(script), None, |base, api| {
        let home = base.join("home");
        api.qwen_home(&home);
        Agent {
            kind: "qwen",
            command: vec![qwen.to_str().unwrap().to_owned(), "--acp".into()],
            home,
            env: api.qwen_env(),
        }
    })
}

fn shell(command: &str) -> Reply {
    Reply::tool(
        "run_shell_command",
        json!({"command": command, "description": "Write the marker"}),
    )
}

#[test]
fn qwen_an_approved_command_runs_its_tokens_are_recorded_and_a_reply_continues_the_session() {
    let test = "qwen_an_approved_command_runs";
    let Some(qwen) = agent_or_skip(test, &QWEN) else {
        return;
    };
    let w = world(
        &qwen,
        vec![shell(APPROVED), Reply::text("The marker is written.")],
    );
    let id = w.run("Write the marker.");
    let live = ["── Qwen Code session ", &format!("▶ execute  {APPROVED}")];
    w.wait_command_gate(&id, &live);
    let ended = w.approve_to_end(&id);
    let meta = &ended.meta;
    assert_eq!(meta["agent"], qwen.to_str().unwrap());
    assert_eq!(
        meta["usage"]["input_tokens"],
        2 * fake_chat::INPUT_TOKENS,
        "{meta}"
    );
    assert_eq!(
        meta["usage"]["output_tokens"],
        2 * fake_chat::OUTPUT_TOKENS,
        "{meta}"
    );
    let next = w.reply_continues(&id, &ended, "Qwen Code");
    // The reply's own request only: what the agent replays of the old turns is not counted.
    assert_eq!(
        next.meta["usage"]["input_tokens"],
        fake_chat::INPUT_TOKENS,
        "{}",
        next.meta
    );
}

#[test]
fn qwen_a_denied_command_does_not_run() {
    let Some(qwen) = agent_or_skip("qwen_a_denied_command_does_not_run", &QWEN) else {
        return;
    };
    let w = world(&qwen, vec![shell(DENIED), Reply::text("Understood.")]);
    let id = w.run("Write the marker.");
    w.deny_at_gate(&id);
    let turns = w.api.wait_for_requests(2, WAIT);
    let told = fake_chat::tool_results(&turns[1]);
    assert!(
        !told.is_empty() && !told.iter().any(|(_, r)| r.contains("not today")),
        "{told:?}"
    );
}

#[test]
fn qwen_a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(qwen) = agent_or_skip("qwen_a_kill_cancels_the_turn", &QWEN) else {
        return;
    };
    let w = world(&qwen, vec![shell(KILLED)]);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id);
}
