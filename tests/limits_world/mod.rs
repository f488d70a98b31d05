//! A machine as a new user finds it, for the usage limit's tests: a fresh HOME with no config
//! file and no XDG variables, only `luzia` and a `claude` on PATH, in a git repository of their
//! own; and a fake `claude` that speaks Claude Code 2.1.197's stream-json.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::common::kill_processes_mentioning;
use crate::tmux;

/// A `claude` that speaks Claude Code 2.1.197's stream-json: refused by the limit on its first
/// run (the reset read from the file named in it; while the gate file exists, it waits before
/// saying so), it succeeds when resumed, unless the session's transcript is gone, when it says
/// what Claude Code says then.
pub const FAKE_CLAUDE: &str = r#"#!/bin/sh
sid=""; prev=""; resumed=""
for a in "$@"; do
  case "$prev" in --session-id) sid="$a";; --resume) sid="$a"; resumed=1;; esac
  prev="$a"
done
cat > /dev/null
transcript="$HOME/.claude/projects/-repo/$sid.jsonl"
if [ -n "$resumed" ] && [ ! -f "$transcript" ]; then
  echo "No conversation found with session ID: $sid" >&2
  exit 1
fi
mkdir -p "$HOME/.claude/projects/-repo"
printf '{"prompt": "x"}\n' >> "$transcript"
printf '{"type":"system","subtype":"init","session_id":"%s","model":"claude-sonnet-4-5","claude_code_version":"2.1.197","tools":[]}\n' "$sid"
if [ -n "$resumed" ]; then
  printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}\n' "$sid"
  exit 0
fi
while [ -e GATE_PATH ]; do sleep 0.05; done
reset=$(cat RESET_PATH)
words=$(date -u -d "@$reset" +%-I:%M%P)
printf '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s,"rateLimitType":"five_hour","isUsingOverage":false},"session_id":"%s"}\n' "$reset" "$sid"
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You'"'"'ve hit your session limit \302\267 resets %s (UTC)","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}\n' "$words" "$sid"
exit 1
"#;

/// A machine as a new user finds it. Dropping it stops what it started.
pub struct World {
    pub base: PathBuf,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub bin: PathBuf,
    /// The variables a subscriber's server gives Claude Code, beside the shell's own.
    extra: Vec<(String, String)>,
    _tmp: TempDir,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket(), "kill-server"])
            .stderr(Stdio::null())
            .status();
        kill_processes_mentioning(&self.base);
    }
}

impl World {
    /// `claude` is what `claude` on PATH runs.
    pub fn new(claude: impl FnOnce(&Path) -> PathBuf, extra: Vec<(String, String)>) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-limit-first-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let (home, repo, bin) = (base.join("home"), base.join("repo"), base.join("bin"));
        for d in [&home, &repo, &bin] {
            fs::create_dir_all(d).unwrap();
        }
        let program = claude(&base);
        std::os::unix::fs::symlink(&program, bin.join("claude")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_luzia"), bin.join("luzia")).unwrap();
        let world = World {
            base,
            home,
            repo,
            bin,
            extra,
            _tmp: tmp,
        };
        let init = world.run(&world.repo, "git", &["init", "-q", "."]);
        assert!(init.status.success(), "git init: {}", text(&init.stderr));
        fs::write(world.repo.join("README"), "a project\n").unwrap();
        world
    }

    pub fn socket(&self) -> String {
        format!(
            "luzia-limit-first-{}",
            self.base.file_name().unwrap().to_string_lossy()
        )
    }

    /// The whole environment a user's shell has: nothing of the test's.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("HOME", self.home.display().to_string()),
            ("USER", "root".into()),
            ("LOGNAME", "root".into()),
            ("SHELL", "/bin/sh".into()),
            ("LANG", "C.UTF-8".into()),
            ("TERM", "xterm-256color".into()),
            (
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        env.extend(self.extra.iter().cloned());
        env
    }

    pub fn run(&self, dir: &Path, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .env_clear()
            .envs(self.env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub fn luzia(&self, args: &[&str]) -> Output {
        self.run(&self.repo, "luzia", args)
    }

    pub fn jobs(&self) -> Vec<Value> {
        let out = self.luzia(&["jobs", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    pub fn job(&self, id: &str) -> Option<Value> {
        self.jobs().into_iter().find(|j| j["id"] == id)
    }

    /// `luzia tui` in a real terminal, kept open as a user keeps it.
    pub fn open_cockpit(&self) {
        let mut words = vec!["env".to_string(), "-i".to_string()];
        words.extend(self.env().into_iter().map(|(k, v)| format!("{k}={v}")));
        words.extend(["luzia".to_string(), "tui".to_string()]);
        let inner = format!(
            "{} ; sleep 600",
            words
                .iter()
                .map(|w| tmux::sh_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let started = Command::new("tmux")
            .args(["-L", &self.socket(), "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "160", "-y", "45", "-c"])
            .arg(&self.repo)
            .arg(inner)
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(started.success(), "tmux new-session");
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket(), "capture-pane", "-p"])
            .output()
            .unwrap();
        text(&out.stdout)
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The fake `claude` of [`FAKE_CLAUDE`], its limit resetting at `reset` (Unix seconds), in
/// `base`: what a [`World`] runs as `claude`.
pub fn fake_claude(base: &Path, reset: u64) -> PathBuf {
    let path = base.join("claude");
    let reset_file = base.join("reset");
    fs::write(&reset_file, reset.to_string()).unwrap();
    let quoted = |p: PathBuf| tmux::sh_quote(p.to_str().unwrap());
    let script = FAKE_CLAUDE
        .replace("RESET_PATH", &quoted(reset_file))
        .replace("GATE_PATH", &quoted(gate(base)));
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// While this file exists, the fake `claude` holds its limit back: jobs dispatched meanwhile
/// are all running when the first one stops.
pub fn gate(base: &Path) -> PathBuf {
    base.join("gate")
}
