//! An ACP agent's first job, from nothing: a fresh HOME with no luzia config file at all and no
//! XDG variables, `luzia` and the agent's CLI on PATH, only what a user of that agent has set
//! (its key and endpoint in the environment, its own settings file in HOME), standing in a git
//! repository of their own. `luzia run --agent NAME "task"` starts the kind's default command
//! line (`gemini --acp`, `qwen --acp`) found on PATH, and the job completes with the model's
//! answer in its output and its tokens recorded, in the per-user jobs root; `luzia doctor
//! --agent NAME` says beforehand that it is ready.
//!
//! And the same first job with no credentials at all: it fails, and `luzia jobs ID` names the
//! agent's own known issue (`gemini-not-logged-in`, ...) with the fix, the variables to set.
//!
//! Runs as root with the real CLIs (CI pins and installs them; without one the test says
//! SKIPPED loudly, or fails where `LUZIA_REQUIRE_AGENTS=1`), against the scripted APIs the
//! tests start on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_fresh;
mod common;

use std::fs;

use acp_fresh::{ANSWER, Fresh, nothing};
use common::agents::{CODEX_ACP, GEMINI, OPENCODE, QWEN, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::fake_responses::{self, FakeResponses};
use common::gemini::{self, FakeGemini};
use common::http::Reply;
use common::{git_or_skip, stdout_of};
use serde_json::Value;

#[test]
fn gemini_runs_a_first_job_with_nothing_but_its_key_and_settings() {
    let test = "gemini_runs_a_first_job_from_nothing";
    let Some(gemini) = agent_or_skip(test, &GEMINI) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let api = FakeGemini::start(vec![gemini::Reply::text(ANSWER)]);
    let fresh = Fresh::new(&gemini, "gemini", |base| (api.home(base), api.agent_env()));
    fresh.doctor("gemini", "Gemini CLI", "GEMINI_API_KEY");
    let (_, meta, log) = fresh.first_job("gemini");
    assert_eq!(
        meta["argv"],
        serde_json::json!(["gemini", "--acp"]),
        "{meta}"
    );
    assert!(log.contains("── Gemini CLI session "), "{log}");
    assert_eq!(
        (
            &meta["usage"]["input_tokens"],
            &meta["usage"]["output_tokens"]
        ),
        (
            &Value::from(gemini::PROMPT_TOKENS),
            &Value::from(gemini::ANSWER_TOKENS)
        ),
        "{meta}"
    );
}

#[test]
fn qwen_runs_a_first_job_with_nothing_but_its_key_and_settings() {
    let test = "qwen_runs_a_first_job_from_nothing";
    let Some(qwen) = agent_or_skip(test, &QWEN) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let api = FakeChat::start(vec![Reply::text(ANSWER)]);
    let fresh = Fresh::new(&qwen, "qwen", |base| {
        let home = base.join("home");
        api.qwen_home(&home);
        (home, api.qwen_env())
    });
    fresh.doctor("qwen", "Qwen Code", "OPENAI_API_KEY");
    let (_, meta, log) = fresh.first_job("qwen");
    assert_eq!(meta["argv"], serde_json::json!(["qwen", "--acp"]), "{meta}");
    assert!(log.contains("── Qwen Code session "), "{log}");
    assert_eq!(
        (
            &meta["usage"]["input_tokens"],
            &meta["usage"]["output_tokens"]
        ),
        (
            &Value::from(fake_chat::INPUT_TOKENS),
            &Value::from(fake_chat::OUTPUT_TOKENS)
        ),
        "{meta}"
    );
}

#[test]
fn codex_runs_a_first_job_with_nothing_but_openai_api_key() {
    let test = "codex_runs_a_first_job_with_nothing_but_openai_api_key";
    let Some(codex_acp) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // What a user of OpenAI's API has: the key exported, no `codex login`, no provider of
    // their own. Here OpenAI's own provider is pointed at the API on 127.0.0.1 the one way
    // Codex 0.137 has (it reads no OPENAI_BASE_URL): `openai_base_url` in its config.toml.
    let api = FakeResponses::start(vec![Reply::text(ANSWER), Reply::text(ANSWER)]);
    let fresh = Fresh::new(&codex_acp, "codex-acp", |base| {
        let (home, _) = nothing(base);
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::write(
            home.join(".codex/config.toml"),
            format!("openai_base_url = \"{}\"\n", api.base_url()),
        )
        .unwrap();
        let key = ("OPENAI_API_KEY".into(), fake_responses::KEY.into());
        (home, vec![key])
    });
    let doctor = stdout_of(&fresh.luzia(&["doctor", "--agent", "codex"]));
    assert!(
        doctor.contains("Codex will log in with OPENAI_API_KEY"),
        "{doctor}"
    );
    let (_, meta, log) = fresh.first_job("codex");
    assert_eq!(meta["argv"], serde_json::json!(["codex-acp"]), "{meta}");
    assert!(log.contains("── Codex session "), "{log}");
    assert!(
        log.contains("luzia: Codex asked for a login: authenticating with OPENAI_API_KEY (its method openai-api-key)"),
        "{log}"
    );
    assert!(
        !log.contains(fake_responses::KEY),
        "the key's value is in output.log:\n{log}"
    );
    // Codex saved that login (~/.codex/auth.json, as `codex login --with-api-key` does): the
    // next job is not refused, and luzia does not log in again.
    let (_, _, again) = fresh.first_job("codex");
    assert!(!again.contains("asked for a login"), "{again}");
}

#[test]
fn gemini_with_no_key_is_the_gemini_not_logged_in_issue() {
    let test = "gemini_with_no_key_is_the_gemini_not_logged_in_issue";
    let Some(gemini) = agent_or_skip(test, &GEMINI) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let fresh = Fresh::new(&gemini, "gemini", nothing);
    let shown = fresh.cannot_log_in(
        "gemini",
        "gemini-not-logged-in",
        &["GEMINI_API_KEY", "selectedType"],
    );
    assert!(
        shown.contains("Gemini API key is missing or not configured"),
        "{shown}"
    );
}

#[test]
fn qwen_with_no_key_is_the_qwen_not_logged_in_issue() {
    let test = "qwen_with_no_key_is_the_qwen_not_logged_in_issue";
    let Some(qwen) = agent_or_skip(test, &QWEN) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    let fresh = Fresh::new(&qwen, "qwen", nothing);
    fresh.cannot_log_in(
        "qwen",
        "qwen-not-logged-in",
        &["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"],
    );
}

#[test]
fn codex_with_no_login_is_the_codex_not_logged_in_issue() {
    let test = "codex_with_no_login_is_the_codex_not_logged_in_issue";
    let Some(codex_acp) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // No key and no saved login: codex-acp refuses the session, and luzia has nothing to log
    // it in with.
    let fresh = Fresh::new(&codex_acp, "codex-acp", nothing);
    let shown = fresh.cannot_log_in(
        "codex",
        "codex-not-logged-in",
        &["OPENAI_API_KEY", "CODEX_API_KEY", "openai_base_url"],
    );
    assert!(!shown.contains("asked for a login"), "{shown}");
}

#[test]
fn codex_refusing_the_login_with_its_key_is_the_codex_not_logged_in_issue() {
    let test = "codex_refusing_the_login_with_its_key_is_the_codex_not_logged_in_issue";
    let Some(codex_acp) = agent_or_skip(test, &CODEX_ACP) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // A key, and a Codex told to keep its login in the system's keyring, which a server does
    // not have: it refuses the login luzia asks for, in its own words.
    let fresh = Fresh::new(&codex_acp, "codex-acp", |base| {
        let (home, _) = nothing(base);
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::write(
            home.join(".codex/config.toml"),
            "cli_auth_credentials_store = \"keyring\"\n",
        )
        .unwrap();
        (
            home,
            vec![("OPENAI_API_KEY".into(), "sk-kept-nowhere".into())],
        )
    });
    let shown = fresh.cannot_log_in(
        "codex",
        "codex-not-logged-in",
        &["OPENAI_API_KEY", "keyring"],
    );
    for said in [
        "luzia: Codex asked for a login: authenticating with OPENAI_API_KEY (its method openai-api-key)",
        "luzia: Codex refused authenticate: Internal error (-32603): failed to write OAuth tokens to keyring",
    ] {
        assert!(shown.contains(said), "{said:?} not in:\n{shown}");
    }
    assert!(!shown.contains("sk-kept-nowhere"), "{shown}");
}

#[test]
fn opencode_whose_key_is_refused_is_the_opencode_not_logged_in_issue() {
    let test = "opencode_whose_key_is_refused_is_the_opencode_not_logged_in_issue";
    let Some(opencode) = agent_or_skip(test, &OPENCODE) else {
        return;
    };
    if !git_or_skip() {
        return;
    }
    // With no provider set up opencode uses its own free one; a provider of the user's whose
    // API refuses the key (401, in OpenAI's words) is how it fails to log in.
    let api = FakeChat::start(Vec::new());
    api.accept_only(fake_chat::KEY);
    let fresh = Fresh::new(&opencode, "opencode", |base| {
        let (home, _) = nothing(base);
        let config = serde_json::json!({
            "provider": {"mine": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mine",
                "options": {"baseURL": api.base_url(), "apiKey": "sk-wrong"},
                "models": {"my-model": {"name": "My model"}}
            }},
            "model": "mine/my-model"
        });
        let dir = home.join(".config/opencode");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
        let vars = [
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ];
        (home, vars.map(|(k, v)| (k.into(), v.into())).to_vec())
    });
    fresh.cannot_log_in(
        "opencode",
        "opencode-not-logged-in",
        &["OPENAI_API_KEY", "opencode auth login"],
    );
    assert!(api.refused_keys().iter().any(|k| k == "sk-wrong"));
}
