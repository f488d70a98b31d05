//! Gemini CLI through the Agent Client Protocol, end to end: the real luzia and the real CLI
//! (`gemini --acp`, chosen with `[agent] kind = "gemini"`), against a scripted Gemini API on
//! 127.0.0.1 and a fresh HOME set up as a user would for an API key. The job shows its output
//! while it runs; a shell command needing permission becomes a gate; approving runs it,
//! denying blocks it; tokens are recorded; `luzia reply` continues the same session; `luzia
//! kill` stops it and leaves no gate pending; the gate is in the cockpit's inbox.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::acp::{APPROVED, Agent, DENIED, KILLED, WAIT, World};
use common::agents::{GEMINI, agent_or_skip};
use common::gemini::{ANSWER_TOKENS, FakeGemini, PROMPT_TOKENS, Reply, function_responses};

fn world(gemini: &Path, script: Vec<Reply>, jobs: Option<&Path>) -> World<FakeGemini> {
    World::new(FakeGemini::start(script), jobs, |base, api| Agent {
        kind: "gemini",
        command: vec![gemini.to_str().unwrap().to_owned(), "--acp".into()],
        home: api.home(base),
        env: api.agent_env(),
    })
}

/// Gemini CLI 0.61 names a session's file by the minute it began, and a session loaded again
/// within that minute overwrites its own file. The file is renamed as if the minute had
/// passed, so that a reply a second later finds its session.
fn age_sessions(w: &World<FakeGemini>) {
    let chats = w.home.join(".gemini/tmp/proj/chats");
    for f in fs::read_dir(&chats).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("session-").and_then(|r| r.get(16..)) {
            fs::rename(
                f.path(),
                chats.join(format!("session-2000-01-01T00-00{rest}")),
            )
            .unwrap();
        }
    }
}

#[test]
fn an_approved_command_runs_its_tokens_are_recorded_and_a_reply_continues_the_session() {
    let Some(gemini) = agent_or_skip("an_approved_command_runs", &GEMINI) else {
        return;
    };
    let script = vec![
        Reply::shell("I will write the marker.", APPROVED),
        Reply::text("The marker is written."),
    ];
    let w = world(&gemini, script, None);
    let id = w.run("Write the marker.");
    let live = [
        "── Gemini CLI session ",
        &format!("I will write the marker.\n▶ execute  {APPROVED}"),
    ];
    let gate = w.wait_command_gate(&id, &live);
    assert!(
        gate["context"]
            .as_str()
            .unwrap()
            .contains("the reason cannot reach the model"),
        "{gate}"
    );
    let ended = w.approve_to_end(&id);
    let (job, meta) = (&ended.job, &ended.meta);
    assert_eq!(ended.session.len(), 36, "{meta}");
    assert_eq!(meta["agent"], gemini.to_str().unwrap());
    assert_eq!(meta["usage"]["input_tokens"], 2 * PROMPT_TOKENS, "{meta}");
    assert_eq!(meta["usage"]["output_tokens"], 2 * ANSWER_TOKENS, "{meta}");
    assert_eq!(
        job["usage"]["total_tokens"],
        2 * (PROMPT_TOKENS + ANSWER_TOKENS),
        "{job}"
    );
    age_sessions(&w);
    w.reply_continues(&id, &ended, "Gemini CLI");
}

/// Gemini CLI's "Allow for this session" on a shell command covers every later command with
/// the same root program (`touch ...`) for as long as the agent runs: approved so once, the
/// second `touch` runs without a gate, and a command of another program (`echo`) asks again.
#[test]
fn approving_for_the_session_lets_the_next_command_of_its_kind_run_without_a_gate() {
    let Some(gemini) = agent_or_skip("approving_for_the_session", &GEMINI) else {
        return;
    };
    let script = vec![
        Reply::shell("The first file.", "touch first.txt"),
        Reply::shell("The second file.", "touch second.txt"),
        Reply::shell("And a note.", "echo third > third.txt"),
        Reply::text("All three are there."),
    ];
    let w = world(&gemini, script, None);
    let id = w.run("Make the files.");
    let gate = w.wait_gate(&id);
    assert_eq!(gate["gate"], "execute: touch first.txt", "{gate}");
    assert_eq!(gate["allow_session"], "Allow for this session", "{gate}");
    let said = w.ok(&["approve", &id, "--always"]);
    assert!(said.contains("approved for the session"), "{said}");

    // The second `touch` needs no one; the `echo` stops at a gate of its own.
    let gate = w.wait_gate(&id);
    assert_eq!(gate["gate"], "execute: echo third > third.txt", "{gate}");
    assert!(w.project().join("second.txt").exists(), "{}", w.log(&id));
    w.ok(&["approve", &id]);
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    for file in ["first.txt", "second.txt", "third.txt"] {
        assert!(w.project().join(file).exists(), "{file}\n{}", w.log(&id));
    }
    let log = w.log(&id);
    assert!(
        log.contains("  ✓ approved for the session by ")
            && log.contains("(the agent's \"Allow for this session\")"),
        "{log}"
    );
    assert!(log.contains("All three are there."), "{log}");

    let history = fs::read_to_string(w.dir(&id).join("history.jsonl")).unwrap();
    let gates: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r.get("approval").is_some())
        .collect();
    let names: Vec<&str> = gates
        .iter()
        .map(|r| r["approval"]["gate"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "execute: touch first.txt",
            "execute: echo third > third.txt"
        ],
        "the second touch asked nobody: {history}"
    );
    assert_eq!(gates[0]["decision"]["scope"], "session", "{history}");
    assert!(gates[1]["decision"].get("scope").is_none(), "{history}");
}

#[test]
fn a_denied_command_does_not_run() {
    let Some(gemini) = agent_or_skip("a_denied_command_does_not_run", &GEMINI) else {
        return;
    };
    let script = vec![
        Reply::shell("Removing it.", DENIED),
        Reply::text("Understood."),
    ];
    let w = world(&gemini, script, None);
    let id = w.run("Write the marker.");
    w.deny_at_gate(&id);
    let turns = w.api.wait_for_requests(2, WAIT);
    let told = function_responses(&turns[1]).join("\n");
    assert!(!told.is_empty() && !told.contains("not today"), "{told}");
}

#[test]
fn a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(gemini) = agent_or_skip("a_kill_cancels_the_turn", &GEMINI) else {
        return;
    };
    let w = world(&gemini, vec![Reply::shell("Working.", KILLED)], None);
    let id = w.run("Write the marker.");
    w.kill_at_gate(&id);
}

#[test]
fn a_gemini_gate_is_in_the_cockpit_inbox() {
    require_tmux!();
    let Some(gemini) = agent_or_skip("a_gemini_gate_is_in_the_cockpit_inbox", &GEMINI) else {
        return;
    };
    let sb = tmux::Sandbox::new();
    let script = vec![
        Reply::shell("Writing it.", "echo cockpit > marker.txt"),
        Reply::text("Written."),
    ];
    let w = world(&gemini, script, Some(&sb.root));
    let ck = tmux::Cockpit::start(&sb, tmux::Opts::default());
    ck.wait_ready();
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    let deadline = Instant::now() + WAIT;
    loop {
        let screen = ck.screen();
        if screen.contains(" approval gate · ")
            && screen.contains("execute: echo cockpit > marker.txt")
        {
            break;
        }
        if !screen.contains(" approval gate · ") {
            ck.key("i");
        }
        assert!(
            Instant::now() < deadline,
            "the inbox never showed the gate:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    ck.wait_text("Gemini CLI asks permission");
    ck.key("a");
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert_eq!(fs::read_to_string(w.marker()).unwrap(), "cockpit\n");
}
