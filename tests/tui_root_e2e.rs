//! End-to-end: a jobs root replaced under a running cockpit (`mv jobs jobs.old; mkdir jobs`, as
//! an operator moving old jobs aside does) is watched again. The built `luzia tui` in a real
//! terminal (tmux): while the root is gone the header says so instead of `live`; once a
//! directory is back at its path, its jobs are listed and followed as they come, and the old
//! directory's are not.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;

use tmux::{Cockpit, Opts, Sandbox};

const OLD: &str = "100000-old";
const NEW: &str = "100001-new";
const STALE: &str = "100002-stale";
const LATER: &str = "100003-later";

#[test]
fn a_jobs_root_moved_away_and_made_again_is_watched_again() {
    require_tmux!();
    let sb = Sandbox::new();
    sb.finished_job(OLD, "musica", "Before the move", 2, 0);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(OLD, "listed", |_| true);
    assert!(ck.screen().header().contains("live"));

    let moved = sb.tmp.path().join("jobs.old");
    fs::rename(&sb.root, &moved).unwrap();
    ck.wait_for("the header saying the root is missing", |s| {
        s.header().contains("root missing") && !s.header().contains("live")
    });

    fs::create_dir(&sb.root).unwrap();
    sb.finished_job(NEW, "musica", "In the new root", 3, 0);
    let s = ck.wait_row(NEW, "listed", |_| true);
    assert!(
        s.job_row(OLD).is_none(),
        "the old root's job stays:\n{}",
        s.text()
    );
    ck.wait_for("the header saying live again", |s| {
        s.header().contains("live") && !s.header().contains("missing")
    });

    // What is written in the old directory is no longer heard; what comes in the new one is.
    fs::create_dir(moved.join(STALE)).unwrap();
    fs::write(moved.join(STALE).join("output.log"), "exit:0\n").unwrap();
    sb.finished_job(LATER, "musica", "Later in the new root", 4, 0);
    let s = ck.wait_row(LATER, "listed", |_| true);
    assert!(
        s.job_row(STALE).is_none(),
        "a job of the old root is listed:\n{}",
        s.text()
    );
}
