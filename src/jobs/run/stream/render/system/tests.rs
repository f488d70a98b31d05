//! The system lines Claude Code 2.1.332 printed around a background Bash task (against the
//! fake Messages API), a hook's notice as its code writes it, and lines of kinds not known.

use super::super::{Event, Renderer};

const TASKS: &str = r#"{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"b5e1jhf08","run_id":"0mx8zq5tt-62b3da96","task_type":"local_bash","description":"Run the load test"}],"uuid":"b4a3fe29-4ff7-4f47-84fb-d1124b105994","session_id":"5e443a1b-832a-4043-9866-51efcc9de560"}"#;
const NO_TASKS: &str = r#"{"type":"system","subtype":"background_tasks_changed","tasks":[],"uuid":"0af4bd96-b310-4d3b-8ba8-e9062d8fa428","session_id":"5e443a1b-832a-4043-9866-51efcc9de560"}"#;
const STARTED: &str = r#"{"type":"system","subtype":"task_started","task_id":"b5e1jhf08","run_id":"0mx8zq5tt-62b3da96","tool_use_id":"toolu_000000000000000000000001","description":"Run the load test","is_backgrounded":true,"task_type":"local_bash","uuid":"af391bbc-e8b9-4d05-a270-6359f72323b5","session_id":"5e443a1b-832a-4043-9866-51efcc9de560"}"#;
const UPDATED: &str = r#"{"type":"system","subtype":"task_updated","task_id":"b5e1jhf08","run_id":"0mx8zq5tt-62b3da96","patch":{"status":"completed","end_time":1796389166792},"uuid":"ba7a6ba7-b27d-4770-8f4e-2c960f1f4a90","session_id":"5e443a1b-832a-4043-9866-51efcc9de560"}"#;
const NOTIFIED: &str = r#"{"type":"system","subtype":"task_notification","task_id":"b5e1jhf08","run_id":"0mx8zq5tt-62b3da96","tool_use_id":"toolu_000000000000000000000001","status":"completed","output_file":"/tmp/claude-0/tasks/b5e1jhf08.output","summary":"Background command \"Run the load test\" completed (exit code 0)","uuid":"de900b36-de70-4ad0-85e1-7fa36e86c27b","session_id":"5e443a1b-832a-4043-9866-51efcc9de560"}"#;
const HOOK_NOTICE: &str = r#"{"type":"system","subtype":"informational","content":"The PreToolUse hook timed out, so it didn't check this action.","level":"warning","tag":"hook_no_verdict","hook_no_verdict":{"hook_event":"PreToolUse","tool_use_id":"toolu_1","timed_out":true},"uuid":"u","session_id":"s"}"#;

fn shown(r: &mut Renderer, line: &str) -> String {
    r.line(line.as_bytes()).text
}

#[test]
fn background_tasks_are_said_and_waited_for() {
    let mut r = Renderer::new();
    let got = r.line(TASKS.as_bytes());
    assert_eq!(
        got.text,
        "  ⧗ waiting for 1 background task: Run the load test\n"
    );
    assert_eq!(
        got.events,
        [Event::Background(vec!["Run the load test".into()])]
    );
    for quiet in [STARTED, UPDATED] {
        assert_eq!(shown(&mut r, quiet), "", "{quiet}");
    }
    assert_eq!(
        shown(&mut r, NOTIFIED),
        "  ⧗ Background command \"Run the load test\" completed (exit code 0)\n"
    );
    let none = r.line(NO_TASKS.as_bytes());
    assert_eq!(none.text, "  ⧗ no background task left\n");
    assert_eq!(none.events, [Event::Background(Vec::new())]);
}

#[test]
fn notices_and_fallbacks_are_one_line() {
    let mut r = Renderer::new();
    assert_eq!(
        shown(&mut r, HOOK_NOTICE),
        "  ⚠ The PreToolUse hook timed out, so it didn't check this action.\n"
    );
    let fallback = r#"{"type":"system","subtype":"model_fallback","content":"","level":"warning","originalModel":"opus","fallbackModel":"sonnet"}"#;
    assert_eq!(
        shown(&mut r, fallback),
        "  ↪ model opus fell back to sonnet\n"
    );
}

#[test]
fn an_unknown_kind_is_named_in_one_line_never_as_json() {
    let mut r = Renderer::new();
    for (line, name) in [
        (
            r#"{"type":"system","subtype":"brand_new","x":{"y":1}}"#,
            "system/brand_new",
        ),
        (r#"{"type":"telepathy","payload":"{\"a\":1}"}"#, "telepathy"),
        (r#"{"type":"x\u001b[2Jy"}"#, "x[2Jy"),
    ] {
        let got = shown(&mut r, line);
        assert_eq!(
            got,
            format!("  · Claude Code event {name} (not shown by luzia; whole in stream.jsonl)\n")
        );
        assert!(!got.contains('{') && got.lines().count() == 1, "{got}");
    }
    for quiet in [
        r#"{"type":"keep_alive"}"#,
        r#"{"type":"system","subtype":"status","status":"compacting"}"#,
    ] {
        assert_eq!(shown(&mut r, quiet), "", "{quiet}");
    }
}
