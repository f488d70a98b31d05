//! Which posts' countdowns are edited when, and with what text: times in, edits out.

use super::*;
use crate::notifier::telegram::state::{Closed, What};

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-11T14:30:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn at(secs: f64) -> DateTime<Utc> {
    t0() + Duration::milliseconds((secs * 1000.0) as i64)
}

/// A question posted at t0 whose default is taken `deadline` seconds later, its message
/// saying `shown` (its words when posted, unless a row says otherwise).
fn question(deadline: f64) -> Posted {
    let mut c = Countdown {
        deadline: at(deadline),
        since: Some(t0()),
        default: Some("staging".into()),
        at: "❓ Which database?\n\n".len(),
        len: 0,
        shown: time_left(at(deadline) - t0()),
        edited: None,
    };
    let lines = clock_lines(What::Question, &c, Some(t0()));
    c.len = lines.len();
    Posted {
        serial: 1,
        job: "142315-a1b2".into(),
        what: What::Question,
        instance: "q1".into(),
        options: Vec::new(),
        session: false,
        text: format!("❓ Which database?\n\n{lines}\nTap an option."),
        markup: None,
        message_id: Some(100),
        prompts: Vec::new(),
        closed: None,
        countdown: Some(c),
    }
}

fn with(mut p: Posted, f: impl FnOnce(&mut Posted, &mut Countdown)) -> Posted {
    let mut c = p.countdown.take().unwrap();
    f(&mut p, &mut c);
    p.countdown = Some(c);
    p
}

fn shown(p: Posted, words: &str, edited: f64) -> Posted {
    with(p, |_, c| {
        c.shown = words.into();
        c.edited = Some(at(edited));
    })
}

#[test]
fn a_countdown_is_edited_when_its_words_change_at_most_once_a_minute_and_never_once_settled() {
    let closed = |p: Posted| Posted {
        closed: Some(Closed {
            outcome: "the agent took the default: 'staging'".into(),
            at: at(1.0),
            edited: false,
        }),
        ..p
    };
    // (what, the post, now, the words it is edited to, when the next edit falls due)
    let rows: Vec<(&str, Posted, f64, Option<&str>, Option<f64>)> = vec![
        ("just posted", question(1800.0), 0.0, None, Some(60.0)),
        (
            "a moment before",
            question(1800.0),
            59.999,
            None,
            Some(60.0),
        ),
        (
            "a minute on",
            question(1800.0),
            60.0,
            Some("in 29m"),
            Some(60.0),
        ),
        (
            "edited at the minute: the next minute",
            shown(question(1800.0), "in 29m", 60.0),
            61.0,
            None,
            Some(120.0),
        ),
        (
            "the words changed again within a minute of a late edit: that minute waits",
            shown(question(1800.0), "in 29m", 90.0),
            120.0,
            None,
            Some(150.0),
        ),
        (
            "a failed try waits a minute",
            shown(question(1800.0), "in 30m", 65.0),
            70.0,
            None,
            Some(125.0),
        ),
        (
            "started again a quarter of an hour on: at once",
            question(1800.0),
            900.0,
            Some("in 15m"),
            Some(900.0),
        ),
        (
            "posted a moment before the last minute: the first edit needs no gap",
            question(70.0),
            10.0,
            Some("within a minute"),
            Some(10.0),
        ),
        (
            "the last minute: nothing until the time is up",
            shown(question(70.0), "within a minute", 10.0),
            30.0,
            None,
            Some(70.0),
        ),
        (
            "time is up, within a minute of the last edit: the last edit is made",
            shown(question(70.0), "within a minute", 40.0),
            70.0,
            Some(TIME_IS_UP),
            Some(70.0),
        ),
        (
            "time is up, a failed try a moment ago: a few seconds later",
            shown(question(70.0), "within a minute", 69.0),
            71.0,
            None,
            Some(74.0),
        ),
        (
            "its last words shown: never again",
            shown(question(70.0), TIME_IS_UP, 70.0),
            500.0,
            None,
            None,
        ),
        (
            "settled: never",
            closed(question(1800.0)),
            900.0,
            None,
            None,
        ),
        (
            "settled after its time was up: never",
            closed(question(70.0)),
            100.0,
            None,
            None,
        ),
        (
            "not sent yet: never",
            Posted {
                message_id: None,
                ..question(1800.0)
            },
            900.0,
            None,
            None,
        ),
        (
            "no countdown: never",
            Posted {
                countdown: None,
                ..question(1800.0)
            },
            900.0,
            None,
            None,
        ),
        (
            "its lines not where the state says: never, and no wake-up for it",
            with(question(1800.0), |_, c| c.at = 10_000),
            900.0,
            None,
            None,
        ),
        (
            "three hours ahead: to ten minutes",
            question(3.0 * 3600.0),
            1.0,
            None,
            Some(600.0),
        ),
        (
            "two days ahead: to the hour",
            question(48.0 * 3600.0),
            3599.0,
            None,
            Some(3600.0),
        ),
        (
            "two days ahead, an hour on",
            question(48.0 * 3600.0),
            3600.0,
            Some("in 1d23h"),
            Some(3600.0),
        ),
    ];
    for (what, p, now, edit, next) in rows {
        let posted = BTreeMap::from([("k".to_owned(), p.clone())]);
        let edits = due(&posted, at(now));
        assert_eq!(
            edits.iter().map(|e| e.countdown.shown.as_str()).next(),
            edit,
            "{what}: {edits:?}"
        );
        assert_eq!(next_due(&posted, at(now)), next.map(at), "{what}");
        if let Some(e) = edits.first() {
            assert_eq!(e.key, "k");
            assert_eq!(e.countdown.edited, Some(at(now)), "{what}");
            let c = &e.countdown;
            assert!(
                e.text[c.at..c.at + c.len].contains(&format!("({})\n", c.shown)),
                "{what}: the edit's text says its words where they stand: {}",
                e.text
            );
            assert!(
                e.text.starts_with("❓ Which database?\n\n")
                    && e.text.ends_with("\nTap an option.")
            );
            // Applied, nothing more is due at that instant.
            let applied = Posted {
                text: e.text.clone(),
                countdown: Some(e.countdown.clone()),
                ..p
            };
            let after = BTreeMap::from([("k".to_owned(), applied)]);
            assert!(due(&after, at(now)).is_empty(), "{what}");
            assert!(
                next_due(&after, at(now)).is_none_or(|t| t > at(now)),
                "{what}"
            );
        }
    }
}

#[test]
fn the_earliest_of_several_posts_wakes_the_worker_and_each_due_one_is_edited() {
    let posted = BTreeMap::from([
        ("a".to_owned(), question(1800.0)),
        ("b".to_owned(), question(70.0)),
        ("c".to_owned(), shown(question(70.0), TIME_IS_UP, 70.0)),
    ]);
    assert_eq!(next_due(&posted, at(1.0)), Some(at(10.0)));
    let edits: Vec<(String, String)> = due(&posted, at(60.0))
        .into_iter()
        .map(|e| (e.key, e.countdown.shown))
        .collect();
    assert_eq!(
        edits,
        [
            ("a".to_owned(), "in 29m".to_owned()),
            ("b".to_owned(), "within a minute".to_owned())
        ]
    );
}

#[test]
fn a_settled_post_s_lines_say_the_times_alone() {
    let p = question(1800.0);
    let (text, c) = retimed(&p, None).unwrap();
    let lines = &text[c.at..c.at + c.len];
    assert_eq!(
        lines,
        "Waiting since 14:30 UTC\nIf nobody answers, the agent takes 'staging' at 15:00 UTC\n"
    );
    assert!(text.ends_with("\nTap an option."));
    let (live, _) = retimed(&p, Some(at(600.0))).unwrap();
    assert!(
        live.contains(
            "Waiting since 14:30 UTC (10m ago)\nIf nobody answers, the agent takes \
                       'staging' at 15:00 UTC (in 20m)\n"
        ),
        "{live}"
    );
    let gate = Posted {
        what: What::Gate,
        ..with(question(1800.0), |_, c| c.default = None)
    };
    let (text, _) = retimed(&gate, Some(at(1.0))).unwrap();
    assert!(
        text.contains("If nobody decides, it approves itself at 15:00 UTC (in 30m)\n"),
        "{text}"
    );
}
