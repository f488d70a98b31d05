//! A usage or rate limit that ended a job, and when it resets, read from the words the agent
//! ended with (Claude Code's result text, which the supervisor keeps in meta.json's
//! `usage.error`). Claude Code has said it in several ways:
//!
//! - 2.x: `You've hit your session limit · resets 5pm (UTC)`, `... resets 5:30pm (Europe/Paris)`,
//!   `You've hit your weekly limit · resets Nov 30, 9am (UTC)`;
//! - 1.x: `Claude AI usage limit reached|1735689600` (the reset as Unix seconds);
//! - luzia's own rendering of those: `(resets 2026-11-23 17:00 UTC)`,
//!   `five_hour limit: rejected until 2026-11-23 17:00 UTC`.
//!
//! Codex (0.16's `codex-acp`, refusing `session/prompt`) says `You've hit your usage limit. Try
//! again at 7:36 PM.` (another day: `... Try again at Dec 5th, 2026 7:36 PM.`), in the machine's
//! zone; Gemini CLI (0.61, the Gemini API's 429 `RESOURCE_EXHAUSTED` past its five minutes of
//! retries) `You exceeded your current quota, ... Please retry in 3600s.`: a time from when it
//! said so. Its daily quota (`You have exhausted your daily quota on this model.`) says no
//! reset, and Codex's `Try again later.` neither: those are no limit to wait for.
//!
//! Each gives the reset to the minute (the epoch and the seconds aside): it is somewhere within
//! that minute, and is read as the minute's last second, never too early. A time without a date is the
//! first such time after the job ended. A zone that is neither UTC nor a fixed offset is the
//! machine's local zone: the agent ran here, and Claude Code prints the reset in the zone of
//! the machine it runs on.

use std::sync::LazyLock;

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, Local, NaiveDate, NaiveTime, Offset, TimeZone, Utc,
};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// Words that say the account's limit stopped the work (and not a warning such as "You're close
/// to your session limit").
static STOPPED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)usage limit reached|You've (?:hit|reached) your (?:[A-Za-z0-9'-]+ ){0,4}limit\b|\blimit: rejected until\b|\bYou exceeded your current quota\b|\bYou have exhausted your (?:daily )?quota\b",
    )
    .ok()
});

/// `...limit reached|1735689600`
static EPOCH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)limit reached\|(\d{9,12})\b").ok());

/// `resets 2026-11-23 17:00 UTC`, `until 2026-11-23 17:00 UTC`
static FULL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:resets|until) (\d{4})-(\d{2})-(\d{2}) (\d{1,2}):(\d{2}) UTC\b").ok()
});

/// `resets 5pm (UTC)`, `resets 5:30pm (Europe/Paris)`, `resets Nov 30, 9am (UTC)`,
/// `resets 17:00 (UTC+2)`
static WORDS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\bresets (?:at )?(?:(?<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (?<day>\d{1,2}),? (?:at )?)?(?<hour>\d{1,2})(?::(?<minute>\d{2}))? ?(?<ampm>[ap]\.?m\.?)?(?: ?\((?<zone>[^)]{1,64})\))?",
    )
    .ok()
});

/// Codex: `Try again at 7:36 PM`, `try again at Dec 5th, 2026 7:36 PM` (the machine's zone).
static TRY_AGAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\btry again at (?:(?<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (?<day>\d{1,2})(?:st|nd|rd|th)?,? (?:(?<year>\d{4}) )?(?:at )?)?(?<hour>\d{1,2})(?::(?<minute>\d{2}))? ?(?<ampm>[ap]\.?m\.?)?",
    )
    .ok()
});

/// Gemini CLI: `Please retry in 3600s.`, `Suggested retry after 41.5s.`: from when it said so.
static RETRY_IN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:please retry in|suggested retry after) (\d{1,9}(?:\.\d+)?)(ms|s)\b").ok()
});

/// How long after the reset a stopped job is continued: the account's clock and ours differ.
pub const RESUME_MARGIN: Duration = Duration::seconds(5);

/// A date without a year, or a time without a date, is looked for from this long before the
/// job ended: the clock of the agent and the one of the file system may differ a little.
const SLACK: Duration = Duration::minutes(5);

/// Whether `text` says the account's limit stopped the work (when it resets may be said
/// elsewhere: the stream's `resetsAt`).
pub fn stopped(text: &str) -> bool {
    STOPPED.as_ref().is_some_and(|r| r.is_match(text))
}

/// When the limit that stopped the work resets, if `text` says the work was stopped by one and
/// when it resets. `ended` is when the job ended: the reference for a time given without a
/// date.
pub fn resets_at(text: &str, ended: DateTime<Utc>) -> Option<DateTime<Utc>> {
    STOPPED.as_ref()?.find(text)?;
    if let Some(c) = EPOCH.as_ref()?.captures(text) {
        return DateTime::from_timestamp(c[1].parse().ok()?, 0);
    }
    if let Some(c) = FULL.as_ref()?.captures(text) {
        let date =
            NaiveDate::from_ymd_opt(c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?)?;
        let time = NaiveTime::from_hms_opt(c[4].parse().ok()?, c[5].parse().ok()?, 0)?;
        return Some(minute_end(date.and_time(time).and_utc()));
    }
    if let Some(c) = RETRY_IN.as_ref()?.captures(text) {
        let amount: f64 = c[1].parse().ok()?;
        let ms = if c[2].eq_ignore_ascii_case("ms") {
            amount
        } else {
            amount * 1000.0
        };
        // Whole seconds, rounded up: never too early.
        let secs = (ms / 1000.0).ceil();
        return (secs.is_finite() && secs >= 0.0).then(|| ended + Duration::seconds(secs as i64));
    }
    let c = match WORDS.as_ref()?.captures(text) {
        Some(c) => c,
        None => TRY_AGAIN.as_ref()?.captures(text)?,
    };
    let mut hour: u32 = c["hour"].parse().ok()?;
    let minute: u32 = c
        .name("minute")
        .map_or(Some(0), |m| m.as_str().parse().ok())?;
    match c
        .name("ampm")
        .map(|m| m.as_str().to_ascii_lowercase().starts_with('p'))
    {
        Some(pm) if (1..=12).contains(&hour) => hour = hour % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        None => {}
    }
    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
    let zone = Zone::parse(c.name("zone").map_or("", |m| m.as_str()));
    let from = ended - SLACK;
    let minute = match (c.name("month"), c.name("day")) {
        (Some(month), Some(day)) => {
            let month = month_number(month.as_str())?;
            let day: u32 = day.as_str().parse().ok()?;
            let year = match c.name("year") {
                Some(y) => y.as_str().parse().ok()?,
                None => zone.local(from)?.year(),
            };
            [year, year + 1].into_iter().find_map(|y| {
                let at = zone.at(NaiveDate::from_ymd_opt(y, month, day)?.and_time(time))?;
                (at >= from - Duration::days(1)).then_some(at)
            })
        }
        _ => {
            let today = zone.local(from)?.date();
            (0..3).find_map(|d| {
                let at = zone.at(today.checked_add_signed(Duration::days(d))?.and_time(time))?;
                (at >= from).then_some(at)
            })
        }
    };
    minute.map(minute_end)
}

/// The reset said to the minute (Claude Code's words and luzia's renderings drop the seconds)
/// is somewhere within that minute: a job continued at the minute's start could meet the limit
/// again. Its last second is never too early (the accounts give resets in whole seconds), and
/// at most a minute late; shown to the minute, it reads as the words do.
fn minute_end(start: DateTime<Utc>) -> DateTime<Utc> {
    start + Duration::seconds(59)
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let short = name.get(..3)?.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == short)
        .map(|i| i as u32 + 1)
}

/// The zone a reset time is given in.
#[derive(Clone, Copy, Debug)]
enum Zone {
    Fixed(FixedOffset),
    /// A zone by name: the machine's.
    Local,
}

impl Zone {
    /// `UTC`, `GMT`, `Z`, `UTC+2`, `GMT-05:30`, `+02:00`; anything else is the local zone.
    fn parse(name: &str) -> Zone {
        let name = name.trim();
        let upper = name.to_ascii_uppercase();
        let rest = ["UTC", "GMT", "Z"]
            .iter()
            .find_map(|p| upper.strip_prefix(p))
            .unwrap_or(&upper);
        if rest.is_empty() && !name.is_empty() {
            return Zone::Fixed(Utc.fix());
        }
        offset(rest).map_or(Zone::Local, Zone::Fixed)
    }

    fn local(self, t: DateTime<Utc>) -> Option<chrono::NaiveDateTime> {
        Some(match self {
            Zone::Fixed(o) => t.with_timezone(&o).naive_local(),
            Zone::Local => t.with_timezone(&Local).naive_local(),
        })
    }

    /// The instant of a wall time in this zone (the earlier of two, in a fold; none in a gap).
    fn at(self, wall: chrono::NaiveDateTime) -> Option<DateTime<Utc>> {
        match self {
            Zone::Fixed(o) => o.from_local_datetime(&wall).earliest().map(|t| t.to_utc()),
            Zone::Local => Local
                .from_local_datetime(&wall)
                .earliest()
                .map(|t| t.to_utc()),
        }
    }
}

/// `+2`, `-05`, `+05:30`, `+0530` as an offset from UTC.
fn offset(s: &str) -> Option<FixedOffset> {
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = s[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        n => (digits[..n - 2].parse().ok()?, digits[n - 2..].parse().ok()?),
    };
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
}

#[cfg(test)]
mod tests;

/// A reset time as a person reads it, in the machine's local time: `17:00` within a day of
/// `now`, else `Nov 30 09:00`.
pub fn clock(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let local = at.with_timezone(&Local);
    if (at - now).num_hours().abs() < 24 {
        local.format("%H:%M").to_string()
    } else {
        local.format("%b %-d %H:%M").to_string()
    }
}

/// An agent's account at its limit: nothing of that agent starts before `resets_at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The kind of agent (`claude`): the account is the agent's.
    #[serde(default)]
    pub agent: String,
    pub resets_at: DateTime<Utc>,
    /// The job whose stop told it.
    #[serde(default)]
    pub job: String,
}

impl Hold {
    /// Whether it still holds the queue at `now`: until the reset and the margin the job it
    /// stopped is continued after, so that the job goes on before the tasks queued since.
    pub fn stands(&self, now: DateTime<Utc>) -> bool {
        now < self.resets_at + RESUME_MARGIN
    }

    /// `held: claude limit until 17:00`
    pub fn why(&self, now: DateTime<Utc>) -> String {
        format!(
            "held: {} limit until {}",
            self.agent,
            clock(self.resets_at, now)
        )
    }
}

/// The limits that stand, one for each account at its limit (most often none or one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holds(pub Vec<Hold>);

impl Holds {
    /// The limit that holds the jobs of `account` (see `jobs::run::agents::account`), if any
    /// stands at `now`.
    pub fn of(&self, account: &str, now: DateTime<Utc>) -> Option<&Hold> {
        self.standing(now).find(|h| h.agent == account)
    }

    /// The limits that still stand at `now`, the first to reset first.
    pub fn standing(&self, now: DateTime<Utc>) -> impl Iterator<Item = &Hold> {
        self.0.iter().filter(move |h| h.stands(now))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
