//! The usage limit from nothing: a fresh HOME with no config file, no XDG variables, only
//! `luzia` and a `claude` on PATH, as a user has them, in a git repository of their own. The
//! user runs `luzia run "task"`, the account's five-hour limit refuses it, and the job is
//! `limited` with the reset to the second; the user keeps the cockpit open (`luzia tui`), which
//! at the reset continues the job's session once (`--resume`), and the continuation completes.
//!
//! Twice: with a fake `claude` that prints Claude Code 2.1.197's stream-json, and with the real
//! Claude Code CLI (every version the environment names: `clis_or_skip`) logged in to a
//! subscription (`CLAUDE_CODE_OAUTH_TOKEN`) against the fake Messages API answering 429 with
//! the rate-limit headers Anthropic sends a subscriber. Every wait has a deadline; without
//! tmux, git or the CLI a test says SKIPPED loudly and passes (in CI it fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, UNIX_EPOCH};

use common::claude::{FakeApi, Reply, all_text, clis_or_skip};
use common::{git_or_skip, kill_processes_mentioning, wait_for};
use serde_json::Value;
use tempfile::TempDir;

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(120);
/// How far ahead the limit resets: room for the first run to end on it.
const RESET_IN: u64 = 25;

/// A `claude` that speaks Claude Code 2.1.197's stream-json: refused by the limit on its first
/// run (the reset read from the file named in it), it succeeds when resumed.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
sid=""; prev=""; resumed=""
for a in "$@"; do
  case "$prev" in --session-id) sid="$a";; --resume) sid="$a"; resumed=1;; esac
  prev="$a"
done
cat > /dev/null
mkdir -p "$HOME/.claude/projects/-repo"
printf '{"prompt": "x"}\n' >> "$HOME/.claude/projects/-repo/$sid.jsonl"
printf '{"type":"system","subtype":"init","session_id":"%s","model":"claude-sonnet-4-5","claude_code_version":"2.1.197","tools":[]}\n' "$sid"
if [ -n "$resumed" ]; then
  printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}\n' "$sid"
  exit 0
fi
reset=$(cat RESET_PATH)
words=$(date -u -d "@$reset" +%-I:%M%P)
printf '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s,"rateLimitType":"five_hour","isUsingOverage":false},"session_id":"%s"}\n' "$reset" "$sid"
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You'"'"'ve hit your session limit \302\267 resets %s (UTC)","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}\n' "$words" "$sid"
exit 1
"#;

/// A machine as a new user finds it. Dropping it stops what it started.
struct World {
    base: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    bin: PathBuf,
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
    fn new(claude: impl FnOnce(&Path) -> PathBuf, extra: Vec<(String, String)>) -> World {
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

    fn socket(&self) -> String {
        format!(
            "luzia-limit-first-{}",
            self.base.file_name().unwrap().to_string_lossy()
        )
    }

    /// The whole environment a user's shell has: nothing of the test's.
    fn env(&self) -> Vec<(String, String)> {
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

    fn run(&self, dir: &Path, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .env_clear()
            .envs(self.env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn luzia(&self, args: &[&str]) -> Output {
        self.run(&self.repo, "luzia", args)
    }

    fn jobs(&self) -> Vec<Value> {
        let out = self.luzia(&["jobs", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    fn job(&self, id: &str) -> Option<Value> {
        self.jobs().into_iter().find(|j| j["id"] == id)
    }

    /// `luzia tui` in a real terminal, kept open as a user keeps it.
    fn open_cockpit(&self) {
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

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket(), "capture-pane", "-p"])
            .output()
            .unwrap();
        text(&out.stdout)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first job ends on the limit and is `limited` with its reset to the second; the cockpit
/// continues it once at the reset. Returns the continuation's id.
fn limited_then_continued(world: &World, reset: u64) -> String {
    let started = Instant::now();
    let run = world.luzia(&["run", "write the docs"]);
    assert!(run.status.success(), "luzia run: {}", text(&run.stderr));
    let id = text(&run.stdout).trim().to_owned();
    world.open_cockpit();
    let job = wait_for("the first job to end", WAIT, || {
        world.job(&id).filter(|j| !j["exit_code"].is_null())
    });
    let log = || text(&world.luzia(&["logs", &id]).stdout);
    assert_eq!(job["status"], "limited", "{job}\n{}", log());
    let want = chrono::DateTime::from_timestamp(reset as i64, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(job["resets_at"], want.as_str(), "to the second: {job}");
    assert!(
        UNIX_EPOCH.elapsed().unwrap().as_secs() < reset,
        "the job ended after its reset ({:?}): make RESET_IN longer",
        started.elapsed()
    );
    let clock = chrono::DateTime::from_timestamp(reset as i64, 0)
        .unwrap()
        .format("%H:%M")
        .to_string();
    wait_for("the cockpit to show the limit", WAIT, || {
        let screen = world.screen();
        screen
            .contains(&format!("limit · resets {clock}"))
            .then_some(())
    });

    // Continued once, at the reset, by the cockpit: the one luzia looking.
    let next = wait_for("the continuation", WAIT, || {
        let job = world.job(&id)?;
        job["retried_by"]
            .as_array()?
            .first()?
            .as_str()
            .map(str::to_owned)
    });
    let done = wait_for("the continuation to end", WAIT, || {
        world.job(&next).filter(|j| !j["exit_code"].is_null())
    });
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resumes"], id.as_str(), "{done}");
    let first = world.job(&id).unwrap();
    assert_eq!(
        first["retried_by"],
        serde_json::json!([next]),
        "once: {first}"
    );
    let dir = |id: &str| world.home.join(".local/state/luzia/jobs").join(id);
    let began = fs::metadata(dir(&next)).unwrap().modified().unwrap();
    let late = began
        .duration_since(UNIX_EPOCH + Duration::from_secs(reset))
        .expect("not continued before the reset");
    eprintln!("continued {late:?} after the reset");
    assert!(late >= Duration::from_secs(5), "the margin: {late:?}");
    let claim = fs::read_to_string(dir(&id).join("limit-resume.json")).unwrap();
    assert!(claim.contains("resumed after the usage limit"), "{claim}");
    next
}

#[test]
fn from_nothing_a_limited_job_is_continued_once_at_the_reset() {
    require_tmux!();
    if !git_or_skip() {
        return;
    }
    let reset = UNIX_EPOCH.elapsed().unwrap().as_secs() + RESET_IN;
    let world = World::new(
        |base| {
            let path = base.join("claude");
            let reset_file = base.join("reset");
            fs::write(&reset_file, reset.to_string()).unwrap();
            let script =
                FAKE_CLAUDE.replace("RESET_PATH", &tmux::sh_quote(reset_file.to_str().unwrap()));
            fs::write(&path, script).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
            path
        },
        Vec::new(),
    );
    assert!(!world.home.join(".config").exists(), "no config file");
    limited_then_continued(&world, reset);
    assert!(
        !world.home.join(".config/luzia").exists(),
        "still no config file"
    );
}

#[test]
fn the_real_cli_refused_by_the_limit_is_continued_once_at_the_reset() {
    require_tmux!();
    if !git_or_skip() {
        return;
    }
    for claude in clis_or_skip("the_real_cli_refused_by_the_limit_is_continued_once_at_the_reset") {
        let reset = UNIX_EPOCH.elapsed().unwrap().as_secs() + RESET_IN;
        let api = FakeApi::start(vec![
            Reply::limit(reset as i64),
            Reply::text("Docs written."),
        ]);
        let extra = vec![
            ("ANTHROPIC_BASE_URL".to_owned(), api.base_url()),
            (
                "CLAUDE_CODE_OAUTH_TOKEN".to_owned(),
                "sk-ant-oat01-limit-test".to_owned(),
            ),
        ];
        let world = World::new(|_| claude.clone(), extra);
        let next = limited_then_continued(&world, reset);
        // The same conversation, continued: the task, then the prompt that says the limit reset.
        let turns = api.wait_for_requests(2, WAIT);
        let resumed = all_text(turns.last().unwrap());
        assert!(resumed.contains("write the docs"), "{resumed}");
        assert!(
            resumed.contains("usage limit that stopped you has reset"),
            "{resumed}"
        );
        let log = world.luzia(&["logs", &next]);
        assert!(
            text(&log.stdout).contains("Docs written."),
            "{}",
            text(&log.stdout)
        );
    }
}
