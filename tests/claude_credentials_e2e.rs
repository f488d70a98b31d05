//! Credentials by default, with the real Claude Code CLI against a fake Messages API: with
//! `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` only in luzia's environment (no `[agent] env` in
//! the config, a fresh HOME), a job completes with the API's reply, and a foreign secret set
//! beside them does not reach the agent; with no key, the job ends as the `claude-not-logged-in`
//! known issue, in the log, `luzia jobs ID` and `luzia status`. The same credentials reach an
//! agent switched to a project's user (luzia as root), `IS_SANDBOX` excepted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::claude::{FakeApi, Reply, clis_or_skip, tool_results};
use common::user::{User, reachable, reachable_luzia};
use serde_json::{Value, json};
use tempfile::TempDir;

const GUARD: Duration = Duration::from_secs(90);
const FOREIGN: &str = "foreign-secret-must-stay-behind";

/// A fresh machine: HOME, a project, a jobs root, and a config naming the agent and the
/// project and nothing of its environment.
struct World {
    tmp: TempDir,
    claude: PathBuf,
    jobs: PathBuf,
    config: PathBuf,
}

impl World {
    fn new(claude: &Path) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-creds-")
            .tempdir()
            .unwrap();
        let base = tmp.path();
        let jobs = base.join("jobs");
        for d in ["jobs", "proj", "home", "xdg"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let q = |p: &Path| Value::from(p.to_str().unwrap()).to_string();
        // `env` is allowed by rule, so the agent runs it without asking.
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n\
             [agent]\ncommand = [{}, \"-p\", \"--output-format\", \"stream-json\", \"--verbose\", \
             \"--allowedTools\", \"Bash(env:*)\"]\nprompt_template = \"{{task}}\"\n\n\
             [projects.p]\npath = {}\n",
            q(&jobs),
            q(&base.join("notifications.log")),
            q(&base.join("queue")),
            q(claude),
            q(&base.join("proj")),
        );
        let config = base.join("config.toml");
        fs::write(&config, text).unwrap();
        World {
            tmp,
            claude: claude.to_owned(),
            jobs,
            config,
        }
    }

    /// luzia with an environment of the test's making alone: `vars` over a fresh HOME, the
    /// CLI's directory on PATH, and a foreign secret.
    fn luzia(&self, vars: &[(&str, String)], args: &[&str]) -> std::process::Output {
        let bin = self.claude.parent().unwrap();
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
        cmd.env_clear()
            .env("HOME", self.tmp.path().join("home"))
            .env("XDG_CONFIG_HOME", self.tmp.path().join("xdg"))
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            )
            .env("MY_SECRET_TOKEN", FOREIGN)
            // Claude Code's own: no update checks or telemetry from a test.
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .timeout(GUARD);
        cmd.output().unwrap()
    }

    fn run(&self, vars: &[(&str, String)], task: &str) -> String {
        let out = self.luzia(vars, &["run", "p", "--", task]);
        assert!(out.status.success(), "{}", common::stderr_of(&out));
        common::stdout_of(&out).trim().to_owned()
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.jobs.join(id).join("output.log")).unwrap_or_default()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.jobs.join(id).join("meta.json")).unwrap()).unwrap()
    }

    fn wait_done(&self, id: &str) -> String {
        common::wait_for(&format!("the end of {id}"), GUARD, || {
            let log = self.log(id);
            let ended = log
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("exit:"));
            (ended && self.meta(id).get("exit_code").is_some()).then_some(log)
        })
    }
}

#[test]
fn the_key_in_luzias_environment_reaches_claude_code_and_a_foreign_secret_does_not() {
    for claude in clis_or_skip(
        "the_key_in_luzias_environment_reaches_claude_code_and_a_foreign_secret_does_not",
    ) {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "env", "description": "Show the environment"}),
            ),
            Reply::text("The environment is as expected."),
        ]);
        let w = World::new(&claude);
        let vars = [
            ("ANTHROPIC_API_KEY", "sk-ant-test-key".to_owned()),
            ("ANTHROPIC_BASE_URL", api.base_url()),
        ];
        let id = w.run(&vars, "Show me your environment.");
        let log = w.wait_done(&id);
        assert!(log.contains("The environment is as expected."), "{log}");
        assert!(log.contains("── success · 2 turns"), "{log}");
        assert_eq!(w.meta(&id)["exit_code"], 0, "{log}");
        // What `env` printed, as the agent's tool result went back to the API.
        let requests = api.wait_for_requests(2, GUARD);
        let (env, failed) = tool_results(&requests[1])
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no tool result in {}", requests[1]));
        assert!(!failed, "{env}");
        assert!(env.contains(&format!("LUZIA_JOB_ID={id}")), "{env}");
        assert!(
            env.contains("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"),
            "{env}"
        );
        assert!(
            !env.contains("MY_SECRET_TOKEN") && !env.contains(FOREIGN),
            "{env}"
        );
        let config = fs::read_to_string(&w.config).unwrap();
        assert!(
            !config.contains("ANTHROPIC") && !config.contains("env ="),
            "{config}"
        );
    }
}

#[test]
fn without_a_key_the_job_is_the_not_logged_in_issue() {
    for claude in clis_or_skip("without_a_key_the_job_is_the_not_logged_in_issue") {
        let w = World::new(&claude);
        let id = w.run(&[], "Say hi.");
        let log = w.wait_done(&id);
        assert!(
            log.contains("── failed: Not logged in · Please run /login · 1 turn"),
            "{log}"
        );
        assert_eq!(w.meta(&id)["exit_code"], 1, "{log}");
        let detail = common::stdout_of(&w.luzia(&[], &["jobs", &id]));
        assert!(
            detail.contains("claude-not-logged-in") && detail.contains("luzia doctor"),
            "{detail}"
        );
        let status = common::stdout_of(&w.luzia(&[], &["status"]));
        assert!(status.contains("claude-not-logged-in"), "{status}");
        // And doctor, run the same way, says why.
        let doctor = w.luzia(&[], &["doctor"]);
        assert_eq!(doctor.status.code(), Some(1));
        assert!(
            common::stdout_of(&doctor).contains("the agent will not be able to log in"),
            "{}",
            common::stdout_of(&doctor)
        );
    }
}

#[test]
fn a_switched_user_receives_the_credentials_too_but_not_is_sandbox() {
    for claude in clis_or_skip("a_switched_user_receives_the_credentials_too_but_not_is_sandbox") {
        if !common::root_or_skip("switching to a project's user needs root") {
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::Builder::new()
            .prefix("luzia-creds-user-")
            .tempdir()
            .unwrap();
        let base = tmp.path();
        for d in ["", "jobs", "queue", "xdg", "home", "proj", "bin"] {
            fs::create_dir_all(base.join(d)).unwrap();
            fs::set_permissions(base.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let user = User::create(&base.join("home"));
        user.give(&base.join("home"));
        user.give(&base.join("proj"));
        let bin = base.join("bin");
        reachable(&claude, &bin, "claude");
        let luzia = reachable_luzia(&bin);
        let q = |p: &Path| Value::from(p.to_str().unwrap()).to_string();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
         command = [\"claude\", \"-p\", \"--output-format\", \"stream-json\", \"--verbose\", \
         \"--allowedTools\", \"Bash(env:*)\"]\nprompt_template = \"{{task}}\"\n\n\
         [projects.p]\npath = {}\nuser = {:?}\n",
            q(&base.join("jobs")),
            q(&base.join("notes.log")),
            q(&base.join("queue")),
            q(&base.join("proj")),
            user.name,
        );
        fs::write(base.join("config.toml"), config).unwrap();
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "env", "description": "Show the environment"}),
            ),
            Reply::text("Checked as the project's user."),
        ]);
        let luzia_cmd = |args: &[&str]| {
            let mut cmd = assert_cmd::Command::new(&luzia);
            cmd.env_clear()
                .env("HOME", "/root")
                .env("XDG_CONFIG_HOME", base.join("xdg"))
                .env(
                    "PATH",
                    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
                )
                .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
                .env("ANTHROPIC_BASE_URL", api.base_url())
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("IS_SANDBOX", "1")
                .env("MY_SECRET_TOKEN", FOREIGN)
                .current_dir(base)
                .arg("--config")
                .arg(base.join("config.toml"))
                .args(args)
                .timeout(GUARD);
            cmd.output().unwrap()
        };
        let out = luzia_cmd(&["run", "p", "--", "Show me your environment."]);
        assert!(out.status.success(), "{}", common::stderr_of(&out));
        let id = common::stdout_of(&out).trim().to_owned();
        let log_path = base.join("jobs").join(&id).join("output.log");
        let log = common::wait_for(&format!("the end of {id}"), GUARD, || {
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            log.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("exit:"))
                .then_some(log)
        });
        assert!(log.contains("Checked as the project's user."), "{log}");
        let requests = api.wait_for_requests(2, GUARD);
        let (env, _) = tool_results(&requests[1])
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no tool result in {}", requests[1]));
        assert!(
            env.lines().any(|l| l == format!("USER={}", user.name)),
            "{env}"
        );
        assert!(
            env.contains("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"),
            "{env}"
        );
        assert!(!env.contains("IS_SANDBOX"), "not root: {env}");
        assert!(
            !env.contains("MY_SECRET_TOKEN") && !env.contains(FOREIGN),
            "{env}"
        );
        drop(user);
    }
}
