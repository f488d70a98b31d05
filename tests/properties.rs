//! Property tests: the text sanitizer, the tail reader, the exit-line reader, the follower and
//! the parsers, against naive reference implementations and on arbitrary bytes.

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
