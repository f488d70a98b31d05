//! The facts about the real Claude Code CLI that luzia builds on, checked against the fake
//! Messages API: if an upgrade of the pinned CLI changes one of them, this file says which.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::claude::{FakeApi, Reply, clis_or_skip, tool_results};
use serde_json::{Value, json};

/// Runs `claude -p` with stream-json output against `api` in `dir`, the prompt on stdin.
fn run_claude(
    claude: &std::path::Path,
    api: &FakeApi,
    dir: &std::path::Path,
    extra: &[&str],
) -> Vec<Value> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(claude);
    cmd.args(["-p", "--output-format", "stream-json", "--verbose"])
        .args(extra)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .envs(api.agent_env(&home))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"List the directory, then say done.")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        !lines.is_empty(),
        "claude printed nothing; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

#[test]
fn stream_json_has_init_tool_use_tool_result_and_result_with_cost_and_session() {
    for claude in clis_or_skip("stream_json_has_init_tool_use_tool_result_and_result") {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("marker.txt"), "x").unwrap();
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "ls", "description": "List files"}),
            ),
            Reply::text("All done."),
        ]);
        let session = "0b6f5f0e-4c8e-4d0a-9c7e-3f2a1b0c9d8e";
        let lines = run_claude(&claude, &api, tmp.path(), &["--session-id", session]);
        let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(lines[0]["type"], "system", "{kinds:?}");
        assert_eq!(lines[0]["subtype"], "init");
        assert_eq!(lines[0]["session_id"], session);
        let tool_use = lines
            .iter()
            .find(|l| l["type"] == "assistant" && l["message"]["content"][0]["type"] == "tool_use")
            .unwrap_or_else(|| panic!("no tool_use line in {kinds:?}"));
        assert_eq!(tool_use["message"]["content"][0]["name"], "Bash");
        let result_line = lines
            .iter()
            .find(|l| l["type"] == "user" && l["message"]["content"][0]["type"] == "tool_result")
            .unwrap_or_else(|| panic!("no tool_result line in {kinds:?}"));
        assert!(
            result_line.to_string().contains("marker.txt"),
            "the harmless ls ran without asking: {result_line}"
        );
        let last = lines.last().unwrap();
        assert_eq!(last["type"], "result", "{kinds:?}");
        assert_eq!(last["session_id"], session);
        assert_eq!(last["is_error"], false);
        assert_eq!(last["num_turns"], 2);
        assert!(last["total_cost_usd"].as_f64().unwrap() > 0.0, "{last}");
        assert!(last["usage"]["input_tokens"].as_u64().is_some(), "{last}");
        // The model was given the command's output.
        let turns = api.wait_for_requests(2, Duration::from_secs(5));
        let results = tool_results(&turns[1]);
        assert!(
            results.iter().any(|(text, _)| text.contains("marker.txt")),
            "{results:?}"
        );
    }
}

#[test]
fn bypass_mode_is_refused_as_root() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED bypass_mode_is_refused_as_root: not root, the refusal is root's");
        return;
    }
    for claude in clis_or_skip("bypass_mode_is_refused_as_root") {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let api = FakeApi::start(vec![]);
        let out = Command::new(claude)
            .args(["-p", "--dangerously-skip-permissions", "hello"])
            .current_dir(tmp.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .envs(api.agent_env(&home))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let said = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("cannot be used with root/sudo privileges"),
            "{said}"
        );
    }
}
