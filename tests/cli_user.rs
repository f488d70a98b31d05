//! Agents run like `sudo -u USER`: with `user = "..."` in a project's config and luzia running
//! as root, the agent runs as that user, can report progress, ask and wait at gates in its job
//! directory, and sees a clean environment (the allowlist, what the config passes and sets);
//! a secret in the dispatcher's environment never reaches it, nor one named `LUZIA_*` that is
//! not one of luzia's own variables. The allowlist also applies when the user is not switched.
//!
//! The switched-user test creates a throwaway system user with `useradd` and removes it at
//! the end; it needs root (without it, it says SKIPPED loudly and passes). Agents are real
//! processes; every wait has a hang guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::user::{User, reachable_luzia};
use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(60);
/// In the dispatcher's environment only: must never reach an agent.
const SECRET: (&str, &str) = ("TEST_SECRET_TOKEN", "hunter2-do-not-leak");
/// The same, named like luzia's own variables: only those luzia defines pass.
const LUZIA_NAMED_SECRET: (&str, &str) = ("LUZIA_SECRET_TOKEN", "luzia-named-do-not-leak");
/// One of luzia's own variables, set in the dispatcher's environment: it reaches the agent
/// (whose own `luzia` commands read it).
const OWN: (&str, &str) = ("LUZIA_LOG", "warn");

/// The agent: reports progress, asks a question, then records its answer, its environment and
/// its uid in `$2` (a directory it may write). Any step that fails exits with its own code.
const AGENT: &str = r#"L="$1"; out="$2"
"$L" progress 50 --name halfway || exit 11
a=$("$L" ask "Which database?" --option staging --option production) || exit 12
printf %s "$a" > "$out/answer" || exit 13
env > "$out/env" || exit 14
id -u > "$out/uid"
"#;

/// A world readable by other users: a project, a jobs root, a directory the agent writes its
/// findings to, and the config. Dropping it kills every process it started.
struct World {
    base: PathBuf,
    luzia: PathBuf,
    _tmp: TempDir,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-user-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["jobs", "proj", "out", "home", "xdg"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let luzia = reachable_luzia(&base);
        World {
            base,
            luzia,
            _tmp: tmp,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// The config: project `p` (with `extra` lines in its table), the agent [`AGENT`].
    fn configure(&self, extra: &str) {
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
             command = [\"sh\", \"-c\", {}, \"sh\", {}, {}]\nprompt_template = \"{{task}}\"\n\n\
             [projects.p]\npath = {}\n{extra}\n",
            q(&self.path("jobs")),
            q(&self.path("notifications.log")),
            q(&self.path("queue")),
            serde_json::to_string(AGENT).unwrap(),
            q(&self.luzia),
            q(&self.path("out")),
            q(&self.path("proj")),
        );
        fs::write(self.path("config.toml"), text).unwrap();
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.path("xdg"))
            .env(SECRET.0, SECRET.1)
            .env(LUZIA_NAMED_SECRET.0, LUZIA_NAMED_SECRET.1)
            .env(OWN.0, OWN.1)
            .env("PASSED_TOKEN", "passed-through")
            .current_dir(&self.base)
            .arg("--config")
            .arg(self.path("config.toml"))
            .args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        (out.status.code(), stdout_of(&out), stderr_of(&out))
    }

    fn job(&self, id: &str) -> Value {
        let (code, out, err) = self.run(&["jobs", id, "--json"]);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&out).unwrap()
    }

    /// Dispatches the agent, answers its question as the operator, waits for the end; returns
    /// the job id and `luzia jobs ID --json`.
    fn dispatch_and_answer(&self) -> (String, Value) {
        let (code, out, err) = self.run(&["run", "p", "check the database"]);
        assert_eq!(code, Some(0), "{err}");
        let id = out.trim().to_owned();
        wait_for(&format!("{id} to ask"), || {
            let j = self.job(&id);
            assert!(
                j["exit_code"].is_null(),
                "the agent ended before asking: {j}\n{}",
                fs::read_to_string(self.path("jobs").join(&id).join("output.log"))
                    .unwrap_or_default()
            );
            (j["waiting"] == "question").then_some(())
        });
        let (code, out, err) = self.run(&["answer", &id, "staging"]);
        assert_eq!(code, Some(0), "{out}{err}");
        let job = wait_for(&format!("{id} to finish"), || {
            let j = self.job(&id);
            (!j["exit_code"].is_null()).then_some(j)
        });
        (id, job)
    }

    /// The agent's environment as it recorded it.
    fn agent_env(&self) -> String {
        fs::read_to_string(self.path("out/env")).unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

#[test]
fn an_agent_run_as_the_project_user_reports_asks_and_sees_no_secret() {
    if !common::root_or_skip("switching users needs root (useradd, and luzia as root)") {
        return;
    }
    let w = World::new();
    let user = User::create(&w.path("home"));
    for d in ["proj", "out", "home"] {
        user.give(&w.path(d));
    }
    w.configure(&format!("user = {:?}", user.name));

    let (id, job) = w.dispatch_and_answer();
    let dir = w.path("jobs").join(&id);
    assert_eq!(
        job["status"],
        "completed",
        "{job}\n{}",
        fs::read_to_string(dir.join("output.log")).unwrap_or_default()
    );
    assert_eq!(
        fs::read_to_string(w.path("out/uid")).unwrap().trim(),
        user.uid.to_string()
    );
    assert_eq!(fs::read_to_string(w.path("out/answer")).unwrap(), "staging");
    // What the agent wrote is its own; the operator's answer went in beside it.
    assert_eq!(
        fs::metadata(dir.join("progress.json")).unwrap().uid(),
        user.uid
    );
    assert_eq!(fs::metadata(&dir).unwrap().uid(), user.uid);
    let history = fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert!(
        history.contains("\"staging\"") && history.contains("halfway"),
        "{history}"
    );

    let env = w.agent_env();
    assert!(!env.contains(SECRET.0) && !env.contains(SECRET.1), "{env}");
    assert_no_luzia_named_secret(&env);
    assert!(
        !env.contains("PASSED_TOKEN"),
        "not passed unless configured: {env}"
    );
    for want in [
        format!("USER={}", user.name),
        format!("LOGNAME={}", user.name),
        format!("HOME={}", w.path("home").display()),
        "SHELL=/bin/sh".to_string(),
        format!("LUZIA_JOB_DIR={}", dir.display()),
        format!("LUZIA_JOB_ID={id}"),
        format!("{}={}", OWN.0, OWN.1),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing:\n{env}");
    }
}

#[test]
fn without_switching_the_environment_is_the_allowlist_and_what_the_config_adds() {
    let w = World::new();
    w.configure("env_pass = [\"PASSED_TOKEN\"]\n[projects.p.env]\nGREETING = \"hello there\"\n");
    let (id, job) = w.dispatch_and_answer();
    assert_eq!(job["status"], "completed", "{job}");
    let env = w.agent_env();
    assert!(!env.contains(SECRET.0) && !env.contains(SECRET.1), "{env}");
    assert_no_luzia_named_secret(&env);
    for want in [
        "PASSED_TOKEN=passed-through".to_string(),
        "GREETING=hello there".to_string(),
        format!("LUZIA_JOB_ID={id}"),
        format!("{}={}", OWN.0, OWN.1),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing:\n{env}");
    }
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    let allowed = [
        "HOME",
        "USER",
        "LOGNAME",
        "PATH",
        "SHELL",
        "LANG",
        "TERM",
        "TZ",
        "PASSED_TOKEN",
        "GREETING",
        // luzia's own, for an agent that asks through Claude Code's Bash tool.
        "BASH_DEFAULT_TIMEOUT_MS",
        "BASH_MAX_TIMEOUT_MS",
    ];
    for name in names {
        // What sh itself sets (PWD, SHLVL, _) is the shell's, not the dispatcher's.
        let shells_own = ["PWD", "SHLVL", "_", "OLDPWD"].contains(&name);
        assert!(
            shells_own
                || ["LUZIA_JOB_DIR", "LUZIA_JOB_ID", OWN.0].contains(&name)
                // The job's ports, set by luzia for dev servers (as LUZIA_JOB_ID is).
                || ["LUZIA_PORT", "LUZIA_PORT_COUNT"].contains(&name)
                || allowed.contains(&name),
            "{name} reached the agent:\n{env}"
        );
    }
}

/// A variable named like luzia's own but not one of them never reaches the agent.
fn assert_no_luzia_named_secret(env: &str) {
    assert!(
        !env.contains(LUZIA_NAMED_SECRET.0) && !env.contains(LUZIA_NAMED_SECRET.1),
        "a LUZIA_ variable luzia does not define reached the agent:\n{env}"
    );
}
