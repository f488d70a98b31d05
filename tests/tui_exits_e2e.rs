//! A live job's end in the built cockpit: noticed by its pidfd, and by polling only where no
//! pidfd can be had (here: the open-files limit leaves none), with the same result on its row.
//! Which way it was noticed is read from the cockpit's own log (`LUZIA_LOG=debug`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

use tmux::{Cockpit, Opts, POLL, Sandbox, TIMEOUT, now_rfc3339};

/// Waits until the cockpit's log holds `what`; returns the log.
fn wait_log(sb: &Sandbox, what: &str) -> String {
    let path = sb.state.join("luzia/cockpit.log");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let log = fs::read_to_string(&path).unwrap_or_default();
        if log.contains(what) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "the cockpit never logged {what:?}:\n{log}"
        );
        std::thread::sleep(POLL);
    }
}

/// Waits until the jobs read once more after their watches were added have been read (their
/// ends watched): a process ended before that is noticed by that read, not by its pidfd.
fn wait_watched(sb: &Sandbox) {
    let path = sb.state.join("luzia/cockpit.log");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let log = fs::read_to_string(&path).unwrap_or_default();
        if let Some(at) = log.find(WATCHED)
            && log[at..].contains(READ_AGAIN)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cockpit never logged {WATCHED:?} then {READ_AGAIN:?}:\n{log}"
        );
        std::thread::sleep(POLL);
    }
}

const READ_AGAIN: &str = "jobs read again, their ends watched";
const BY_EVENT: &str = "processes ended, noticed by event";
const BY_POLLING: &str = "processes ended, noticed by polling";
const REFUSED: &str = "no pidfd left under the limit of open files";
/// The file watches are added after the first frame, and the jobs they cover read once more: a
/// process killed before that read is seen dead by the read, not by its pidfd. The tests kill
/// only after it.
const WATCHED: &str = "jobs watched, read once more";

#[test]
fn a_killed_agent_is_noticed_by_its_pidfd() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "110000-kill";
    let pid = sb.running_job(id, "musica", "Be killed", Some(&now_rfc3339()));
    let ck = Cockpit::start(&sb, Opts::default().env("LUZIA_LOG", "debug"));
    ck.wait_row(id, "running", |r| r.contains("running"));
    wait_watched(&sb);
    sb.kill_child(pid); // SIGKILL, and reaped
    ck.wait_row(id, "died", |r| r.contains("died"));
    let log = wait_log(&sb, BY_EVENT);
    assert!(!log.contains(BY_POLLING), "{log}");
    assert!(!log.contains(REFUSED), "{log}");
}

#[test]
fn another_users_agent_is_noticed_by_its_pidfd() {
    require_tmux!();
    // Only root can start a process as another user.
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: not root, no process of another user to start");
        return;
    }
    let sb = Sandbox::new();
    let id = "110001-user";
    let mut child = Command::new("sleep")
        .arg("1000")
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    sb.write_meta(id, "musica", "Run as nobody", Some(&now_rfc3339()));
    sb.write(id, "pid", format!("{}\n", child.id()));
    let ck = Cockpit::start(&sb, Opts::default().env("LUZIA_LOG", "debug"));
    ck.wait_row(id, "running", |r| r.contains("running"));
    wait_watched(&sb);
    child.kill().unwrap();
    child.wait().unwrap();
    ck.wait_row(id, "died", |r| r.contains("died"));
    let log = wait_log(&sb, BY_EVENT);
    assert!(!log.contains(BY_POLLING), "{log}");
}

/// 514 open files: 512 are kept for the cockpit's own, so two pidfds may be opened and the
/// third live job is polled. Every one of them is seen to die all the same.
#[test]
fn past_the_open_files_limit_the_rest_are_polled_and_seen_to_die_too() {
    require_tmux!();
    let sb = Sandbox::new();
    let ids = ["110002-one", "110003-two", "110004-three"];
    let pids: Vec<u32> = ids
        .iter()
        .map(|id| sb.running_job(id, "musica", "Die", Some(&now_rfc3339())))
        .collect();
    let ck = Cockpit::start(
        &sb,
        Opts::default().env("LUZIA_LOG", "debug").open_files(514),
    );
    for id in ids {
        ck.wait_row(id, "running", |r| r.contains("running"));
    }
    wait_log(&sb, REFUSED);
    wait_watched(&sb);
    for pid in pids {
        sb.kill_child(pid);
    }
    for id in ids {
        ck.wait_row(id, "died", |r| r.contains("died"));
    }
    wait_log(&sb, BY_EVENT);
    wait_log(&sb, BY_POLLING);
}
