//! What a Claude Code session recorded about its job: the session (for reply and resume), the
//! figures of its run (model, turns, tokens, cost) and what it is doing right now. The
//! supervisor writes them from the agent's stream-json output; any agent that writes the same
//! fields gets the same treatment. Every field is optional and read leniently, like meta.json.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jobs::model::format::{FormatError, object};
use crate::jobs::model::time::parse_timestamp;

/// meta.json's `usage`: the figures of the run, as its last `result` line gave them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// The model the session ran on (from the stream's `init` line).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    pub turns: Option<u64>,
    pub duration_ms: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_creation_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The result's `subtype` (`success`, `error_max_turns`, `error_during_execution`, ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    /// Why the run failed, in Claude Code's words (an API error, a refused flag), if it did.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// When the usage limit that refused the run resets, to the second, where the stream says
    /// it (a `rate_limit_event`, the refused request's `rate_limit_info`, the 1.x `|<epoch>`):
    /// the words of `error` give it to the minute at best.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<DateTime<Utc>>,
}

impl Usage {
    /// meta.json's `usage`, if it is an object; fields of the wrong type read as absent.
    pub fn from_meta(value: Option<&Value>) -> Option<Usage> {
        let map = value?.as_object()?;
        let count = |k: &str| map.get(k).and_then(Value::as_u64);
        let text = |k: &str| {
            map.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Some(Usage {
            model: text("model"),
            turns: count("turns"),
            duration_ms: count("duration_ms"),
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cache_read_tokens: count("cache_read_tokens"),
            cache_creation_tokens: count("cache_creation_tokens"),
            cost_usd: map
                .get("cost_usd")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite() && *c >= 0.0),
            outcome: text("outcome"),
            error: text("error"),
            resets_at: map
                .get("resets_at")
                .and_then(Value::as_str)
                .and_then(parse_timestamp),
        })
    }

    /// Every token the run consumed or produced, caches included.
    pub fn total_tokens(&self) -> u64 {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_creation_tokens,
        ]
        .into_iter()
        .flatten()
        .sum()
    }
}

/// One result of a run, with its own figures (not the run's so far) and when it came. Claude
/// Code may answer several times in one run (`-p` waits for the background tasks the model
/// started, and answers again when they end); meta.json's `results` keeps each, the first
/// [`RESULTS_KEPT`] of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResult {
    pub at: Option<DateTime<Utc>>,
    pub usage: Usage,
}

/// The results meta.json keeps of one run: a few in practice, a bounded number whatever an
/// agent prints.
pub const RESULTS_KEPT: usize = 32;

impl RunResult {
    /// meta.json's `results`, if it is an array; elements that are not objects with a `usage`
    /// object are skipped.
    pub fn list_from_meta(value: Option<&Value>) -> Vec<RunResult> {
        value
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| {
                Some(RunResult {
                    at: r
                        .get("at")
                        .and_then(Value::as_str)
                        .and_then(parse_timestamp),
                    usage: Usage::from_meta(r.get("usage"))?,
                })
            })
            .take(RESULTS_KEPT)
            .collect()
    }
}

/// A cost as a person reads it: `$0.42`, `$12.34`, `$1234`; under a cent, `<$0.01`.
pub fn format_cost(usd: f64) -> String {
    if usd >= 1000.0 {
        format!("${usd:.0}")
    } else if usd > 0.0 && usd < 0.005 {
        "<$0.01".into()
    } else {
        format!("${usd:.2}")
    }
}

/// A token count in a few columns: `950`, `12.3k`, `4.5M`.
pub fn format_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..999_950 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

impl Usage {
    /// `12.3k in · 2.1k out · 45.0k cache read · 1.2k cache write`: the counts that are known.
    pub fn tokens_text(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.input_tokens, "in"),
            (self.output_tokens, "out"),
            (self.cache_read_tokens, "cache read"),
            (self.cache_creation_tokens, "cache write"),
        ]
        .into_iter()
        .filter_map(|(n, what)| n.map(|n| format!("{} {what}", format_tokens(n))))
        .collect();
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

/// `activity.json`: what the agent is doing now (a tool call in flight, a turn being written),
/// replaced atomically by the supervisor and removed when nothing is in flight. While it exists
/// the job is busy, not stalled, however long the call takes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Activity {
    /// One line for a person: `Bash: npm test`, `writing`.
    pub what: String,
    /// When it began.
    pub since: Option<DateTime<Utc>>,
}

impl Activity {
    pub fn parse(bytes: &[u8]) -> Result<Activity, FormatError> {
        let map = object(bytes)?;
        Ok(Activity {
            what: map
                .get("what")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            since: map
                .get("since")
                .and_then(Value::as_str)
                .and_then(parse_timestamp),
        })
    }

    /// The file's content.
    pub fn to_json(&self) -> Vec<u8> {
        let mut map = serde_json::Map::new();
        map.insert("what".into(), Value::from(self.what.clone()));
        if let Some(since) = self.since {
            map.insert("since".into(), Value::from(since.to_rfc3339()));
        }
        let mut bytes = Value::Object(map).to_string().into_bytes();
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_reads_what_is_there_and_ignores_the_rest() {
        let v = json!({"model": "claude-sonnet-4-5", "turns": 3, "input_tokens": 10,
            "output_tokens": "many", "cost_usd": 0.25, "outcome": "success", "zzz": [1]});
        let u = Usage::from_meta(Some(&v)).unwrap();
        assert_eq!(u.model, "claude-sonnet-4-5");
        assert_eq!(u.turns, Some(3));
        assert_eq!(u.output_tokens, None);
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.total_tokens(), 10);
        assert_eq!(Usage::from_meta(Some(&json!("x"))), None);
        assert_eq!(Usage::from_meta(None), None);
    }

    #[test]
    fn usage_refuses_a_negative_or_infinite_cost() {
        let u = Usage::from_meta(Some(&json!({"cost_usd": -1.0}))).unwrap();
        assert_eq!(u.cost_usd, None);
    }

    #[test]
    fn figures_read_at_a_glance() {
        let costs = [0.0, 0.004, 0.005, 0.4249, 12.346, 999.99, 1234.4];
        let shown: Vec<String> = costs.into_iter().map(format_cost).collect();
        assert_eq!(
            shown,
            [
                "$0.00", "<$0.01", "$0.01", "$0.42", "$12.35", "$999.99", "$1234"
            ]
        );
        let counts = [0, 999, 1_000, 12_345, 999_949, 999_950, 4_500_000];
        let shown: Vec<String> = counts.into_iter().map(format_tokens).collect();
        assert_eq!(
            shown,
            ["0", "999", "1.0k", "12.3k", "999.9k", "1.0M", "4.5M"]
        );
        let u = Usage {
            input_tokens: Some(12_345),
            output_tokens: Some(2_100),
            cache_read_tokens: Some(45_000),
            ..Usage::default()
        };
        assert_eq!(
            u.tokens_text().unwrap(),
            "12.3k in · 2.1k out · 45.0k cache read"
        );
        assert_eq!(Usage::default().tokens_text(), None);
    }

    #[test]
    fn activity_round_trips() {
        let a = Activity {
            what: "Bash: npm test".into(),
            since: parse_timestamp("2026-11-23T12:00:00Z"),
        };
        assert_eq!(Activity::parse(&a.to_json()).unwrap(), a);
        assert!(Activity::parse(b"[]").is_err());
        assert_eq!(Activity::parse(b"{}").unwrap(), Activity::default());
    }
}
