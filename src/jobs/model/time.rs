//! Lenient timestamps: RFC 3339 from new writers, naive local `YYYY-MM-DDTHH:MM:SS[.f]` from
//! the Python orchestrator (`datetime.now().isoformat()`).

use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};

pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    const NAIVE: &[&str] = &["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"];
    NAIVE.iter().find_map(|fmt| {
        let naive = NaiveDateTime::parse_from_str(s, fmt).ok()?;
        // A time skipped by a DST jump has no local reading; `earliest` picks the first of an
        // ambiguous pair. Either way the job keeps a start time instead of losing it.
        Local
            .from_local_datetime(&naive)
            .earliest()
            .or_else(|| Some(Utc.from_utc_datetime(&naive).with_timezone(&Local)))
            .map(|t| t.with_timezone(&Utc))
    })
}

/// The longest duration accepted: 100 years. Every deadline luzia computes (`now` plus a
/// duration, as an `Instant` or a date) holds far more than that, so nothing built from a parsed
/// duration can overflow.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(36_500 * 86_400);

/// A duration written without a unit, or not at all, or too long to mean anything.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("'{0}' is not a duration: write it with a unit, like 90s, 30m, 2h or 1h30m")]
    Malformed(String),
    #[error("'{0}' is too long: at most 36500d (100 years)")]
    TooLong(String),
}

/// `90s`, `30m`, `2h`, `1h30m`, `1d`, `500ms`, at most [`MAX_DURATION`]. A bare number is
/// refused: minutes or seconds?
pub fn parse_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    let err = || DurationError::Malformed(s.to_owned());
    let t = s.trim();
    if t.is_empty() {
        return Err(err());
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        if digits == 0 {
            return Err(err());
        }
        let n: f64 = rest[..digits].parse().map_err(|_| err())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let secs = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(err()),
        };
        total += n * secs;
        rest = &rest[digits + unit_len..];
    }
    // A number of 400 digits reads as infinity; anything past the bound is refused before it
    // becomes a `Duration` (whose conversion would panic).
    if !total.is_finite() || total > MAX_DURATION.as_secs_f64() {
        return Err(DurationError::TooLong(s.to_owned()));
    }
    Ok(std::time::Duration::from_secs_f64(total))
}

/// A short human duration: `45s`, `3m12s`, `2h05m`, `3d04h`.
pub fn format_duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d{h:02}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// The largest unit of a duration alone, for a glance: `45s`, `3m`, `2h`, `3d`.
pub fn format_duration_coarse(secs: i64) -> String {
    let full = format_duration(secs);
    match full.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => full[..=i].to_string(),
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339_and_naive_forms() {
        let utc = parse_timestamp("2026-01-09T14:23:15Z").unwrap();
        assert_eq!(utc.to_rfc3339(), "2026-01-09T14:23:15+00:00");
        let offset = parse_timestamp("2026-01-09T16:23:15+02:00").unwrap();
        assert_eq!(offset, utc);
        let naive = parse_timestamp("2026-01-09T14:23:15").unwrap();
        let expected = Local
            .from_local_datetime(
                &NaiveDateTime::parse_from_str("2026-01-09T14:23:15", "%Y-%m-%dT%H:%M:%S").unwrap(),
            )
            .unwrap();
        assert_eq!(naive, expected.with_timezone(&Utc));
        assert!(parse_timestamp("2026-01-09T14:23:15.123456").is_some());
        assert!(parse_timestamp("2026-01-09 14:23:15").is_some());
    }

    #[test]
    fn garbage_is_none() {
        for s in ["", "yesterday", "2026-13-40T99:00:00", "1736432595"] {
            assert!(parse_timestamp(s).is_none(), "{s}");
        }
    }

    #[test]
    fn durations_parse() {
        let ok = [
            ("90s", 90.0),
            ("30m", 1800.0),
            ("2h", 7200.0),
            ("1h30m", 5400.0),
            ("1d", 86400.0),
            ("500ms", 0.5),
            ("1.5m", 90.0),
        ];
        for (s, secs) in ok {
            assert_eq!(parse_duration(s).unwrap().as_secs_f64(), secs, "{s}");
        }
        for bad in ["", "30", "m", "3x", "-5m", "1h 30m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_too_long_to_hold_are_refused_not_a_panic() {
        let many_digits = format!("{}s", "9".repeat(400));
        for huge in [
            "99999999999999999999999d",
            "18446744073709551616s",
            &many_digits,
            "36501d",
            "36500d1ms",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert_eq!(e, DurationError::TooLong(huge.to_owned()));
            assert!(e.to_string().contains("at most 36500d"), "{e}");
        }
        assert_eq!(parse_duration("36500d").unwrap(), MAX_DURATION);
    }

    #[test]
    fn durations_read_well() {
        let cases = [
            (-5, "0s"),
            (0, "0s"),
            (45, "45s"),
            (192, "3m12s"),
            (7500, "2h05m"),
            (273_600, "3d04h"),
        ];
        for (secs, want) in cases {
            assert_eq!(format_duration(secs), want);
        }
        let coarse: Vec<String> = [45, 192, 7500, 273_600]
            .into_iter()
            .map(format_duration_coarse)
            .collect();
        assert_eq!(coarse, ["45s", "3m", "2h", "3d"]);
    }
}
