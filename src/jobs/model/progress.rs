//! `progress.json`: the agent's latest progress, every field optional.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::jobs::model::format::{FormatError, object};
use crate::jobs::model::time::parse_timestamp;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    /// 0-100, clamped.
    pub percent: Option<f64>,
    pub step: Option<u64>,
    pub total_steps: Option<u64>,
    pub step_name: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
    pub eta_seconds: Option<u64>,
}

impl Progress {
    pub fn parse(bytes: &[u8]) -> Result<Progress, FormatError> {
        let map = object(bytes)?;
        let number = |k: &str| match map.get(k)? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().trim_end_matches('%').parse().ok(),
            _ => None,
        };
        let whole = |k: &str| {
            number(k)
                .filter(|f| *f >= 0.0 && f.is_finite())
                .map(|f| f as u64)
        };
        Ok(Progress {
            percent: number("percent")
                .filter(|f| f.is_finite())
                .map(|f| f.clamp(0.0, 100.0)),
            step: whole("step"),
            total_steps: whole("total_steps").filter(|&t| t > 0),
            step_name: map
                .get("step_name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            updated_at: map
                .get("updated_at")
                .and_then(Value::as_str)
                .and_then(parse_timestamp),
            eta_seconds: whole("eta_seconds"),
        })
    }

    /// Percent done: `percent` if given, else `step / total_steps`.
    pub fn percent_done(&self) -> Option<f64> {
        self.percent.or_else(|| {
            let (step, total) = (self.step?, self.total_steps?);
            Some((step as f64 / total as f64 * 100.0).clamp(0.0, 100.0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_table() {
        let cases: &[(&str, Option<f64>)] = &[
            (r#"{"percent": 40}"#, Some(40.0)),
            (r#"{"percent": "55%"}"#, Some(55.0)),
            (r#"{"percent": 250}"#, Some(100.0)),
            (r#"{"percent": -3}"#, Some(0.0)),
            (r#"{"step": 2, "total_steps": 5}"#, Some(40.0)),
            (r#"{"step": 9, "total_steps": 5}"#, Some(100.0)),
            (r#"{"step": 2, "total_steps": 0}"#, None),
            (r#"{"step": 2}"#, None),
            (r#"{}"#, None),
            (
                r#"{"percent": 10, "step": 4, "total_steps": 5}"#,
                Some(10.0),
            ),
        ];
        for (json, want) in cases {
            assert_eq!(
                Progress::parse(json.as_bytes()).unwrap().percent_done(),
                *want,
                "{json}"
            );
        }
    }

    #[test]
    fn full_form_and_errors() {
        let p = Progress::parse(
            br#"{"percent": 40, "step": 2, "total_steps": 5, "step_name": "Running tests",
                "updated_at": "2026-01-09T14:25:00Z", "eta_seconds": 120}"#,
        )
        .unwrap();
        assert_eq!(p.step_name.as_deref(), Some("Running tests"));
        assert_eq!(p.eta_seconds, Some(120));
        assert!(p.updated_at.is_some());
        assert!(Progress::parse(b"{\"percent\": 4").is_err());
        assert!(Progress::parse(b"[]").is_err());
    }
}
