use super::extract::{line_start_bytes, parse, requirements};
use super::search::BLOCK;
use super::*;

fn sets(re: &str, ignore_case: bool) -> Vec<Vec<String>> {
    let hir = parse(re, ignore_case).unwrap();
    requirements(&hir, MIN_LEN, &super::rarity::Model::new())
        .into_iter()
        .map(|set| {
            set.into_iter()
                .map(|s| String::from_utf8(s).unwrap())
                .collect()
        })
        .collect()
}

/// Whether one of `re`'s sets is exactly `want`.
fn requires(re: &str, ignore_case: bool, want: &[&str]) -> bool {
    sets(re, ignore_case)
        .iter()
        .any(|set| set.iter().map(String::as_str).eq(want.iter().copied()))
}

#[test]
fn what_a_regex_requires_is_read_off_its_parsed_form() {
    let cases: &[(&str, bool, &[&str])] = &[
        // Literals, folded; cut to 24 bytes.
        (
            "No space left on device",
            false,
            &["no space left on device"],
        ),
        ("(?i)permission denied", false, &["permission denied"]),
        ("Permission Denied", true, &["permission denied"]),
        (
            "[Oo]ut of memory: Killed",
            false,
            &["out of memory: killed"],
        ),
        // A line start or end is a line feed.
        (r"^FAILED \S+::\S+", false, &["\nfailed "]),
        (r"^\s+[1-9]\d* failing$", false, &[" failing\n"]),
        // Alternations and optional pieces spelled out.
        (
            r"\bE(?:CONNREFUSED|CONNRESET)\b",
            false,
            &["econnrefused", "econnreset"],
        ),
        (r"[1-9]\d* errors?, \d", false, &[" error, ", " errors, "]),
        // A branch without a literal leaves the others' sets: one of them, from each branch.
        (
            r"OCI runtime (?:create|exec) failed",
            false,
            &["oci runtime create faile", "oci runtime exec failed"],
        ),
    ];
    for &(re, ignore_case, want) in cases {
        assert!(
            requires(re, ignore_case, want),
            "{re}: {:?}",
            sets(re, ignore_case)
        );
    }
}

#[test]
fn a_regex_without_a_literal_requires_nothing() {
    for re in [r"\d+", "x*", r"[0-9]{3}", r"^\d+$", "ab?c", r"\w+ \w+"] {
        assert_eq!(sets(re, false), Vec::<Vec<String>>::new(), "{re}");
    }
}

#[test]
fn an_anchored_regex_says_what_its_lines_start_with() {
    let starts = |re: &str| {
        line_start_bytes(&parse(re, false).unwrap()).map(|set| {
            (0..=255u8)
                .filter(|&b| set[usize::from(b)])
                .collect::<Vec<u8>>()
        })
    };
    assert_eq!(starts("^FAILED"), Some(b"f".to_vec()));
    assert_eq!(starts("^(?:FAIL|--- FAIL)"), Some(b"-f".to_vec()));
    assert_eq!(starts(r"^=+ x"), Some(b"=".to_vec()));
    let digits_or_space = starts(r"^\s*[1-9]").unwrap();
    assert!(digits_or_space.contains(&b' ') && digits_or_space.contains(&b'7'));
    assert!(!digits_or_space.contains(&b'0') && !digits_or_space.contains(&b'a'));
    // Not anchored, or anchored but able to match nothing: no judgement.
    assert_eq!(starts("FAILED"), None);
    assert_eq!(starts("^x?"), None);
}

#[test]
fn folding_lowers_ascii_and_makes_carriage_returns_line_feeds() {
    for b in 0..=255u8 {
        let want = match b {
            b'\r' => b'\n',
            _ => b.to_ascii_lowercase(),
        };
        assert_eq!(fold(b), want, "{b:#x}");
    }
    let src: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let mut dst = vec![0; src.len()];
    fold_into(&mut dst, &src);
    assert!(dst.iter().zip(&src).all(|(&d, &s)| d == fold(s)));
}

#[test]
fn every_built_in_regex_is_found_by_its_literals() {
    let set = crate::jobs::insight::known_issues::PatternSet::builtin();
    assert!(
        set.searches_literals(),
        "a built-in regex requires no literal of four bytes: every log would go through the \
         automaton of all regexes"
    );
}

fn prefilter(regexes: &[&str]) -> Prefilter {
    let flagged: Vec<(&str, bool)> = regexes.iter().map(|r| (*r, false)).collect();
    Prefilter::new(&flagged).unwrap()
}

/// The lines `scan` hands on, with their candidates (`None` for a line asked about whole).
fn handed(p: &Prefilter, text: &[u8]) -> Vec<(String, Option<Vec<u32>>)> {
    let mut out = Vec::new();
    p.scan(text, &mut Scratch::default(), |line, c| {
        let c = match c {
            Candidates::Some(rs, _) => Some(rs.to_vec()),
            Candidates::Any => None,
        };
        out.push((String::from_utf8_lossy(line).into_owned(), c));
    });
    out
}

#[test]
fn a_set_with_a_regex_without_literals_gets_no_prefilter() {
    let flagged = [("No space left", false), (r"\d+ \w+:", false)];
    assert!(Prefilter::new(&flagged).is_none());
}

#[test]
fn only_lines_holding_a_window_are_handed_on_with_the_regexes_they_may_match() {
    let p = prefilter(&["No space left", r"^FAILED \S+", "Segmentation fault"]);
    let text = b"ok\nOSError: no SPACE left on device\nFAILED tests/a.py::t\nnot FAILED here\r\n\
        a segmentation fault and No space left\nlast";
    assert_eq!(
        handed(&p, text),
        [
            ("OSError: no SPACE left on device".into(), Some(vec![0])),
            ("FAILED tests/a.py::t".into(), Some(vec![1])),
            (
                "a segmentation fault and No space left".into(),
                Some(vec![0, 2])
            ),
        ]
    );
    // `^` holds after a carriage return too: that line is handed on.
    let handed_cr = handed(&p, b"x\rFAILED y\n");
    assert_eq!(handed_cr, [("x\rFAILED y".into(), Some(vec![1]))]);
    // A line's end, and the text's, is `$`.
    let p = prefilter(&["left on device$"]);
    assert_eq!(handed(&p, b"No space left on device").len(), 1);
    assert_eq!(handed(&p, b"No space left on device\r\nmore\n").len(), 1);
    assert_eq!(handed(&p, b"No space left on device!\n").len(), 0);
}

#[test]
fn lines_across_block_ends_and_longer_than_a_block() {
    let p = prefilter(&["No space left"]);
    let filler = "filler words of an ordinary line\n";
    let mut text = String::new();
    while text.len() < BLOCK - 5 {
        text.push_str(filler);
    }
    // A window across where the first block would end, were it not cut at a line end.
    text.push_str("No space left\n");
    let long = "y".repeat(BLOCK + 10);
    text.push_str(&long);
    text.push_str("\nNo space left at last\n");
    let got = handed(&p, text.as_bytes());
    assert_eq!(
        got,
        [
            ("No space left".into(), Some(vec![0])),
            (long, None),
            ("No space left at last".into(), Some(vec![0])),
        ]
    );
}

#[test]
fn the_sample_of_ordinary_output_holds_no_known_issue() {
    let set = crate::jobs::insight::known_issues::PatternSet::builtin().without_literals();
    let found =
        crate::jobs::insight::known_issues::scan_text(&set, super::rarity::SAMPLE.as_bytes());
    assert!(
        found.is_empty(),
        "the rarity model would take a known issue for ordinary text: {:?}",
        found.found
    );
    assert!(
        super::rarity::SAMPLE.len() > 32 * 1024,
        "a sample worth counting"
    );
}
