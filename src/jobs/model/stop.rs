//! A requested stop (`stop.json`): who asked for the agent to be stopped, when, and from where.
//! `luzia kill` and the cockpit publish it before they send any signal, so a crash between the
//! two cannot lose it and every reader sees it at once. Its existence is what counts: a job whose
//! agent ends after it is `killed`, whatever its exit code (which is kept). The supervisor copies
//! it into meta.json as `stop` when the agent has ended.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::fs::files::JobDir;
use crate::jobs::fs::names::STOP_FILE;
use crate::jobs::model::meta::lenient_text;
use crate::jobs::model::time::parse_timestamp;
use crate::jobs::text::sanitize::plain_text;

/// Where a stop was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSource {
    Cli,
    Tui,
}

impl StopSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StopSource::Cli => "cli",
            StopSource::Tui => "tui",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRequest {
    /// `user@host` of the operator.
    #[serde(default, deserialize_with = "lenient_text")]
    pub requested_by: String,
    /// RFC 3339 in UTC.
    #[serde(default, deserialize_with = "lenient_text")]
    pub requested_at: String,
    /// `cli` or `tui`.
    #[serde(default, deserialize_with = "lenient_text")]
    pub source: String,
}

impl StopRequest {
    pub fn new(by: &str, at: DateTime<Utc>, source: StopSource) -> StopRequest {
        StopRequest {
            requested_by: by.to_owned(),
            requested_at: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            source: source.as_str().to_owned(),
        }
    }

    /// Leniently: any JSON object is a request (missing or odd fields are empty). `None` for
    /// bytes that are not a JSON object; the file's existence still says a stop was asked for.
    pub fn parse(bytes: &[u8]) -> Option<StopRequest> {
        match serde_json::from_slice::<serde_json::Value>(bytes).ok()? {
            v @ serde_json::Value::Object(_) => serde_json::from_value(v).ok(),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        // A struct of three strings always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn at(&self) -> Option<DateTime<Utc>> {
        parse_timestamp(&self.requested_at)
    }

    /// `bruno@host at 2026-01-11T14:31:02Z (cli)`, plain text, safe to print.
    pub fn who(&self) -> String {
        let by = if self.requested_by.is_empty() {
            "someone"
        } else {
            &self.requested_by
        };
        let mut s = by.to_owned();
        if !self.requested_at.is_empty() {
            s.push_str(&format!(" at {}", self.requested_at));
        }
        if !self.source.is_empty() {
            s.push_str(&format!(" ({})", self.source));
        }
        plain_text(&s)
    }

    /// `bruno@host (cli)`: who, without when.
    pub fn by(&self) -> String {
        let by = if self.requested_by.is_empty() {
            "someone"
        } else {
            &self.requested_by
        };
        if self.source.is_empty() {
            plain_text(by)
        } else {
            plain_text(&format!("{by} ({})", self.source))
        }
    }
}

/// The stop asked for in job directory `dir`, if any, and what is wrong with its file. A file
/// that exists but cannot be read, or is not a JSON object, still says a stop was asked for: it
/// reads as a request by someone unknown.
pub fn read(dir: &Path) -> Option<(StopRequest, Option<String>)> {
    judge(JobDir::new(dir).read_small(STOP_FILE))
}

/// [`read`] of what reading stop.json gave, however it was read.
pub fn judge(read: std::io::Result<Option<Vec<u8>>>) -> Option<(StopRequest, Option<String>)> {
    match read {
        Ok(None) => None,
        Ok(Some(bytes)) => Some(match StopRequest::parse(&bytes) {
            Some(r) => (r, None),
            None => (
                StopRequest::default(),
                Some("is not a JSON object: who asked is unknown".into()),
            ),
        }),
        Err(e) => Some((StopRequest::default(), Some(e.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn round_trips_and_reads_leniently() {
        let at = Utc.with_ymd_and_hms(2026, 1, 11, 14, 31, 2).unwrap();
        let s = StopRequest::new("bruno@host", at, StopSource::Cli);
        assert_eq!(
            String::from_utf8(s.to_json()).unwrap(),
            r#"{"requested_by":"bruno@host","requested_at":"2026-01-11T14:31:02Z","source":"cli"}"#
        );
        assert_eq!(StopRequest::parse(&s.to_json()), Some(s.clone()));
        assert_eq!(s.at(), Some(at));
        assert_eq!(s.who(), "bruno@host at 2026-01-11T14:31:02Z (cli)");
        assert_eq!(s.by(), "bruno@host (cli)");
        let odd = StopRequest::parse(br#"{"requested_by": 7, "source": ["x"], "extra": 1}"#);
        assert_eq!(
            odd,
            Some(StopRequest {
                requested_by: "7".into(),
                ..StopRequest::default()
            })
        );
        assert_eq!(StopRequest::default().who(), "someone");
        for bad in [&b"[1]"[..], b"", b"{", b"null"] {
            assert_eq!(StopRequest::parse(bad), None);
        }
        let hostile = StopRequest {
            requested_by: "\x1b]0;evil\x07me".into(),
            ..StopRequest::default()
        };
        assert!(!hostile.who().contains('\x1b'));
    }
}
