//! The parsers of option values that clap cannot derive: durations, in the one syntax every
//! option that takes a time accepts.

pub(super) fn duration(s: &str) -> Result<std::time::Duration, String> {
    crate::jobs::model::time::parse_duration(s).map_err(|e| e.to_string())
}

/// Whole seconds, for the options where a bare number has always meant seconds (`--cycle 10`,
/// `--heartbeat 5`): that number, or the duration syntax every other option takes (`10s`,
/// `2m`, `1m30s`), at least 1s.
fn whole_seconds(s: &str, max: u64) -> Result<u64, String> {
    let secs = match s.trim().parse::<u64>() {
        Ok(n) => n,
        Err(_) => {
            let d = duration(s)?;
            if d.subsec_nanos() != 0 {
                return Err(format!(
                    "'{s}' is not a whole number of seconds (10, 10s, 2m)"
                ));
            }
            d.as_secs()
        }
    };
    if secs == 0 {
        return Err(format!("'{s}' is too short: at least 1s"));
    }
    if secs > max {
        return Err(format!("'{s}' is too long: at most {max}s"));
    }
    Ok(secs)
}

pub(super) fn cycle_period(s: &str) -> Result<u64, String> {
    whole_seconds(s, crate::jobs::model::time::MAX_DURATION.as_secs())
}

pub(super) fn heartbeat_period(s: &str) -> Result<u64, String> {
    whole_seconds(s, 3600)
}

pub(super) fn interval(s: &str) -> Result<std::time::Duration, String> {
    let d = duration(s)?;
    if d < std::time::Duration::from_millis(100) {
        return Err(format!("'{s}' is too short: refresh at most every 100ms"));
    }
    Ok(d)
}
