//! The figures of a prompt's turn, wherever the agent gives them: the response's `usage`
//! (ACP's own: `inputTokens`, `outputTokens`, `cachedReadTokens`, `cachedWriteTokens`,
//! `thoughtTokens`), else Gemini CLI's `_meta.quota` (`token_count`, and the model in
//! `model_usage`); the cost from the last `usage_update` that gave one in US dollars. They go
//! into the same fields as Claude Code's (`Usage`), its outcome `success` for a turn that ended
//! as asked (`end_turn`), else the stop reason, with why in words.

use serde_json::Value;

use crate::jobs::model::session::Usage;

/// Why a turn that did not end as asked ended, for a person.
pub fn stop_words(reason: &str) -> String {
    match reason {
        "max_tokens" => "the model reached its limit of tokens".into(),
        "max_turn_requests" => "the agent reached its limit of model requests in one turn".into(),
        "refusal" => "the agent refused to go on".into(),
        "cancelled" => "the turn was cancelled".into(),
        other => format!("the turn ended: {other}"),
    }
}

/// The figures of the `session/prompt` response `result`, which took `duration_ms`; `cost` the
/// last cost in US dollars an update gave.
pub fn of_response(result: &Value, cost: Option<f64>, duration_ms: u64) -> Usage {
    let reason = result["stopReason"].as_str().unwrap_or_default();
    let count = |v: &Value| v.as_u64();
    let u = &result["usage"];
    let quota = &result["_meta"]["quota"];
    let (input, output, read, write) = if u.is_object() {
        let thought = count(&u["thoughtTokens"]);
        let output = match (count(&u["outputTokens"]), thought) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        (
            count(&u["inputTokens"]),
            output,
            count(&u["cachedReadTokens"]),
            count(&u["cachedWriteTokens"]),
        )
    } else {
        let t = &quota["token_count"];
        (
            count(&t["input_tokens"]),
            count(&t["output_tokens"]),
            None,
            None,
        )
    };
    let model = quota["model_usage"]
        .as_array()
        .and_then(|m| m.iter().find_map(|m| m["model"].as_str()))
        .unwrap_or_default()
        .to_owned();
    let (outcome, error) = match reason {
        "end_turn" => ("success".to_owned(), String::new()),
        "" => ("ended".to_owned(), String::new()),
        other => (other.to_owned(), stop_words(other)),
    };
    Usage {
        model,
        turns: None,
        duration_ms: Some(duration_ms),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_creation_tokens: write,
        cost_usd: cost,
        outcome,
        error,
        // An ACP agent says nothing of a usage limit's reset (yet).
        resets_at: None,
    }
}

/// The cost a `usage_update` gives, when in US dollars.
pub fn cost_of_update(update: &Value) -> Option<f64> {
    let cost = &update["cost"];
    let usd = cost["currency"]
        .as_str()
        .is_none_or(|c| c.eq_ignore_ascii_case("USD"));
    cost["amount"]
        .as_f64()
        .filter(|c| usd && c.is_finite() && *c >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_come_from_acps_usage_or_geminis_quota() {
        let gemini = json!({"stopReason": "end_turn", "_meta": {"quota": {
            "token_count": {"input_tokens": 20, "output_tokens": 10},
            "model_usage": [{"model": "gemini-3.1-pro-preview", "token_count": {}}, {"model": "auto"}]}}});
        let u = of_response(&gemini, None, 1500);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.model.as_str(),
                u.outcome.as_str(),
                u.duration_ms
            ),
            (
                Some(20),
                Some(10),
                "gemini-3.1-pro-preview",
                "success",
                Some(1500)
            )
        );
        let acp = json!({"stopReason": "max_tokens", "usage": {"inputTokens": 7, "outputTokens": 3,
            "thoughtTokens": 2, "cachedReadTokens": 100, "totalTokens": 112}});
        let u = of_response(&acp, Some(0.25), 10);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_creation_tokens,
                u.cost_usd
            ),
            (Some(7), Some(5), Some(100), None, Some(0.25))
        );
        assert_eq!(u.outcome, "max_tokens");
        assert_eq!(u.error, "the model reached its limit of tokens");
        let none = of_response(&json!({"stopReason": "end_turn"}), None, 1);
        assert_eq!((none.input_tokens, none.output_tokens), (None, None));
    }

    #[test]
    fn a_cost_counts_only_in_dollars() {
        assert_eq!(
            cost_of_update(&json!({"cost": {"amount": 0.5, "currency": "USD"}})),
            Some(0.5)
        );
        assert_eq!(cost_of_update(&json!({"cost": {"amount": 0.5}})), Some(0.5));
        assert_eq!(
            cost_of_update(&json!({"cost": {"amount": 0.5, "currency": "EUR"}})),
            None
        );
        assert_eq!(cost_of_update(&json!({"cost": {"amount": -1.0}})), None);
        assert_eq!(cost_of_update(&json!({"used": 5})), None);
    }
}
