use std::io::Write;

use super::findings::{excerpt, record};
use super::*;

fn names(set: &PatternSet, f: &Findings) -> Vec<String> {
    f.found
        .iter()
        .map(|x| set.pattern(x.pattern).name.clone())
        .collect()
}

#[test]
fn the_builtin_database_compiles_and_covers_the_kinds_asked_for() {
    let set = PatternSet::builtin();
    assert!(set.patterns().len() >= 15);
    for p in set.patterns() {
        assert!(!p.fix.is_empty() && !p.description.is_empty(), "{}", p.name);
    }
}

#[test]
fn findings_are_ordered_by_severity_and_count_repeats() {
    let set = PatternSet::builtin();
    let text = b"Traceback (most recent call last):\n  File \"x.py\", line 1\n\
        ModuleNotFoundError: No module named 'requests'\n\
        OSError: [Errno 28] No space left on device\n\
        ModuleNotFoundError: No module named 'yaml'\n";
    let f = scan_text(&set, text);
    assert_eq!(
        names(&set, &f),
        ["disk-full", "python-module-not-found", "python-traceback"]
    );
    let module = &f.found[1];
    assert_eq!(module.count, 2);
    assert_eq!(
        &*module.last_line,
        "ModuleNotFoundError: No module named 'yaml'"
    );
}

#[test]
fn colour_codes_do_not_hide_a_match_and_are_not_kept() {
    let set = PatternSet::builtin();
    let text = b"\x1b[0m\x1b[1m\x1b[38;5;9merror[E0432]\x1b[0m\x1b[0m\x1b[1m: unresolved import `serde_yml`\x1b[0m\n";
    let f = scan_text(&set, text);
    assert_eq!(names(&set, &f), ["rust-unresolved-dependency"]);
    assert_eq!(
        &*f.found[0].last_line,
        "error[E0432]: unresolved import `serde_yml`"
    );
}

#[test]
fn anchors_hold_at_every_line_not_only_the_first() {
    let set = PatternSet::builtin();
    let f = scan_text(&set, b"ok\nok\r\n--- FAIL: TestParse (0.00s)\r\nok\n");
    assert_eq!(names(&set, &f), ["test-failures"]);
}

#[test]
fn a_match_across_a_line_end_is_not_a_match() {
    let pattern = Pattern {
        name: "two-words".into(),
        description: String::new(),
        severity: Severity::Warning,
        regexes: vec![r"alpha\s+beta".into()],
        fix: String::new(),
        ignore_case: false,
        origin: Origin::Builtin,
    };
    let (set, problems) = PatternSet::new(vec![pattern]);
    assert!(problems.is_empty());
    assert!(scan_text(&set, b"alpha\nbeta\n").is_empty());
    assert!(!scan_text(&set, b"x\nalpha  beta\n").is_empty());
}

#[test]
fn a_bad_regex_is_reported_with_file_and_pattern_and_the_rest_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(KNOWN_ISSUES_FILE);
    std::fs::write(
        &path,
        r#"{"patterns": [
            {"name": "lookahead", "error_patterns": ["foo(?=bar)", "plain foo"], "fix": "x", "severity": "high"},
            {"name": "broken", "error_patterns": ["(unclosed"], "fix": "y"},
            {"name": "quota", "description": "d", "error_patterns": ["Custom Quota Hit"], "fix": "wait", "severity": "critical"},
            {"name": "nolist", "fix": "z"}
        ]}"#,
    )
    .unwrap();
    let (set, problems) = PatternSet::with_file(&path);
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(text.len(), 3, "{text:#?}");
    assert!(text[0].contains("nolist") && text[0].contains(&*path.to_string_lossy()));
    assert!(
        text[1].contains("lookahead") && text[1].contains("foo(?=bar)"),
        "{}",
        text[1]
    );
    assert!(text[2].contains("broken") && text[2].contains("(unclosed"));
    // The pattern with one good regex is kept with it; file patterns ignore case.
    let f = scan_text(&set, b"PLAIN FOO\ncustom quota hit\n");
    assert_eq!(names(&set, &f), ["quota", "lookahead"]);
    let quota = set.pattern(f.found[0].pattern);
    assert_eq!(
        (quota.severity, quota.fix.as_str()),
        (Severity::Critical, "wait")
    );
}

#[test]
fn a_missing_file_is_no_problem_and_a_broken_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (set, problems) = PatternSet::with_file(&dir.path().join("absent.json"));
    assert!(problems.is_empty());
    assert_eq!(set.patterns().len(), PatternSet::builtin().patterns().len());
    let bad = dir.path().join(KNOWN_ISSUES_FILE);
    std::fs::write(&bad, b"{\"patterns\": [").unwrap();
    let (set, problems) = PatternSet::with_file(&bad);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].to_string().contains("is not valid JSON"));
    assert!(problems[0].to_string().contains(&*bad.to_string_lossy()));
    assert_eq!(set.patterns().len(), PatternSet::builtin().patterns().len());
}

fn append(path: &std::path::Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn scanning_is_incremental_old_bytes_are_never_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let set = PatternSet::builtin();
    let mut scanner = IssueScanner::new();
    let clean = "building step ok\n".repeat(10_000);
    append(&log, clean.as_bytes());
    assert!(!scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    assert_eq!(scanner.bytes_scanned, clean.len() as u64);

    // An error is written over old bytes in place: a scanner that re-read them would find it.
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_at(b"No space left on device\n", 0).unwrap();
    append(&log, b"Error: Cannot find module 'left-pad'\n");
    assert!(scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    assert_eq!(
        scanner.bytes_scanned,
        clean.len() as u64 + 37,
        "only the appended line was read"
    );
    assert_eq!(names(&set, &scanner.findings), ["node-module-not-found"]);

    // Nothing new: nothing read, nothing changed.
    assert!(!scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    assert_eq!(scanner.bytes_scanned, clean.len() as u64 + 37);
}

#[test]
fn a_line_is_matched_only_once_its_newline_has_come() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let set = PatternSet::builtin();
    let mut scanner = IssueScanner::new();
    append(&log, b"fatal: Authentication fai");
    assert!(!scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    append(&log, b"led for 'https://github.com/x/y.git/'\n");
    assert!(scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    assert_eq!(names(&set, &scanner.findings), ["authentication-failed"]);
    assert_eq!(scanner.findings.found[0].count, 1);
}

#[test]
fn a_truncated_or_replaced_log_starts_over_and_a_large_one_from_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let set = PatternSet::builtin();
    let mut scanner = IssueScanner::new();
    append(&log, b"Segmentation fault (core dumped)\n");
    scanner.advance(&log, &set, SCAN_WINDOW).unwrap();
    assert_eq!(names(&set, &scanner.findings), ["crash"]);

    std::fs::write(&log, b"ok\n").unwrap();
    assert!(scanner.advance(&log, &set, SCAN_WINDOW).unwrap());
    assert!(scanner.findings.is_empty());

    // A window of 64 bytes: the error at the start is out of it, the cut line is skipped.
    let mut big = b"No space left on device\n".to_vec();
    big.extend("x".repeat(100).as_bytes());
    big.extend(b"\nCould not resolve host: github.com\n");
    let other = dir.path().join("other.log");
    std::fs::write(&other, &big).unwrap();
    let mut scanner = IssueScanner::new();
    scanner.advance(&other, &set, 64).unwrap();
    assert_eq!(names(&set, &scanner.findings), ["network-error"]);
}

#[test]
fn match_line_names_the_most_severe() {
    let set = PatternSet::builtin();
    let i = set
        .match_line(b"\x1b[31mOSError: [Errno 28] No space left on device: '/tmp/x'\x1b[0m")
        .unwrap();
    assert_eq!(set.pattern(i).name, "disk-full");
    assert_eq!(set.match_line(b"all good"), None);
}

/// What scanning line by line finds: each line stripped and asked about alone, and recorded in
/// turn. The reference the scanners, which search whole chunks, must agree with.
fn line_by_line(set: &PatternSet, text: &[u8]) -> Findings {
    let mut f = Vec::new();
    if text.is_empty() {
        return Findings::default();
    }
    // A final newline ends the last line; it does not begin another.
    let lines = text.strip_suffix(b"\n").unwrap_or(text);
    for line in lines.split(|&b| b == b'\n') {
        let mut plain = Vec::new();
        strip_escapes(line, &mut plain);
        let patterns = set.line_matches(&plain);
        if patterns.is_empty() {
            continue;
        }
        let shown = excerpt(&plain).into_boxed_str();
        for p in patterns {
            record(&mut f, set, p, 1, shown.clone(), None);
        }
    }
    if f.is_empty() {
        return Findings::default();
    }
    Findings { found: f.into() }
}

fn found(f: &Findings) -> Vec<(u32, u32, String)> {
    f.found
        .iter()
        .map(|x| (x.pattern, x.count, x.last_line.to_string()))
        .collect()
}

/// Pieces of agent output: known issues, lines that come close, colours, cut escape
/// sequences, non-ASCII text, blank lines.
const PIECES: &[&[u8]] = &[
    b"OSError: [Errno 28] No space left on device\n",
    b"curl: (6) Could not resolve host: github.com\n",
    b"Segmentation fault (core dumped)\n",
    b"ModuleNotFoundError: No module named 'yaml'\n",
    b"\x1b[1m\x1b[38;5;9merror[E0432]\x1b[0m: unresolved import `x`\n",
    b"test result: ok. 142 passed; 0 failed; 0 ignored\n",
    b"--- FAIL: TestParse (0.00s)\r\n",
    b"rate limit: 100/min configured\n",
    b"   Compiling serde v1.0.0\n",
    b"\xce\xb1\xce\xb2 no space \xe6\x97\xa5\n",
    b"\x1b(",
    b"\x1b]0;title",
    b"\x1b[31",
    b"No space left",
    b" on device",
    b"\n",
    b"plain words of a log line ",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The scanner reading a log appended in pieces split anywhere, and the one handed what a
    /// pane's follower read (in reads of any size), find what scanning the whole text line by
    /// line finds: the same patterns, counts, last lines and order.
    #[test]
    fn chunked_scanning_finds_what_line_by_line_finds(
        picks in proptest::collection::vec(0..PIECES.len(), 0..120),
        cuts in proptest::collection::vec(0usize..4000, 0..12),
        read_cap in 1u64..300,
    ) {
        let set = PatternSet::shared_builtin();
        let mut text: Vec<u8> = picks.iter().flat_map(|&i| PIECES[i].iter().copied()).collect();
        text.push(b'\n');
        let want = found(&line_by_line(&set, &text));
        proptest::prop_assert_eq!(&found(&scan_text(&set, &text)), &want);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        std::fs::write(&path, b"").unwrap();
        let mut reading = IssueScanner::new();
        let mut handed = IssueScanner::new();
        let mut pane = crate::jobs::fs::follow::Follower::from_start(&path).read_at_most(read_cap);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
        cuts.push(text.len());
        cuts.sort_unstable();
        let mut at = 0;
        for cut in cuts {
            append(&path, &text[at..cut]);
            at = cut;
            reading.advance(&path, &set, u64::MAX).unwrap();
            loop {
                let (chunk, read) = pane.poll_whole(u64::MAX, Vec::new()).unwrap();
                let h = pane.handoff_whole(&chunk, read);
                handed.take(&path, &h, &set, u64::MAX).unwrap();
                if !chunk.more {
                    break;
                }
            }
        }
        proptest::prop_assert_eq!(&found(&reading.findings), &want);
        proptest::prop_assert_eq!(&found(&handed.findings), &want);
        proptest::prop_assert_eq!(handed.bytes_scanned, 0, "all of it was handed in");
    }
}

#[test]
fn an_issue_in_the_middle_of_a_large_burst_is_found_and_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let set = PatternSet::builtin();
    let filler = b"filler line of a burst written at once, far ahead of anyone\n";
    let mut burst = Vec::new();
    while burst.len() < 24 * 1024 * 1024 {
        burst.extend_from_slice(filler);
    }
    burst.extend_from_slice(b"OSError: [Errno 28] No space left on device\n");
    while burst.len() < 48 * 1024 * 1024 {
        burst.extend_from_slice(filler);
    }
    append(&path, b"start\n");
    let mut scanner = IssueScanner::new();
    scanner.advance(&path, &set, SCAN_WINDOW).unwrap();
    append(&path, &burst);
    assert!(scanner.advance(&path, &set, SCAN_WINDOW).unwrap());
    assert_eq!(names(&set, &scanner.findings), ["disk-full"]);
    assert_eq!(scanner.findings.found[0].count, 1);
    assert_eq!(scanner.bytes_scanned, 6 + burst.len() as u64);
}

/// A built-in error pattern of `regexes`, for the sets below.
fn pattern(name: &str, ignore_case: bool, regexes: &[&str]) -> Pattern {
    Pattern {
        name: name.into(),
        description: "d".into(),
        severity: Severity::Error,
        regexes: regexes.iter().map(|r| r.to_string()).collect(),
        fix: "f".into(),
        ignore_case,
        origin: Origin::Builtin,
    }
}

/// Regexes of every kind: literals in either case, anchors, word boundaries, and matches that
/// may run across a line end.
fn tricky_set() -> PatternSet {
    let (set, problems) = PatternSet::new(vec![
        pattern("word", false, &[r"\bspace\b", r"^\s*[1-9]\d* errors?"]),
        pattern("either-case", true, &["no space left", r"\[?E_NOPE\]?"]),
        pattern("anchored", false, &[r"^\S+: \d+: not found$"]),
        pattern("spanning", false, &[r"[0-9]{3}", r"^\d+$", r"x\s+y"]),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    set
}

const TRICKY_PIECES: &[&[u8]] = &[
    b"space",
    b"spaces",
    b"1 error",
    b"12 errors",
    b"No Space Left",
    b"e_nope",
    b"[E_NOPE]",
    b"sh: 12: not found",
    b"123",
    b"12",
    b"x ",
    b"y",
    b"\n",
    b"\r\n",
    b"\x1b[1m",
    b" ",
    b"word",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Searching the whole text for where the earliest match ends, then asking about that
    /// line alone, finds every line that asking line by line finds, and only those.
    #[test]
    fn the_search_misses_no_line(
        picks in proptest::collection::vec(0..TRICKY_PIECES.len(), 0..60),
    ) {
        let set = tricky_set();
        let text: Vec<u8> = picks.iter().flat_map(|&i| TRICKY_PIECES[i].iter().copied()).collect();
        proptest::prop_assert_eq!(
            found(&scan_text(&set, &text)),
            found(&line_by_line(&set, &text))
        );
    }
}

/// Known issues of every kind and lines that come close, in either case, with carriage returns
/// and bytes that are not text: what the prefilter must never miss a line of.
const NEAR_PIECES: &[&[u8]] = &[
    b"OSError: [Errno 28] No space left on device",
    b"no SPACE left on DEVICE",
    b"error[E0308]: mismatched types",
    b"ERROR[e0308]: Mismatched Types",
    b"FAILED tests/test_api.py::test_post",
    b"failed tests/x::y",
    b"===== 3 failed, 1 passed in 0.12s =====",
    b"0 failed",
    b"test result: FAILED. 1 passed; 2 failed",
    b"test result: ok. 2 passed; 0 failed",
    b"Segmentation fault (core dumped)",
    b"--- FAIL: TestParse (0.00s)",
    b"PermissionError: [Errno 13] Permission denied: '/x'",
    b"sh: 1: rg: not found",
    b"thread 'main' panicked at src/main.rs:1:5:",
    b"Traceback (most recent call last):",
    b"Could not resolve host: github.com",
    b"API Error: 429 rate_limit_error",
    b"  12 errors, 3 warnings, 0 informations",
    b"error",
    b"warning: unused variable",
    b"\r",
    b"\n",
    b"\n",
    b" ",
    b"\xff\xfe",
    b"\x1b[31m",
    b"words of an ordinary line",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The prefilter hands on every line the automaton of all regexes finds, with the same
    /// patterns, and no other: on the built-in set and on a set of tricky literals.
    #[test]
    fn the_prefilter_finds_what_the_automaton_finds(
        picks in proptest::collection::vec(0..NEAR_PIECES.len(), 0..80),
    ) {
        let text: Vec<u8> = picks.iter().flat_map(|&i| NEAR_PIECES[i].iter().copied()).collect();
        for set in [PatternSet::shared_builtin(), std::sync::Arc::new(literal_set())] {
            proptest::prop_assert!(set.searches_literals());
            let mut by_literals = Vec::new();
            set.scan_lines(&text, |l, p| by_literals.push((l.as_ptr() as usize, l.len(), p.to_vec())));
            let mut by_automaton = Vec::new();
            set.scan_lines_automaton(&text, |l, p| by_automaton.push((l.as_ptr() as usize, l.len(), p.to_vec())));
            proptest::prop_assert_eq!(by_literals, by_automaton);
        }
    }
}

/// Regexes with literals in every position: anchored at either end, ignoring case, optional
/// letters, alternatives, a class of a few bytes, a word boundary, a carriage return.
fn literal_set() -> PatternSet {
    let (set, problems) = PatternSet::new(vec![
        pattern(
            "anchored",
            false,
            &[r"^FAILED \S+", r"failed$", r"^\s*\d+ errors?, \d+"],
        ),
        pattern("either-case", true, &["no space left", r"\bpanicked\b"]),
        pattern(
            "alternatives",
            false,
            &[
                r"[Oo]ut of (?:memory|disk)",
                "test result: (?:FAILED|ok)\\.",
            ],
        ),
        pattern("carriage", false, &["fault\r", "\r\\(core"]),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    set
}
