//! Every shape of line Claude Code 2.1.197 prints, captured from the real CLI (`claude -p
//! --output-format stream-json --verbose`, with `--include-partial-messages` for the
//! `stream_event` and task lines) against a local stand-in for the Messages API: a Bash call
//! that fails, a Read of a missing file, a Bash call with eight lines of output, and the API
//! answering 400 (credit balance), 401, 429 and 529, and `--max-turns 1`.

use proptest::prelude::*;
use serde_json::json;

use super::*;

const INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/tmp/st/work","session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","tools":["Task","Bash","CronCreate","CronDelete","CronList","Edit","EnterWorktree","ExitWorktree","NotebookEdit","Read","ReportFindings","ScheduleWakeup","SendMessage","Skill","TaskCreate","TaskGet","TaskList","TaskOutput","TaskStop","TaskUpdate","WebFetch","WebSearch","Workflow","Write"],"mcp_servers":[],"model":"claude-opus-4-8[1m]","permissionMode":"bypassPermissions","slash_commands":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator","clear","compact","config","context","heapdump","init","reload-skills","review","security-review","usage","insights","goal","team-onboarding"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.197","output_style":"default","agents":["claude","Explore","general-purpose","Plan","statusline-setup"],"skills":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator"],"plugins":[],"analytics_disabled":true,"product_feedback_disabled":true,"uuid":"7a660fa2-4975-4490-8f58-2f3d337dbc49","memory_paths":{"auto":"/tmp/st/home/.claude/projects/-tmp-st-work/memory/"},"fast_mode_state":"off"}"#;

const TEXT: &str = r#"{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Let me run the tests."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":300},"context_management":null},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"6879328b-a7b8-491a-8254-2bfab28f11a5","request_id":"req_fake"}"#;

const BASH_CALL: &str = r#"{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_000000000000000000000001","name":"Bash","input":{"command":"echo hello; echo line2; ls /nonexistent-x","description":"Run the tests"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":300},"context_management":null},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"55394f4e-8ee3-48a5-b47a-4e0cd34792ff","request_id":"req_fake"}"#;

const BASH_FAILED: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 2\nhello\nline2\nls: cannot access '/nonexistent-x': No such file or directory","is_error":true,"tool_use_id":"toolu_000000000000000000000001"}]},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"50e0bb2e-8052-4aae-9d55-7d3b018dda8e","timestamp":"2026-11-23T12:47:27.794Z","tool_use_result":"Error: Exit code 2\nhello\nline2\nls: cannot access '/nonexistent-x': No such file or directory"}"#;

const READ_CALL: &str = r#"{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_000000000000000000000002","name":"Read","input":{"file_path":"/tmp/st/work/nofile.txt"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":300},"context_management":null},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"fb669480-4b30-4e34-90b6-deb86af719dc","request_id":"req_fake"}"#;

const READ_FAILED: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"File does not exist. Note: your current working directory is /tmp/st/work.","is_error":true,"tool_use_id":"toolu_000000000000000000000002"}]},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"ea600f57-7451-405a-bae8-8536120bc5c4","timestamp":"2026-11-23T12:47:27.817Z","tool_use_result":"Error: File does not exist. Note: your current working directory is /tmp/st/work."}"#;

const BASH_LONG_CALL: &str = r#"{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_000000000000000000000003","name":"Bash","input":{"command":"printf 'a\\nb\\nc\\nd\\ne\\nf\\ng\\nh\\n'"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":300},"context_management":null},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"7eec383e-ba78-4f20-843b-4d3595358df1","request_id":"req_fake"}"#;

const BASH_LONG_RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_000000000000000000000003","type":"tool_result","content":"a\nb\nc\nd\ne\nf\ng\nh","is_error":false}]},"parent_tool_use_id":null,"session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","uuid":"7a6d57f8-9430-4c24-a9e6-6872e47b1c2e","timestamp":"2026-11-23T12:47:27.886Z","tool_use_result":{"stdout":"a\nb\nc\nd\ne\nf\ng\nh","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}"#;

const RESULT_SUCCESS: &str = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":290,"duration_api_ms":109,"ttft_ms":91,"ttft_stream_ms":90,"time_to_request_ms":75,"num_turns":4,"result":"All done: the tests pass.","stop_reason":"end_turn","session_id":"dc7ca5d9-9cb0-4480-be37-3185bc409910","total_cost_usd":0.028599999999999997,"usage":{"input_tokens":4800,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":160,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{"claude-opus-4-8[1m]":{"inputTokens":4800,"outputTokens":160,"cacheReadInputTokens":1200,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.028599999999999997,"contextWindow":1000000,"maxOutputTokens":64000}},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"00bfeb32-827b-41b1-acc0-3730e94d27ba"}"#;

const CREDIT_SYNTHETIC: &str = r#"{"type":"assistant","message":{"id":"0985b9a2-e550-4c72-af22-2233e6e7cc03","container":null,"model":"<synthetic>","role":"assistant","stop_details":null,"stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":null,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":null,"iterations":null,"speed":null},"content":[{"type":"text","text":"Credit balance is too low"}],"context_management":null},"parent_tool_use_id":null,"session_id":"4a6ee22e-8d99-449b-9e50-6d1f7140b3fd","uuid":"7b02d771-7936-4148-8ed0-d1797f7af38b","error":"billing_error","request_id":"req_fake"}"#;

const CREDIT_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"duration_ms":182,"duration_api_ms":0,"num_turns":1,"result":"Credit balance is too low","stop_reason":"stop_sequence","session_id":"4a6ee22e-8d99-449b-9e50-6d1f7140b3fd","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"5fa4c8ef-f3b2-4554-8054-44a25ddb570b"}"#;

const RATE_LIMIT_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":110,"duration_api_ms":0,"num_turns":1,"result":"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.","stop_reason":"stop_sequence","session_id":"0065ac0c-2888-46d1-b1e9-3af0a05b8b70","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"4eb45a90-0cef-413d-ab40-e05d590137bb"}"#;

const OVERLOADED_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"duration_ms":79,"duration_api_ms":0,"num_turns":1,"result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5904).","stop_reason":"stop_sequence","session_id":"a3de9077-5cd9-4306-b2c9-40553417c965","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"1b39478f-de50-4673-80d4-e2946e244ec7"}"#;

const AUTH_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"duration_ms":113,"duration_api_ms":0,"num_turns":1,"result":"Invalid API key · Fix external API key","stop_reason":"stop_sequence","session_id":"b0b53710-d26b-449e-90f4-abf013920931","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"7a2d7588-3ec7-4ed5-a6e6-7949e06fa2b8"}"#;

const MAX_TURNS_RESULT: &str = r#"{"type":"result","subtype":"error_max_turns","duration_ms":145,"duration_api_ms":43,"is_error":true,"num_turns":2,"stop_reason":"tool_use","session_id":"9dd542ae-2dc8-4448-b940-8971dceaffb5","total_cost_usd":0.007149999999999999,"usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":40,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{"claude-opus-4-8[1m]":{"inputTokens":1200,"outputTokens":40,"cacheReadInputTokens":300,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.007149999999999999,"contextWindow":1000000,"maxOutputTokens":64000}},"permission_denials":[],"terminal_reason":"max_turns","fast_mode_state":"off","uuid":"74c78b09-d8b8-45c4-b5a6-3f0da43fb640","errors":["Reached maximum number of turns (1)"]}"#;

const TASK_STARTED: &str = r#"{"type":"system","subtype":"task_started","task_id":"bqp98izl3","tool_use_id":"toolu_000000000000000000000001","description":"Wait a bit","task_type":"local_bash","uuid":"5ccd4b6f-a264-439e-8f99-a77886bc635f","session_id":"ffa09543-f11b-47e2-8338-93ce165fbcfa"}"#;

const TASK_NOTIFICATION: &str = r#"{"type":"system","subtype":"task_notification","task_id":"bqp98izl3","tool_use_id":"toolu_000000000000000000000001","status":"completed","output_file":"","summary":"Wait a bit","uuid":"5a726487-aafd-4f35-8862-f2477da82356","session_id":"ffa09543-f11b-47e2-8338-93ce165fbcfa"}"#;

/// A stream_event line (a text delta), as `--include-partial-messages` prints them.
const DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, writing a longer answer."}},"session_id":"baab1a71-21ca-4327-afbe-c2bfccae637c","parent_tool_use_id":null,"uuid":"d2c8cdf8-01a2-4b0e-9a6b-6b1f5a4f3c21"}"#;
const MESSAGE_START: &str = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":300}}},"session_id":"baab1a71-21ca-4327-afbe-c2bfccae637c","parent_tool_use_id":null,"uuid":"4ecfe086-39df-4097-b108-2d1f0a8e7c11"}"#;
const MESSAGE_STOP: &str = r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"baab1a71-21ca-4327-afbe-c2bfccae637c","parent_tool_use_id":null,"uuid":"090bcf9a-81cd-419b-bd16-a144580f60e4"}"#;
/// An API retry (HTTP 429, then the retry succeeded).
const API_RETRY: &str = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":598.3242251228074,"error_status":429,"error":"rate_limit","session_id":"fc216179-6e95-4e27-aa25-49418d7f1116","uuid":"e4af3f83-d7cd-459b-b030-aa954880d799"}"#;

const SESSION: &str = "dc7ca5d9-9cb0-4480-be37-3185bc409910";

fn started(id: &str, what: &str) -> Event {
    Event::ToolStarted {
        id: id.into(),
        what: what.into(),
    }
}

fn ended(id: &str) -> Event {
    Event::ToolEnded { id: id.into() }
}

/// The session as the CLI printed it: each line, what it shows, what it means.
#[test]
fn a_real_session_reads_as_prose() {
    let cases: &[(&str, &str, Vec<Event>)] = &[
        (
            INIT,
            "── Claude Code session dc7ca5d9-9cb0-4480-be37-3185bc409910 · claude-opus-4-8[1m] · 2.1.197\n",
            vec![Event::Session { id: SESSION.into() }],
        ),
        (TEXT, "Let me run the tests.\n", vec![]),
        (
            BASH_CALL,
            "▶ Bash  echo hello; echo line2; ls /nonexistent-x  — Run the tests\n",
            vec![started(
                "toolu_000000000000000000000001",
                "Bash: echo hello; echo line2; ls /nonexistent-x",
            )],
        ),
        (
            BASH_FAILED,
            "  ✗ Exit code 2\n  hello\n  line2\n  ls: cannot access '/nonexistent-x': No such file or directory\n",
            vec![ended("toolu_000000000000000000000001")],
        ),
        (
            READ_CALL,
            "▶ Read  /tmp/st/work/nofile.txt\n",
            vec![started(
                "toolu_000000000000000000000002",
                "Read: /tmp/st/work/nofile.txt",
            )],
        ),
        (
            READ_FAILED,
            "  ✗ File does not exist. Note: your current working directory is /tmp/st/work.\n",
            vec![ended("toolu_000000000000000000000002")],
        ),
        (
            BASH_LONG_CALL,
            "▶ Bash  printf 'a\\nb\\nc\\nd\\ne\\nf\\ng\\nh\\n'\n",
            vec![started(
                "toolu_000000000000000000000003",
                "Bash: printf 'a\\nb\\nc\\nd\\ne\\nf\\ng\\nh\\n'",
            )],
        ),
        (
            BASH_LONG_RESULT,
            "  a\n  b\n  c\n  d\n  … 4 more lines\n",
            vec![ended("toolu_000000000000000000000003")],
        ),
    ];
    let mut r = Renderer::new();
    for (i, (line, text, events)) in cases.iter().enumerate() {
        let got = r.line(line.as_bytes());
        assert_eq!(got.text, *text, "line {i}");
        assert_eq!(got.events, *events, "line {i}");
        assert!(got.keep, "line {i}");
    }
    let end = r.line(RESULT_SUCCESS.as_bytes());
    assert_eq!(
        end.text,
        "── success · 4 turns · 0.3s · 4,800 in / 160 out / 1,200 cache read / 0 cache write tokens · $0.0286\n"
    );
    let [Event::Result(own), Event::Finished(usage)] = end.events.as_slice() else {
        panic!("{:?}", end.events)
    };
    assert_eq!(
        own, usage,
        "a run of one result: its own figures are the run's"
    );
    assert_eq!(
        **usage,
        Usage {
            model: "claude-opus-4-8[1m]".into(),
            turns: Some(4),
            duration_ms: Some(290),
            input_tokens: Some(4800),
            output_tokens: Some(160),
            cache_read_tokens: Some(1200),
            cache_creation_tokens: Some(0),
            cost_usd: Some(0.028599999999999997),
            outcome: "success".into(),
            error: String::new(),
            resets_at: None,
        }
    );
}

/// Claude Code's failures end with a summary that says why in its own words (where a person
/// reads it and the known-issue patterns find it), then the figures.
#[test]
fn a_failed_run_ends_with_the_error_and_the_figures() {
    let cases: &[(&str, &str, &str)] = &[
        (
            CREDIT_RESULT,
            "── failed (API error 400): Credit balance is too low · 1 turn · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
            "Credit balance is too low",
        ),
        (
            RATE_LIMIT_RESULT,
            "── failed (API error 429): API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later. · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
            "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.",
        ),
        (
            OVERLOADED_RESULT,
            "── failed (API error 529): API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5904). · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5904).",
        ),
        (
            AUTH_RESULT,
            "── failed (API error 401): Invalid API key · Fix external API key · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
            "Invalid API key · Fix external API key",
        ),
        (
            MAX_TURNS_RESULT,
            "── error_max_turns: Reached maximum number of turns (1) · 2 turns · 0.1s · 1,200 in / 40 out / 300 cache read / 0 cache write tokens · $0.0071\n",
            "Reached maximum number of turns (1)",
        ),
    ];
    for (line, text, error) in cases {
        let got = Renderer::new().line(line.as_bytes());
        assert_eq!(got.text, *text);
        let Some(Event::Finished(usage)) = got.events.last() else {
            panic!("{:?}", got.events)
        };
        assert_eq!(usage.error, *error);
        assert!(!usage.outcome.is_empty());
    }
    // Without an init line, the model is the one billed.
    let got = Renderer::new().line(MAX_TURNS_RESULT.as_bytes());
    let Some(Event::Finished(usage)) = got.events.last() else {
        panic!()
    };
    assert_eq!(usage.model, "claude-opus-4-8[1m]");
}

#[test]
fn claude_codes_own_error_message_is_shown_once_by_the_result() {
    let mut r = Renderer::new();
    assert_eq!(r.line(CREDIT_SYNTHETIC.as_bytes()).text, "");
    assert!(
        r.line(CREDIT_RESULT.as_bytes())
            .text
            .starts_with("── failed (API error 400): Credit balance is too low · ")
    );
}

/// An error of several lines has them first, each marked, and its first line in the summary.
#[test]
fn a_longer_error_has_its_lines_before_the_summary() {
    let line = json!({"type": "result", "subtype": "error_during_execution", "is_error": true,
        "num_turns": 3, "errors": ["Tool permission request failed", "the MCP server went away"]});
    assert_eq!(
        Renderer::new().line(line.to_string().as_bytes()).text,
        "✗ Tool permission request failed\n✗ the MCP server went away\n\
         ── error_during_execution: Tool permission request failed · 3 turns\n"
    );
}

/// The real stream of a run that cannot log in, of the oldest and the newest Claude Code
/// supported (`claude -p --output-format stream-json --verbose` in a fresh HOME: with no key,
/// and with a key the API refuses with 401), renders to lines that say so.
#[test]
fn a_run_that_cannot_log_in_says_why_in_its_summary() {
    let captures = [
        (
            include_str!("../../../../../tests/golden/claude/not-logged-in-2.1.197.jsonl"),
            "── failed: Not logged in · Please run /login · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
        ),
        (
            include_str!("../../../../../tests/golden/claude/not-logged-in-2.1.332.jsonl"),
            "── failed: Not logged in · Please run /login · 1 turn · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
        ),
        (
            include_str!("../../../../../tests/golden/claude/key-refused-2.1.197.jsonl"),
            "── failed (API error 401): Invalid API key · Fix external API key · 1 turn · 0.9s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
        ),
        (
            include_str!("../../../../../tests/golden/claude/key-refused-2.1.332.jsonl"),
            "── failed (API error 401): Invalid API key · Fix external API key · 1 turn · 0.9s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
        ),
    ];
    for (stream, last) in captures {
        let mut r = Renderer::new();
        let text: String = stream.lines().map(|l| r.line(l.as_bytes()).text).collect();
        assert!(text.ends_with(last), "{text}");
        // Said once: the agent's own message (a synthetic one) is not repeated above it.
        assert_eq!(
            text.matches("Please run /login").count() + text.matches("Fix external").count(),
            1,
            "{text}"
        );
    }
}

#[test]
fn partial_messages_say_writing_and_are_not_kept() {
    let mut r = Renderer::new();
    let start = r.line(MESSAGE_START.as_bytes());
    assert_eq!((start.text.as_str(), start.keep), ("", false));
    assert_eq!(start.events, [Event::Writing(true)]);
    let delta = r.line(DELTA.as_bytes());
    assert_eq!(
        (delta.text.as_str(), delta.keep, delta.events.len()),
        ("", false, 0)
    );
    assert_eq!(
        r.line(MESSAGE_STOP.as_bytes()).events,
        [Event::Writing(false)]
    );
}

#[test]
fn system_lines_retries_and_tasks() {
    let mut r = Renderer::new();
    assert_eq!(
        r.line(API_RETRY.as_bytes()).text,
        "  ↻ API error 429 (rate_limit); retry 1 of 10 in 0.6s\n"
    );
    let started = r.line(TASK_STARTED.as_bytes());
    assert_eq!((started.text.as_str(), started.keep), ("", true));
    assert!(started.events.is_empty());
    // A task whose call is not in flight ran in the background: its end is news.
    let ended = r.line(TASK_NOTIFICATION.as_bytes());
    assert_eq!(
        (ended.text.as_str(), ended.keep),
        ("  ⧗ Wait a bit\n", true)
    );
    // A foreground command's task ends with its call (the same id): its result says it.
    r.line(BASH_CALL.as_bytes());
    assert_eq!(r.line(TASK_NOTIFICATION.as_bytes()).text, "");
}

#[test]
fn a_line_that_is_not_json_is_shown_as_it_is_and_a_keep_alive_not_at_all() {
    let mut r = Renderer::new();
    assert_eq!(r.line(b"Warning: something").text, "Warning: something\n");
    let quiet = r.line(br#"{"type":"keep_alive","x":1}"#);
    assert_eq!((quiet.text.as_str(), quiet.keep), ("", true));
}

/// The argument shown for each tool, and the description after it.
#[test]
fn each_known_tool_shows_its_main_argument() {
    let cases: &[(&str, serde_json::Value, &str)] = &[
        (
            "Bash",
            json!({"command": "npm test", "description": "Run the tests"}),
            "▶ Bash  npm test  — Run the tests\n",
        ),
        (
            "Bash",
            json!({"command": "cd x &&\nmake"}),
            "▶ Bash  cd x && …\n",
        ),
        (
            "Read",
            json!({"file_path": "/src/a.rs", "offset": 10}),
            "▶ Read  /src/a.rs\n",
        ),
        (
            "Write",
            json!({"file_path": "/src/b.rs", "content": "fn main() {}"}),
            "▶ Write  /src/b.rs\n",
        ),
        (
            "Edit",
            json!({"file_path": "/src/c.rs", "old_string": "a", "new_string": "b"}),
            "▶ Edit  /src/c.rs\n",
        ),
        (
            "Grep",
            json!({"pattern": "TODO", "path": "src"}),
            "▶ Grep  TODO\n",
        ),
        ("Glob", json!({"pattern": "**/*.rs"}), "▶ Glob  **/*.rs\n"),
        (
            "WebFetch",
            json!({"url": "https://example.com", "prompt": "summarise"}),
            "▶ WebFetch  https://example.com\n",
        ),
        (
            "WebSearch",
            json!({"query": "ratatui 0.30"}),
            "▶ WebSearch  ratatui 0.30\n",
        ),
        (
            "Task",
            json!({"description": "Explore the code", "prompt": "..."}),
            "▶ Task  Explore the code\n",
        ),
        ("TodoWrite", json!({"todos": []}), "▶ TodoWrite\n"),
        (
            "mcp__luzia__progress",
            json!({"percent": 50}),
            "▶ mcp__luzia__progress\n",
        ),
        (
            "mcp__x__fetch",
            json!({"url": "https://a.b"}),
            "▶ mcp__x__fetch  https://a.b\n",
        ),
    ];
    for (name, input, shown) in cases {
        let line = json!({"type": "assistant", "message": {"model": "m", "content": [
            {"type": "tool_use", "id": "t1", "name": name, "input": input}]}});
        let got = Renderer::new().line(line.to_string().as_bytes());
        assert_eq!(got.text, *shown, "{name}");
    }
}

#[test]
fn a_long_failed_result_shows_its_head_and_its_tail() {
    let content: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let line = json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t9", "is_error": true, "content": content}]}});
    let got = Renderer::new().line(line.to_string().as_bytes());
    assert_eq!(
        got.text,
        "  ✗ line 1\n  line 2\n  line 3\n  line 4\n  … 12 more lines\n  line 17\n  line 18\n  line 19\n  line 20\n"
    );
    let parts = json!({"type": "user", "message": {"content": [{"type": "tool_result",
        "tool_use_id": "t9", "content": [{"type": "text", "text": "one"}, {"type": "image"}]}]}});
    assert_eq!(
        Renderer::new().line(parts.to_string().as_bytes()).text,
        "  one\n  [image]\n"
    );
    let empty = json!({"type": "user", "message": {"content": [{"type": "tool_result",
        "tool_use_id": "t9", "content": ""}]}});
    assert_eq!(
        Renderer::new().line(empty.to_string().as_bytes()).text,
        "  (no output)\n"
    );
}

#[test]
fn a_usage_limit_with_an_epoch_says_when_it_resets() {
    let line = json!({"type": "result", "subtype": "success", "is_error": true,
        "result": "Claude AI usage limit reached|1795453200", "num_turns": 1});
    let got = Renderer::new().line(line.to_string().as_bytes());
    assert!(
        got.text.starts_with(
            "── failed: Claude AI usage limit reached (resets 2026-11-23 17:00 UTC) · "
        ),
        "{}",
        got.text
    );
}

/// Claude Code 2.1.197 logged in to a subscription, the stand-in answering 429 with
/// anthropic-ratelimit-unified-status: rejected.
const RATE_LIMIT_EVENT: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795453200,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"d98f4f0c-32d4-4193-8c3f-20cdf4a6d001","session_id":"b0a76f1d-c4a7-4ab5-be37-9395b2e0b636"}"#;

#[test]
fn a_subscription_limit_says_until_when() {
    let got = Renderer::new().line(RATE_LIMIT_EVENT.as_bytes());
    assert_eq!(
        got.text,
        "  ↯ five_hour limit: rejected until 2026-11-23 17:00 UTC\n"
    );
    let allowed = RATE_LIMIT_EVENT.replace("rejected", "allowed");
    assert_eq!(Renderer::new().line(allowed.as_bytes()).text, "");
}

#[test]
fn numbers_get_thousands_separators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1234567), "1,234,567");
}

/// A line is any bytes at all: the renderer never panics, and what it writes is bounded by what
/// it was given (three bytes for each invalid byte, at worst, plus a summary).
fn bounded(r: &mut Renderer, line: &[u8]) {
    let got = r.line(line);
    assert!(
        got.text.len() <= 3 * line.len() + 1024,
        "{} from {}",
        got.text.len(),
        line.len()
    );
}

proptest! {
    #[test]
    fn never_panics_and_stays_bounded_on_any_bytes(lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..20)) {
        let mut r = Renderer::new();
        for l in &lines {
            bounded(&mut r, l);
        }
    }

    #[test]
    fn never_panics_on_real_lines_cut_anywhere(which in 0usize..8, at in 0usize..4000, junk in any::<u8>()) {
        let all = [INIT, BASH_CALL, BASH_FAILED, RESULT_SUCCESS, CREDIT_RESULT, MAX_TURNS_RESULT, API_RETRY, TEXT];
        let line = all[which].as_bytes();
        let at = at.min(line.len());
        let mut cut = line[..at].to_vec();
        cut.push(junk);
        cut.extend_from_slice(&line[at..]);
        let mut r = Renderer::new();
        bounded(&mut r, &line[..at]);
        bounded(&mut r, &cut);
    }

    #[test]
    fn never_panics_on_any_json_shapes(v in arb_json()) {
        for kind in ["system", "assistant", "user", "result"] {
            let line = json!({"type": kind, "subtype": "init", "message": {"content": [v.clone()]}, "result": v.clone(), "usage": v.clone(), "event": v.clone()});
            bounded(&mut Renderer::new(), line.to_string().as_bytes());
        }
    }
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "\\PC{0,40}".prop_map(serde_json::Value::from),
        prop_oneof![
            Just("tool_use"),
            Just("tool_result"),
            Just("text"),
            Just("Bash")
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("content".to_string()),
                    Just("text".to_string()),
                    Just("input".to_string()),
                    Just("name".to_string()),
                    Just("id".to_string()),
                    Just("tool_use_id".to_string()),
                    Just("is_error".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
