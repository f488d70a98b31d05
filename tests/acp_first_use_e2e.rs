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

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::agents::{CODEX_ACP, GEMINI, OPENCODE, QWEN, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::fake_responses::{self, FakeResponses};
use common::gemini::{self, FakeGemini};
use common::http::{self, Reply};
use common::{git_or_skip, kill_processes_mentioning, stderr_of, stdout_of, wait_for};
use serde_json::Value;
use tempfile::TempDir;

/// Generous: a real agent starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(120);
/// What the model answers: the job's output must show it.
const ANSWER: &str = "Hello from the first job: the repository is ready.";

/// A machine as a new user of an agent finds it: `bin/` with `luzia` and the agent's program,
/// a git repository, a HOME the caller fills with the agent's settings. Dropping it stops
/// whatever it started.
struct Fresh {
    _tmp: TempDir,
    base: PathBuf,
    repo: PathBuf,
    bin: PathBuf,
    home: PathBuf,
    /// The agent's variables, as the user's shell exports them.
    vars: Vec<(String, String)>,
}

impl Drop for Fresh {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

impl Fresh {
    /// `program` on PATH as `name`; `home` and `vars` made by `setup` from the base directory.
    fn new(
        program: &Path,
        name: &str,
        setup: impl FnOnce(&Path) -> (PathBuf, Vec<(String, String)>),
    ) -> Fresh {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-acp-first-use-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let (repo, bin) = (base.join("repo"), base.join("bin"));
        fs::create_dir_all(&repo).unwrap();
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(program, bin.join(name)).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_luzia"), bin.join("luzia")).unwrap();
        let (home, vars) = setup(&base);
        let fresh = Fresh {
            _tmp: tmp,
            base,
            repo,
            bin,
            home,
            vars,
        };
        let init = fresh.run("git", &["init", "-q", "."]);
        assert!(init.status.success(), "git init: {}", stderr_of(&init));
        fs::write(fresh.repo.join("README"), "a project\n").unwrap();
        fresh
    }

    /// `program ARGS` in the repository with nothing of the test's environment: what a login
    /// shell has, and the agent's variables.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .current_dir(&self.repo)
            .env_clear()
            .env("HOME", &self.home)
            .env("USER", "root")
            .env("LOGNAME", "root")
            .env("SHELL", "/bin/sh")
            .env("LANG", "C.UTF-8")
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            )
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn luzia(&self, args: &[&str]) -> Output {
        self.run(&self.bin.join("luzia").display().to_string(), args)
    }

    /// `luzia doctor --agent NAME`: ready, the agent found on PATH and logging in with `key`,
    /// and the first job's command line given.
    fn doctor(&self, agent: &str, name: &str, key: &str) {
        let out = self.luzia(&["doctor", "--agent", agent]);
        let said = stdout_of(&out);
        assert_eq!(out.status.code(), Some(0), "{said}{}", stderr_of(&out));
        let program = self.bin.join(agent).display().to_string();
        for line in [
            // Found (its version may be slow to come on a loaded machine: a warning).
            format!("agent        {program} ({name}): "),
            format!("{name} will log in with {key}"),
            format!("luzia run --agent {agent} \"your task\""),
        ] {
            assert!(said.contains(&line), "{line:?} not in:\n{said}");
        }
    }

    /// `luzia run --agent NAME TASK` until the job ends: its `luzia jobs ID --json`, its
    /// meta.json and its output.
    fn first_job(&self, agent: &str) -> (Value, Value, String) {
        let run = self.luzia(&["run", "--agent", agent, "Say hello to the new user"]);
        assert!(
            run.status.success(),
            "`luzia run --agent {agent}` failed from nothing: {}{}",
            stdout_of(&run),
            stderr_of(&run)
        );
        let id = stdout_of(&run).trim().to_owned();
        let dir = self.home.join(".local/state/luzia/jobs").join(&id);
        let log = || fs::read_to_string(dir.join("output.log")).unwrap_or_default();
        let job = wait_for("the first job to end", WAIT, || {
            let out = self.luzia(&["jobs", &id, "--json"]);
            let job: Value = serde_json::from_slice(&out.stdout).ok()?;
            (!job["exit_code"].is_null()).then_some(job)
        });
        assert_eq!(job["status"], "completed", "{job}\n{}", log());
        assert_eq!(job["project"], "repo", "the project is the directory");
        let meta: Value =
            serde_json::from_slice(&fs::read(dir.join("meta.json")).unwrap()).unwrap();
        let shown = stdout_of(&self.luzia(&["logs", &id]));
        assert!(shown.contains(ANSWER), "`luzia logs {id}`:\n{shown}");
        (job, meta, log())
    }

    /// `luzia run --agent NAME TASK` that cannot log in: the job fails (not killed: luzia ends
    /// an agent that stays after refusing the session), and `luzia jobs ID` shows `issue` first
    /// with a fix naming each of `names`. The summary, for the test's message.
    fn cannot_log_in(&self, agent: &str, issue: &str, names: &[&str]) -> String {
        let run = self.luzia(&["run", "--agent", agent, "Say hello to the new user"]);
        assert!(
            run.status.success(),
            "{}{}",
            stdout_of(&run),
            stderr_of(&run)
        );
        let id = stdout_of(&run).trim().to_owned();
        let job = wait_for("the job to end", WAIT, || {
            let out = self.luzia(&["jobs", &id, "--json"]);
            let job: Value = serde_json::from_slice(&out.stdout).ok()?;
            (!job["exit_code"].is_null()).then_some(job)
        });
        let shown = stdout_of(&self.luzia(&["jobs", &id]));
        assert_eq!(job["status"], "failed", "{job}\n{shown}");
        let first = shown.lines().find(|l| l.starts_with("issue:"));
        assert!(
            first.is_some_and(|l| l.contains(&format!("critical {issue} "))),
            "{issue} is not the first issue of `luzia jobs {id}`:\n{shown}"
        );
        let fix = shown
            .lines()
            .skip_while(|l| !l.starts_with("issue:"))
            .find(|l| l.trim_start().starts_with("fix:"))
            .unwrap_or_default();
        for name in names {
            assert!(fix.contains(name), "{name} not in the fix:\n{shown}");
        }
        shown
    }
}

/// A HOME with nothing in it, and no variables: a machine where the agent was installed and
/// never set up.
fn nothing(base: &Path) -> (PathBuf, Vec<(String, String)>) {
    let home = base.join("home");
    fs::create_dir_all(&home).unwrap();
    (home, Vec::new())
}

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
    let refuse: std::sync::Arc<http::Answer> = std::sync::Arc::new(|_: &str, _: &[u8]| {
        http::response(
            401,
            "application/json",
            br#"{"error":{"message":"Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        )
    });
    let api = http::serve(refuse);
    let fresh = Fresh::new(&opencode, "opencode", |base| {
        let (home, _) = nothing(base);
        let config = serde_json::json!({
            "provider": {"mine": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mine",
                "options": {"baseURL": format!("http://{api}/v1"), "apiKey": "sk-wrong"},
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
}
