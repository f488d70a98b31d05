//! Property tests: the text sanitizer, the tail reader, the exit-line reader, the follower and
//! the parsers, against naive reference implementations and on arbitrary bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::fs::{File, OpenOptions};
use std::io::Write;

use proptest::prelude::*;

use luzia::jobs::fs::follow::Follower;
use luzia::jobs::fs::tail::{LINE_CAP, exit_code, last_lines, parse_exit_line};
use luzia::jobs::text::sanitize::{MAX_CHARS, sanitize_line};
use luzia::jobs::{JobId, Meta, Progress};

fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    std::fs::write(&path, bytes).unwrap();
    let f = File::open(&path).unwrap();
    (dir, f, bytes.len() as u64)
}

/// Bytes that look like agent output: text, newlines, CRs, escapes, invalid UTF-8.
fn log_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        "[a-z0-9 :=.]{0,20}".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\x1b[31m".to_vec()),
        Just(b"\x1b]0;title\x07".to_vec()),
        Just(b"\x1b[2J".to_vec()),
        Just(b"exit:0".to_vec()),
        Just(b"exit:-9\n".to_vec()),
        Just(vec![0xff, 0xfe]),
        Just("é日".as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sanitized_text_holds_no_control_characters(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let line = sanitize_line(&bytes);
        let plain = line.plain();
        prop_assert!(!plain.chars().any(|c| c.is_control()), "{plain:?}");
        let bidi = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
        prop_assert!(!plain.chars().any(bidi), "bidi control in {:?}", plain);
        prop_assert!(plain.chars().count() <= MAX_CHARS + 1);
        prop_assert!(line.segments.iter().all(|s| !s.text.is_empty()));
    }

    #[test]
    fn sanitizing_is_idempotent_through_sgr(bytes in log_bytes()) {
        let once = sanitize_line(&bytes);
        let again = sanitize_line(once.to_ansi().as_bytes());
        prop_assert_eq!(once.plain(), again.plain());
        // Only SGR survives re-encoding: every escape is `ESC [ digits/; m`.
        let ansi = once.to_ansi();
        let mut rest = ansi.as_str();
        while let Some(i) = rest.find('\x1b') {
            let tail = &rest[i + 1..];
            let end = tail.find('m').expect("SGR ends with m");
            prop_assert!(tail.starts_with('['));
            prop_assert!(tail[1..end].chars().all(|c| c.is_ascii_digit() || c == ';'), "{tail:?}");
            rest = &tail[end + 1..];
        }
    }

    #[test]
    fn last_lines_matches_a_naive_split(lines in prop::collection::vec("[^\n]{0,30}", 0..60), trailing in any::<bool>(), n in 0usize..80) {
        let mut content = lines.join("\n");
        if trailing && !lines.is_empty() {
            content.push('\n');
        }
        let (_d, f, len) = file_with(content.as_bytes());
        let got: Vec<String> = last_lines(&f, len, n).unwrap().into_iter().map(|l| String::from_utf8(l.bytes).unwrap()).collect();
        let mut all: Vec<&str> = content.split('\n').collect();
        if content.ends_with('\n') || content.is_empty() {
            all.pop();
        }
        let want: Vec<&str> = all[all.len().saturating_sub(n)..].to_vec();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn last_lines_is_bounded_on_arbitrary_bytes(bytes in log_bytes(), n in 1usize..20) {
        let (_d, f, len) = file_with(&bytes);
        let got = last_lines(&f, len, n).unwrap();
        prop_assert!(got.len() <= n);
        prop_assert!(got.iter().all(|l| l.bytes.len() <= LINE_CAP && !l.bytes.contains(&b'\n')));
    }

    #[test]
    fn exit_code_is_the_last_non_empty_line(bytes in log_bytes()) {
        let (_d, f, len) = file_with(&bytes);
        let naive = bytes
            .split(|b| *b == b'\n')
            .rev()
            .find(|l| !l.trim_ascii().is_empty())
            .and_then(parse_exit_line);
        prop_assert_eq!(exit_code(&f, len).unwrap(), naive);
    }

    #[test]
    fn following_in_any_chunks_gives_the_same_lines(text in "[a-z \n]{0,300}", cuts in prop::collection::vec(0usize..300, 0..10)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let mut follower = Follower::from_start(&path);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
        cuts.push(text.len());
        cuts.sort();
        let mut got: Vec<String> = Vec::new();
        let mut from = 0;
        for cut in cuts {
            let mut f = OpenOptions::new().create(true).append(true).open(&path).unwrap();
            f.write_all(&text.as_bytes()[from..cut]).unwrap();
            from = cut;
            got.extend(follower.poll().unwrap().lines.into_iter().map(|l| String::from_utf8(l.bytes).unwrap()));
        }
        let mut want: Vec<&str> = text.split('\n').collect();
        let partial = want.pop().unwrap_or("");
        prop_assert_eq!(got, want);
        prop_assert_eq!(follower.partial(), partial.as_bytes());
    }

    #[test]
    fn parsers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Meta::parse(&bytes);
        let _ = Progress::parse(&bytes);
        let _ = luzia::jobs::Question::parse(&bytes, None);
        let _ = luzia::jobs::Gate::parse(&bytes, None);
        let _ = parse_exit_line(&bytes);
    }

    #[test]
    fn meta_accepts_any_json_object(value in json_object()) {
        let text = serde_json::to_vec(&value).unwrap();
        prop_assert!(Meta::parse(&text).is_ok());
        prop_assert!(Progress::parse(&text).is_ok());
    }

    /// What the index of settled jobs keeps of meta.json (its parsed record) reads back as the
    /// record it was made from, whatever meta.json held.
    #[test]
    fn a_meta_record_reads_back_as_itself(value in meta_object()) {
        let text = serde_json::to_vec(&value).unwrap();
        let meta = Meta::parse(&text).unwrap();
        let record = meta.record().unwrap();
        let back = Meta::from_record(&record).unwrap();
        prop_assert_eq!(&back, &meta);
        prop_assert_eq!(back.more.is_some(), meta.more.is_some());
    }

    #[test]
    fn job_ids_can_never_leave_the_root(s in "\\PC{0,140}") {
        if let Ok(id) = JobId::parse(&s) {
            let id = id.as_str();
            prop_assert!(!id.contains('/') && !id.contains('\0'));
            prop_assert!(!id.starts_with('.') && !id.starts_with('-'));
            prop_assert!(id.len() <= 128);
            prop_assert!(std::path::Path::new(id).components().count() == 1);
        }
    }
}

fn json_object() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    let keys = prop_oneof![
        Just("pid".to_string()),
        Just("started".to_string()),
        Just("percent".to_string()),
        Just("step".to_string()),
        Just("total_steps".to_string()),
        Just("project".to_string()),
        Just("exit_code".to_string()),
        "[a-z_]{1,8}",
    ];
    prop::collection::btree_map(keys, value, 0..8)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

/// A meta.json object with any of the fields luzia reads (and the nested ones of `usage`,
/// `review` and `stop`), each of any JSON type, and a few unknown ones.
fn meta_object() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (0u32..100_000).prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
        Just(serde_json::Value::from("2026-01-09T14:23:15Z")),
        Just(serde_json::Value::from(
            "2026-01-09T14:23:15.123456789+02:00"
        )),
        Just(serde_json::Value::from("2026-01-09T14:23:15")),
        Just(serde_json::Value::from("12847")),
        Just(serde_json::Value::from(vec!["a", "b"])),
    ];
    let nested = |keys: &'static [&'static str], leaf: BoxedStrategy<serde_json::Value>| {
        prop::collection::btree_map(prop::sample::select(keys), leaf, 0..keys.len()).prop_map(|m| {
            serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        })
    };
    let leaf = leaf.boxed();
    let usage = nested(
        &[
            "model",
            "turns",
            "duration_ms",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_creation_tokens",
            "cost_usd",
            "outcome",
            "error",
        ],
        leaf.clone(),
    );
    let review = nested(
        &[
            "isolation",
            "repo",
            "base",
            "after",
            "worktree",
            "branch",
            "changes",
            "note",
            "error",
            "outcome",
        ],
        prop_oneof![
            leaf.clone(),
            Just(serde_json::Value::from("snapshot")),
            Just(serde_json::Value::from("worktree"))
        ]
        .boxed(),
    );
    let stop = nested(&["requested_by", "requested_at", "source"], leaf.clone());
    let value = prop_oneof![
        4 => leaf.clone(),
        1 => usage,
        1 => review,
        1 => stop,
    ];
    let keys = prop::sample::select(
        &[
            "id",
            "project",
            "task",
            "type",
            "user",
            "pid",
            "started",
            "status",
            "debug",
            "finished",
            "exit_code",
            "estimated_duration_seconds",
            "priority",
            "retry_of",
            "host",
            "agent",
            "cwd",
            "argv",
            "stop",
            "session_id",
            "resumes",
            "usage",
            "resumed_by",
            "foreground",
            "review",
            "unknown",
            "extra",
        ][..],
    );
    prop::collection::btree_map(keys, value, 0..14).prop_map(|m| {
        serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    })
}

// ---------------------------------------------------------------------------------------------
// No parser of user input can panic: command-line values, config files, key specs, durations,
// timestamps, and the files agents and operators write. Each runs on arbitrary input and on
// input shaped to reach the arithmetic (huge numbers, many digits, every unit).
// ---------------------------------------------------------------------------------------------

/// Text that looks like a duration, a number or neither: digits (sometimes very many), dots,
/// units, signs, spaces, the words floats know.
fn duration_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[0-9]{1,30}",
        "[0-9]{300,400}",
        Just(".".to_string()),
        Just("18446744073709551616".to_string()),
        prop_oneof![
            Just("ms"),
            Just("s"),
            Just("m"),
            Just("min"),
            Just("h"),
            Just("d"),
            Just("x"),
            Just(" "),
            Just("-"),
            Just("e"),
            Just("NaN"),
            Just("inf"),
        ]
        .prop_map(str::to_string),
        "\\PC{0,3}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

/// A command-line value: duration-like text, any integer, or any text.
fn cli_value() -> impl Strategy<Value = String> {
    prop_oneof![
        duration_like(),
        any::<i128>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        "\\PC{0,20}",
        Just("-".to_string()),
        Just("--".to_string()),
    ]
}

/// Every flag of every command that takes a value, and the commands' positional forms.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    let form = prop_oneof![
        Just(vec!["kill", "ID", "--grace", "V"]),
        Just(vec!["logs", "ID", "-n", "V"]),
        Just(vec!["jobs", "--limit", "V", "--status", "V"]),
        Just(vec!["jobs", "V"]),
        Just(vec!["status", "--recent", "V", "--interval", "V"]),
        Just(vec!["tui", "--cycle", "V"]),
        Just(vec![
            "ask",
            "V",
            "--timeout",
            "V",
            "--default",
            "V",
            "--job-dir",
            "/nonexistent"
        ]),
        Just(vec![
            "gate",
            "V",
            "V",
            "--auto-approve-after",
            "V",
            "--job-dir",
            "/nonexistent"
        ]),
        Just(vec![
            "progress",
            "V",
            "--step",
            "V",
            "--of",
            "V",
            "--eta",
            "V",
            "--job-dir",
            "/x"
        ]),
        Just(vec!["run", "V", "V", "--priority", "V"]),
        Just(vec!["answer", "V", "V"]),
        Just(vec!["approve", "V", "--reason", "V"]),
        Just(vec!["deny", "V", "--reason", "V"]),
        Just(vec!["queue", "cancel", "V"]),
        Just(vec!["retry", "V", "--answer", "V"]),
        Just(vec!["V", "V", "V"]),
    ];
    (form, prop::collection::vec(cli_value(), 8)).prop_map(|(form, values)| {
        let mut values = values.into_iter();
        std::iter::once("luzia".to_string())
            .chain(form.into_iter().map(|w| match w {
                "V" | "ID" => values.next().unwrap_or_default(),
                other => other.to_string(),
            }))
            .collect()
    })
}

/// A TOML value as it may be written for any key: numbers past every integer type, floats,
/// durations, lists, tables.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        Just("nan".to_string()),
        Just("inf".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        duration_like().prop_map(|s| toml_string(&s)),
        "\\PC{0,12}".prop_map(|s| toml_string(&s)),
        prop::collection::vec("\\PC{0,6}", 0..3).prop_map(|v| format!(
            "[{}]",
            v.iter()
                .map(|s| toml_string(s))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Just("{}".to_string()),
    ]
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A config file: the tables luzia knows with their keys (and a few it does not), each given
/// any value.
fn config_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("max_concurrent"),
        Just("command"),
        Just("prompt_template"),
        Just("env_pass"),
        Just("stall_after"),
        Just("question_after"),
        Just("budget_warn_percent"),
        Just("memory_percent"),
        Just("bell"),
        Just("path"),
        Just("user"),
        Just("budget"),
        Just("colors"),
        Just("quit"),
        Just("down"),
        Just("nonsense"),
    ];
    let table = prop_oneof![
        Just(""),
        Just("[agent]"),
        Just("[agent.env]"),
        Just("[alarms]"),
        Just("[projects.p]"),
        Just("[projects.p.env]"),
        Just("[theme]"),
        Just("[keys]"),
        Just("[keys.inbox]"),
    ];
    let entry = (key, toml_value()).prop_map(|(k, v)| format!("{k} = {v}"));
    let section = (table, prop::collection::vec(entry, 0..5))
        .prop_map(|(t, e)| format!("{t}\n{}\n", e.join("\n")));
    prop::collection::vec(section, 0..5).prop_map(|s| s.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn durations_parse_or_are_refused_never_panic(s in duration_like()) {
        if let Ok(d) = luzia::jobs::model::time::parse_duration(&s) {
            prop_assert!(d <= luzia::jobs::model::time::MAX_DURATION);
            // Whatever is accepted can be added to now, as every deadline does.
            prop_assert!(std::time::Instant::now().checked_add(d).is_some());
            prop_assert!(chrono::Duration::from_std(d).ok().and_then(|c| chrono::Utc::now().checked_add_signed(c)).is_some());
        }
    }

    #[test]
    fn timestamps_and_statuses_never_panic(s in prop_oneof![duration_like(), "\\PC{0,40}", "[0-9T:.+Z -]{0,40}"]) {
        let _ = luzia::jobs::model::time::parse_timestamp(&s);
        let _ = s.parse::<luzia::jobs::Status>();
        let _ = luzia::jobs::insight::known_issues::Severity::parse(&s);
        let _ = luzia::tui::action::Key::parse(&s);
    }

    #[test]
    fn command_lines_never_panic(args in command_line()) {
        use clap::Parser;
        let _ = luzia::cli::Cli::try_parse_from(&args);
    }

    #[test]
    fn config_files_never_panic(text in config_text()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, &text).unwrap();
        let overrides = luzia::config::Overrides { config: Some(path), jobs_dir: None };
        if let Ok(cfg) = luzia::config::Config::load_with(&overrides, &|_| None) {
            // The cockpit reads the keys and the budgets further: those must hold too.
            let _ = luzia::tui::action::KeyMap::new(&cfg.keys);
        }
    }

    #[test]
    fn deadlines_of_any_question_or_gate_never_panic(
        minutes in prop_oneof![any::<f64>().prop_map(|f| f.to_string()), any::<u64>().prop_map(|n| n.to_string()), Just("1e308".to_string())],
        at in prop_oneof![Just("2026-01-11T14:30:00Z"), Just("9999-12-31T23:59:59Z"), Just("-262143-01-01T00:00:00Z"), Just("")],
    ) {
        let q = format!(r#"{{"question": "q", "asked_at": "{at}", "timeout_minutes": {minutes}}}"#);
        let g = format!(r#"{{"gate": "g", "awaiting_since": "{at}", "auto_approve_after_minutes": {minutes}}}"#);
        let quoted = format!(r#"{{"gate": "g", "awaiting_since": "{at}", "auto_approve_after_minutes": "{minutes}"}}"#);
        if let Ok(q) = luzia::jobs::Question::parse(q.as_bytes(), None) {
            let _ = q.deadline();
        }
        for g in [g, quoted] {
            if let Ok(g) = luzia::jobs::Gate::parse(g.as_bytes(), None) {
                let _ = g.deadline();
            }
        }
    }

    #[test]
    fn files_operators_and_agents_write_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = luzia::jobs::hitl::published::Response::parse(&bytes);
        let _ = luzia::jobs::hitl::published::Decision::parse(&bytes);
        let _ = luzia::jobs::model::stop::StopRequest::parse(&bytes);
        if let Ok(q) = luzia::jobs::Question::parse(&bytes, None) {
            let _ = q.deadline();
            let _ = luzia::jobs::hitl::operator::normalize(&q, &String::from_utf8_lossy(&bytes));
        }
        if let Ok(g) = luzia::jobs::Gate::parse(&bytes, None) {
            let _ = g.deadline();
        }
    }

    #[test]
    fn answers_to_any_choice_never_panic(options in prop::collection::vec("\\PC{0,6}", 1..4), input in cli_value()) {
        let q = serde_json::json!({"question": "q", "type": "choice", "options": options});
        let q = luzia::jobs::Question::parse(q.to_string().as_bytes(), None).unwrap();
        if let Ok(a) = luzia::jobs::hitl::operator::normalize(&q, &input) {
            prop_assert!(options.contains(&a));
        }
    }

    #[test]
    fn last_lines_with_any_count_never_panics(bytes in log_bytes(), n in any::<usize>()) {
        let (_d, f, len) = file_with(&bytes);
        let got = last_lines(&f, len, n).unwrap();
        prop_assert!(got.len() <= n);
    }

    #[test]
    fn queue_entries_of_any_content_never_panic(bodies in prop::collection::vec(prop_oneof![prop::collection::vec(any::<u8>(), 0..80), json_object().prop_map(|v| serde_json::to_vec(&v).unwrap())], 0..4)) {
        let dir = tempfile::tempdir().unwrap();
        let pending = dir.path().join("pending/normal");
        std::fs::create_dir_all(&pending).unwrap();
        for (i, body) in bodies.iter().enumerate() {
            std::fs::write(pending.join(format!("5_2026010{i}T000000.000000_p_{i}.json")), body).unwrap();
        }
        let listed = luzia::jobs::run::queue::list(dir.path()).unwrap();
        let rows = luzia::jobs::run::queue::listed_rows(dir.path());
        prop_assert_eq!(rows.len(), listed.len());
    }

    #[test]
    fn notification_lines_of_any_content_never_panic(lines in prop::collection::vec(prop_oneof!["\\[[0-9:]{0,10}\\] \\PC{0,10}", "\\PC{0,20}"], 0..10)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notifications.log");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let _ = luzia::jobs::insight::timeline::read_notifications(&path, 50);
    }
}

/// What a person typed at the command line that once overflowed ends with a usage error or
/// works: never exit 101 (a panic).
#[test]
fn values_that_once_overflowed_exit_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("jobs/j1");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("output.log"), "hello\n").unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["kill", "j1", "--grace", "99999999999999999999999d"],
            2,
            "too long",
        ),
        (
            &["ask", "q", "--timeout", "99999999999999999999999d"],
            2,
            "too long",
        ),
        (
            &["gate", "g", "d", "--auto-approve-after", "1e400s"],
            2,
            "not a duration",
        ),
        (&["logs", "j1", "-n", "18446744073709551615"], 0, ""),
    ];
    for (args, code, needle) in cases {
        let out = assert_cmd::Command::cargo_bin("luzia")
            .unwrap()
            .env_remove("LUZIA_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path())
            .env("LUZIA_JOB_DIR", &job)
            .arg("--jobs-dir")
            .arg(dir.path().join("jobs"))
            .args(*args)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
