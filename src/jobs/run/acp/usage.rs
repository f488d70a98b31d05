//! The figures of a prompt's turn, wherever the agent gives them: the response's `usage`
//! (ACP's own: `inputTokens`, `outputTokens`, `cachedReadTokens`, `cachedWriteTokens`,
//! `thoughtTokens`), else Gemini CLI's `_meta.quota` (`token_count`, and the model in
//! `model_usage`), else the sum of what the agent said of each of its requests to the model
//! (Qwen Code: ACP's names in the `_meta.usage` of a message chunk, [`Requests`]); the cost
//! from the last `usage_update` that gave one in US dollars. They go
//! into the same fields as Claude Code's (`Usage`), its outcome `success` for a turn that ended
//! as asked (`end_turn`), else the stop reason, with why in words. Codex's adapter reports no
//! tokens: they are read from Codex's own session file instead ([`codex_turn`]).

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::jobs::fs::files::read_capped;
use crate::jobs::model::session::Usage;
use crate::jobs::run::agents::codex::rollout::{self, Sessions, Tokens};

/// The most jobs followed back along a session.
const CHAIN_MAX: usize = 1000;
/// The most of a meta.json read.
const META_CAP: u64 = 1024 * 1024;

/// How long Codex is given to write the end of its turn once its adapter has answered.
const ROLLOUT_WAIT: Duration = Duration::from_secs(2);
const ROLLOUT_POLL: Duration = Duration::from_millis(100);

/// Where the tokens of a turn come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokensFrom {
    /// The prompt's response (ACP's `usage`, Gemini CLI's `_meta.quota`).
    Response,
    /// Codex's session file, among these sessions (`None`: the agent's environment has
    /// neither `CODEX_HOME` nor `HOME`).
    CodexSessions(Option<Sessions>),
}

/// The tokens of Codex's turn in session `session`, begun at `since` (Unix seconds), from its
/// session file under `sessions`: read again while the turn's end is not written yet, for at
/// most [`ROLLOUT_WAIT`]. Why there are none, in words, when there are none.
pub async fn codex_turn(
    sessions: Option<&Sessions>,
    session: &str,
    since: i64,
) -> Result<Tokens, String> {
    let sessions = sessions
        .ok_or("the agent's environment has neither CODEX_HOME nor HOME")?
        .clone();
    let deadline = tokio::time::Instant::now() + ROLLOUT_WAIT;
    loop {
        let (s, id) = (sessions.clone(), session.to_owned());
        let read = tokio::task::spawn_blocking(move || rollout::turn_of(&s, &id, since))
            .await
            .map_err(|e| e.to_string())?;
        let late = tokio::time::Instant::now() >= deadline;
        match read {
            Ok(turn) if turn.ended || late => return Ok(turn.tokens),
            Err(unread) if !unread.again || late => return Err(unread.why),
            _ => tokio::time::sleep(ROLLOUT_POLL).await,
        }
    }
}

/// luzia's own stop reason for a turn the agent ended when the operator rejected its request
/// (Codex does, saying `cancelled`): the job ends as decided, not as failed.
pub const DENIED: &str = "denied";

/// Why a turn that did not end as asked ended, for a person.
pub fn stop_words(reason: &str) -> String {
    match reason {
        DENIED => "the agent ended its turn at the denied request; `luzia reply` tells it what \
                   to do instead"
            .into(),
        "max_tokens" => "the model reached its limit of tokens".into(),
        "max_turn_requests" => "the agent reached its limit of model requests in one turn".into(),
        "refusal" => "the agent refused to go on".into(),
        "cancelled" => "the turn was cancelled".into(),
        other => format!("the turn ended: {other}"),
    }
}

/// Tokens in, out (thoughts included), read from and written to the cache.
type Counts = [Option<u64>; 4];

/// The counts of an object in ACP's names (`inputTokens`, ...).
fn acp_counts(u: &Value) -> Counts {
    let count = |v: &Value| v.as_u64();
    let output = match (count(&u["outputTokens"]), count(&u["thoughtTokens"])) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    [
        count(&u["inputTokens"]),
        output,
        count(&u["cachedReadTokens"]),
        count(&u["cachedWriteTokens"]),
    ]
}

/// The tokens of a turn as an agent gives them with each of its requests to the model rather
/// than with the turn's end (Qwen Code sends, after each request, an `agent_message_chunk`
/// whose `_meta.usage` has ACP's names), added up: each request is paid for, a subagent's too.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requests {
    sum: Counts,
}

impl Requests {
    /// Takes one `session/update`; only one that carries `_meta.usage` counts.
    pub fn update(&mut self, update: &Value) {
        let u = &update["_meta"]["usage"];
        if !u.is_object() {
            return;
        }
        for (sum, n) in self.sum.iter_mut().zip(acp_counts(u)) {
            if let Some(n) = n {
                *sum = Some(sum.unwrap_or(0).saturating_add(n));
            }
        }
    }
}

/// The figures of the `session/prompt` response `result`, which took `duration_ms`;
/// `requests` what the updates said of each request to the model, `cost` the last cost in US
/// dollars an update gave.
pub fn of_response(
    result: &Value,
    requests: &Requests,
    cost: Option<f64>,
    duration_ms: u64,
) -> Usage {
    let reason = result["stopReason"].as_str().unwrap_or_default();
    let count = |v: &Value| v.as_u64();
    let u = &result["usage"];
    let quota = &result["_meta"]["quota"];
    let tokens = &quota["token_count"];
    let [input, output, read, write] = if u.is_object() {
        acp_counts(u)
    } else if tokens.is_object() {
        [
            count(&tokens["input_tokens"]),
            count(&tokens["output_tokens"]),
            None,
            None,
        ]
    } else {
        requests.sum
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
        // A usage limit refuses the turn instead: `of_refusal`.
        resets_at: None,
    }
}

/// What an agent said when it refused the turn (its error answering `session/prompt`): Codex
/// (`codex-acp` 0.16) puts its words in `data.message` under a generic `Internal error`, Gemini
/// CLI (0.61) in `message`.
pub fn refusal_words(error: &Value) -> String {
    let words = error["data"]["message"]
        .as_str()
        .or_else(|| error["data"].as_str())
        .or_else(|| error["message"].as_str())
        .unwrap_or_default();
    crate::jobs::text::sanitize::ellipsize(words.trim(), 2000)
}

/// The figures of a turn the agent refused after `duration_ms`, at `now`: its words are the
/// run's error, and where they say a usage limit stopped it and when that resets (Codex's
/// `Try again at 7:39 PM.`, Gemini CLI's `Please retry in 3600s.`, from now), the reset.
pub fn of_refusal(error: &Value, duration_ms: u64, now: DateTime<Utc>) -> Usage {
    let words = refusal_words(error);
    Usage {
        duration_ms: Some(duration_ms),
        outcome: "error".into(),
        resets_at: crate::jobs::model::limit::resets_at(&words, now),
        error: words,
        ..Usage::default()
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

/// What `session` had cost before a job that continues it, as the jobs of `jobs` that ran it
/// recorded it: each its own part, so their sum, from job `resumes` back along `resumes` while
/// the session is the same. `None` when none recorded a cost.
pub fn cost_before(jobs: &Path, resumes: &str, session: &str) -> Option<f64> {
    let mut sum: Option<f64> = None;
    let mut next = Some(resumes.to_owned());
    for _ in 0..CHAIN_MAX {
        let Some(id) = next.take() else { break };
        // A name of the jobs root only: never a path elsewhere.
        if crate::jobs::JobId::parse(&id).is_err() {
            break;
        }
        let Ok(Some(bytes)) = read_capped(&jobs.join(&id).join("meta.json"), META_CAP) else {
            break;
        };
        let meta: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if meta["session_id"] != session {
            break;
        }
        if let Some(c) = meta["usage"]["cost_usd"].as_f64().filter(|c| c.is_finite()) {
            sum = Some(sum.unwrap_or(0.0) + c);
        }
        next = meta["resumes"].as_str().map(str::to_owned);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The error of a JSON-RPC response line, as an agent sent it.
    fn error_of(line: &str) -> Value {
        let v: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        v["error"].clone()
    }

    /// The refusals the real CLIs sent when the fake APIs answered 429 (tests/golden: Codex
    /// through codex-acp 0.16.0, Gemini CLI 0.61.0 with `--acp`): Codex says the reset in the
    /// machine's zone to the minute (the minute's last second is the reset), Gemini CLI how
    /// long from now; its daily quota and Codex without a reset say a limit but no time.
    #[test]
    fn the_real_refusals_of_a_usage_limit_say_when_it_resets() {
        use chrono::TimeZone;
        let local = |d, h, m, s| {
            chrono::Local
                .with_ymd_and_hms(2026, 12, d, h, m, s)
                .earliest()
                .unwrap()
                .to_utc()
        };
        let now = local(4, 18, 39, 5);
        let codex = of_refusal(
            &error_of(include_str!(
                "../../../../tests/golden/codex/usage-limit-codex-acp-0.16.0.jsonl"
            )),
            120,
            now,
        );
        assert_eq!(
            codex.error,
            "You've hit your usage limit. Try again at 7:39 PM."
        );
        assert_eq!(codex.resets_at, Some(local(4, 19, 39, 59)));
        assert_eq!(
            (codex.outcome.as_str(), codex.duration_ms),
            ("error", Some(120))
        );
        let other_day = of_refusal(
            &error_of(include_str!(
                "../../../../tests/golden/codex/usage-limit-other-day-codex-acp-0.16.0.jsonl"
            )),
            1,
            now,
        );
        assert_eq!(other_day.resets_at, Some(local(6, 18, 40, 59)));

        let gemini = of_refusal(
            &error_of(include_str!(
                "../../../../tests/golden/gemini/quota-retry-after-0.61.0.jsonl"
            )),
            1,
            now,
        );
        assert!(gemini.error.starts_with("You exceeded your current quota"));
        assert_eq!(
            gemini.resets_at,
            Some(now + chrono::Duration::seconds(3600))
        );
        assert!(crate::jobs::model::limit::stopped(&gemini.error));

        let daily = of_refusal(
            &error_of(include_str!(
                "../../../../tests/golden/gemini/daily-quota-0.61.0.jsonl"
            )),
            1,
            now,
        );
        assert_eq!(
            daily.error,
            "You have exhausted your daily quota on this model."
        );
        assert_eq!(daily.resets_at, None, "no time said: nothing to wait for");
        let later = json!({"code": -32603, "message": "Internal error", "data": {
            "message": "You've hit your usage limit. Try again later.",
            "codex_error_info": "usage_limit_exceeded"}});
        assert_eq!(of_refusal(&later, 1, now).resets_at, None);
    }

    #[test]
    fn tokens_come_from_acps_usage_or_geminis_quota() {
        let gemini = json!({"stopReason": "end_turn", "_meta": {"quota": {
            "token_count": {"input_tokens": 20, "output_tokens": 10},
            "model_usage": [{"model": "gemini-3.1-pro-preview", "token_count": {}}, {"model": "auto"}]}}});
        let u = of_response(&gemini, &Requests::default(), None, 1500);
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
        let u = of_response(&acp, &Requests::default(), Some(0.25), 10);
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
        let none = of_response(
            &json!({"stopReason": "end_turn"}),
            &Requests::default(),
            None,
            1,
        );
        assert_eq!((none.input_tokens, none.output_tokens), (None, None));
    }

    #[test]
    fn tokens_given_with_each_request_are_added_up_when_the_turn_gives_none() {
        // Qwen Code 0.15: after each request to the model, an empty chunk with its usage.
        let mut requests = Requests::default();
        let each = |input: u64, thought: Option<u64>| {
            let mut usage = json!({"inputTokens": input, "outputTokens": 40,
                "totalTokens": input + 40, "cachedReadTokens": 10});
            if let Some(t) = thought {
                usage["thoughtTokens"] = json!(t);
            }
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""},
                "_meta": {"usage": usage, "durationMs": 12}})
        };
        requests.update(&each(900, None));
        requests.update(&json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "no figures here"}}));
        requests.update(&each(1000, Some(5)));
        let turn = json!({"stopReason": "end_turn"});
        let u = of_response(&turn, &requests, None, 1);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_creation_tokens
            ),
            (Some(1900), Some(85), Some(20), None)
        );
        // A turn that gives its own figures is believed over the requests'.
        let own = json!({"stopReason": "end_turn", "usage": {"inputTokens": 7, "outputTokens": 3}});
        let u = of_response(&own, &requests, None, 1);
        assert_eq!((u.input_tokens, u.output_tokens), (Some(7), Some(3)));
    }

    #[test]
    fn the_cost_before_a_job_is_what_the_jobs_of_its_session_recorded() {
        let root = tempfile::tempdir().unwrap();
        let job = |id: &str, meta: Value| {
            std::fs::create_dir(root.path().join(id)).unwrap();
            std::fs::write(root.path().join(id).join("meta.json"), meta.to_string()).unwrap();
        };
        job(
            "100000-aaaa",
            json!({"session_id": "old", "usage": {"cost_usd": 5.0}}),
        );
        job(
            "100001-bbbb",
            json!({"session_id": "s", "resumes": "100000-aaaa",
            "usage": {"cost_usd": 0.25}}),
        );
        job(
            "100002-cccc",
            json!({"session_id": "s", "resumes": "100001-bbbb"}),
        );
        job(
            "100003-dddd",
            json!({"session_id": "s", "resumes": "100002-cccc",
            "usage": {"cost_usd": 0.5}}),
        );
        job(
            "100004-eeee",
            json!({"session_id": "s", "resumes": "../../etc"}),
        );
        let before = |id| cost_before(root.path(), id, "s");
        assert_eq!(
            before("100003-dddd"),
            Some(0.75),
            "another session's job is not counted"
        );
        assert_eq!(before("100002-cccc"), Some(0.25));
        assert_eq!(before("100000-aaaa"), None);
        assert_eq!(before("100004-eeee"), None);
        assert_eq!(before("no-such-job"), None);
    }

    #[tokio::test]
    async fn codex_tokens_that_cannot_be_read_say_why_within_a_bound() {
        let err = codex_turn(None, "01a24246-32a9-79f2-8dc6-5ebbfc3c4f88", 0)
            .await
            .unwrap_err();
        assert!(err.contains("neither CODEX_HOME nor HOME"), "{err}");
        let root = tempfile::tempdir().unwrap();
        let sessions = Sessions {
            dir: root.path().to_owned(),
            owner: rustix::process::geteuid().as_raw(),
        };
        let begun = std::time::Instant::now();
        let err = codex_turn(Some(&sessions), "01a24246-32a9-79f2-8dc6-5ebbfc3c4f88", 0)
            .await
            .unwrap_err();
        assert!(err.contains("no file of session"), "{err}");
        assert!(
            begun.elapsed() < ROLLOUT_WAIT * 3,
            "looked for again only until the deadline: {:?}",
            begun.elapsed()
        );
        let err = codex_turn(Some(&sessions), "../x", 0).await.unwrap_err();
        assert!(err.contains("not a Codex session id"), "{err}");
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
