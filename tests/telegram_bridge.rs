//! The Telegram bridge of `luzia notify --watch`, end to end: the real binary, real agents
//! (`luzia ask`, `luzia gate` processes waiting on their job directories), and a Bot API server
//! the test starts (tests/common/telegram.rs) that `api` in `[telegram]` points at. Presses and
//! replies are updates the test pushes, as Telegram would deliver them. Every wait has a
//! deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::sshd::Sshd;
use common::telegram::{FakeBot, TOKEN};
use common::*;
use serde_json::{Value, json};
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(40);
const BRUNO: (i64, &str) = (111, "bruno");
const ANA: (i64, &str) = (222, "ana");
const MALLORY: (i64, &str) = (333, "mallory");
/// The part of the token a leak would show.
const SECRET: &str = "AAtestSECRETtoken_xyz";

fn wait<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// A jobs root, a config with `[telegram]` (and what a test adds), a state directory, and the
/// Bot API server. `fresh`: a new HOME holding only `~/.config/luzia/config.toml` with the
/// `[telegram]` table, as a person would write it, and nothing else set.
struct World {
    _tmp: TempDir,
    base: PathBuf,
    home: PathBuf,
    jobs: PathBuf,
    config: Option<PathBuf>,
    bot: FakeBot,
    bridges: usize,
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn telegram_toml(api: &str) -> String {
    format!(
        "[telegram]\nchat_id = \"{}\"\nallowed_users = [111, 222]\napi = \"{api}\"\n",
        common::telegram::CHAT
    )
}

impl World {
    fn new(extra: &str) -> World {
        World::with_api(extra, None)
    }

    fn with_api(extra: &str, api: Option<String>) -> World {
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
    fn fresh() -> Option<World> {
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

    fn luzia(&self) -> Command {
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
    fn bridge(&mut self) -> Watcher {
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
    fn agent_in(&self, root: &Path, id: &str, args: &[&str]) -> Agent {
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

    fn agent(&self, id: &str, args: &[&str]) -> Agent {
        self.agent_in(&self.jobs, id, args)
    }

    fn state(&self) -> Value {
        serde_json::from_slice(&fs::read(self.state_path()).unwrap_or_default())
            .unwrap_or(Value::Null)
    }

    fn state_path(&self) -> PathBuf {
        self.home.join(".local/state/luzia/telegram.json")
    }
}

struct Watcher {
    guard: ChildGuard,
    out: PathBuf,
    err: PathBuf,
}

impl Watcher {
    fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }
    fn stderr(&self) -> String {
        fs::read_to_string(&self.err).unwrap_or_default()
    }
    fn sigkill(&mut self) {
        kill_hard(self.guard.id());
        self.guard.wait_within(GUARD, "the killed watcher");
    }
}

struct Agent {
    guard: ChildGuard,
    dir: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

impl Agent {
    /// Waits for the agent to end: its status, stdout and stderr.
    fn finish(&mut self) -> (ExitStatus, String, String) {
        let status = self.guard.wait_within(GUARD, "the agent");
        (
            status,
            fs::read_to_string(&self.out).unwrap(),
            fs::read_to_string(&self.err).unwrap(),
        )
    }

    /// The history's records that `needle` appears in.
    fn history_with(&self, needle: &str) -> usize {
        fs::read_to_string(self.dir.join("history.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }

    fn pending_question(&self) -> Option<String> {
        let q: Value =
            serde_json::from_slice(&fs::read(self.dir.join("clarification.json")).ok()?).ok()?;
        let answered = self.dir.join("response.json").exists();
        (!answered).then(|| q["id"].as_str().unwrap().to_owned())
    }
}

fn no_token(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET) && !text.contains(TOKEN),
        "{what} holds the token: {text}"
    );
}

const ASK: [&str; 8] = [
    "ask",
    "Which database?",
    "--option",
    "production",
    "--option",
    "staging",
    "--context",
    "Running the migration",
];

#[test]
fn from_nothing_buttons_and_replies_answer_questions_and_decide_gates_for_allowed_users_only() {
    let Some(mut w) = World::fresh() else {
        return;
    };
    let watcher = w.bridge();
    let mut asker = w.agent("142315-a1b2", &ASK);
    let m = w.bot.wait_message("Which database?");
    for part in [
        "142315-a1b2",
        "project shop",
        "migrate the orders table",
        "Running the migration",
    ] {
        assert!(m.text.contains(part), "{part}: {}", m.text);
    }
    let buttons = w.bot.buttons(m.id);
    let labels: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(labels, ["1. production", "2. staging"]);

    // Someone not in allowed_users: refused, logged, nothing decided.
    let foreign = w.bot.press(MALLORY, m.id, &buttons[0].1);
    assert!(w.bot.wait_notice(foreign).contains("Not counted"));
    assert!(
        watcher
            .stdout()
            .contains("refused a press by @mallory (333)")
    );
    assert_eq!(asker.pending_question().as_deref(), Some("q1"));

    // Two phones at once: one wins, the other is told who did.
    let first = w.bot.press(BRUNO, m.id, &buttons[1].1);
    let second = w.bot.press(ANA, m.id, &buttons[0].1);
    let (n1, n2) = (w.bot.wait_notice(first), w.bot.wait_notice(second));
    assert!(n1.starts_with("Done"), "{n1}");
    assert!(
        n2.starts_with("Already settled") && n2.contains("@bruno"),
        "{n2}"
    );
    let (status, out, err) = asker.finish();
    assert!(status.success(), "{err}");
    assert_eq!(out, "staging\n");
    let edited = w
        .bot
        .wait_edit(m.id, "answered by @bruno from Telegram: 'staging'");
    assert!(edited.markup.is_none(), "the buttons are gone");
    assert_eq!(asker.history_with("\"telegram:@bruno (111)\""), 1);
    assert_eq!(asker.history_with("\"source\":\"telegram\""), 1);

    // A gate denied: Deny asks for the reason, the reply is the reason, word for word.
    let mut gater = w.agent(
        "142316-c3d4",
        &["gate", "deploy", "Ship build 42 to production"],
    );
    let g = w.bot.wait_message("Ship build 42");
    let buttons = w.bot.buttons(g.id);
    assert_eq!(buttons.len(), 2, "{buttons:?}");
    let deny = w.bot.press(ANA, g.id, &buttons[1].1);
    assert!(w.bot.wait_notice(deny).contains("reason"));
    let prompt = w.bot.wait_message("Why deny?");
    let reason = "not on a Friday:\n  wait for Monday's freeze to end ";
    w.bot.reply(ANA, prompt.id, reason);
    let (status, _, err) = gater.finish();
    assert_eq!(status.code(), Some(4), "{err}");
    assert_eq!(
        err,
        format!("{reason}\n"),
        "the reason reaches the agent word for word"
    );
    w.bot
        .wait_edit(g.id, "denied by @ana from Telegram: 'not on a Friday:");

    // A gate approved with its button.
    let mut gater = w.agent("142317-e5f6", &["gate", "migrate", "Run 3 migrations"]);
    let g = w.bot.wait_message("Run 3 migrations");
    let approve = w.bot.press(BRUNO, g.id, &w.bot.buttons(g.id)[0].1);
    assert!(w.bot.wait_notice(approve).starts_with("Done"));
    let (status, _, err) = gater.finish();
    assert!(status.success(), "{err}");
    assert!(err.contains("approved by telegram:@bruno (111)"), "{err}");
    w.bot.wait_edit(g.id, "approved by @bruno from Telegram");

    // The token went to the server in the path only, and nowhere else.
    assert!(w.bot.calls().iter().all(|c| c.token == TOKEN));
    no_token("the watcher's stdout", &watcher.stdout());
    no_token("the watcher's stderr", &watcher.stderr());
    assert!(!cmdline_mentions(watcher.guard.id(), Path::new(SECRET)));
    assert!(w.state_path().is_file(), "{}", w.state_path().display());
    no_token("the state", &fs::read_to_string(w.state_path()).unwrap());
}

#[test]
fn an_answer_given_elsewhere_edits_the_message_and_its_buttons_then_decide_nothing() {
    let mut w = World::new("");
    let _watcher = w.bridge();
    let id = "150000-aaaa";
    let mut asker = w.agent(id, &ASK);
    let m = w.bot.wait_message("Which database?");
    let stale = w.bot.buttons(m.id);

    let out = w
        .luzia()
        .args(["answer", id, "--question", "q1", "production"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(asker.finish().1, "production\n");
    let edited = w
        .bot
        .wait_edit(m.id, "answered at the command line by bruno@");
    assert!(edited.markup.is_none());

    // The same job asks again: the old message's buttons must not answer the new question.
    let mut again = w.agent(
        id,
        &["ask", "Second question?", "--option", "a", "--option", "b"],
    );
    let m2 = w.bot.wait_message("Second question?");
    let press = w.bot.press(BRUNO, m.id, &stale[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Already settled: answered at the command line"),
        "{notice}"
    );
    assert_eq!(again.pending_question().as_deref(), Some("q2"));
    let press = w.bot.press(BRUNO, m2.id, &w.bot.buttons(m2.id)[1].1);
    assert!(w.bot.wait_notice(press).starts_with("Done"));
    assert_eq!(again.finish().1, "b\n");
    assert_eq!(
        w.bot
            .messages()
            .iter()
            .filter(|m| m.text.contains("Which database?"))
            .count(),
        1
    );
}

#[test]
fn a_bridge_killed_and_started_again_posts_nothing_twice_and_applies_nothing_twice() {
    let mut w = World::new("");
    let mut first = w.bridge();
    let id = "160000-bbbb";
    let key = format!("{id}:question:q1");
    let mut asker = w.agent(id, &ASK);
    let m = w.bot.wait_message("Which database?");
    wait("the post recorded", || {
        (w.state()["posted"][&key]["message_id"] == m.id).then_some(())
    });
    first.sigkill();

    // A press while no bridge runs; the next one takes it, once.
    let press = w.bot.press(BRUNO, m.id, &w.bot.buttons(m.id)[1].1);
    let mut second = w.bridge();
    assert!(w.bot.wait_notice(press).starts_with("Done"));
    assert_eq!(asker.finish().1, "staging\n");
    w.bot.wait_edit(m.id, "answered by @bruno");
    wait("the update and the close recorded", || {
        let s = w.state();
        (s["offset"].as_i64() > Some(press) && s["posted"][&key]["closed"]["edited"] == true)
            .then_some(())
    });
    second.sigkill();

    // As if the second had been killed after answering but before it saved: the update comes
    // again and the post is open in the state.
    let mut state = w.state();
    state["offset"] = json!(press);
    state["posted"][&key]["closed"] = Value::Null;
    fs::write(w.state_path(), state.to_string()).unwrap();
    let presses_before = w.bot.calls_of("answerCallbackQuery").len();
    let mut third = w.bridge();
    wait("the update handled again", || {
        (w.bot.calls_of("answerCallbackQuery").len() > presses_before).then_some(())
    });
    wait("the post closed again", || {
        (w.state()["posted"][&key]["closed"]["edited"] == true).then_some(())
    });
    let asked = w
        .bot
        .messages()
        .iter()
        .filter(|m| m.text.contains("Which database?"))
        .count();
    assert_eq!(asked, 1, "posted once over three bridges");
    assert_eq!(
        asker.history_with("\"telegram:@bruno (111)\""),
        1,
        "answered once"
    );
    assert_eq!(
        w.bot.calls_of("sendMessage").len(),
        1,
        "nothing else was posted"
    );

    // Killed between recording a post and hearing from Telegram: the post is sent again at the
    // next start, saying it may be a second copy.
    let other = "160001-cccc";
    let other_key = format!("{other}:question:q1");
    let _asker = w.agent(
        other,
        &["ask", "Which region?", "--option", "eu", "--option", "us"],
    );
    w.bot.wait_message("Which region?");
    wait("the post recorded", || {
        w.state()["posted"][&other_key]["message_id"].as_i64()
    });
    third.sigkill();
    let mut state = w.state();
    state["posted"][&other_key]["message_id"] = Value::Null;
    fs::write(w.state_path(), state.to_string()).unwrap();
    let _fourth = w.bridge();
    let again = w.bot.wait_message("Posted again");
    assert!(again.text.contains("Which region?"), "{}", again.text);
    wait("the second copy recorded", || {
        (w.state()["posted"][&other_key]["message_id"] == again.id).then_some(())
    });
    assert_eq!(w.bot.calls_of("sendMessage").len(), 3);
}

#[test]
fn a_question_on_another_host_answered_from_telegram_lands_there_once() {
    let remote = tempfile::tempdir().unwrap();
    let remote_jobs = remote.path().join("jobs");
    fs::create_dir_all(&remote_jobs).unwrap();
    let Some(sshd) = Sshd::start("b", &remote_jobs) else {
        return;
    };
    let mut w = World::new(&sshd.host_toml(Path::new(LUZIA)));
    let _watcher = w.bridge();
    let mut asker = w.agent_in(&remote_jobs, "170000-cccc", &ASK);
    let m = w.bot.wait_message("Which database?");
    assert!(m.text.contains("job 170000-cccc on b"), "{}", m.text);
    let buttons = w.bot.buttons(m.id);
    let press = w.bot.press(BRUNO, m.id, &buttons[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(notice.starts_with("Done"), "{notice}\nsshd: {}", sshd.log());
    assert_eq!(asker.finish().1, "staging\n");
    w.bot.wait_edit(m.id, "(on b)");
    assert_eq!(asker.history_with("\"telegram:@bruno (111)\""), 1);
    let again = w.bot.press(ANA, m.id, &buttons[0].1);
    let notice = w.bot.wait_notice(again);
    assert!(notice.starts_with("Already settled"), "{notice}");
    assert_eq!(
        asker.history_with("\"source\":\"telegram\""),
        1,
        "it landed there once"
    );
}

/// A port that accepts connections and drops them at once, counting them: a Bot API that is
/// down.
struct Dropper {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Dropper {
    fn start() -> Dropper {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (Arc::clone(&accepted), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return; // the listener closes with the thread
                }
                if let Ok(mut c) = conn {
                    let mut buf = [0u8; 64];
                    let _ = c.read(&mut buf);
                    a.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Dropper {
            port,
            accepted,
            stop,
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

#[test]
fn an_outage_is_said_once_and_a_429_is_waited_out() {
    let down = Dropper::start();
    let port = down.port;
    let mut w = World::with_api("", Some(format!("http://127.0.0.1:{port}")));
    let watcher = w.bridge();
    wait("three failed polls", || {
        (down.accepted.load(Ordering::SeqCst) >= 3).then_some(())
    });
    let err = watcher.stderr();
    assert_eq!(err.matches("cannot reach the Bot API").count(), 1, "{err}");
    no_token("the outage's words", &err);

    down.stop();
    w.bot = FakeBot::start_on(port);
    w.bot.script(
        "sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1",
            "parameters": {"retry_after": 1}}),
    );
    let _asker = w.agent("180000-dddd", &ASK);
    w.bot.wait_message("Which database?");
    let sends = w.bot.calls_of("sendMessage");
    assert_eq!(sends.len(), 2, "refused once, then sent");
    assert!(
        sends[1].at.duration_since(sends[0].at) >= Duration::from_secs(1),
        "retry_after was honoured"
    );
    wait("the recovery said", || {
        watcher
            .stderr()
            .contains("the Bot API answers again")
            .then_some(())
    });
    let err = watcher.stderr();
    assert_eq!(err.matches("cannot reach the Bot API").count(), 1, "{err}");
    assert_eq!(err.matches("the Bot API answers again").count(), 1, "{err}");
    assert!(err.contains("429 retry_after"), "{err}");
    no_token("the watcher's stderr", &err);
}
