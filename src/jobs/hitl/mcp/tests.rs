use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::rpc::{self, Message, parse_line};
use super::server::{Calls, Output, Server};
use super::tools;
use crate::jobs::fs::names::{
    DECISION_FILE, GATE_FILE, HISTORY_FILE, PROGRESS_FILE, QUESTION_FILE, RESPONSE_FILE,
};
use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::once::Closed;
use crate::jobs::hitl::operator::{
    self, AnswerError, Answerer, Outcome, Scope, Verdict, answer_question, decide_gate,
};
use crate::jobs::{Job, JobId, read_job};

#[test]
fn lines_are_messages_or_errors_with_the_right_code_and_id() {
    let req = |id: Value, method: &str, params: Value| {
        Ok(Some(Message::Request {
            id,
            method: method.into(),
            params,
        }))
    };
    let err = |id: Value, code: i64| (id, code);
    let cases: Vec<(&str, Result<Option<Message>, (Value, i64)>)> = vec![
        ("", Ok(None)),
        ("   \r\n", Ok(None)),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            req(json!(1), "ping", Value::Null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
            req(json!("a"), "tools/list", json!({})),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Ok(Some(Message::Notification {
                method: "notifications/initialized".into(),
                params: Value::Null,
            })),
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
            Ok(Some(Message::Response {
                id: json!(9),
                outcome: Ok(json!({})),
            })),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"no"}}"#,
            Ok(Some(Message::Response {
                id: json!("r"),
                outcome: Err(json!({"code": -32601, "message": "no"})),
            })),
        ),
        ("not json", Err(err(Value::Null, rpc::PARSE_ERROR))),
        (
            r#"{"jsonrpc":"2.0","id":1,"#,
            Err(err(Value::Null, rpc::PARSE_ERROR)),
        ),
        ("[1, 2]", Err(err(Value::Null, rpc::INVALID_REQUEST))),
        ("42", Err(err(Value::Null, rpc::INVALID_REQUEST))),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            Err(err(json!(3), rpc::INVALID_REQUEST)),
        ),
        (
            r#"{"id":3,"method":"ping"}"#,
            Err(err(json!(3), rpc::INVALID_REQUEST)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
            Err(err(Value::Null, rpc::INVALID_REQUEST)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":7}"#,
            Err(err(json!(4), rpc::INVALID_REQUEST)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}"#,
            Err(err(json!(5), rpc::INVALID_REQUEST)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":6}"#,
            Err(err(json!(6), rpc::INVALID_REQUEST)),
        ),
    ];
    for (line, want) in cases {
        let got = parse_line(line.as_bytes()).map_err(|e| (e.id, e.code));
        assert_eq!(got, want, "{line:?}");
    }
    let bad_utf8 = parse_line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").unwrap_err();
    assert_eq!(bad_utf8.code, rpc::PARSE_ERROR);
}

proptest! {
    /// Whatever arrives on a line, the parser does not panic, and an error's response is one
    /// line of JSON-RPC that names the error.
    #[test]
    fn any_line_parses_or_gets_a_one_line_error(line in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Err(e) = parse_line(&line) {
            let text = e.line();
            prop_assert!(!text.contains('\n'));
            let v: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&v["jsonrpc"], "2.0");
            prop_assert!(v["error"]["code"].as_i64().is_some());
        }
    }

    /// A well-formed request comes back as itself, whatever its method and id.
    #[test]
    fn a_request_comes_back_as_itself(method in "\\PC{0,40}", id in any::<i64>(), text_id in "\\PC{0,20}", use_text in any::<bool>()) {
        let id = if use_text { json!(text_id) } else { json!(id) };
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"k": [1]}});
        let got = parse_line(line.to_string().as_bytes()).unwrap();
        prop_assert_eq!(got, Some(Message::Request { id, method, params: json!({"k": [1]}) }));
    }
}

/// What the server wrote, shared with the test.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    fn lines(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The response to request `id`, once it has been written.
    fn response(&self, id: Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(r) = self.lines().into_iter().find(|l| l["id"] == id) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "no response to {id}: {:?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn job_dir() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("j1");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    std::fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
    (root, dir)
}

fn server(dir: &Path) -> (Server, Sink, Calls) {
    let sink = Sink::default();
    let out: Output = Arc::new(Mutex::new(sink.clone()));
    let calls = Calls::default();
    (Server::new(dir, out, calls.clone()), sink, calls)
}

#[test]
fn the_server_answers_each_request_and_reads_on_after_a_bad_line() {
    let (_root, dir) = job_dir();
    let (server, sink, _calls) = server(&dir);
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "{oops",
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#,
    ];
    for l in lines {
        server.handle(l.as_bytes());
    }
    assert_eq!(
        sink.response(json!(1))["result"]["protocolVersion"],
        "2025-06-18"
    );
    assert_eq!(
        sink.response(json!(1))["result"]["serverInfo"]["name"],
        "luzia"
    );
    assert!(
        sink.lines()
            .iter()
            .any(|l| l["id"].is_null() && l["error"]["code"] == rpc::PARSE_ERROR)
    );
    assert_eq!(sink.response(json!(2))["result"], json!({}));
    let names: Vec<Value> = sink.response(json!(3))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("permission"), json!("progress")]);
    assert_eq!(
        sink.response(json!(4))["error"]["code"],
        rpc::METHOD_NOT_FOUND
    );
    assert_eq!(
        sink.response(json!(5))["error"]["code"],
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        sink.response(json!(6))["error"]["code"],
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        sink.response(json!(7))["result"]["protocolVersion"],
        "2025-11-25"
    );
    assert_eq!(sink.lines().len(), 8, "a notification gets no answer");
}

fn read(root: &Path) -> Job {
    read_job(root, &JobId::parse("j1").unwrap(), Utc::now()).unwrap()
}

/// The job once `ready` says what it waits for is there.
fn wait_for(root: &Path, ready: impl Fn(&Job) -> bool) -> Job {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let job = read(root);
        if ready(&job) {
            return job;
        }
        assert!(Instant::now() < deadline, "not ready: {job:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn who() -> Answerer<'static> {
    Answerer {
        source: "cli",
        by: "op@host",
    }
}

fn call(id: i64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    .to_string()
}

/// The verdict inside a permission tool's result.
fn verdict(response: &Value) -> Value {
    let text = response["result"]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_permission_request_is_a_gate_and_pings_are_answered_while_it_waits() {
    let (root, dir) = job_dir();
    let (server, sink, _calls) = server(&dir);
    let input = json!({"command": "rm -rf build", "description": "Remove the build"});
    let args = json!({"tool_name": "Bash", "input": input, "tool_use_id": "toolu_1"});
    server.handle(call(1, "permission", args).as_bytes());
    let job = wait_for(root.path(), |j| j.gate.is_some());
    let gate = job.gate.clone().unwrap();
    assert_eq!(gate.gate, "Bash: rm -rf build");
    assert!(gate.description.starts_with("Remove the build"), "{gate:?}");
    assert!(gate.context.contains("\"rm -rf build\""), "{gate:?}");
    server.handle(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(sink.response(json!(2))["result"], json!({}));
    let deny = Verdict::deny("not during the copy");
    let denied = decide_gate(&job, Some(&gate.id), deny, who(), Utc::now());
    assert!(matches!(denied, Ok(Outcome::Done(_))), "{denied:?}");
    assert_eq!(
        verdict(&sink.response(json!(1))),
        json!({"behavior": "deny", "message": "not during the copy"})
    );

    server.handle(
        call(
            3,
            "permission",
            json!({"tool_name": "Write", "input": {"file_path": "/srv/x", "content": "y"}}),
        )
        .as_bytes(),
    );
    let job = wait_for(root.path(), |j| j.gate.is_some());
    assert_eq!(job.gate.as_ref().unwrap().gate, "Write: /srv/x");
    assert_eq!(job.gate.as_ref().unwrap().id, "g2", "ids count on");
    operator::decide(&job, true, "", "tui", "op@host", Utc::now()).unwrap();
    assert_eq!(
        verdict(&sink.response(json!(3))),
        json!({"behavior": "allow", "updatedInput": {"file_path": "/srv/x", "content": "y"}})
    );
    assert!(!dir.join(GATE_FILE).exists() && !dir.join(DECISION_FILE).exists());
}

#[test]
fn ask_user_question_asks_each_question_in_turn_and_allows_with_the_answers() {
    let (root, dir) = job_dir();
    let (server, sink, _calls) = server(&dir);
    let input = json!({"questions": [
        {"question": "Which database?", "header": "DB", "multiSelect": false,
         "options": [{"label": "staging", "description": "nightly copy"},
                     {"label": "production", "description": "live"}]},
        {"question": "Which checks?", "header": "Checks", "multiSelect": true,
         "options": [{"label": "unit", "description": "fast"},
                     {"label": "smoke", "description": "after"},
                     {"label": "load", "description": "slow"}]}
    ]});
    server.handle(
        call(
            1,
            "permission",
            json!({"tool_name": "AskUserQuestion", "input": input}),
        )
        .as_bytes(),
    );
    let job = wait_for(root.path(), |j| j.question.is_some());
    let q = job.question.clone().unwrap();
    assert_eq!(
        (q.question.as_str(), q.header.as_str(), q.multi_select),
        ("Which database?", "DB", false)
    );
    assert_eq!(q.options, ["staging", "production"]);
    assert_eq!(q.descriptions, ["nightly copy", "live"]);
    answer_question(&job, Some(&q.id), "1", who(), Utc::now()).unwrap();
    let job = wait_for(root.path(), |j| {
        j.question
            .as_ref()
            .is_some_and(|q| q.question == "Which checks?")
    });
    let q = job.question.clone().unwrap();
    assert!(q.multi_select);
    answer_question(&job, Some(&q.id), "load, 1", who(), Utc::now()).unwrap();
    let mut want = input.clone();
    want["answers"] = json!({"Which database?": "staging", "Which checks?": "unit, load"});
    assert_eq!(
        verdict(&sink.response(json!(1))),
        json!({"behavior": "allow", "updatedInput": want})
    );
    assert!(!dir.join(QUESTION_FILE).exists() && !dir.join(RESPONSE_FILE).exists());
}

#[test]
fn when_the_client_goes_away_the_pending_gate_is_withdrawn_and_a_late_operator_is_told() {
    let (root, dir) = job_dir();
    let (server, sink, _calls) = server(&dir);
    let (reader, mut writer) = std::io::pipe().unwrap();
    let serving = std::thread::spawn(move || server.run(std::io::BufReader::new(reader)));
    let line = call(
        1,
        "permission",
        json!({"tool_name": "Bash", "input": {"command": "make deploy"}}),
    );
    writer.write_all(format!("{line}\n").as_bytes()).unwrap();
    let job = wait_for(root.path(), |j| j.gate.is_some());
    // The client's end of the pipe closes: `run` returns once the call has withdrawn its gate.
    drop(writer);
    serving.join().unwrap().unwrap();
    let now = read(root.path());
    assert!(now.gate.is_none(), "nothing is left pending: {now:?}");
    assert!(!dir.join(GATE_FILE).exists());
    let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
    assert!(
        history.contains("\"withdrawn\"") && history.contains("make deploy"),
        "{history}"
    );
    assert!(
        sink.lines().is_empty(),
        "a stopped call gets no answer: {:?}",
        sink.lines()
    );
    // An operator who still had it on screen is told what became of it.
    let approve = Verdict::approve(Scope::Once, "");
    let late = decide_gate(&job, Some("g1"), approve, who(), Utc::now());
    assert!(
        matches!(
            late,
            Err(AnswerError::Closed {
                closed: Closed::Withdrawn,
                ..
            })
        ),
        "{late:?}"
    );
}

#[test]
fn a_cancelled_question_is_withdrawn_and_the_next_call_is_served() {
    let (root, dir) = job_dir();
    let (server, sink, calls) = server(&dir);
    let input = json!({"questions": [{"question": "Go on?", "header": "", "multiSelect": false,
        "options": [{"label": "yes", "description": ""}, {"label": "no", "description": ""}]}]});
    server.handle(
        call(
            1,
            "permission",
            json!({"tool_name": "AskUserQuestion", "input": input}),
        )
        .as_bytes(),
    );
    wait_for(root.path(), |j| j.question.is_some());
    server.handle(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    wait_for(root.path(), |j| j.question.is_none());
    assert!(!dir.join(QUESTION_FILE).exists());
    server.handle(
        call(
            2,
            "progress",
            json!({"percent": 40, "step": 2, "total_steps": 5, "step_name": "Tests"}),
        )
        .as_bytes(),
    );
    let done = sink.response(json!(2));
    assert_eq!(done["result"]["isError"], false, "{done}");
    let progress: Value =
        serde_json::from_slice(&std::fs::read(dir.join(PROGRESS_FILE)).unwrap()).unwrap();
    assert_eq!(
        (
            progress["percent"].as_f64(),
            progress["step"].as_u64(),
            progress["total_steps"].as_u64()
        ),
        (Some(40.0), Some(2), Some(5))
    );
    assert_eq!(progress["step_name"], "Tests");
    calls.stop_all();
    calls.join();
    assert!(
        sink.lines().iter().all(|l| l["id"] != 1),
        "the cancelled call gets no answer"
    );
}

#[test]
fn progress_is_checked_as_luzia_progress_checks_it() {
    let (_root, dir) = job_dir();
    let stop = Stop::default();
    for (args, ok) in [
        (json!({"percent": 101}), false),
        (json!({"step": 6, "total_steps": 5}), false),
        (json!({"step": 2}), false),
        (json!({}), false),
        (json!({"step_name": "  "}), false),
        (json!({"percent": 7.5}), true),
        (json!({"step_name": "Building"}), true),
    ] {
        let tools::Called::Result(r) = tools::call(&dir, tools::PROGRESS, &args, &stop) else {
            panic!("{args}");
        };
        assert_eq!(r["isError"], !ok, "{args}: {r}");
    }
}

#[test]
fn a_request_that_cannot_be_asked_is_denied_not_allowed() {
    let (_root, dir) = job_dir();
    let stop = Stop::default();
    for args in [
        json!({"input": {}}),
        json!({"tool_name": "AskUserQuestion", "input": {"questions": []}}),
        json!({"tool_name": "AskUserQuestion", "input": {"questions": [{"question": " "}]}}),
    ] {
        let tools::Called::Result(r) = tools::call(&dir, tools::PERMISSION, &args, &stop) else {
            panic!("{args}");
        };
        let v: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(v["behavior"], "deny", "{args}: {v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .starts_with("luzia could not ask the operator")
        );
    }
    let gone = dir.join("nope");
    let tools::Called::Result(r) = tools::call(
        &gone,
        tools::PERMISSION,
        &json!({"tool_name": "Bash", "input": {"command": "ls"}}),
        &stop,
    ) else {
        panic!();
    };
    assert!(r["content"][0]["text"].as_str().unwrap().contains("deny"));
}

#[test]
fn gate_names_are_one_line_and_short() {
    let long = "x".repeat(500);
    for (tool, input, want) in [
        (
            "Bash",
            json!({"command": "rm -rf build"}),
            "Bash: rm -rf build".to_string(),
        ),
        (
            "Bash",
            json!({"command": "a\n  b\tc"}),
            "Bash: a b c".into(),
        ),
        (
            "Edit",
            json!({"file_path": "/p/src/x.rs"}),
            "Edit: /p/src/x.rs".into(),
        ),
        (
            "WebFetch",
            json!({"url": "https://e.x"}),
            "WebFetch: https://e.x".into(),
        ),
        (
            "mcp__db__query",
            json!({"sql": "drop"}),
            "mcp__db__query".into(),
        ),
        ("Bash", json!({}), "Bash".into()),
    ] {
        assert_eq!(tools::gate_name(tool, &input), want);
    }
    let cut = tools::gate_name("Bash", &json!({"command": long}));
    assert_eq!(cut.chars().count(), 120);
    assert!(cut.ends_with('…'));
}

/// A client whose pipe breaks: one line, then (once told) a read error.
struct Breaks {
    line: Option<Vec<u8>>,
    then: std::sync::mpsc::Receiver<()>,
}

impl std::io::Read for Breaks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(line) = self.line.take() {
            buf[..line.len()].copy_from_slice(&line);
            return Ok(line.len());
        }
        let _ = self.then.recv();
        Err(std::io::Error::other("the pipe broke"))
    }
}

#[test]
fn a_client_whose_input_breaks_is_gone_too_and_its_gate_is_withdrawn() {
    let (root, dir) = job_dir();
    let (server, _sink, _calls) = server(&dir);
    let (tx, rx) = std::sync::mpsc::channel();
    let line = call(
        1,
        "permission",
        json!({"tool_name": "Bash", "input": {"command": "ls"}}),
    );
    let input = Breaks {
        line: Some(format!("{line}\n").into_bytes()),
        then: rx,
    };
    let serving = std::thread::spawn(move || server.run(std::io::BufReader::new(input)));
    wait_for(root.path(), |j| j.gate.is_some());
    tx.send(()).unwrap();
    assert!(serving.join().unwrap().is_err(), "the read error is said");
    assert!(read(root.path()).gate.is_none(), "nothing is left pending");
    assert!(!dir.join(GATE_FILE).exists());
}
