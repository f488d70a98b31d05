//! The demo's Claude-style agent speaks the real thing: every key of every line it prints (the
//! init line, an assistant text, a tool call, each tool's result, ok and failed, the closing
//! result) is where the real Claude Code CLI puts it, with a value of the same JSON type, so
//! that whatever renders or records the real stream reads the demo's the same way. Checked
//! against the real CLI driven by a scripted Messages API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use common::claude::{FakeApi, Reply, clis_or_skip};
use luzia::commands::demo_claude::{Stream, session};
use luzia::jobs::hitl::agent::GateSpec;
use serde_json::{Value, json};

/// Keys whose content is not the CLI's shape but the model's words or the machine's setup.
const FREE: &[&str] = &[
    "input",
    "modelUsage",
    "tools",
    "slash_commands",
    "agents",
    "skills",
];

/// What kind of line this is, with the tool for a call's result: `user/Bash/error`.
fn category(line: &Value, tools: &BTreeMap<String, String>) -> String {
    let kind = line["type"].as_str().unwrap_or("?");
    let block = &line["message"]["content"][0];
    match kind {
        "system" => format!("system/{}", line["subtype"].as_str().unwrap_or("?")),
        "assistant" => format!("assistant/{}", block["type"].as_str().unwrap_or("?")),
        "user" => {
            let id = block["tool_use_id"].as_str().unwrap_or("?");
            let tool = tools.get(id).map_or("?", String::as_str);
            let outcome = if block["is_error"] == true {
                "error"
            } else {
                "ok"
            };
            format!("user/{tool}/{outcome}")
        }
        other => other.to_string(),
    }
}

/// Tool call ids to tool names, from the assistant lines.
fn tools_of(lines: &[Value]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter(|l| l["message"]["content"][0]["type"] == "tool_use")
        .map(|l| {
            let b = &l["message"]["content"][0];
            (
                b["id"].as_str().unwrap().to_string(),
                b["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Where `ours` has a key the real line lacks, or a value of another JSON type.
fn differences(ours: &Value, real: &Value, path: &str, out: &mut Vec<String>) {
    match (ours, real) {
        (_, Value::Null) | (Value::Null, _) => {}
        (Value::Object(o), Value::Object(r)) => {
            for (k, v) in o {
                let here = format!("{path}.{k}");
                match r.get(k) {
                    None => out.push(format!("{here}: not in the real line")),
                    Some(_) if FREE.contains(&k.as_str()) => {}
                    Some(rv) => differences(v, rv, &here, out),
                }
            }
        }
        (Value::Array(o), Value::Array(r)) => {
            if let (Some(a), Some(b)) = (o.first(), r.first()) {
                differences(a, b, &format!("{path}[0]"), out);
            }
        }
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_)) => {}
        _ => out.push(format!("{path}: {ours} where the real line has {real}")),
    }
}

/// The real CLI's stream for a Bash call that works and one that fails, a Read and an Edit.
fn real_stream(claude: &std::path::Path) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("playlist.js");
    std::fs::write(&file, "const out = tracks.slice(0, -1);\n").unwrap();
    let file = file.display().to_string();
    let api = FakeApi::start(vec![
        Reply::tool(
            "Bash",
            json!({"command": "ls", "description": "List files"}),
        ),
        Reply::tool(
            "Bash",
            json!({"command": "ls /nonexistent-x", "description": "Fail"}),
        ),
        Reply::tool("Read", json!({"file_path": file})),
        Reply::tool(
            "Edit",
            json!({"file_path": file, "old_string": "slice(0, -1)", "new_string": "slice()"}),
        ),
        Reply::text("All done."),
    ]);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut child = Command::new(claude)
        .args(["-p", "--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "acceptEdits"])
        .current_dir(tmp.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .envs(api.agent_env(&home))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Fix the shuffle.")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines.last().is_some_and(|l| l["type"] == "result"),
        "the real run did not finish: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

#[test]
fn every_line_of_the_demo_s_stream_has_the_real_cli_s_shape() {
    for claude in clis_or_skip("every_line_of_the_demo_s_stream_has_the_real_cli_s_shape") {
        let real = real_stream(&claude);
        let real_tools = tools_of(&real);
        let mut by_category: BTreeMap<String, &Value> = BTreeMap::new();
        for line in &real {
            by_category
                .entry(category(line, &real_tools))
                .or_insert(line);
        }

        let mut problems = Vec::new();
        let mut checked = std::collections::BTreeSet::new();
        // Allowed, then denied: a denial adds an error result and `permission_denials`.
        let denials = [None, Some("Not now: build/ holds the release candidate")];
        for denial in denials {
            let decide = move |_: &GateSpec| Ok(denial.map(str::to_owned));
            let mut stream = Stream::new(Vec::new(), 0.0, "s".into(), "/w".into(), decide);
            session(&mut stream).unwrap();
            let ours: Vec<Value> = String::from_utf8(stream.into_output())
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let our_tools = tools_of(&ours);
            for line in &ours {
                let cat = category(line, &our_tools);
                let Some(model) = by_category.get(&cat) else {
                    problems.push(format!(
                        "{cat}: the real run has no such line (it has {:?})",
                        by_category.keys().collect::<Vec<_>>()
                    ));
                    continue;
                };
                differences(line, model, &cat, &mut problems);
                checked.insert(cat);
            }
        }
        problems.sort();
        problems.dedup();
        assert!(problems.is_empty(), "{problems:#?}");
        for want in [
            "system/init",
            "assistant/text",
            "assistant/tool_use",
            "user/Bash/ok",
            "user/Bash/error",
            "user/Read/ok",
            "user/Edit/ok",
            "result",
        ] {
            assert!(checked.contains(want), "{want} not checked: {checked:?}");
        }
    }
}
