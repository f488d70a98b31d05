//! The arguments with and without the relay, and when a refusal is a refused relay.

use super::*;
use crate::jobs::hitl::operator::Scope;

fn id() -> JobId {
    JobId::parse("120000-ab").unwrap()
}

const ANA: Relayed<'static> = Relayed {
    source: "tui",
    by: "ana@here",
};

#[test]
fn answers_name_their_question_keep_text_as_text_and_say_whom_they_are_relayed_for() {
    assert_eq!(
        answer(&id(), "q-1", "--force, please", None),
        [
            "answer",
            "120000-ab",
            "--question=q-1",
            "--",
            "--force, please"
        ]
    );
    assert_eq!(
        answer(&id(), "q-1", "--by=mallory", Some(ANA)),
        [
            "answer",
            "120000-ab",
            "--question=q-1",
            "--source=tui",
            "--by=ana@here",
            "--",
            "--by=mallory"
        ]
    );
}

#[test]
fn decisions_name_their_gate_and_scope_and_say_whom_they_are_relayed_for() {
    let once = |reason| Verdict::approve(Scope::Once, reason);
    assert_eq!(
        decide(&id(), "g-7", once(""), None),
        ["approve", "120000-ab", "--gate=g-7"]
    );
    assert_eq!(
        decide(&id(), "g-7", Verdict::deny(""), None),
        ["deny", "120000-ab", "--gate=g-7", "--reason="]
    );
    assert_eq!(
        decide(&id(), "g-7", once("-looks fine"), None),
        ["approve", "120000-ab", "--gate=g-7", "--reason=-looks fine"]
    );
    let session = Verdict::approve(Scope::Session, "");
    assert_eq!(
        decide(&id(), "g-7", session, None),
        ["approve", "120000-ab", "--gate=g-7", "--always"]
    );
    assert_eq!(
        decide(&id(), "g-7", session, Some(ANA)),
        [
            "approve",
            "120000-ab",
            "--gate=g-7",
            "--always",
            "--source=tui",
            "--by=ana@here"
        ]
    );
    assert_eq!(
        decide(&id(), "g-7", Verdict::deny("freeze"), Some(ANA)),
        [
            "deny",
            "120000-ab",
            "--gate=g-7",
            "--reason=freeze",
            "--source=tui",
            "--by=ana@here"
        ]
    );
}

/// What clap prints for an option it does not know, word for word as luzia's clap does
/// (`luzia answer ID --question=q1 --nope=1 -- x`).
fn clap_unknown(flag: &str) -> String {
    format!(
        "error: unexpected argument '{flag}' found\n\n  tip: to pass '{flag}' as a value, \
         use '-- {flag}'\n\nUsage: luzia answer --question <QN> <ID> <ANSWER>...\n\n\
         For more information, try '--help'.\n"
    )
}

#[test]
fn only_clap_refusing_a_relay_flag_is_a_refused_relay() {
    for flag in ["--source", "--by"] {
        assert!(
            relay_refused(Some(2), clap_unknown(flag).as_bytes()),
            "{flag}"
        );
    }
    // The same words from a command's own error, or another exit status, are not clap's.
    assert!(!relay_refused(Some(1), clap_unknown("--source").as_bytes()));
    assert!(!relay_refused(None, clap_unknown("--source").as_bytes()));
    // A luzia that does not know `--question` cannot be answered safely without it.
    assert!(!relay_refused(
        Some(2),
        clap_unknown("--question").as_bytes()
    ));
    let already = "luzia: error: question q1 of job 120000-ab was already answered by \
                   bruno@b (cli): 'production'\n";
    assert!(!relay_refused(Some(1), already.as_bytes()));
    // An answer whose text names the flag is not clap refusing it.
    let said =
        "luzia: error: 'error: unexpected argument '--by' found' is not one of the options\n";
    assert!(!relay_refused(Some(2), said.as_bytes()));
}

/// `relayed` over a host whose luzia answers as `there` does: what was run, and the result.
fn relayed_on(there: impl Fn(&[String]) -> (i32, String)) -> (Vec<Vec<String>>, i32) {
    let mut runs = Vec::new();
    let (code, _) = relayed(
        ANA,
        |relay| answer(&id(), "q1", "staging", relay),
        |args| {
            runs.push(args.to_vec());
            there(args)
        },
        |(code, stderr)| relay_refused(Some(*code), stderr.as_bytes()),
    );
    (runs, code)
}

#[test]
fn a_luzia_older_than_the_relay_is_answered_without_it_and_only_then() {
    // Older: refuses the flags, takes the plain answer.
    let (runs, code) = relayed_on(|args| {
        if args.iter().any(|a| a.starts_with("--source")) {
            (2, clap_unknown("--source"))
        } else {
            (0, String::new())
        }
    });
    assert_eq!(code, 0);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].contains(&"--by=ana@here".to_owned()));
    assert_eq!(runs[1], answer(&id(), "q1", "staging", None));

    // Current: one run, relayed.
    let (runs, code) = relayed_on(|_| (0, String::new()));
    assert_eq!((runs.len(), code), (1, 0));

    // A refusal of the answer stands: not run again.
    let (runs, code) = relayed_on(|_| {
        (
            1,
            "luzia: error: question q1 of job 120000-ab was already answered".into(),
        )
    });
    assert_eq!((runs.len(), code), (1, 1));
}
