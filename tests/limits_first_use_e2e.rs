//! The usage limit from nothing: a fresh HOME with no config file, no XDG variables, only
//! `luzia` and a `claude` on PATH, as a user has them, in a git repository of their own. The
//! user runs `luzia run "task"`, the account's five-hour limit refuses it, and the job is
//! `limited` with the reset to the second; the user keeps the cockpit open (`luzia tui`), and
//! at the reset the job's session is continued once (`--resume`: by the cockpit or the waiter
//! its supervisor left, whichever looks first), and the continuation completes.
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

mod limits_world;

use std::fs;
use std::time::{Duration, Instant, UNIX_EPOCH};

use common::claude::{FakeApi, Reply, all_text, clis_or_skip};
use common::{git_or_skip, wait_for};
use limits_world::{World, fake_claude, text};

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(120);
/// How far ahead the limit resets: room for the first run to end on it.
const RESET_IN: u64 = 25;

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

    // Continued once, at the reset, by the cockpit or the waiter: both look.
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
    let world = World::new(|base| fake_claude(base, reset), Vec::new());
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
