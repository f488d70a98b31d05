//! The fake LLM APIs of tests/common, proven against the real CLIs that speak them: each CLI is
//! run headless from a fresh HOME holding only what a user sets (docs/coding-agents.md says
//! what), against the fake on 127.0.0.1, and answers with the scripted text. OpenAI Responses:
//! Codex, which also runs a scripted shell command whose output comes back to the fake. Chat
//! Completions: opencode (also a scripted command), Qwen Code and Aider.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::agents::{AIDER, CODEX, OPENCODE, QWEN, agent_or_skip, fresh};
use common::fake_chat::{self, FakeChat};
use common::fake_responses::{self, FakeResponses};
use common::http::Reply;
use serde_json::{Value, json};

/// How long one CLI run may take (some start slowly on a loaded machine).
const GUARD: Duration = Duration::from_secs(90);

/// A fresh HOME and, inside it, the directory the agent works in.
fn home() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("luzia-fake-api-")
        .tempdir()
        .unwrap();
    let work = tmp.path().join("work");
    fs::create_dir(&work).unwrap();
    (tmp, work)
}

/// Runs `cmd` to its end within [`GUARD`] (its output read as it comes), failing the test with
/// what it printed when it fails.
fn run(what: &str, cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let read = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = common::ChildGuard::new(child).wait_within(GUARD, what);
    let out = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        common::stdout_of(&out),
        common::stderr_of(&out)
    );
    out
}

/// The JSON lines of a CLI's stdout (other lines are ignored).
fn json_lines(out: &Output) -> Vec<Value> {
    common::stdout_of(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn codex_exec_runs_a_scripted_command_and_answers_with_the_scripted_text() {
    let test = "codex_exec_runs_a_scripted_command_and_answers_with_the_scripted_text";
    let Some(codex) = agent_or_skip(test, &CODEX) else {
        return;
    };
    let api = FakeResponses::start(vec![
        Reply::tool("exec_command", json!({"cmd": "echo marker-from-codex"})),
        Reply::text("All done from the fake."),
    ]);
    let (tmp, work) = home();
    // What a user writes once: the provider in $CODEX_HOME/config.toml, its key in the
    // environment.
    fs::create_dir(tmp.path().join(".codex")).unwrap();
    fs::write(tmp.path().join(".codex/config.toml"), api.codex_config()).unwrap();
    let out = run(
        "codex exec",
        fresh(&codex, tmp.path())
            .env(fake_responses::KEY_VAR, fake_responses::KEY)
            .current_dir(&work)
            .args([
                "exec",
                "--json",
                "--skip-git-repo-check",
                "Print the marker.",
            ]),
    );
    let lines = json_lines(&out);
    let said: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "item.completed" && l["item"]["type"] == "agent_message")
        .filter_map(|l| l["item"]["text"].as_str())
        .collect();
    assert_eq!(said, ["All done from the fake."], "{lines:#?}");
    let turns = api.wait_for_requests(2, GUARD);
    let outputs = fake_responses::call_outputs(&turns[1]);
    assert!(
        outputs
            .iter()
            .any(|(id, o)| id == "call_0" && o.contains("marker-from-codex")),
        "the command's output never reached the model: {outputs:?}"
    );
    let usage = &lines
        .iter()
        .find(|l| l["type"] == "turn.completed")
        .unwrap()["usage"];
    assert_eq!(usage["input_tokens"], 2 * fake_responses::INPUT_TOKENS);
    assert_eq!(usage["output_tokens"], 2 * fake_responses::OUTPUT_TOKENS);
}

#[test]
fn opencode_run_runs_a_scripted_command_and_answers_with_the_scripted_text() {
    let test = "opencode_run_runs_a_scripted_command_and_answers_with_the_scripted_text";
    let Some(opencode) = agent_or_skip(test, &OPENCODE) else {
        return;
    };
    let api = FakeChat::start(vec![
        Reply::tool(
            "bash",
            json!({"command": "echo marker-from-opencode", "description": "Print the marker"}),
        ),
        Reply::text("All done from the fake."),
    ]);
    let (tmp, work) = home();
    let config = tmp.path().join(".config/opencode");
    fs::create_dir_all(&config).unwrap();
    fs::write(
        config.join("opencode.json"),
        api.opencode_config().to_string(),
    )
    .unwrap();
    let out = run(
        "opencode run",
        fresh(&opencode, tmp.path())
            // Its list of models is fetched from models.dev otherwise, and itself updated.
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .current_dir(&work)
            .args(["run", "--format", "json", "Print the marker."]),
    );
    let lines = json_lines(&out);
    let said: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "text")
        .filter_map(|l| l["part"]["text"].as_str())
        .collect();
    assert_eq!(said, ["All done from the fake."], "{lines:#?}");
    let turns = api.wait_for_requests(2, GUARD);
    let results = fake_chat::tool_results(&turns[1]);
    assert!(
        results
            .iter()
            .any(|(id, r)| id == "call_0" && r.contains("marker-from-opencode")),
        "the command's output never reached the model: {results:?}"
    );
}

#[test]
fn qwen_answers_with_the_scripted_text() {
    let test = "qwen_answers_with_the_scripted_text";
    let Some(qwen) = agent_or_skip(test, &QWEN) else {
        return;
    };
    let api = FakeChat::start(vec![Reply::text("Hello from the fake.")]);
    let (tmp, work) = home();
    // Headless, Qwen Code needs its kind of login chosen: once, in its settings.
    fs::create_dir(tmp.path().join(".qwen")).unwrap();
    fs::write(
        tmp.path().join(".qwen/settings.json"),
        json!({"security": {"auth": {"selectedType": "openai"}}}).to_string(),
    )
    .unwrap();
    let out = run(
        "qwen -p",
        fresh(&qwen, tmp.path())
            .env("OPENAI_BASE_URL", api.base_url())
            .env("OPENAI_API_KEY", fake_chat::KEY)
            .env("OPENAI_MODEL", fake_chat::MODEL)
            .current_dir(&work)
            .args(["-p", "Say hello.", "--output-format", "stream-json"]),
    );
    let lines = json_lines(&out);
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["result"], "Hello from the fake.", "{lines:#?}");
    let turns = api.wait_for_requests(1, GUARD);
    assert!(turns[0]["messages"].to_string().contains("Say hello."));
}

#[test]
fn aider_answers_with_the_scripted_text() {
    let test = "aider_answers_with_the_scripted_text";
    let Some(aider) = agent_or_skip(test, &AIDER) else {
        return;
    };
    let api = FakeChat::every_request(vec![Reply::text("Hello from the fake.")]);
    let (tmp, work) = home();
    let out = run(
        "aider --message",
        fresh(&aider, tmp.path())
            .env("OPENAI_API_BASE", api.base_url())
            .env("OPENAI_API_KEY", fake_chat::KEY)
            .current_dir(&work)
            .args(aider_args())
            .args(["--message", "Say hello."]),
    );
    let text = common::stdout_of(&out);
    assert!(text.contains("Hello from the fake."), "{text}");
    let turns = api.wait_for_requests(1, GUARD);
    assert!(turns[0]["messages"].to_string().contains("Say hello."));
}

/// Aider's flags for a run without a person: the fake's model, no git, every question answered
/// yes, and nothing it would look up on the network first.
fn aider_args() -> Vec<String> {
    [
        "--model",
        &format!("openai/{}", fake_chat::MODEL),
        "--yes-always",
        "--no-git",
        "--no-check-update",
        "--no-show-release-notes",
        "--analytics-disable",
        "--no-show-model-warnings",
    ]
    .map(str::to_owned)
    .to_vec()
}
