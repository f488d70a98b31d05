//! The Telegram bridge's test harness, shared by the tests/telegram_*.rs files: a jobs root and a
//! config with `[telegram]` pointed at the tests' own Bot API server (tests/common/telegram.rs),
//! `luzia notify --watch` started and killed as a person would, and real agents (`luzia ask`,
//! `luzia gate` processes waiting on their job directories). Every wait has a deadline.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::telegram::{FakeBot, TOKEN};
use super::*;

pub const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
pub const GUARD: Duration = Duration::from_secs(40);
pub const BRUNO: (i64, &str) = (111, "bruno");
pub const ANA: (i64, &str) = (222, "ana");
pub const MALLORY: (i64, &str) = (333, "mallory");
/// The part of the token a leak would show.
pub const SECRET: &str = "AAtestSECRETtoken_xyz";

pub fn wait<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    super::wait_for(what, GUARD, probe)
}

/// A jobs root, a config with `[telegram]` (and what a test adds), a state directory, and the
/// Bot API server. `fresh`: a new HOME holding only `~/.config/luzia/config.toml` with the
/// `[telegram]` table, as a person would write it, and nothing else set.
pub struct World {
    _tmp: TempDir,
    pub base: PathBuf,
    pub home: PathBuf,
    pub jobs: PathBuf,
    pub config: Option<PathBuf>,
    pub bot: FakeBot,
    pub bridges: usize,
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn telegram_toml(api: &str) -> String {
    format!(
        "[telegram]\nchat_id = \"{}\"\nallowed_users = [111, 222]\napi = \"{api}\"\n",
        super::telegram::CHAT
    )
}

impl World {
    pub fn new(extra: &str) -> World {
        World::with_api(extra, None)
    }

    pub fn with_api(extra: &str, api: Option<String>) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-tg-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let bot = FakeBot::start();
        let jobs = base.join("jobs");
        fs::create_dir_all(&jobs).unwrap();
        fs::create_dir_all(base.join("home")).unwrap();
        let config = base.join("config.toml");
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        fs::write(
            &config,
            format!(
                "jobs_dir = {}\n\n{}\n{extra}",
                q(&jobs),
                telegram_toml(&api.unwrap_or_else(|| bot.url()))
            ),
        )
        .unwrap();
        World {
            home: base.join("home"),
            _tmp: tmp,
            base,
            jobs,
            config: Some(config),
            bot,
            bridges: 0,
        }
    }

    /// A new HOME with only the config a person writes. Where the orchestrator's jobs root
    /// exists, luzia uses it, not the per-user one: the test cannot start from nothing there.
    pub fn fresh() -> Option<World> {
        if Path::new("/var/log/luz-orchestrator/jobs").exists() {
            skip("/var/log/luz-orchestrator/jobs exists here: a fresh HOME would use it");
            return None;
        }
        let tmp = tempfile::Builder::new()
            .prefix("luzia-tg-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let bot = FakeBot::start();
        let home = base.join("home");
        fs::create_dir_all(home.join(".config/luzia")).unwrap();
        fs::write(
            home.join(".config/luzia/config.toml"),
            telegram_toml(&bot.url()),
        )
        .unwrap();
        Some(World {
            jobs: home.join(".local/state/luzia/jobs"),
            home,
            _tmp: tmp,
            base,
            config: None,
            bot,
            bridges: 0,
        })
    }

    pub fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in LUZIA_VARS {
            cmd.env_remove(var);
        }
        for var in [
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
            "XDG_RUNTIME_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("USER", "bruno")
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .current_dir(&self.base);
        if let Some(c) = &self.config {
            cmd.arg("--config").arg(c);
        }
        cmd
    }

    /// `luzia notify --watch`, its stdout and stderr in files.
    pub fn bridge(&mut self) -> Watcher {
        self.bridges += 1;
        let out = self.base.join(format!("watch-{}.out", self.bridges));
        let err = self.base.join(format!("watch-{}.err", self.bridges));
        let child = self
            .luzia()
            .args(["notify", "--watch"])
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let guard = ChildGuard::new(child);
        wait("the watcher to say it watches", || {
            let text = fs::read_to_string(&out).unwrap_or_default();
            let errs = fs::read_to_string(&err).unwrap_or_default();
            assert!(!errs.contains("luzia: error"), "the watcher failed: {errs}");
            text.contains("luzia notify: watching").then_some(())
        });
        Watcher { guard, out, err }
    }

    /// A job in `root` whose agent is `luzia ARGS --job-dir DIR` (the test's own process
    /// stands for the job's live supervisor).
    pub fn agent_in(&self, root: &Path, id: &str, args: &[&str]) -> Agent {
        let dir = root.join(id);
        fs::create_dir_all(&dir).unwrap();
        let meta = json!({"id": id, "project": "shop", "task": "migrate the orders table",
            "started": now_rfc3339()});
        fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
        let out = dir.join("agent.out");
        let err = dir.join("agent.err");
        let child = self
            .luzia()
            .args(args)
            .arg("--job-dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Agent {
            guard: ChildGuard::new(child),
            dir,
            out,
            err,
        }
    }

    pub fn agent(&self, id: &str, args: &[&str]) -> Agent {
        self.agent_in(&self.jobs, id, args)
    }

    pub fn state(&self) -> Value {
        serde_json::from_slice(&fs::read(self.state_path()).unwrap_or_default())
            .unwrap_or(Value::Null)
    }

    pub fn state_path(&self) -> PathBuf {
        self.home.join(".local/state/luzia/telegram.json")
    }
}

pub struct Watcher {
    pub guard: ChildGuard,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Watcher {
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.err).unwrap_or_default()
    }
    pub fn sigkill(&mut self) {
        kill_hard(self.guard.id());
        self.guard.wait_within(GUARD, "the killed watcher");
    }
}

pub struct Agent {
    pub guard: ChildGuard,
    pub dir: PathBuf,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Agent {
    /// Waits for the agent to end: its status, stdout and stderr.
    pub fn finish(&mut self) -> (ExitStatus, String, String) {
        let status = self.guard.wait_within(GUARD, "the agent");
        (
            status,
            fs::read_to_string(&self.out).unwrap(),
            fs::read_to_string(&self.err).unwrap(),
        )
    }

    /// The history's records that `needle` appears in.
    pub fn history_with(&self, needle: &str) -> usize {
        fs::read_to_string(self.dir.join("history.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }

    pub fn pending_question(&self) -> Option<String> {
        let q: Value =
            serde_json::from_slice(&fs::read(self.dir.join("clarification.json")).ok()?).ok()?;
        let answered = self.dir.join("response.json").exists();
        (!answered).then(|| q["id"].as_str().unwrap().to_owned())
    }
}

pub fn no_token(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET) && !text.contains(TOKEN),
        "{what} holds the token: {text}"
    );
}

pub const ASK: [&str; 8] = [
    "ask",
    "Which database?",
    "--option",
    "production",
    "--option",
    "staging",
    "--context",
    "Running the migration",
];
