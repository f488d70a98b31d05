//! What the Telegram bridge costs at rest: CPU time and wake-ups (context switches) per minute of
//! `luzia notify --watch` over 200 jobs, with `[telegram]` pointed at a Bot API server of the
//! bench's own (it holds each long poll, as Telegram does) and, in the same run and at the same
//! time, the same watcher without `[telegram]`; and two more with `[telegram]` (each with a
//! server of its own), over the same jobs and one more waiting on a question: with no default
//! (its post is open, nothing in it changes), and with a default taken in 30 minutes (its post
//! is open and its countdown is edited each minute). Nothing happens during the window: no job
//! changes, no question is asked.
//!
//! `cargo bench --bench telegram_idle` (a minute; `LUZIA_BENCH_SECS=N` for another window).
//! Figures and method: docs/performance.md, "The Telegram bridge at rest".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The tests' own Bot API server; its waits call [`wait_for`] here.
#[path = "../tests/common/telegram.rs"]
mod telegram;

/// Polls `probe` until it gives a value, failing past `within`.
pub fn wait_for<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use telegram::{CHAT, FakeBot, TOKEN};

const JOBS: usize = 200;
/// Jobs among them still running (their supervisor is this process): read again at each tick.
const RUNNING: usize = 10;

/// A job of the bench's own process waiting on a question, whose default (if `default`) is
/// taken in 30 minutes.
fn make_question(root: &Path, default: bool) {
    let dir = root.join("120000-asks");
    fs::create_dir_all(&dir).unwrap();
    let now = chrono::Utc::now();
    let meta = serde_json::json!({"id": "120000-asks", "project": "bench", "task": "asks",
        "started": now.to_rfc3339()});
    fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    fs::write(dir.join("output.log"), "asking\n").unwrap();
    let mut q = serde_json::json!({"id": "q1", "type": "choice", "question": "Which database?",
        "options": ["production", "staging"], "asked_at": now.to_rfc3339()});
    if default {
        q["timeout_minutes"] = 30.into();
        q["default_if_timeout"] = "staging".into();
    }
    fs::write(dir.join("clarification.json"), q.to_string()).unwrap();
}

fn make_jobs(root: &Path) {
    let started = chrono::Utc::now() - chrono::Duration::hours(1);
    for i in 0..JOBS {
        let id = format!("120000-{i:04}");
        let dir = root.join(&id);
        fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({"id": id, "project": "bench", "task": "idle",
            "started": started.to_rfc3339()});
        fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        if i < RUNNING {
            fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
            fs::write(dir.join("output.log"), "working\n").unwrap();
        } else {
            fs::write(dir.join("output.log"), "done\n\nexit:0\n").unwrap();
        }
    }
}

/// CPU time (ms) and context switches of a process, all its threads together.
fn sample(pid: u32) -> (f64, u64) {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (1-based), in clock ticks.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = rustix::param::clock_ticks_per_second() as f64;
    let mut switches = 0;
    for task in fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let status = fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if line.starts_with("voluntary_ctxt_switches")
                || line.starts_with("nonvoluntary_ctxt_switches")
            {
                switches += line
                    .split_whitespace()
                    .nth(1)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap();
            }
        }
    }
    (ticks as f64 * 1000.0 / hz, switches)
}

fn threads(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

struct Watcher {
    name: &'static str,
    child: Child,
    out: PathBuf,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn watcher(base: &Path, name: &'static str, root: &Path, telegram: Option<&str>) -> Watcher {
    let dir = base.join(name);
    fs::create_dir_all(&dir).unwrap();
    let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
    let mut config = format!(
        "jobs_dir = {}\n\n[notify]\ncommand = [\"true\"]\nevents = [\"question\", \"gate\"]\n",
        q(root)
    );
    if let Some(api) = telegram {
        config.push_str(&format!(
            "\n[telegram]\nchat_id = \"{CHAT}\"\nallowed_users = [111]\napi = \"{api}\"\n"
        ));
    }
    fs::write(dir.join("config.toml"), config).unwrap();
    let out = dir.join("watch.out");
    let child = Command::new(env!("CARGO_BIN_EXE_luzia"))
        .env_remove("LUZIA_JOBS_DIR")
        .env_remove("LUZIA_CONFIG")
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .arg("--config")
        .arg(dir.join("config.toml"))
        .args(["notify", "--watch"])
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Watcher { name, child, out }
}

fn main() {
    let secs: u64 = std::env::var("LUZIA_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("jobs");
    make_jobs(&root);
    let asking = tmp.path().join("jobs-asking");
    make_jobs(&asking);
    make_question(&asking, false);
    let counting = tmp.path().join("jobs-counting");
    make_jobs(&counting);
    make_question(&counting, true);
    let bot = FakeBot::start();
    let bot_asked = FakeBot::start();
    let bot_open = FakeBot::start();
    let plain = watcher(tmp.path(), "without the bridge", &root, None);
    let bridged = watcher(tmp.path(), "with the bridge", &root, Some(&bot.url()));
    let asked = watcher(
        tmp.path(),
        "bridge, question open",
        &asking,
        Some(&bot_asked.url()),
    );
    let open = watcher(
        tmp.path(),
        "bridge, countdown open",
        &counting,
        Some(&bot_open.url()),
    );
    let all = [&plain, &bridged, &asked, &open];
    for w in all {
        wait_for("the watcher to start", Duration::from_secs(60), || {
            fs::read_to_string(&w.out)
                .ok()
                .filter(|t| t.contains("luzia notify: watching"))
        });
    }
    // Past start-up: the first full read, the first long poll held.
    wait_for("the first long poll", Duration::from_secs(60), || {
        (!bot.calls_of("getUpdates").is_empty()).then_some(())
    });
    for b in [&bot_asked, &bot_open] {
        wait_for("the question posted", Duration::from_secs(60), || {
            (!b.calls_of("sendMessage").is_empty()).then_some(())
        });
    }
    std::thread::sleep(Duration::from_secs(6));
    let bots = [&bot, &bot_asked, &bot_open];
    let polls_before = bots.map(|b| b.calls_of("getUpdates").len());
    let edits_before = bot_open.calls_of("editMessageText").len();
    let before: Vec<(f64, u64)> = all.iter().map(|w| sample(w.child.id())).collect();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let after: Vec<(f64, u64)> = all.iter().map(|w| sample(w.child.id())).collect();
    let polls = bots.map(|b| b.calls_of("getUpdates").len());
    let edits = bot_open.calls_of("editMessageText").len() - edits_before;
    println!(
        "luzia notify --watch, {JOBS} jobs ({RUNNING} running), at rest for {:.1} min:",
        minutes
    );
    println!(
        "{:<22} {:>14} {:>18} {:>8}",
        "", "CPU ms/min", "wake-ups/min", "threads"
    );
    for (i, w) in all.iter().enumerate() {
        let cpu = (after[i].0 - before[i].0) / minutes;
        let wakes = (after[i].1 - before[i].1) as f64 / minutes;
        println!(
            "{:<22} {:>14.1} {:>18.1} {:>8}",
            w.name,
            cpu,
            wakes,
            threads(w.child.id())
        );
    }
    let per_min = |i: usize| (polls[i] - polls_before[i]) as f64 / minutes;
    println!(
        "getUpdates long polls/min: {:.1} at rest, {:.1} with a question open, {:.1} with a \
         countdown open (and {:.1} countdown edits/min)",
        per_min(0),
        per_min(1),
        per_min(2),
        edits as f64 / minutes
    );
    let other = bot.calls().len() - bot.calls_of("getUpdates").len();
    println!("other Bot API calls of the bridge at rest during the whole run: {other}");
}
