use super::reader::{Feed, LINE_CAP, Sink, is_stream_json};
use super::*;
use crate::jobs::fs::names::META_FILE;
use chrono::TimeZone;

/// What a [`Feed`] gave out, in memory.
#[derive(Default)]
struct Memory {
    log: Vec<u8>,
    raw: Vec<u8>,
    events: Vec<Event>,
    ended: bool,
}

impl Sink for Memory {
    fn log(&mut self, bytes: &[u8]) {
        self.log.extend_from_slice(bytes);
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.raw.extend_from_slice(bytes);
    }
    fn event(&mut self, event: Event) {
        self.events.push(event);
    }
    fn end(&mut self) {
        self.ended = true;
    }
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s-1","model":"m"}"#;
const CALL: &str = r#"{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 30"}}]}}"#;
const DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#;

/// Feeds `bytes` in pieces of `step` bytes.
fn feed(bytes: &[u8], step: usize) -> Memory {
    let mut f = Feed::new(Memory::default());
    for piece in bytes.chunks(step.max(1)) {
        f.feed(piece);
    }
    f.end()
}

#[test]
fn any_other_output_is_copied_byte_for_byte_however_it_is_cut() {
    let text: &[u8] =
        b"plain \xff output\n{\"not\": \"claude\"}\n  indented\nno newline at the end";
    for step in [1, 2, 7, 1000] {
        let m = feed(text, step);
        assert_eq!(m.log, text, "in pieces of {step}");
        assert!(m.raw.is_empty() && m.events.is_empty() && m.ended);
    }
    let json_first: &[u8] = b"{\"type\": \"other\"}\nthen text\n";
    assert_eq!(feed(json_first, 3).log, json_first);
}

#[test]
fn stream_json_is_recognised_by_its_first_line_rendered_and_kept_raw() {
    let input = format!("{INIT}\n{DELTA}\n{CALL}\nnot json\n");
    for step in [1, 5, 4096] {
        let m = feed(input.as_bytes(), step);
        assert_eq!(
            String::from_utf8(m.raw).unwrap(),
            format!("{INIT}\n{CALL}\nnot json\n"),
            "every line but the deltas, as it came"
        );
        assert_eq!(
            String::from_utf8(m.log).unwrap(),
            "── Claude Code session s-1 · m\n▶ Bash  sleep 30\nnot json\n"
        );
        assert_eq!(
            m.events,
            [
                Event::Session { id: "s-1".into() },
                Event::ToolStarted {
                    id: "t1".into(),
                    what: "Bash: sleep 30".into()
                }
            ]
        );
    }
    assert!(is_stream_json(INIT.as_bytes()));
    assert!(!is_stream_json(b"{\"type\": 3}"));
}

#[test]
fn a_last_line_without_its_newline_is_rendered_and_kept_as_it_came() {
    let m = feed(format!("{INIT}\n{CALL}").as_bytes(), 9);
    assert_eq!(String::from_utf8(m.raw).unwrap(), format!("{INIT}\n{CALL}"));
    assert!(
        String::from_utf8(m.log)
            .unwrap()
            .ends_with("▶ Bash  sleep 30\n")
    );
    let only = feed(INIT.as_bytes(), 4);
    assert_eq!(only.events, [Event::Session { id: "s-1".into() }]);
}

/// A line longer than the cap costs no more memory than the cap: it goes to stream.jsonl whole,
/// output.log says it was cut, and a cut tool result still ends its call.
#[test]
fn a_line_over_the_cap_is_kept_whole_and_shown_as_cut() {
    let big = "x".repeat(LINE_CAP + 10);
    let result = format!(
        r#"{{"type":"user","message":{{"content":[{{"tool_use_id":"t1","type":"tool_result","content":"{big}"}}]}}}}"#
    );
    let input = format!("{INIT}\n{CALL}\n{result}\n{INIT}\n");
    let m = feed(input.as_bytes(), 64 * 1024);
    assert!(m.raw == input.as_bytes(), "kept whole");
    let log = String::from_utf8(m.log).unwrap();
    assert!(
        log.contains("luzia: a stream-json line longer than 1 MiB was cut here"),
        "{log}"
    );
    assert!(log.ends_with("── Claude Code session s-1 · m\n"), "{log}");
    assert!(m.events.contains(&Event::ToolEnded { id: "t1".into() }));
    // A partial-message line that long is dropped like the others.
    let delta = format!(r#"{{"type":"stream_event","event":{{"delta":{{"text":"{big}"}}}}}}"#);
    let m = feed(format!("{INIT}\n{delta}\n").as_bytes(), 100_000);
    assert!(m.raw == format!("{INIT}\n").as_bytes(), "not kept");
}

#[test]
fn a_first_line_over_the_cap_is_passed_through() {
    let mut input = b"{".to_vec();
    input.extend(std::iter::repeat_n(b'a', LINE_CAP + 5));
    input.extend_from_slice(b"\nafter\n");
    let m = feed(&input, 300_000);
    assert!(m.log == input, "passed on byte for byte");
    assert!(m.raw.is_empty());
}

fn at(s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, s).unwrap()
}

#[test]
fn in_flight_is_the_oldest_call_then_the_message_being_written() {
    let mut f = InFlight::default();
    assert_eq!(f.current(), None);
    f.apply(&Event::Writing(true), at(0));
    assert_eq!(f.current().unwrap().what, "writing");
    let call = |id: &str, what: &str| Event::ToolStarted {
        id: id.into(),
        what: what.into(),
    };
    f.apply(&call("a", "Bash: npm test"), at(1));
    f.apply(&call("b", "Read: x"), at(2));
    assert_eq!(
        f.current(),
        Some(Activity {
            what: "Bash: npm test".into(),
            since: Some(at(1))
        })
    );
    f.apply(&Event::ToolEnded { id: "a".into() }, at(3));
    assert_eq!(f.current().unwrap().since, Some(at(2)));
    f.apply(&Event::ToolEnded { id: "b".into() }, at(4));
    assert_eq!(f.current().unwrap().what, "writing", "since 0");
    f.apply(&Event::Writing(false), at(5));
    assert_eq!(f.current(), None);
    f.apply(&call("c", "Bash: x"), at(6));
    f.apply(&Event::Finished(Box::default()), at(7));
    assert_eq!(f.current(), None, "nothing is in flight after the result");
}

#[test]
fn after_a_result_the_background_tasks_waited_for_are_the_activity() {
    let mut f = InFlight::default();
    let tasks = |t: &[&str]| Event::Background(t.iter().map(|s| s.to_string()).collect());
    f.apply(&tasks(&["Run the load test"]), at(1));
    f.apply(&Event::Finished(Box::default()), at(2));
    let waiting = Activity {
        what: "waiting for background tasks: Run the load test".into(),
        since: Some(at(1)),
    };
    assert_eq!(f.current(), Some(waiting.clone()), "not idle: waiting");
    f.apply(&tasks(&["Run the load test", "Build"]), at(3));
    assert_eq!(
        f.current().unwrap().since,
        Some(at(1)),
        "waiting since the first"
    );
    f.apply(&tasks(&[]), at(4));
    assert_eq!(f.current(), None);
}

fn job_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join(META_FILE),
        r#"{"id": "j", "session_id": "s-1", "x-kept": true}"#,
    )
    .unwrap();
    d
}

fn meta(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap()
}

#[test]
fn the_job_directory_records_the_call_in_flight_the_session_and_the_figures() {
    let d = job_dir();
    let log = File::create(d.path().join("output.log")).unwrap();
    let mut f = Feed::new(JobSink::new(d.path(), log));
    f.feed(format!("{INIT}\n").as_bytes());
    f.feed(CALL.as_bytes());
    f.feed(b"\n");
    let activity = Activity::parse(&std::fs::read(d.path().join(ACTIVITY_FILE)).unwrap()).unwrap();
    assert_eq!(activity.what, "Bash: sleep 30");
    assert!(activity.since.is_some());
    f.feed(br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#);
    f.feed(b"\n");
    assert!(
        !d.path().join(ACTIVITY_FILE).exists(),
        "ended with its result"
    );
    f.feed(CALL.as_bytes());
    f.feed(b"\n{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":2,\"duration_ms\":1500,\"total_cost_usd\":0.5,\"usage\":{\"input_tokens\":10,\"output_tokens\":20,\"cache_read_input_tokens\":30,\"cache_creation_input_tokens\":40},\"session_id\":\"s-1\"}\n");
    f.end();
    assert!(!d.path().join(ACTIVITY_FILE).exists(), "removed at the end");
    let m = meta(d.path());
    assert_eq!(m["session_id"], "s-1");
    assert_eq!(m["x-kept"], true);
    let usage = Usage::from_meta(m.get("usage")).unwrap();
    assert_eq!(
        usage,
        Usage {
            model: "m".into(),
            turns: Some(2),
            duration_ms: Some(1500),
            input_tokens: Some(10),
            output_tokens: Some(20),
            cache_read_tokens: Some(30),
            cache_creation_tokens: Some(40),
            cost_usd: Some(0.5),
            outcome: "success".into(),
            error: String::new(),
        }
    );
    let raw = std::fs::read_to_string(d.path().join(STREAM_FILE)).unwrap();
    assert_eq!(raw.lines().count(), 5);
    let shown = std::fs::read_to_string(d.path().join("output.log")).unwrap();
    assert!(shown.contains("▶ Bash  sleep 30\n  ok\n"), "{shown}");
}

#[test]
fn a_new_session_id_is_written_and_the_same_one_is_not_rewritten() {
    let d = job_dir();
    let log = File::create(d.path().join("output.log")).unwrap();
    let mut sink = JobSink::new(d.path(), log);
    std::fs::write(d.path().join(META_FILE), r#"{"id":"j","session_id":"s-1"}"#).unwrap();
    sink.event(Event::Session { id: "s-1".into() });
    assert_eq!(
        std::fs::read_to_string(d.path().join(META_FILE)).unwrap(),
        r#"{"id":"j","session_id":"s-1"}"#,
        "not rewritten"
    );
    sink.event(Event::Session { id: "s-2".into() });
    assert_eq!(meta(d.path())["session_id"], "s-2");
}

#[test]
fn stream_jsonl_planted_as_a_link_is_not_followed() {
    let d = job_dir();
    let target = d.path().join("elsewhere");
    std::fs::write(&target, "secret\n").unwrap();
    std::os::unix::fs::symlink(&target, d.path().join(STREAM_FILE)).unwrap();
    let log = File::create(d.path().join("output.log")).unwrap();
    let mut f = Feed::new(JobSink::new(d.path(), log));
    f.feed(format!("{INIT}\n").as_bytes());
    f.end();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret\n");
}

#[test]
fn each_result_of_a_run_is_recorded_with_its_own_figures_and_the_run_adds_them_up() {
    let d = job_dir();
    let log = File::create(d.path().join("output.log")).unwrap();
    let mut f = Feed::new(JobSink::new(d.path(), log));
    let result = |index: u64, turns: u64, total: f64| {
        format!(
            "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":{turns},\
             \"duration_ms\":1000,\"total_cost_usd\":{total},\"result_index\":{index},\
             \"usage\":{{\"input_tokens\":100,\"output_tokens\":10}},\"session_id\":\"s-1\"}}\n"
        )
    };
    f.feed(format!("{INIT}\n").as_bytes());
    f.feed(result(0, 3, 0.25).as_bytes());
    let first = RunResult::list_from_meta(meta(d.path()).get("results"));
    assert_eq!(first.len(), 1, "recorded as it comes");
    f.feed(format!("{INIT}\n").as_bytes());
    f.feed(result(1, 1, 0.375).as_bytes());
    f.end();
    let m = meta(d.path());
    let results = RunResult::list_from_meta(m.get("results"));
    let own: Vec<(Option<u64>, Option<f64>)> = results
        .iter()
        .map(|r| (r.usage.turns, r.usage.cost_usd))
        .collect();
    assert_eq!(own, [(Some(3), Some(0.25)), (Some(1), Some(0.125))]);
    assert!(
        results
            .iter()
            .all(|r| r.at.is_some_and(|at| at.timestamp_subsec_nanos() == 0)),
        "recorded to the second, as `finished` is: {m}"
    );
    let run = Usage::from_meta(m.get("usage")).unwrap();
    assert_eq!(
        (run.turns, run.input_tokens, run.cost_usd),
        (Some(4), Some(200), Some(0.375))
    );
}

#[test]
fn an_aiders_figures_are_read_from_its_log_into_meta_json_and_nobody_elses() {
    let d = job_dir();
    let mut log = "Main model: openai/gpt-4o with diff edit format\n".repeat(2);
    log.push_str(&"x".repeat(300 * 1024)); // a line longer than one read
    log.push_str("\nTokens: 1.5k sent, 40 received. Cost: $0.01 message, $0.01 session.\n");
    log.push_str("Tokens: 900 sent, 2 received. Cost: $0.0033 message, $0.0133 session.");
    std::fs::write(d.path().join("output.log"), &log).unwrap();

    text::record_usage(d.path(), crate::jobs::run::agents::Kind::Command);
    assert_eq!(
        meta(d.path())["usage"],
        Value::Null,
        "not an agent that prints them"
    );

    text::record_usage(d.path(), crate::jobs::run::agents::Kind::Aider);
    let m = meta(d.path());
    assert_eq!(m["usage"]["input_tokens"], 2_400);
    assert_eq!(m["usage"]["output_tokens"], 42);
    assert_eq!(m["usage"]["cost_usd"], 0.0133);
    assert_eq!(m["usage"]["turns"], 2);
    assert_eq!(m["usage"]["model"], "openai/gpt-4o");
    assert_eq!(m["x-kept"], true, "the rest of meta.json is kept");
}
