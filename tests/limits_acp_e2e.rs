//! The usage limit of the agents luzia runs through the Agent Client Protocol, with the real
//! pinned CLIs against the fake model APIs: Codex (`codex-acp` 0.16.0) refused by the Responses
//! API's 429 `usage_limit_reached` with its `resets_at`, and Gemini CLI (0.61.0, `--acp`) by the
//! Gemini API's 429 `RESOURCE_EXHAUSTED`. Each refuses `session/prompt` with its own words
//! (tests/golden/codex, tests/golden/gemini): the job is `limited` with the reset they say,
//! holds that agent's tasks, and Codex's is continued in its own session at the reset. Gemini
//! CLI's daily quota says no reset: that job is `failed`, with the words. Without a CLI a test
//! says SKIPPED loudly and passes. Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use common::acp::{Agent, World};
use common::agents::{CODEX_ACP, GEMINI, agent_or_skip};
use common::fake_responses::{self, FakeResponses};
use common::gemini::{FakeGemini, Reply as GeminiReply};
use common::http::Reply;
use serde_json::Value;

/// Long enough for the reset a minute ahead, its margin and the continuation.
const WAIT: Duration = Duration::from_secs(180);

fn codex_world(codex_acp: &Path, script: Vec<Reply>) -> World<FakeResponses> {
    World::new(FakeResponses::start(script), None, |base, api| {
        let home = base.join("home");
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::write(home.join(".codex/config.toml"), api.codex_config()).unwrap();
        Agent {
            kind: "codex",
            command: vec![codex_acp.to_str().unwrap().to_owned()],
            home,
            env: vec![(fake_responses::KEY_VAR.into(), fake_responses::KEY.into())],
        }
    })
}

fn gemini_world(gemini: &Path, script: Vec<GeminiReply>) -> World<FakeGemini> {
    World::new(FakeGemini::start(script), None, |base, api| Agent {
        kind: "gemini",
        command: vec![gemini.to_str().unwrap().to_owned(), "--acp".into()],
        home: api.home(base),
        env: api.agent_env(),
    })
}

fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn job<A>(w: &World<A>, id: &str) -> Value
where
    A: common::acp::Api,
{
    serde_json::from_str(&w.ok(&["jobs", id, "--json"])).unwrap()
}

/// The hold on disk for `agent`'s account.
fn hold<A: common::acp::Api>(w: &World<A>, agent: &str) -> Value {
    let text = fs::read_to_string(w.base.join(format!("queue/limits/{agent}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn codex_refused_by_its_usage_limit_is_limited_holds_codex_and_goes_on_at_the_reset() {
    let test = "codex_refused_by_its_usage_limit";
    let Some(codex) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    // Codex says the reset to the minute: a reset at a minute's last second is read exactly.
    let now = UNIX_EPOCH.elapsed().unwrap().as_secs() as i64;
    let at = (now + 20) / 60 * 60 + 59;
    let w = codex_world(
        &codex,
        vec![Reply::limit(at), Reply::text("The docs are written.")],
    );
    let id = w.run("Write the docs.");
    let ended = w.wait_finished(&id);
    let log = w.log(&id);
    assert_eq!(ended["status"], "limited", "{ended}\n{log}");
    let want = chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(ended["resets_at"], want.as_str(), "{ended}");
    assert!(
        log.contains("You've hit your usage limit. Try again at "),
        "{log}"
    );
    assert_eq!(
        ended["exit_code"], 1,
        "luzia's own signal is not the agent's word"
    );
    assert_eq!(hold(&w, "codex")["job"], id.as_str());

    // Codex's limit holds Codex's tasks.
    let held = w.ok(&["run", "p", "Write the changelog."]);
    assert!(
        held.starts_with("queued ") && held.contains("held: codex limit until "),
        "{held}"
    );

    // At the reset, the job goes on in its own session (the waiter its supervisor left looks),
    // then the held task starts.
    let next = wait_for("the continuation", || {
        job(&w, &id)["retried_by"]
            .as_array()?
            .first()?
            .as_str()
            .map(str::to_owned)
    });
    let done = w.wait_finished(&next);
    assert_eq!(done["status"], "completed", "{done}\n{}", w.log(&next));
    let meta = w.meta(&next);
    assert_eq!(meta["session_id"], ended["session_id"], "{meta}");
    assert_eq!(meta["resumes"], id.as_str());
    // When its job began (meta.json's `started`, to the second).
    let began: chrono::DateTime<chrono::Utc> = meta["started"].as_str().unwrap().parse().unwrap();
    let late = began.timestamp() - at;
    assert!(late >= 5, "the margin: {late}s");
    eprintln!("codex continued {late}s after the reset");
    let turns = w.api.requests();
    let last = turns.last().unwrap().to_string();
    assert!(
        last.contains("Write the docs.") && last.contains("usage limit that stopped you"),
        "the same conversation, continued: {last}"
    );
    wait_for("the held task", || {
        let all: Vec<Value> = serde_json::from_str(&w.ok(&["jobs", "--json"])).unwrap();
        all.iter()
            .any(|j| j["task"] == "Write the changelog.")
            .then_some(())
    });
}

#[test]
fn gemini_refused_by_its_quota_is_limited_until_the_time_it_says() {
    let Some(gemini) = agent_or_skip("gemini_refused_by_its_quota", &GEMINI) else {
        return;
    };
    // Past Gemini CLI's five minutes: it gives up at once and says when to try again.
    let w = gemini_world(
        &gemini,
        vec![GeminiReply::limit(
            "GenerateRequestsPerProjectPerModel-FreeTier",
            "3600s",
        )],
    );
    let before = chrono::Utc::now();
    let id = w.run("Write the docs.");
    let ended = w.wait_finished(&id);
    let log = w.log(&id);
    assert_eq!(ended["status"], "limited", "{ended}\n{log}");
    let resets: chrono::DateTime<chrono::Utc> =
        ended["resets_at"].as_str().unwrap().parse().unwrap();
    let hour = chrono::Duration::seconds(3600);
    assert!(
        resets >= before + hour && resets <= chrono::Utc::now() + hour,
        "an hour from the refusal: {resets}"
    );
    assert!(log.contains("Please retry in 3600s."), "{log}");
    assert_eq!(hold(&w, "gemini")["job"], id.as_str());
    assert!(
        w.base.join("queue/limits/resume").join(&id).exists(),
        "its session is to be continued at the reset"
    );
    let held = w.ok(&["run", "p", "Write the changelog."]);
    assert!(held.contains("held: gemini limit until "), "{held}");
}

#[test]
fn gemini_s_daily_quota_says_no_reset_and_the_job_fails_with_its_words() {
    let Some(gemini) = agent_or_skip("gemini_s_daily_quota", &GEMINI) else {
        return;
    };
    let w = gemini_world(
        &gemini,
        vec![GeminiReply::limit(
            "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "41s",
        )],
    );
    let id = w.run("Write the docs.");
    let ended = w.wait_finished(&id);
    let log = w.log(&id);
    assert_eq!(ended["status"], "failed", "{ended}\n{log}");
    assert_eq!(ended["resets_at"], Value::Null);
    assert_eq!(
        w.meta(&id)["usage"]["error"],
        "You have exhausted your daily quota on this model."
    );
    assert!(!w.base.join("queue/limits/gemini.json").exists());
}
