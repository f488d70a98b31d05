//! A machine as a new user of an ACP agent finds it, for the suites that run an agent's first
//! job from nothing (`acp_first_use_e2e`, `acp_key_refused_e2e`): `bin/` with `luzia` and the
//! agent's program, a git repository, a HOME the test fills, no luzia config and no XDG
//! variables; a job run and waited for, and the known issue `luzia jobs ID` shows first.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::common::{kill_processes_mentioning, stderr_of, stdout_of, wait_for};

/// Generous: a real agent starts in a second or two, more on a loaded machine.
pub const WAIT: Duration = Duration::from_secs(120);
/// What the model answers: the job's output must show it.
pub const ANSWER: &str = "Hello from the first job: the repository is ready.";

/// A machine as a new user of an agent finds it: `bin/` with `luzia` and the agent's program,
/// a git repository, a HOME the caller fills with the agent's settings. Dropping it stops
/// whatever it started.
pub struct Fresh {
    _tmp: TempDir,
    pub base: PathBuf,
    pub repo: PathBuf,
    pub bin: PathBuf,
    pub home: PathBuf,
    /// The agent's variables, as the user's shell exports them.
    pub vars: Vec<(String, String)>,
}

impl Drop for Fresh {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

impl Fresh {
    /// `program` on PATH as `name`; `home` and `vars` made by `setup` from the base directory.
    pub fn new(
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
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
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

    pub fn luzia(&self, args: &[&str]) -> Output {
        self.run(&self.bin.join("luzia").display().to_string(), args)
    }

    /// `luzia doctor --agent NAME`: ready, the agent found on PATH and logging in with `key`,
    /// and the first job's command line given.
    pub fn doctor(&self, agent: &str, name: &str, key: &str) {
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
    pub fn first_job(&self, agent: &str) -> (Value, Value, String) {
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
    pub fn cannot_log_in(&self, agent: &str, issue: &str, names: &[&str]) -> String {
        self.failed_on(agent, issue, names).shown
    }

    /// [`Fresh::cannot_log_in`], with the job's output.log and how long it took to end.
    pub fn failed_on(&self, agent: &str, issue: &str, names: &[&str]) -> Failed {
        let started = Instant::now();
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
        let log = self
            .home
            .join(".local/state/luzia/jobs")
            .join(&id)
            .join("output.log");
        Failed {
            shown,
            log: fs::read_to_string(log).unwrap_or_default(),
            took: started.elapsed(),
        }
    }
}

/// A job that failed: what `luzia jobs ID` shows, its output.log, and how long it ran.
pub struct Failed {
    pub shown: String,
    pub log: String,
    pub took: Duration,
}

/// A HOME with nothing in it, and no variables: a machine where the agent was installed and
/// never set up.
pub fn nothing(base: &Path) -> (PathBuf, Vec<(String, String)>) {
    let home = base.join("home");
    fs::create_dir_all(&home).unwrap();
    (home, Vec::new())
}
