use super::*;
use crate::jobs::fs::names::{ACTIVITY_FILE, STREAM_FILE};
use crate::jobs::run::dispatch::{Spec, create};
use chrono::Utc;

fn job(cmd: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let spec = Spec {
        project: "p".into(),
        project_path: root.path().to_owned(),
        user: None,
        task: "say hello".into(),
        command: cmd.iter().map(|s| s.to_string()).collect(),
        prompt_template: "{task}".into(),
        retry_of: None,
        addendum: None,
        queue_id: None,
        session: Default::default(),
        permissions: Default::default(),
        isolation: None,
        claude_dirs: Default::default(),
        steps: Default::default(),
    };
    let c = create(root.path(), &spec, Utc::now()).unwrap();
    (root, c.dir)
}

#[test]
fn runs_the_agent_on_the_prompt_and_writes_the_exit_line() {
    let (root, dir) = job(&["sh", "-c", "cat; echo to-stderr >&2; exit 3"]);
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 3);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert!(log.starts_with("say hello"), "{log}");
    assert!(log.contains("to-stderr"));
    assert!(log.ends_with("\nexit:3\n"), "{log:?}");
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["exit_code"], 3);
    assert!(meta["finished"].is_string());
    assert_eq!(meta["project"], "p", "other fields kept");
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(line.contains("finished (exit 3)"), "{line}");
}

#[test]
fn a_missing_agent_is_exit_127_with_a_reason() {
    let (_root, dir) = job(&["/nonexistent/agent"]);
    assert_eq!(supervise(&dir, None).unwrap(), 127);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert!(
        log.contains("cannot start the agent") && log.ends_with("exit:127\n"),
        "{log}"
    );
}

#[test]
fn a_requested_stop_is_recorded_whatever_the_exit_code() {
    // The request is on disk before the agent ends (as `luzia kill` publishes it before it
    // signals); the agent ends with 0 all the same.
    let (root, dir) = job(&["sh", "-c", "cat >/dev/null; exit 0"]);
    let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 11, 14, 31, 2).unwrap();
    let request = StopRequest::new("bruno@host", at, stop::StopSource::Tui);
    std::fs::write(
        dir.join(crate::jobs::fs::names::STOP_FILE),
        request.to_json(),
    )
    .unwrap();
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 0);
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["exit_code"], 0, "the agent's own code is kept");
    assert_eq!(meta["status"], "killed");
    assert_eq!(
        meta["stop"],
        serde_json::json!({"requested_by": "bruno@host",
            "requested_at": "2026-01-11T14:31:02Z", "source": "tui"})
    );
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(
        line.ends_with(" finished (exit 0), killed by bruno@host (tui)\n"),
        "{line}"
    );
}

#[test]
fn without_a_request_meta_json_and_the_line_are_as_before() {
    let (root, dir) = job(&["sh", "-c", "cat >/dev/null; exit 0"]);
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 0);
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["status"], "running", "as dispatched: advisory");
    assert!(meta.get("stop").is_none());
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(line.ends_with(" finished (exit 0)\n"), "{line}");
}

#[test]
fn a_signal_death_is_a_negative_exit() {
    let (_root, dir) = job(&["sh", "-c", "kill -9 $$"]);
    assert_eq!(supervise(&dir, None).unwrap(), -9);
}

#[test]
fn a_meta_json_the_agent_turned_into_a_link_is_not_followed() {
    // An agent running as another user owns its directory and could point meta.json at a
    // file only root can read: its content must not be copied into the job directory.
    let (root, dir) = job(&[
        "sh",
        "-c",
        r#"cat >/dev/null; ln -sf "$0" "$LUZIA_JOB_DIR/meta.json""#,
    ]);
    let secret = root.path().join("secret.json");
    std::fs::write(&secret, r#"{"token": "s3cr3t"}"#).unwrap();
    let meta = std::fs::read_to_string(dir.join(META_FILE)).unwrap();
    let agent: Vec<String> = serde_json::from_str::<Value>(&meta).unwrap()["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .chain([secret.display().to_string()])
        .collect();
    let mut m: Value = serde_json::from_str(&meta).unwrap();
    m["argv"] = serde_json::json!(agent);
    std::fs::write(dir.join(META_FILE), m.to_string()).unwrap();
    assert_eq!(supervise(&dir, None).unwrap(), 0);
    assert!(
        std::fs::symlink_metadata(dir.join(META_FILE))
            .unwrap()
            .file_type()
            .is_symlink(),
        "rewritten through the link"
    );
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        r#"{"token": "s3cr3t"}"#
    );
}

/// Waits for `check` to hold, or fails saying what was waited for.
fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 30s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"4b1f0c5e-2d7a-4c1e-9f3b-8a6d5e4c3b2a","model":"claude-sonnet-4-5"}"#;
const CALL: &str = r#"{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"npm test","description":"Run the tests"}}]}}"#;
const RESULT: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"12 passing","is_error":false}]}}"#;
const END: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"duration_ms":4000,"total_cost_usd":0.012,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5,"cache_creation_input_tokens":0},"session_id":"4b1f0c5e-2d7a-4c1e-9f3b-8a6d5e4c3b2a"}"#;

/// An agent speaking stream-json: readable text in output.log while it runs, the call in
/// flight in activity.json, the raw lines in stream.jsonl, the figures in meta.json at the end.
#[test]
fn stream_json_is_rendered_as_it_comes_and_recorded() {
    let script = format!(
        ": --output-format stream-json; cat >/dev/null; printf '%s\\n%s\\n' '{INIT}' '{CALL}'; \
         while [ ! -e \"$LUZIA_JOB_DIR/go\" ]; do sleep 0.05; done; \
         printf '%s\\n%s\\n' '{RESULT}' '{END}'; echo 'to stderr' >&2"
    );
    let (_root, dir) = job(&["sh", "-c", &script]);
    let supervised = {
        let dir = dir.clone();
        std::thread::spawn(move || supervise(&dir, None).unwrap())
    };
    let log = || std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
    wait_until("the tool call in output.log", || {
        log().contains("▶ Bash  npm test  — Run the tests\n")
    });
    assert!(!log().contains("exit:"), "{}", log());
    wait_until("activity.json", || dir.join(ACTIVITY_FILE).exists());
    let activity = crate::jobs::model::session::Activity::parse(
        &std::fs::read(dir.join(ACTIVITY_FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(activity.what, "Bash: npm test");
    std::fs::write(dir.join("go"), "").unwrap();
    assert_eq!(supervised.join().unwrap(), 0);
    // stderr goes straight to output.log: it may come before what stdout said just before it.
    let shown = log().replace("to stderr\n", "");
    assert!(
        shown.starts_with(
            "── Claude Code session 4b1f0c5e-2d7a-4c1e-9f3b-8a6d5e4c3b2a · claude-sonnet-4-5\n\
             ▶ Bash  npm test  — Run the tests\n  12 passing\n\
             ── success · 2 turns · 4.0s · 100 in / 20 out / 5 cache read / 0 cache write tokens · $0.0120\n"
        ),
        "{shown}"
    );
    assert!(log().contains("to stderr\n"));
    assert!(shown.ends_with("\nexit:0\n"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(dir.join(STREAM_FILE)).unwrap(),
        format!("{INIT}\n{CALL}\n{RESULT}\n{END}\n")
    );
    assert!(!dir.join(ACTIVITY_FILE).exists());
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["session_id"], "4b1f0c5e-2d7a-4c1e-9f3b-8a6d5e4c3b2a");
    assert_eq!(meta["usage"]["model"], "claude-sonnet-4-5");
    assert_eq!(meta["usage"]["turns"], 2);
    assert_eq!(meta["usage"]["cost_usd"], 0.012);
    assert_eq!(meta["exit_code"], 0, "finish written after, keeping usage");
}

/// A process that left the agent's group and keeps stdout open does not keep the job from
/// ending: what is in the pipe is read, then the exit line is written.
#[test]
fn a_process_holding_the_pipe_open_does_not_hold_the_job() {
    // Asking for stream-json, the agent's stdout is a pipe read by the supervisor.
    let (root, dir) = job(&[
        "sh",
        "-c",
        ": stream-json; cat >/dev/null; setsid sh -c 'echo $$ > \"$0\"; exec sleep 120' \"$LUZIA_JOB_DIR/../held.pid\" & \
         echo before; exit 4",
    ]);
    assert_eq!(supervise(&dir, None).unwrap(), 4);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert!(
        log.starts_with("before\n") && log.ends_with("\nexit:4\n"),
        "{log}"
    );
    if let Ok(pid) = std::fs::read_to_string(root.path().join("held.pid")) {
        let _ = std::process::Command::new("kill").arg(pid.trim()).status();
    }
}

#[test]
fn only_a_command_line_asking_for_stream_json_is_read_through_a_pipe() {
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(may_stream(&argv(&[
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose"
    ])));
    assert!(may_stream(&argv(&[
        "claude",
        "--output-format=stream-json"
    ])));
    assert!(may_stream(&argv(&[
        "sh",
        "-c",
        "claude -p --output-format stream-json --verbose | tee x"
    ])));
    assert!(!may_stream(&argv(&["claude", "-p"])));
    assert!(!may_stream(&argv(&["aider", "--yes"])));
    // Another agent printing the same lines writes output.log itself: passed on as it is.
    let script = format!("cat >/dev/null; printf '%s\\n' '{INIT}'");
    let (_root, dir) = job(&["sh", "-c", &script]);
    assert_eq!(supervise(&dir, None).unwrap(), 0);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert_eq!(log, format!("{INIT}\n\nexit:0\n"));
    assert!(!dir.join(STREAM_FILE).exists());
}

/// Asking for stream-json but printing something else: output.log gets it byte for byte.
#[test]
fn a_stream_json_command_line_printing_plain_text_is_copied_as_it_is() {
    let (_root, dir) = job(&[
        "sh",
        "-c",
        ": stream-json; cat >/dev/null; printf 'plain \\377 text\\n{\"a\":1}\\nno newline'",
    ]);
    assert_eq!(supervise(&dir, None).unwrap(), 0);
    let log = std::fs::read(dir.join(LOG_FILE)).unwrap();
    assert_eq!(log, b"plain \xff text\n{\"a\":1}\nno newline\nexit:0\n");
    assert!(!dir.join(STREAM_FILE).exists());
}
