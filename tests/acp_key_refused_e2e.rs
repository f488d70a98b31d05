//! An ACP agent whose key its API refuses: the everyday failure of a server whose key was
//! rotated or mistyped. A fresh HOME with no luzia config, only the agent's key (and endpoint)
//! set, the real CLI on PATH, and the scripted API on 127.0.0.1 accepting only another key and
//! refusing this one in its provider's words (Google's 400 `API_KEY_INVALID`, OpenAI's 401
//! `invalid_api_key`). `luzia run --agent NAME "task"` ends `failed`, and `luzia jobs ID` shows
//! the agent's own `<agent>-key-refused` issue first, with a fix that says to replace the key.
//!
//! And Codex's own case: it keeps the key it was first logged in with (`~/.codex/auth.json`)
//! and sends that one, whatever the environment holds. After the key is rotated, the job fails
//! on the old key while the environment has the new one; the issue names that cause, and its
//! fix (Codex keeping no login) makes the next job pass with the new key.
//!
//! Runs as root with the real CLIs (CI pins and installs them; without one the test says
//! SKIPPED loudly, or fails where `LUZIA_REQUIRE_AGENTS=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_fresh;
mod common;

use std::fs;

use acp_fresh::{ANSWER, Fresh, nothing};
use common::agents::{CODEX_ACP, GEMINI, QWEN, agent_or_skip};
use common::fake_chat::FakeChat;
use common::fake_responses::FakeResponses;
use common::gemini::{self, FakeGemini};
use common::git_or_skip;
use common::http::Reply;

/// The key the APIs take after the rotation; the agents are given another.
const NEW_KEY: &str = "sk-new-key-after-rotation-0002";
const OLD_KEY: &str = "sk-old-key-before-rotation-0001";

#[test]
fn gemini_whose_key_is_refused_is_the_gemini_key_refused_issue() {
    let test = "gemini_whose_key_is_refused_is_the_gemini_key_refused_issue";
    let Some(gemini) = agent_or_skip(test, &GEMINI) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let api = FakeGemini::start(vec![gemini::Reply::text(ANSWER)]);
    api.accept_only(NEW_KEY);
    let fresh = Fresh::new(&gemini, "gemini", |base| (api.home(base), api.agent_env()));
    let failed = fresh.failed_on(
        "gemini",
        "gemini-key-refused",
        &["Replace the key", "GEMINI_API_KEY"],
    );
    // Gemini CLI 0.61.0 does not retry a 400: the prompt is refused at once.
    eprintln!("{test}: the job ended in {:?}", failed.took);
    assert!(
        failed
            .log
            .contains("luzia: Gemini CLI refused session/prompt: "),
        "{}",
        failed.log
    );
    assert!(!api.refused_keys().is_empty(), "the API was never asked");
}

#[test]
fn qwen_whose_key_is_refused_is_the_qwen_key_refused_issue() {
    let test = "qwen_whose_key_is_refused_is_the_qwen_key_refused_issue";
    let Some(qwen) = agent_or_skip(test, &QWEN) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let api = FakeChat::start(vec![Reply::text(ANSWER)]);
    api.accept_only(NEW_KEY);
    let fresh = Fresh::new(&qwen, "qwen", |base| {
        let home = base.join("home");
        api.qwen_home(&home);
        (home, api.qwen_env())
    });
    let failed = fresh.failed_on(
        "qwen",
        "qwen-key-refused",
        &["Replace the key", "OPENAI_API_KEY"],
    );
    eprintln!("{test}: the job ended in {:?}", failed.took);
    assert!(!api.refused_keys().is_empty(), "the API was never asked");
}

/// Codex's config pointing OpenAI's provider at `api`, and the key `key` exported: what a user
/// of OpenAI's API has.
fn codex_home(api: &FakeResponses, key: &str) -> impl FnOnce(&std::path::Path) -> Setup {
    let config = format!("openai_base_url = \"{}\"\n", api.base_url());
    let key = key.to_owned();
    move |base| {
        let (home, _) = nothing(base);
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::write(home.join(".codex/config.toml"), config).unwrap();
        (home, vec![("OPENAI_API_KEY".into(), key)])
    }
}

type Setup = (std::path::PathBuf, Vec<(String, String)>);

/// What the fix of `codex-key-refused` must name.
const CODEX_FIX: &[&str] = &["~/.codex/auth.json", "codex logout", "ephemeral"];

#[test]
fn codex_whose_key_is_refused_is_the_codex_key_refused_issue() {
    let test = "codex_whose_key_is_refused_is_the_codex_key_refused_issue";
    let Some(codex_acp) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // A mistyped key: luzia logs Codex in with it, and the API refuses it.
    let api = FakeResponses::start(vec![Reply::text(ANSWER)]);
    api.accept_only(NEW_KEY);
    let fresh = Fresh::new(&codex_acp, "codex-acp", codex_home(&api, "sk-mistyped-key"));
    let failed = fresh.failed_on("codex", "codex-key-refused", CODEX_FIX);
    // codex-acp 0.16.0 retries a 401 five times over its WebSocket, five over HTTPS.
    eprintln!("{test}: the job ended in {:?}", failed.took);
    assert!(
        failed
            .log
            .contains("luzia: Codex asked for a login: authenticating with OPENAI_API_KEY"),
        "{}",
        failed.log
    );
    let refused = api.refused_keys();
    assert!(
        !refused.is_empty() && refused.iter().all(|k| k == "sk-mistyped-key"),
        "{refused:?}"
    );
}

#[test]
fn codex_sending_the_key_it_saved_before_a_rotation_is_the_codex_key_refused_issue() {
    let test = "codex_sending_the_key_it_saved_before_a_rotation_is_the_codex_key_refused_issue";
    let Some(codex_acp) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // The first job with the key of the day: luzia logs Codex in with it, and Codex keeps it.
    let api = FakeResponses::start(vec![Reply::text(ANSWER), Reply::text(ANSWER)]);
    api.accept_only(OLD_KEY);
    let mut fresh = Fresh::new(&codex_acp, "codex-acp", codex_home(&api, OLD_KEY));
    fresh.first_job("codex");
    let saved = fs::read_to_string(fresh.home.join(".codex/auth.json")).unwrap();
    assert!(saved.contains(OLD_KEY), "{saved}");

    // The key is rotated: the API takes only the new one, which the environment now holds.
    api.accept_only(NEW_KEY);
    fresh.vars = vec![("OPENAI_API_KEY".into(), NEW_KEY.into())];
    let failed = fresh.failed_on("codex", "codex-key-refused", CODEX_FIX);
    eprintln!("{test}: the job ended in {:?}", failed.took);
    let refused = api.refused_keys();
    assert!(
        !refused.is_empty() && refused.iter().all(|k| k == OLD_KEY),
        "Codex sent another key than the one it saved: {refused:?}"
    );
    // Codex was not refused a session (it has a login), so luzia did not log it in.
    assert!(!failed.log.contains("asked for a login"), "{}", failed.log);

    // The fix: Codex keeping no login of its own. luzia then logs it in with the environment's
    // key, and the job passes.
    let config = fresh.home.join(".codex/config.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.insert_str(0, "cli_auth_credentials_store = \"ephemeral\"\n");
    fs::write(&config, text).unwrap();
    let (_, _, log) = fresh.first_job("codex");
    assert!(
        log.contains("luzia: Codex asked for a login: authenticating with OPENAI_API_KEY"),
        "{log}"
    );
}
