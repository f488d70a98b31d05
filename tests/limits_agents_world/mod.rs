//! A configured machine for the usage limit's tests with more than one agent: a fake `claude`
//! that speaks Claude Code 2.1.197's stream-json (on its first run the API refuses it: the
//! `rate_limit_event` with the reset to the second, then the result's own words; resumed with
//! `--resume SESSION` it succeeds), and another agent, `[agents.other]`, a plain command that
//! says `done` (while a gate file exists, it waits first). `luzia notify --watch` writes its
//! events to a file; cockpits run in a private tmux server, each in a session of its own.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::common;
use crate::tmux::sh_quote;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
/// How long any one wait may last before the test calls it hung (the machine is shared).
pub const GUARD: Duration = Duration::from_secs(150);

/// Another agent, a plain command: waits while `$OTHER_GATE` exists, then says `done`.
const OTHER: &str = r#"#!/bin/sh
cat > "$LUZIA_JOB_DIR/stdin.txt"
while [ -e "$OTHER_GATE" ]; do sleep 0.05; done
echo done
"#;

/// Which agent a job runs when nothing chooses one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Default {
    Claude,
    Other,
}

pub struct World {
    pub base: PathBuf,
    pub jobs: PathBuf,
    pub queue: PathBuf,
    pub config: PathBuf,
    pub home: PathBuf,
    _tmp: TempDir,
}

impl World {
    /// Projects: `p` (the default agent), `c` (`agent = "claude"`), `o` (`agent = "other"`).
    pub fn new(default: Default, max_concurrent: usize) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-limits-agents-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "proj", "xdg", "home", "bin", "queue", "state"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let claude = base.join("bin/claude");
        let other = base.join("bin/other.sh");
        let notifier = base.join("bin/notify.sh");
        fs::write(
            &claude,
            common::limited_claude::script(common::limited_claude::SESSION_LIMIT),
        )
        .unwrap();
        fs::write(&other, OTHER).unwrap();
        fs::write(
            &notifier,
            format!(
                "#!/bin/sh\ncat >> {}\n",
                sh_quote(base.join("events.jsonl").to_str().unwrap())
            ),
        )
        .unwrap();
        for f in [&claude, &other, &notifier] {
            fs::set_permissions(f, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let claude_argv = format!(
            "[{}, \"-p\", \"--output-format\", \"stream-json\", \"--verbose\"]",
            q(&claude)
        );
        let other_argv = format!("[{}]", q(&other));
        let command = match default {
            Default::Claude => &claude_argv,
            Default::Other => &other_argv,
        };
        let proj = q(&base.join("proj"));
        let config = base.join("config.toml");
        fs::write(
            &config,
            format!(
                "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
                 command = {command}\nmax_concurrent = {max_concurrent}\n\
                 prompt_template = \"{{task}}\"\n\
                 [agent.env]\nRESET_FILE = {}\nOTHER_GATE = {}\n\n\
                 [agents.claude]\ncommand = {claude_argv}\n\
                 [agents.other]\ncommand = {other_argv}\n\n\
                 [projects.p]\npath = {proj}\n\
                 [projects.c]\npath = {proj}\nagent = \"claude\"\n\
                 [projects.o]\npath = {proj}\nagent = \"other\"\n\n\
                 [notify]\ncommand = [{}]\n",
                q(&base.join("jobs")),
                q(&base.join("notes.log")),
                q(&base.join("queue")),
                q(&base.join("reset")),
                q(&base.join("gate")),
                q(&notifier),
            ),
        )
        .unwrap();
        World {
            jobs: base.join("jobs"),
            queue: base.join("queue"),
            home: base.join("home"),
            config,
            base,
            _tmp: tmp,
        }
    }

    /// The limit the fake prints resets `secs` from now (Unix seconds).
    pub fn reset_in(&self, secs: i64) -> i64 {
        let at = chrono::Utc::now().timestamp() + secs;
        fs::write(self.base.join("reset"), at.to_string()).unwrap();
        at
    }

    /// While the gate is closed, the other agent's jobs wait before they end.
    pub fn close_gate(&self) {
        fs::write(self.base.join("gate"), "").unwrap();
    }

    pub fn open_gate(&self) {
        let _ = fs::remove_file(self.base.join("gate"));
    }

    pub fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .arg("--config")
            .arg(&self.config);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.luzia();
        cmd.args(args);
        assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    /// `luzia ARGS`, which must succeed: its standard output, trimmed.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            common::stderr_of(&out)
        );
        common::stdout_of(&out).trim().to_owned()
    }

    pub fn job(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["jobs", id, "--json"])).unwrap()
    }

    pub fn all(&self) -> Vec<Value> {
        serde_json::from_str(&self.ok(&["jobs", "--json"])).unwrap()
    }

    /// The jobs of `task`.
    pub fn of_task(&self, task: &str) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|j| j["task"] == task)
            .collect()
    }

    pub fn meta(&self, id: &str) -> Value {
        fs::read_to_string(self.jobs.join(id).join("meta.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    pub fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + GUARD;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the job has ended as `status`.
    pub fn wait_status(&self, id: &str, status: &str) -> Value {
        let mut last = Value::Null;
        self.wait_for(&format!("{id} to be {status}"), || {
            if self.meta(id).get("exit_code").is_none() {
                return false;
            }
            last = self.job(id);
            last["status"] == status
        });
        last
    }

    /// `luzia notify --watch`, running until dropped.
    pub fn watcher(&self) -> common::ChildGuard {
        let mut cmd = self.luzia();
        cmd.args(["notify", "--watch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        common::ChildGuard::new(cmd.spawn().unwrap())
    }

    /// The events `luzia notify --watch` sent.
    pub fn events(&self) -> Vec<Value> {
        fs::read_to_string(self.base.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The jobs whose `retry_of` names `id`.
    pub fn continuations(&self, id: &str) -> Vec<String> {
        self.all()
            .iter()
            .filter(|j| j["retry_of"] == id)
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect()
    }

    fn socket(&self) -> String {
        format!(
            "luzia-limits-agents-{}",
            self.base.file_name().unwrap().to_string_lossy()
        )
    }

    /// `luzia tui` in a real terminal (160x45), in the tmux session `name`, kept open as a
    /// user keeps it.
    pub fn open_cockpit(&self, name: &str) {
        let mut cmd = self.luzia();
        cmd.arg("tui");
        let mut words = vec!["env".to_owned()];
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => words.push(format!("{}={}", k.to_string_lossy(), v.to_string_lossy())),
                None => words.push(format!("--unset={}", k.to_string_lossy())),
            }
        }
        words.push(LUZIA.to_owned());
        words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        let inner = format!(
            "{} ; sleep 600",
            words
                .iter()
                .map(|w| sh_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let started = Command::new("tmux")
            .args(["-L", &self.socket(), "-f", "/dev/null", "new-session", "-d"])
            .args(["-s", name, "-x", "160", "-y", "45", "-c"])
            .arg(&self.base)
            .arg(inner)
            .env_remove("TMUX")
            .env("TERM", "xterm-256color")
            .status()
            .unwrap();
        assert!(started.success(), "tmux new-session");
    }

    /// Waits until the cockpit in session `name` shows what `done` looks for; returns that
    /// screen (the last one seen is in the failure).
    pub fn wait_screen(&self, name: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + GUARD;
        loop {
            let screen = self.screen(name);
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} in cockpit {name}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What the cockpit in session `name` shows.
    pub fn screen(&self, name: &str) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket(), "capture-pane", "-p", "-t", name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket(), "kill-server"])
            .stderr(Stdio::null())
            .status();
        common::kill_processes_mentioning(&self.base);
    }
}

/// The screen's line that shows `needle`, if any.
pub fn line_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}
