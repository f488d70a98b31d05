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
