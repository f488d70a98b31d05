use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use serde_json::Value;

use super::*;
use crate::jobs::{JobId, read_job};

/// The stream's lines, each parsed; a line that is not a JSON object fails the test.
fn lines(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(text.ends_with('\n'), "every line ends: {text}");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(v.is_object(), "{l}");
            v
        })
        .collect()
}

fn kind(v: &Value) -> String {
    match v["subtype"].as_str() {
        Some(sub) if v["type"] == "system" => format!("system/{sub}"),
        _ => v["type"].as_str().unwrap_or("?").to_string(),
    }
}

/// The calls (id, name, input) in the order made, and the results (id, content, is_error).
fn calls_and_results(
    lines: &[Value],
) -> (Vec<(String, String, Value)>, Vec<(String, String, bool)>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for v in lines {
        let content = v["message"]["content"].as_array();
        for block in content.into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => calls.push((
                    block["id"].as_str().unwrap().to_string(),
                    block["name"].as_str().unwrap().to_string(),
                    block["input"].clone(),
                )),
                Some("tool_result") => results.push((
                    block["tool_use_id"].as_str().unwrap().to_string(),
                    block["content"].as_str().unwrap().to_string(),
                    block["is_error"].as_bool().unwrap_or(false),
                )),
                _ => {}
            }
        }
    }
    (calls, results)
}

/// The shape every run has, whatever the decision: init first, result last, one block per
/// assistant line, every call answered once and after it, the same session throughout.
fn check_shape(lines: &[Value], session: &str) {
    assert_eq!(kind(&lines[0]), "system/init");
    assert_eq!(lines[0]["model"], MODEL);
    let last = lines.last().unwrap();
    assert_eq!(kind(last), "result");
    assert_eq!(last["subtype"], "success");
    assert_eq!(last["is_error"], false);
    for v in lines {
        assert!(
            ["system/init", "assistant", "user", "result"].contains(&kind(v).as_str()),
            "{v}"
        );
        assert_eq!(v["session_id"], session, "{v}");
        if kind(v) == "assistant" {
            assert_eq!(v["message"]["content"].as_array().unwrap().len(), 1, "{v}");
            assert!(v["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
        }
    }
    let (calls, results) = calls_and_results(lines);
    assert_eq!(calls.len(), results.len(), "{calls:?} {results:?}");
    for (id, ..) in &calls {
        assert_eq!(results.iter().filter(|r| &r.0 == id).count(), 1, "{id}");
    }
    let turns = last["num_turns"].as_u64().unwrap();
    assert!(turns >= calls.len() as u64, "{last}");
    let cost = last["total_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.01 && cost < 1.0, "{cost}");
    let usage = &last["usage"];
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ] {
        assert!(usage[key].as_u64().unwrap() > 0, "{key}: {usage}");
    }
    assert_eq!(last["modelUsage"][MODEL]["costUSD"], last["total_cost_usd"]);
}

#[test]
fn an_allowed_session_streams_every_line_in_claude_code_s_shapes() {
    let mut asked = Vec::new();
    let decide = |spec: &GateSpec| {
        asked.push(spec.clone());
        Ok(None)
    };
    let mut s = Stream::new(
        Vec::new(),
        0.0,
        "sess-1".into(),
        "/srv/musica".into(),
        decide,
    );
    assert_eq!(session(&mut s).unwrap(), 0);
    let out = lines(&s.into_output());
    check_shape(&out, "sess-1");
    let (calls, results) = calls_and_results(&out);
    let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(names, ["Bash", "Read", "Edit", "Bash", "Bash"]);
    assert_eq!(calls[0].2["command"], "npm test");
    assert_eq!(calls[1].2["file_path"], "/srv/musica/src/playlist.js");
    // The first run fails, as Claude Code says it: an error result starting with the code.
    assert!(
        results[0].2 && results[0].1.starts_with("Exit code 1\n"),
        "{results:?}"
    );
    assert!(results[3..].iter().all(|r| !r.2), "{results:?}");
    assert_eq!(
        out.last().unwrap()["permission_denials"],
        serde_json::json!([])
    );
    assert_eq!(asked.len(), 1, "one permission request");
    assert_eq!(asked[0].gate, "Bash: rm -rf build");
    assert_eq!(asked[0].description, "Remove the stale build directory");
    let context: Value = serde_json::from_str(&asked[0].context).unwrap();
    assert_eq!(context["command"], "rm -rf build");
}

/// A job directory whose agent is this test process (alive, so its gate is pending).
fn live_job() -> (tempfile::TempDir, PathBuf, JobId) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("120000-clde");
    std::fs::create_dir(&dir).unwrap();
    let meta = serde_json::json!({"id": "120000-clde", "project": "musica", "task": "t",
        "pid": std::process::id(), "started": Utc::now().to_rfc3339()});
    std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    std::fs::write(dir.join("output.log"), "").unwrap();
    (root, dir, JobId::parse("120000-clde").unwrap())
}

#[test]
fn a_denied_permission_is_a_real_gate_and_its_reason_reaches_the_model_word_for_word() {
    let (root, dir, id) = live_job();
    let agent_dir = dir.clone();
    let agent = std::thread::spawn(move || {
        let mut s = Stream::new(
            Vec::new(),
            0.0,
            "sess-2".into(),
            "/w".into(),
            gate_in(&agent_dir),
        );
        let code = session(&mut s).unwrap();
        (code, s.into_output())
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let job = loop {
        let job = read_job(root.path(), &id, Utc::now()).unwrap();
        if job.gate.is_some() {
            break job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no gate was published"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let gate = job.gate.clone().unwrap();
    assert_eq!(gate.gate, "Bash: rm -rf build");
    assert!(
        gate.context.contains("\"rm -rf build\""),
        "{}",
        gate.context
    );
    assert_eq!(job.waiting(), Some(crate::jobs::Waiting::Approval));
    let reason = "Not now: build/ holds the release candidate";
    crate::jobs::hitl::operator::decide(&job, false, reason, "cli", "ana", Utc::now()).unwrap();
    let (code, bytes) = agent.join().unwrap();
    assert_eq!(code, 0);
    let out = lines(&bytes);
    check_shape(&out, "sess-2");
    let (calls, results) = calls_and_results(&out);
    let rm = calls
        .iter()
        .find(|c| c.2["command"] == "rm -rf build")
        .unwrap();
    let answer = results.iter().find(|r| r.0 == rm.0).unwrap();
    assert_eq!((answer.1.as_str(), answer.2), (reason, true));
    let denials = &out.last().unwrap()["permission_denials"];
    assert_eq!(denials[0]["tool_name"], "Bash");
    assert_eq!(denials[0]["tool_use_id"], rm.0.as_str());
    assert_eq!(denials[0]["tool_input"]["command"], "rm -rf build");
}

#[test]
fn session_ids_look_like_claude_code_s() {
    let id = session_id();
    let parts: Vec<usize> = id.split('-').map(str::len).collect();
    assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
    assert!(
        id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()),
        "{id}"
    );
    assert_ne!(id, session_id());
}
