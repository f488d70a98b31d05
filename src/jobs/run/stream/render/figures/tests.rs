//! The figures of runs whose results the real CLIs printed against the fake Messages API
//! (tests/common/claude.rs: 1,200 input, 40 output and 300 cache-read tokens a message); the
//! lines are cut to the fields that matter here.

use serde_json::{Value, json};

use super::*;

/// 2.1.332, a resumed session's one result: the session spent $0.01698, this run $0.00566.
fn resumed_332() -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 1,
        "duration_ms": 211, "total_cost_usd": 0.016980000000000002, "result_index": 0,
        "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 300,
                  "cache_creation_input_tokens": 0},
        "modelUsage": {"claude-opus-5-5": {"inputTokens": 3600, "costUSD": 0.016980000000000002}},
        "model_usage_since_last_result": {"claude-opus-5-5": {"inputTokens": 1200,
            "costUSD": 0.00566}}})
}

/// A result of a run with `turns` turns over `messages` messages, `total` spent so far and,
/// when `own` is given, 2.1.332's figure of its own.
fn result(turns: u64, messages: u64, total: f64, own: Option<f64>) -> Value {
    let mut v = json!({"type": "result", "subtype": "success", "is_error": false,
        "num_turns": turns, "duration_ms": 100, "total_cost_usd": total,
        "usage": {"input_tokens": 1200 * messages, "output_tokens": 40 * messages,
                  "cache_read_input_tokens": 300 * messages, "cache_creation_input_tokens": 0}});
    if let Some(own) = own {
        v["model_usage_since_last_result"] = json!({"claude-opus-5-5": {"costUSD": own}});
    }
    v
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn a_resumed_session_s_run_costs_its_own_share_not_the_session_s() {
    let mut f = RunFigures::default();
    let (own, index, run) = f.add(&resumed_332(), "claude-opus-5-5");
    assert!(close(own.cost_usd, 0.00566), "{own:?}");
    assert!(close(run.cost_usd, 0.00566), "{run:?}");
    assert_eq!(
        (index, run.input_tokens, run.turns),
        (1, Some(1200), Some(1))
    );
}

#[test]
fn the_results_of_one_run_add_up_on_either_version() {
    // 2.1.332: 2 turns then, after a background task, 1 more; each with its own cost.
    let mut new = RunFigures::default();
    new.add(&result(2, 2, 0.01132, Some(0.01132)), "m");
    let (own, index, run) = new.add(&result(1, 1, 0.01698, Some(0.00566)), "m");
    assert!(close(own.cost_usd, 0.00566), "{own:?}");
    assert_eq!(index, 2);
    assert!(close(run.cost_usd, 0.01698), "{run:?}");
    assert_eq!((run.turns, run.input_tokens), (Some(3), Some(3600)));
    assert_eq!(
        (run.output_tokens, run.cache_read_tokens),
        (Some(120), Some(900))
    );
    // 2.1.197: no figure of its own; the total grows within the process.
    let mut old = RunFigures::default();
    old.add(&result(2, 2, 0.0143, None), "m");
    let (own, _, run) = old.add(&result(1, 1, 0.02145, None), "m");
    assert!(close(own.cost_usd, 0.00715), "{own:?}");
    assert!(close(run.cost_usd, 0.02145), "{run:?}");
    assert_eq!(run.turns, Some(3));
}

#[test]
fn the_run_s_outcome_is_its_last_result_s() {
    let mut f = RunFigures::default();
    f.add(&result(2, 2, 0.01, Some(0.01)), "m");
    let mut failed = result(1, 1, 0.02, Some(0.01));
    failed["subtype"] = json!("error_during_execution");
    failed["is_error"] = json!(true);
    failed["errors"] = json!(["the background task's turn failed"]);
    let (_, _, run) = f.add(&failed, "m");
    assert_eq!(run.outcome, "error_during_execution");
    assert_eq!(run.error, "the background task's turn failed");
    let mut f = RunFigures::default();
    f.add(&failed, "m");
    let (_, _, run) = f.add(&result(1, 1, 0.03, Some(0.01)), "m");
    assert_eq!((run.outcome.as_str(), run.error.as_str()), ("success", ""));
}

#[test]
fn a_later_result_says_which_it_is() {
    let mut f = RunFigures::default();
    f.add(&result(2, 2, 0.01132, Some(0.01132)), "m");
    let (own, index, _) = f.add(&result(1, 1, 0.01698, Some(0.00566)), "m");
    let line = summary(&own, None, index);
    assert!(
        line.starts_with("── success · result 2 · 1 turn · 0.1s · 1,200 in"),
        "{line}"
    );
    assert!(line.ends_with("· $0.0057\n"), "{line}");
    assert!(
        !summary(&own, None, 1).contains("result"),
        "the first says nothing"
    );
}
