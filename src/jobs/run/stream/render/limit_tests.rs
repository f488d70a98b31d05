//! A run the subscription's usage limit refused, as the real CLIs print it: the oldest and the
//! newest Claude Code supported, logged in to a subscription (`CLAUDE_CODE_OAUTH_TOKEN`), run as
//! `claude -p --output-format stream-json --verbose` against a stand-in for the Messages API
//! that answers 429 with `anthropic-ratelimit-unified-status: rejected`,
//! `-reset: 1796398632` (15:37:12 UTC) and `-representative-claim: five_hour`. The result says
//! the reset to the minute (`resets 3:37pm`); the stream says it to the second, 2.1.197 in a
//! `rate_limit_event`, 2.1.332 in the refused request's `api_error_params`.

use super::*;

const RESET: i64 = 1_796_398_632;

fn rendered(stream: &str) -> (String, Vec<Event>) {
    let mut r = Renderer::new();
    let mut text = String::new();
    let mut events = Vec::new();
    for line in stream.lines() {
        let got = r.line(line.as_bytes());
        text.push_str(&got.text);
        events.extend(got.events);
    }
    (text, events)
}

#[test]
fn a_refused_run_keeps_its_reset_to_the_second_on_both_versions() {
    let captures = [
        (
            include_str!("../../../../../tests/golden/claude/usage-limit-2.1.197.jsonl"),
            "You've hit your session limit · resets 3:37pm (UTC)",
        ),
        (
            include_str!("../../../../../tests/golden/claude/usage-limit-2.1.332.jsonl"),
            "You've hit your 5-hour limit · resets 3:37pm (UTC)",
        ),
    ];
    let reset = chrono::DateTime::from_timestamp(RESET, 0);
    for (stream, words) in captures {
        let (text, events) = rendered(stream);
        // The refusal shows its reset once, and the summary Claude Code's words.
        assert_eq!(
            text.matches("  ↯ five_hour limit: rejected until 2026-12-04 15:37 UTC\n")
                .count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(&format!("── failed (API error 429): {words} · 1 turn")),
            "{text}"
        );
        let results: Vec<&Usage> = events
            .iter()
            .filter_map(|e| match e {
                Event::Result(u) | Event::Finished(u) => Some(&**u),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2, "{events:?}");
        for usage in results {
            assert_eq!(usage.error, words);
            assert_eq!(usage.resets_at, reset, "{words}");
        }
    }
}

#[test]
fn the_reset_belongs_to_the_result_that_follows_the_refusal_only() {
    let (init, _) = include_str!("../../../../../tests/golden/claude/usage-limit-2.1.197.jsonl")
        .split_once('\n')
        .unwrap();
    let event = include_str!("../../../../../tests/golden/claude/usage-limit-2.1.197.jsonl")
        .lines()
        .find(|l| l.contains("rate_limit_event"))
        .unwrap();
    let success =
        r#"{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1}"#;
    let mut r = Renderer::new();
    r.line(init.as_bytes());
    r.line(event.as_bytes());
    // A run that got through after all (a retry): no limit, whatever was said before.
    let got = r.line(success.as_bytes());
    let Some(Event::Result(usage)) = got.events.first() else {
        panic!("{:?}", got.events)
    };
    assert_eq!(usage.resets_at, None);
    let failed = r#"{"type":"result","subtype":"success","is_error":true,"result":"You've hit your session limit · resets 3:37pm (UTC)","num_turns":1}"#;
    let Some(Event::Result(usage)) = r.line(failed.as_bytes()).events.first().cloned() else {
        panic!()
    };
    assert_eq!(
        usage.resets_at, None,
        "the refusal was the earlier result's"
    );
}

#[test]
fn the_older_epoch_form_keeps_its_seconds() {
    let line = r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1796398632","num_turns":1}"#;
    let got = Renderer::new().line(line.as_bytes());
    let Some(Event::Result(usage)) = got.events.first() else {
        panic!("{:?}", got.events)
    };
    assert_eq!(
        usage.error,
        "Claude AI usage limit reached (resets 2026-12-04 15:37 UTC)"
    );
    assert_eq!(usage.resets_at, chrono::DateTime::from_timestamp(RESET, 0));
}
