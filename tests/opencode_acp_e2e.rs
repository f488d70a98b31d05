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
use std::path::{Path, PathBuf};

use common::acp::{Agent, World};
use common::agents::{OPENCODE, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::http::Reply;
use serde_json::{Value, json};

/// The model's price in US dollars per million tokens, in and out, as opencode.json gives it.
const PRICE_IN: f64 = 3.0;
const PRICE_OUT: f64 = 15.0;

fn world(opencode: &Path, api: &FakeChat) -> World {
    World::new(None, |base| {
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
                ("HOME".into(), home_str.clone()),
                ("XDG_CONFIG_HOME".into(), format!("{home_str}/.config")),
                ("XDG_DATA_HOME".into(), format!("{home_str}/.local/share")),
                // Its list of models is fetched from models.dev otherwise, and itself updated.
                ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
                ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            ],
        }
    })
}

fn shell(command: &str) -> Reply {
    Reply::tool(
        "bash",
        json!({"command": command, "description": "Write the marker"}),
    )
}

fn marker(w: &World) -> PathBuf {
    w.project().join("marker.txt")
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
    let api = FakeChat::start(vec![
        shell("echo approved > marker.txt"),
        Reply::text("The marker is written."),
    ]);
    let w = world(&opencode, &api);
    let id = w.run("Write the marker.");
    let gate = w.wait_gate(&id);
    assert_eq!(
        gate["gate"], "execute: echo approved > marker.txt",
        "{gate}"
    );
    let log = w.log(&id);
    assert!(log.contains("── opencode session ses_"), "{log}");
    assert!(log.contains("▶ execute  bash"), "{log}");
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
    // opencode gives the tokens of the turn's last request to the model, and the session's cost.
    let usage = &meta["usage"];
    assert_eq!(
        (&usage["input_tokens"], &usage["output_tokens"]),
        (
            &json!(fake_chat::INPUT_TOKENS),
            &json!(fake_chat::OUTPUT_TOKENS)
        ),
        "{meta}"
    );
    assert_cost(&meta, cost_of(2));

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
        log.contains(&format!("── opencode session {session} (continued)")),
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
    // The cost of the reply's own turn, not the session's so far.
    assert_cost(&meta, cost_of(1));
}

#[test]
fn opencode_a_denied_command_does_not_run() {
    let Some(opencode) = agent_or_skip("opencode_a_denied_command_does_not_run", &OPENCODE) else {
        return;
    };
    let api = FakeChat::start(vec![
        shell("echo denied > marker.txt"),
        Reply::text("Understood."),
    ]);
    let w = world(&opencode, &api);
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    w.ok(&["deny", &id, "--reason", "not today"]);
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert!(!marker(&w).exists(), "denied: nothing ran");
    let log = w.log(&id);
    assert!(
        log.contains(": not today (the agent is told only that it was rejected)"),
        "{log}"
    );
    assert!(log.contains("  ✗ bash: failed"), "{log}");
}

#[test]
fn opencode_a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(opencode) = agent_or_skip("opencode_a_kill_cancels_the_turn", &OPENCODE) else {
        return;
    };
    let api = FakeChat::start(vec![shell("echo killed > marker.txt")]);
    let w = world(&opencode, &api);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id, &marker(&w));
}
