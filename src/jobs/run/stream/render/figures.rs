//! A run's figures from its `result` lines, and the summary line each one gets.
//!
//! One run of Claude Code may end in several results: `-p` waits for the background tasks the
//! model started and answers again when they end (a second `result`, `result_index` 1, from
//! 2.1.3xx on sometimes after a second `system/init`). Each result's `usage` and `num_turns`
//! are its own (since the previous result): they add up. Its `total_cost_usd` is not: it is
//! what the process spent so far, and from 2.1.3xx on what the whole *session* spent, earlier
//! runs of a resumed session included. A result's own cost is its
//! `model_usage_since_last_result` when it has one (2.1.3xx), else the growth of
//! `total_cost_usd` since the previous result of the same process (2.1.197, whose total starts
//! at zero in each process). A job's cost is then its run's and nothing more, whichever version
//! ran it, and a reply chain is never counted again at each of its links.

use std::fmt::Write as _;

use serde_json::Value;

use super::{SHOWN_COLUMNS, text};
use crate::jobs::model::session::Usage;
use crate::jobs::text::sanitize::ellipsize;

/// The figures of a run so far, over the results it has given.
#[derive(Debug, Default)]
pub struct RunFigures {
    /// Boxed: the renderer that holds it stays small until a result comes.
    run: Option<Box<Usage>>,
    results: u64,
    /// The last `total_cost_usd` this process reported.
    reported: f64,
}

impl RunFigures {
    /// Takes in a `result` line: its own figures, which of the run's results it is (from 1),
    /// and the run's figures with it (status and error from this last one).
    pub fn add(&mut self, v: &Value, model: &str) -> (Usage, u64, Usage) {
        let mut own = usage_of(v, model);
        let total = own.cost_usd;
        own.cost_usd = match since_last_result(v) {
            Some(cost) => Some(cost),
            None => total.map(|t| (t - self.reported).max(0.0)),
        };
        if let Some(t) = total {
            self.reported = t;
        }
        self.results += 1;
        let run = match self.run.take() {
            None => own.clone(),
            Some(before) => added(*before, &own),
        };
        self.run = Some(Box::new(run.clone()));
        (own, self.results, run)
    }
}

/// The cost `model_usage_since_last_result` gives (the sum over its models), if the line has
/// it.
fn since_last_result(v: &Value) -> Option<f64> {
    let models = v["model_usage_since_last_result"].as_object()?;
    // Folded from +0.0: an empty f64 sum is -0.0, which would print as `$-0.0000`.
    let cost = models
        .values()
        .filter_map(|m| m["costUSD"].as_f64())
        .filter(|c| c.is_finite() && *c >= 0.0)
        .fold(0.0, |a, c| a + c);
    Some(cost)
}

/// `before` and then `then`: counts and cost summed, the rest `then`'s.
fn added(before: Usage, then: &Usage) -> Usage {
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    Usage {
        model: then.model.clone(),
        turns: sum(before.turns, then.turns),
        duration_ms: sum(before.duration_ms, then.duration_ms),
        input_tokens: sum(before.input_tokens, then.input_tokens),
        output_tokens: sum(before.output_tokens, then.output_tokens),
        cache_read_tokens: sum(before.cache_read_tokens, then.cache_read_tokens),
        cache_creation_tokens: sum(before.cache_creation_tokens, then.cache_creation_tokens),
        cost_usd: match (before.cost_usd, then.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        },
        outcome: then.outcome.clone(),
        error: then.error.clone(),
        resets_at: then.resets_at,
    }
}

/// The figures of one `result` line as it gives them; `model` is the session's, from its init
/// line. Its cost is Claude Code's `total_cost_usd`, which is not the result's own: see
/// [`RunFigures`].
pub fn usage_of(v: &Value, model: &str) -> Usage {
    let count = |x: &Value| x.as_u64();
    let u = &v["usage"];
    let model = if model.is_empty() {
        // An init line missed (cut, or the stream began elsewhere): the model that was billed.
        v["modelUsage"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .unwrap_or_default()
    } else {
        model.to_owned()
    };
    let failed = v["is_error"].as_bool().unwrap_or(false) || v["subtype"] != "success";
    let (error, resets_at) = if failed {
        let words = error_words(v);
        (error_text(&words), epoch_of(&words))
    } else {
        (String::new(), None)
    };
    Usage {
        model,
        turns: count(&v["num_turns"]),
        duration_ms: count(&v["duration_ms"]),
        input_tokens: count(&u["input_tokens"]),
        output_tokens: count(&u["output_tokens"]),
        cache_read_tokens: count(&u["cache_read_input_tokens"]),
        cache_creation_tokens: count(&u["cache_creation_input_tokens"]),
        cost_usd: v["total_cost_usd"]
            .as_f64()
            .filter(|c| c.is_finite() && *c >= 0.0),
        outcome: text(&v["subtype"]).to_owned(),
        error,
        resets_at,
    }
}

/// Why a run failed, in Claude Code's words: its result text, else its `errors`, else nothing
/// (the outcome says it). A subscription's usage limit given as `...|<epoch>` gets its reset
/// time in words.
fn error_text(t: &str) -> String {
    match (t.rsplit_once('|'), epoch_of(t)) {
        (Some((words, _)), Some(at)) => {
            format!("{words} (resets {})", at.format("%Y-%m-%d %H:%M UTC"))
        }
        _ => t.to_owned(),
    }
}

/// The result's words as Claude Code gave them, cut to what is kept.
fn error_words(v: &Value) -> String {
    let mut t = text(&v["result"]).trim().to_owned();
    if t.is_empty() {
        t = v["errors"]
            .as_array()
            .map(|e| e.iter().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default()
            .join("\n");
    }
    ellipsize(&t, 4 * SHOWN_COLUMNS)
}

/// The reset of the 1.x form, `Claude AI usage limit reached|<Unix seconds>`.
fn epoch_of(words: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let (_, epoch) = words.rsplit_once('|')?;
    if epoch.len() < 9 || !epoch.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    chrono::DateTime::from_timestamp(epoch.parse().ok()?, 0)
}

/// `── success · 4 turns · 12.3s · 4,800 in / 160 out / 1,200 cache read / 0 cache write
/// tokens · $0.0286`; a failed run says why first, in Claude Code's words: `── failed (API
/// error 401): Invalid API key · Fix external API key · 1 turn · ...` (Claude Code calls such a
/// run a `success` that `is_error`: it is named `failed`; another outcome keeps its name).
///
/// A run's later result (Claude Code 2.1.3xx waits for background tasks and answers again)
/// says which it is: `── success · result 2 · 1 turn · ...`.
pub fn summary(u: &Usage, api_status: Option<u64>, index: u64) -> String {
    format!("── {}\n", described(u, api_status, index))
}

/// [`summary`]'s words, without its rule and newline (a job's timeline shows each result so).
pub fn described(u: &Usage, api_status: Option<u64>, index: u64) -> String {
    let mut line = String::new();
    if u.error.is_empty() {
        line.push_str(if u.outcome.is_empty() {
            "ended"
        } else {
            &u.outcome
        });
    } else {
        line.push_str(match u.outcome.as_str() {
            "" | "success" => "failed",
            other => other,
        });
        if let Some(s) = api_status {
            let _ = write!(line, " (API error {s})");
        }
        let reason = u.error.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let _ = write!(line, ": {}", ellipsize(reason.trim(), SHOWN_COLUMNS));
    }
    if index > 1 {
        let _ = write!(line, " · result {index}");
    }
    if let Some(t) = u.turns {
        let _ = write!(line, " · {t} turn{}", if t == 1 { "" } else { "s" });
    }
    if let Some(ms) = u.duration_ms {
        let _ = write!(line, " · {:.1}s", ms as f64 / 1000.0);
    }
    let tokens = [
        (u.input_tokens, "in"),
        (u.output_tokens, "out"),
        (u.cache_read_tokens, "cache read"),
        (u.cache_creation_tokens, "cache write"),
    ];
    let shown: Vec<String> = tokens
        .iter()
        .filter_map(|(n, what)| n.map(|n| format!("{} {what}", thousands(n))))
        .collect();
    if !shown.is_empty() {
        let _ = write!(line, " · {} tokens", shown.join(" / "));
    }
    if let Some(c) = u.cost_usd {
        let _ = write!(line, " · ${c:.4}");
    }
    line
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
