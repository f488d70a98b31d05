use super::*;
use proptest::prelude::*;
use serde_json::json;

/// Lines as Codex 0.137 (the one `codex-acp` 0.16.0 embeds) writes them.
fn started(at: i64) -> String {
    json!({"timestamp": "2026-12-04T18:17:06.509Z", "type": "event_msg", "payload": {
        "type": "task_started", "turn_id": "t", "started_at": at,
        "model_context_window": 258400, "collaboration_mode_kind": "default"}})
    .to_string()
}

fn count(total: Tokens, last: Tokens) -> String {
    let usage = |t: Tokens| {
        json!({"input_tokens": t.input, "cached_input_tokens": t.cached_input,
        "output_tokens": t.output, "reasoning_output_tokens": t.reasoning,
        "total_tokens": t.input.wrapping_add(t.output)})
    };
    json!({"timestamp": "2026-12-04T18:17:06.746Z", "type": "event_msg", "payload": {
        "type": "token_count", "info": {"total_token_usage": usage(total),
        "last_token_usage": usage(last), "model_context_window": 258400},
        "rate_limits": {"limit_id": "codex", "primary": null}}})
    .to_string()
}

fn complete() -> String {
    json!({"timestamp": "2026-12-04T18:17:06.827Z", "type": "event_msg", "payload": {
        "type": "task_complete", "turn_id": "t", "last_agent_message": "done",
        "duration_ms": 327}})
    .to_string()
}

fn item(text: &str) -> String {
    json!({"timestamp": "2026-12-04T18:17:06.513Z", "type": "response_item", "payload": {
        "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": text}]}})
    .to_string()
}

fn t(input: u64, cached_input: u64, output: u64, reasoning: u64) -> Tokens {
    Tokens {
        input,
        cached_input,
        output,
        reasoning,
    }
}

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn file_of(lines: &[String]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_first_turn_is_its_whole_total() {
    let one = t(900, 100, 40, 0);
    let (_d, path) = file_of(&[
        json!({"type": "session_meta", "payload": {"id": "s"}}).to_string(),
        started(1000),
        item("task_started token_count, in words"),
        count(one, one),
        count(t(1800, 200, 80, 0), one),
        complete(),
    ]);
    let turn = last_turn(&path, me(), 1000).unwrap();
    assert_eq!(
        turn,
        Turn {
            tokens: t(1800, 200, 80, 0),
            ended: true
        }
    );
    let mut usage = Usage::default();
    turn.tokens.into_usage(&mut usage);
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (Some(1600), Some(200), Some(80)),
        "Claude Code's fields: input without the cached part"
    );
}

#[test]
fn a_continued_session_counts_only_its_last_turn() {
    let one = t(900, 100, 40, 5);
    let (_d, path) = file_of(&[
        started(1000),
        count(one, one),
        count(t(1800, 200, 80, 10), one),
        complete(),
        started(2000),
        item(&"x".repeat(100_000)),
        count(t(2700, 300, 120, 15), one),
        // A count without figures (rate limits only) is not a total.
        json!({"type": "event_msg", "payload": {"type": "token_count", "info": null}}).to_string(),
    ]);
    let turn = last_turn(&path, me(), 2000).unwrap();
    assert_eq!(
        turn,
        Turn {
            tokens: t(900, 100, 40, 5),
            ended: false
        },
        "not ended yet: its end is not written"
    );
}

#[test]
fn a_total_that_began_again_is_all_the_turns() {
    let (_d, path) = file_of(&[
        started(1000),
        count(t(5000, 0, 500, 0), t(5000, 0, 500, 0)),
        complete(),
        started(2000),
        count(t(900, 100, 40, 0), t(900, 100, 40, 0)),
        complete(),
    ]);
    assert_eq!(
        last_turn(&path, me(), 2000).unwrap().tokens,
        t(900, 100, 40, 0)
    );
}

#[test]
fn what_is_not_this_jobs_turn_or_not_counted_gives_no_tokens() {
    let one = t(1, 0, 1, 0);
    let cases: Vec<(Vec<String>, i64, &str)> = vec![
        (vec![], 0, "no turn in it"),
        (vec![item("hello"), count(one, one)], 0, "no turn in it"),
        (
            vec![started(1000), count(one, one), complete()],
            5000,
            "began before this job's prompt",
        ),
        (
            vec![started(1000), complete()],
            1000,
            "no token count in this turn",
        ),
        (
            vec![
                "{not json".into(),
                started(1000),
                "\u{0}\u{1}garbage".into(),
            ],
            1000,
            "no token count",
        ),
    ];
    for (lines, since, says) in cases {
        let (_d, path) = file_of(&lines);
        let err = last_turn(&path, me(), since).unwrap_err().why;
        assert!(err.contains(says), "{lines:?}: {err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
}

#[test]
fn only_a_regular_file_of_the_agents_user_is_read() {
    let (d, path) = file_of(&[started(1), count(t(1, 0, 1, 0), t(1, 0, 1, 0)), complete()]);
    let err = last_turn(&path, me() + 1, 0).unwrap_err();
    assert!(!err.again, "{err:?}");
    let err = err.why;
    assert!(err.contains("not to the agent's user"), "{err}");
    let link = d.path().join("link.jsonl");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(last_turn(&link, me(), 0).is_err(), "a link is not followed");
    let fifo = d.path().join("fifo.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert!(
        last_turn(&fifo, me(), 0).is_err(),
        "a fifo is refused, not waited on"
    );
    let err = last_turn(&d.path().join("missing.jsonl"), me(), 0)
        .unwrap_err()
        .why;
    assert!(err.contains("no such file"), "{err}");
}

#[test]
fn a_session_file_is_found_by_its_id_in_its_day_or_any() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path();
    // 0x01a2424632a9 ms: 2026-12-04.
    let id = "01a24246-32a9-79f2-8dc6-5ebbfc3c4f88";
    let day = sessions.join("2026/12/04");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(day.join("rollout-2026-12-04T18-17-06-other.jsonl"), "").unwrap();
    let file = day.join(format!("rollout-2026-12-04T18-17-06-{id}.jsonl"));
    std::fs::write(&file, "").unwrap();
    assert_eq!(find(sessions, id).unwrap(), file);
    // An id that is not a UUIDv7: every day is looked at.
    let old = "7d1c55e0-aaaa-4bbb-8ccc-000000000000";
    let elsewhere = sessions.join("2025/01/31");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let file = elsewhere.join(format!("rollout-2025-01-31T00-00-00-{old}.jsonl"));
    std::fs::write(&file, "").unwrap();
    assert_eq!(find(sessions, old).unwrap(), file);
    let err = find(sessions, "01a24246-0000-7000-8000-000000000000").unwrap_err();
    assert!(err.why.contains("no file of session"), "{err:?}");
    assert!(err.again, "it may not be written yet");
    for bad in ["", "../../etc/passwd", "a/b", &"a".repeat(65)] {
        let err = find(sessions, bad).unwrap_err();
        assert!(err.why.contains("is not a Codex session id"), "{err:?}");
        assert!(!err.again);
    }
    assert!(find(&sessions.join("missing"), id).is_err());
}

#[test]
fn the_sessions_are_in_codex_home_else_the_users_home() {
    let env = |vars: &'static [(&str, &str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let s = Sessions::of(&env(&[("CODEX_HOME", "/c"), ("HOME", "/h")]), 7).unwrap();
    assert_eq!((s.dir, s.owner), (PathBuf::from("/c/sessions"), 7));
    let s = Sessions::of(&env(&[("CODEX_HOME", ""), ("HOME", "/h")]), 7).unwrap();
    assert_eq!(s.dir, PathBuf::from("/h/.codex/sessions"));
    assert_eq!(Sessions::of(&env(&[]), 7), None);
}

proptest! {
    /// However many turns came before, with whatever else between the lines, the last turn's
    /// tokens are the sum of what each of its responses used.
    #[test]
    fn the_last_turn_is_the_sum_of_its_responses(
        turns in proptest::collection::vec(
            proptest::collection::vec((0u64..5000, 0u64..100, 0u64..500, 0u64..50), 0..4), 1..5),
        noise in proptest::collection::vec("[ -~]{0,300}", 0..3),
    ) {
        let mut lines = Vec::new();
        let mut total = Tokens::default();
        let mut last = Tokens::default();
        for (n, responses) in turns.iter().enumerate() {
            lines.push(started(1000 + n as i64));
            last = Tokens::default();
            for &(input, cached, output, reasoning) in responses {
                let used = t(input + cached, cached, output + reasoning, reasoning);
                total = Tokens {
                    input: total.input + used.input,
                    cached_input: total.cached_input + used.cached_input,
                    output: total.output + used.output,
                    reasoning: total.reasoning + used.reasoning,
                };
                last = Tokens {
                    input: last.input + used.input,
                    cached_input: last.cached_input + used.cached_input,
                    output: last.output + used.output,
                    reasoning: last.reasoning + used.reasoning,
                };
                lines.push(count(total, used));
                lines.extend(noise.iter().cloned());
            }
            lines.push(complete());
        }
        let (_d, path) = file_of(&lines);
        let got = last_turn(&path, me(), 1000 + turns.len() as i64 - 1);
        if turns.last().is_some_and(Vec::is_empty) {
            prop_assert!(got.is_err());
        } else {
            prop_assert_eq!(got, Ok(Turn { tokens: last, ended: true }));
        }
    }

    /// Whatever the file holds, reading it ends, with figures or a reason.
    #[test]
    fn any_bytes_are_read_without_a_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..4000),
        events in proptest::collection::vec(0usize..4, 0..20),
    ) {
        let mut content = bytes;
        for e in events {
            let line = match e {
                0 => started(5),
                1 => count(t(u64::MAX, u64::MAX, 3, u64::MAX), t(0, 0, 0, 0)),
                2 => complete(),
                _ => r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-1}}}}"#.into(),
            };
            content.extend_from_slice(line.as_bytes());
            content.push(b'\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, &content).unwrap();
        let _ = last_turn(&path, me(), 0);
    }
}
