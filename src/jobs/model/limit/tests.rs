use super::*;
use chrono::Timelike;
use proptest::prelude::*;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// Each form from the words the CLIs printed (tests/known_issues.rs has where each came from);
/// a reset said to the minute is that minute's last second.
#[test]
fn every_form_of_the_real_words() {
    let ended = utc("2026-11-23T14:02:10Z");
    let cases = [
        // Claude Code 2.1.197, subscription, five-hour limit
        (
            "You've hit your session limit · resets 5pm (UTC)",
            "2026-11-23T17:00:59Z",
        ),
        // as luzia renders the stream-json result
        (
            "── failed (API error 429): You've hit your session limit · resets 5pm (UTC) · 1 turn · 0.1s",
            "2026-11-23T17:00:59Z",
        ),
        (
            "You've hit your session limit · resets 5:30pm (UTC)",
            "2026-11-23T17:30:59Z",
        ),
        (
            "You've hit your session limit · resets 9am (UTC)",
            "2026-11-24T09:00:59Z",
        ),
        (
            "You've hit your session limit · resets 16:45 (UTC+2)",
            "2026-11-23T14:45:59Z",
        ),
        (
            "You've reached your Opus limit · resets 3pm (GMT-05:00)",
            "2026-11-23T20:00:59Z",
        ),
        (
            "You've hit your weekly limit · resets Nov 30, 9am (UTC)",
            "2026-11-30T09:00:59Z",
        ),
        // Claude Code 2.1.332, subscription, five-hour limit
        (
            "You've hit your 5-hour limit · resets 3:37pm (UTC)",
            "2026-11-23T15:37:59Z",
        ),
        // Claude Code 1.x: the epoch
        (
            "Claude AI usage limit reached|1795453200",
            "2026-11-23T17:00:00Z",
        ),
        (
            "Claude AI usage limit reached|1735689600",
            "2025-01-01T00:00:00Z",
        ),
        // luzia's renderings, the seconds dropped: the end of the minute
        (
            "✗ Claude AI usage limit reached (resets 2026-11-23 17:00 UTC)",
            "2026-11-23T17:00:59Z",
        ),
        (
            "  ↯ five_hour limit: rejected until 2026-11-23 17:00 UTC",
            "2026-11-23T17:00:59Z",
        ),
        // Gemini CLI 0.61 (tests/golden/gemini): how long from the refusal, up to the second
        (
            "You exceeded your current quota, please check your plan and billing details.\n\
             Please retry in 3600s.\nSuggested retry after 3600s.",
            "2026-11-23T15:02:10Z",
        ),
        (
            "You exceeded your current quota. Please retry in 41.2s.",
            "2026-11-23T14:02:52Z",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(resets_at(text, ended), Some(utc(want)), "{text}");
    }
}

#[test]
fn a_warning_or_a_limit_without_a_time_is_no_stop() {
    let ended = utc("2026-11-23T14:02:10Z");
    for text in [
        "You're close to your session limit · resets 5pm (UTC)",
        "You've hit your session limit",
        "Claude AI usage limit reached",
        "API Error: 500 · resets 5pm (UTC)",
        "the cache resets 5pm (UTC)",
        "You have exhausted your daily quota on this model.",
        "You've hit your usage limit. Try again later.",
        "Please retry in 30s.",
        "",
    ] {
        assert_eq!(resets_at(text, ended), None, "{text}");
    }
}

#[test]
fn a_year_end_weekly_limit_is_next_year() {
    let ended = utc("2026-12-30T10:00:00Z");
    assert_eq!(
        resets_at(
            "You've hit your weekly limit · resets Jan 2, 9am (UTC)",
            ended
        ),
        Some(utc("2027-01-02T09:00:59Z"))
    );
}

/// Claude Code's words drop the seconds of the reset (15:37:59 reads `resets 3:37pm`): read to
/// the minute's last second, a job is continued at or after the real reset, never up to a
/// minute before it.
#[test]
fn a_reset_said_to_the_minute_is_never_early() {
    let ended = utc("2026-11-23T14:02:10Z");
    let real = utc("2026-11-23T15:37:59Z");
    for text in [
        "You've hit your 5-hour limit · resets 3:37pm (UTC)",
        "You've hit your session limit · resets 15:37 (UTC)",
        "  ↯ five_hour limit: rejected until 2026-11-23 15:37 UTC",
    ] {
        let at = resets_at(text, ended).unwrap();
        assert!(at >= real, "{text}: {at} is before the reset");
        assert!(at - real < Duration::minutes(1), "{text}: {at}");
    }
}

proptest! {
    /// An hour (and minute) in UTC: the last second of the first such minute after the job
    /// ended (less the slack), at most a day later, whatever the form.
    #[test]
    fn an_hour_is_the_next_one_after_the_end(
        secs in 1_600_000_000i64..2_000_000_000,
        hour in 0u32..24,
        minute in 0u32..60,
        twelve in any::<bool>(),
        with_minutes in any::<bool>(),
    ) {
        let ended = DateTime::from_timestamp(secs, 0).unwrap();
        let minute = if with_minutes { minute } else { 0 };
        let clock = match (twelve, with_minutes) {
            (true, false) => format!("{}{}", (hour + 11) % 12 + 1, if hour < 12 { "am" } else { "pm" }),
            (true, true) => format!("{}:{minute:02}{}", (hour + 11) % 12 + 1, if hour < 12 { "am" } else { "pm" }),
            (false, _) => format!("{hour}:{minute:02}"),
        };
        let text = format!("You've hit your session limit · resets {clock} (UTC)");
        let at = resets_at(&text, ended).unwrap() - Duration::seconds(59);
        prop_assert_eq!((at.hour(), at.minute(), at.second()), (hour, minute, 0));
        prop_assert!(at >= ended - SLACK && at < ended - SLACK + Duration::days(1), "{} {}", text, at);
    }

    /// The epoch form gives the very second.
    #[test]
    fn an_epoch_is_that_second(secs in 100_000_000i64..100_000_000_000) {
        let text = format!("Claude AI usage limit reached|{secs}");
        prop_assert_eq!(resets_at(&text, Utc::now()).map(|t| t.timestamp()), Some(secs));
    }

    /// A fixed offset moves the instant by that offset.
    #[test]
    fn an_offset_is_kept(secs in 1_600_000_000i64..2_000_000_000, hour in 0u32..24, off in -12i32..=14) {
        let ended = DateTime::from_timestamp(secs, 0).unwrap();
        let text = format!("You've hit your session limit · resets {hour}:00 (UTC{off:+})");
        let at = resets_at(&text, ended).unwrap() - Duration::seconds(59);
        let wall = at + Duration::hours(off.into());
        prop_assert_eq!((wall.hour(), wall.minute()), (hour, 0));
        prop_assert!(at >= ended - SLACK && at < ended - SLACK + Duration::days(1));
    }

    /// Anything at all: an answer or none, never a panic.
    #[test]
    fn any_text_is_read_without_a_panic(text in ".{0,200}") {
        let _ = resets_at(&text, Utc::now());
        let _ = resets_at(&format!("You've hit your session limit · resets {text}"), Utc::now());
    }
}
