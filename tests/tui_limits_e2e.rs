//! End-to-end: the account's usage limit in the cockpit (a real terminal, tmux, 160x45), with a
//! fake `claude` that speaks Claude Code 2.1.197's stream-json: on its first run the API
//! refuses it (`rate_limit_event`, the reset to the second) and it ends with Claude Code's own
//! words (`You've hit your session limit · resets 3:37pm (UTC)`); resumed with `--resume` it
//! succeeds. The limited row says `limit · resets HH:MM`, a task dispatched meanwhile is held
//! and its row says so, the header says the limit and how many wait on it; at the reset the
//! cockpit itself continues the job once and starts the held task, and the hold leaves the
//! screen.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use tmux::{Cockpit, Opts, Sandbox};

/// How far ahead the limit resets: room for the cockpit to start and show the hold on a loaded
/// machine, short enough for a test.
const RESET_IN: u64 = 30;

fn config(sb: &Sandbox) -> PathBuf {
    let project = sb.tmp.path().join("project");
    let queue = sb.tmp.path().join("queue");
    fs::create_dir_all(&project).unwrap();
    let claude = sb.ctl.join("claude");
    fs::write(
        &claude,
        common::limited_claude::script(common::limited_claude::SESSION_LIMIT),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    sb.config_file(
        "limits.toml",
        &format!(
            "queue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n[agent]\n\
             command = [{claude:?}, \"-p\", \"--output-format\", \"stream-json\", \"--verbose\"]\n\
             max_concurrent = 4\nprompt_template = \"{{task}}\"\n\
             [agent.env]\nRESET_FILE = {reset:?}\n\n[projects.p]\npath = {project:?}\n",
            notes = sb.tmp.path().join("notifications.log"),
            reset = sb.tmp.path().join("reset"),
        ),
    )
}

#[test]
fn the_cockpit_shows_the_limit_holds_the_queue_and_resumes_at_the_reset() {
    require_tmux!();
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let at = UNIX_EPOCH.elapsed().unwrap().as_secs() + RESET_IN;
    fs::write(sb.tmp.path().join("reset"), at.to_string()).unwrap();
    let clock = chrono::DateTime::from_timestamp(at as i64, 0)
        .unwrap()
        .format("%H:%M")
        .to_string();

    let first = sb.luzia(&cfg, &["run", "p", "--", "write the docs"]);
    let first = first.trim().to_string();
    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .size(160, 45)
            .global_arg("--config")
            .global_arg(cfg.to_str().unwrap()),
    );
    let limited = format!("limit · resets {clock}");
    ck.wait_row(&first, &limited, |r| {
        r.contains("limited") && r.contains(&limited)
    });

    // Dispatched while the limit stands: queued, held, and the cockpit says by what.
    let said = sb.luzia(&cfg, &["run", "p", "--", "PLAIN second task"]);
    assert!(
        said.contains(&format!("held: claude limit until {clock}")),
        "{said}"
    );
    let queued = said.split_whitespace().nth(1).unwrap().to_string();
    let held = format!("held: claude limit until {clock}");
    let header = format!("claude limit · resets {clock} · 1 held");
    let s = ck.wait_stable("the held row and the header", |s| {
        s.job_row(&queued).is_some_and(|r| r.contains(&held)) && s.header().contains(&header)
    });
    let row = s.job_row(&first).unwrap();
    assert!(row.contains(&limited), "{}", s.text());
    assert!(
        UNIX_EPOCH.elapsed().unwrap().as_secs() < at,
        "the hold was shown after the reset: make RESET_IN longer"
    );

    // At the reset the cockpit continues the job once and starts the held task.
    let s = ck.wait_for_up_to(
        Duration::from_secs(RESET_IN + 60),
        "the job resumed and the held task done",
        |s| {
            s.job_row(&first).is_some_and(|r| r.contains("resumed → "))
                && s.job_rows()
                    .iter()
                    .any(|r| r.contains("PLAIN second task") && r.contains("completed"))
        },
    );
    assert!(!s.header().contains("claude limit"), "{}", s.text());
    assert!(!s.text().contains("held: "), "{}", s.text());
    let row = s.job_row(&first).unwrap();
    let next = row
        .split("resumed → ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let link = format!("retry of {first}");
    let s = ck.wait_for("the continuation completed", |s| {
        s.job_rows()
            .iter()
            .any(|r| r.contains("completed") && r.contains(&next) && r.contains(&link))
    });
    assert_eq!(
        s.job_rows().len(),
        3,
        "the job, its one continuation, the held task: {}",
        s.text()
    );
    let started = fs::metadata(sb.job_dir(&next)).unwrap().modified().unwrap();
    let late = started
        .duration_since(UNIX_EPOCH + Duration::from_secs(at))
        .expect("not continued before the reset");
    eprintln!("the cockpit continued the job {late:?} after the reset");
    assert!(late >= Duration::from_secs(5), "the margin: {late:?}");
    let stdin = fs::read_to_string(sb.job_dir(&next).join("stdin.txt")).unwrap();
    assert!(
        stdin.contains("usage limit that stopped you has reset"),
        "{stdin}"
    );
}
