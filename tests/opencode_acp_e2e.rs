//! opencode through the Agent Client Protocol (`opencode acp`, chosen with `[agent] kind =
//! "opencode"`), end to end: the real luzia and the real opencode, against a scripted Chat
//! Completions API on 127.0.0.1 and a fresh HOME whose `opencode.json` says what a user writes:
//! the provider (`@ai-sdk/openai-compatible`), its model's price and context, and that `bash`
//! asks first. The job shows its output while it runs; the command becomes a gate; approving
//! runs it, denying blocks it; tokens and cost are recorded; `luzia reply` continues the same
//! session; `luzia kill` stops it and leaves no gate pending.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::Path;

use common::acp::{APPROVED, Agent, DENIED, KILLED, World};
use common::agents::{OPENCODE, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::http::Reply;
use serde_json::{Value, json};

/// The model's price in US dollars per million tokens, in and out, as opencode.json gives it.
const PRICE_IN: f64 = 3.0;
const PRICE_OUT: f64 = 15.0;

fn world(opencode: &Path, script: Vec<Reply>) -> World<FakeChat> {
    World::new(FakeChat::start(script), None, |base, api| {
        let home = base.join("home");
        let mut config = api.opencode_config();
        config["provider"]["fake"]["models"][fake_chat::MODEL] = json!({
            "name": "Fake model",
            "cost": {"input": PRICE_IN, "output": PRICE_OUT},
            "limit": {"context": 100_000, "output": 8_000}
        });
        config["permission"] = json!({"bash": "ask"});
        let dir = home.join(".config/opencode");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
        let home_str = home.to_str().unwrap().to_owned();
        Agent {
            kind: "opencode",
            command: vec![opencode.to_str().unwrap().to_owned(), "acp".into()],
            env: vec![
                ("XDG_CONFIG_HOME".into(), format!("{home_str}/.config")),
                ("XDG_DATA_HOME".into(), format!("{home_str}/.local/share")),
                // Its list of models is fetched from models.dev otherwise, and itself updated.
                ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
                ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            ],
            home,
        }
    })
}

fn shell(command: &str) -> Reply {
    Reply::tool(
        "bash",
        json!({"command": command, "description": "Write the marker"}),
    )
}

/// What one answer of the fake API costs at the model's price.
fn cost_of(answers: u64) -> f64 {
    let one = (fake_chat::INPUT_TOKENS as f64 * PRICE_IN
        + fake_chat::OUTPUT_TOKENS as f64 * PRICE_OUT)
        / 1e6;
    one * answers as f64
}

fn assert_cost(meta: &Value, want: f64) {
    let cost = meta["usage"]["cost_usd"].as_f64().unwrap_or(-1.0);
    assert!(
        (cost - want).abs() < 1e-9,
        "cost {cost}, not {want}: {meta}"
    );
}

#[test]
fn opencode_an_approved_command_runs_its_figures_are_recorded_and_a_reply_continues_the_session() {
    let test = "opencode_an_approved_command_runs";
    let Some(opencode) = agent_or_skip(test, &OPENCODE) else {
        return;
    };
    let w = world(
        &opencode,
        vec![shell(APPROVED), Reply::text("The marker is written.")],
    );
    let id = w.run("Write the marker.");
    w.wait_command_gate(&id, &["── opencode session ses_", "▶ execute  bash"]);
    let ended = w.approve_to_end(&id);
    // opencode gives the tokens of the turn's last request to the model, and the session's cost.
    let usage = &ended.meta["usage"];
    assert_eq!(
        (&usage["input_tokens"], &usage["output_tokens"]),
        (
            &json!(fake_chat::INPUT_TOKENS),
            &json!(fake_chat::OUTPUT_TOKENS)
        ),
        "{}",
        ended.meta
    );
    assert_cost(&ended.meta, cost_of(2));
    let next = w.reply_continues(&id, &ended, "opencode");
    // The cost of the reply's own turn, not the session's so far.
    assert_cost(&next.meta, cost_of(1));
}

#[test]
fn opencode_a_denied_command_does_not_run() {
    let Some(opencode) = agent_or_skip("opencode_a_denied_command_does_not_run", &OPENCODE) else {
        return;
    };
    let w = world(&opencode, vec![shell(DENIED), Reply::text("Understood.")]);
    let id = w.run("Write the marker.");
    let (_, log) = w.deny_at_gate(&id);
    assert!(log.contains("  ✗ bash: failed"), "{log}");
}

#[test]
fn opencode_a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(opencode) = agent_or_skip("opencode_a_kill_cancels_the_turn", &OPENCODE) else {
        return;
    };
    let w = world(&opencode, vec![shell(KILLED)]);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id);
}
