//! The cockpit's own log never reaches the screen: with its log file unwritable (a full disk,
//! here `/dev/full`, which fails every write with ENOSPC), nothing of the failure is drawn while
//! the cockpit owns the terminal; once it has restored the terminal it says, once, which file
//! could not be written and why.
//!
//! Without tmux the test prints a loud SKIPPED message and passes, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;

use tmux::{Cockpit, Opts, Sandbox, now_rfc3339};

/// What a log failure printed to the terminal would contain.
const LEAKS: [&str; 3] = ["No space left", "tracing-subscriber", "Unable to write"];

#[test]
fn a_log_file_on_a_full_disk_never_prints_onto_the_screen() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100030-logs";
    sb.running_job(id, "musica", "Run with a full disk", Some(&now_rfc3339()));
    let log_dir = sb.state.join("luzia");
    fs::create_dir_all(&log_dir).unwrap();
    let log = log_dir.join("cockpit.log");
    std::os::unix::fs::symlink("/dev/full", &log).unwrap();

    // debug: the most events, each one a failed write.
    let ck = Cockpit::start(&sb, Opts::default().env("LUZIA_LOG", "debug"));
    ck.wait_row(id, "running", |r| r.contains("running"));
    // The first frame is logged as soon as it is drawn, on the loop that handles keys: once the
    // help shows, that write has failed, and anything it printed would still be on screen
    // (the cockpit redraws only the cells it changes).
    ck.key("?");
    let during = ck.wait_for("the help", |s| s.contains("help (any key closes)"));
    for leak in LEAKS {
        assert!(
            !during.contains(leak),
            "{leak:?} reached the cockpit's screen:\n{}",
            during.text()
        );
    }
    ck.key("x");
    ck.wait_for("help closed", |s| !s.contains("help (any key closes)"));
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);

    let after = ck.wait_for("the shell after the cockpit", |s| {
        s.contains("AFTER-COCKPIT")
    });
    let text = after.text();
    assert!(
        !text.contains("tracing-subscriber") && !text.contains("Unable to write"),
        "the log subscriber printed its own error:\n{text}"
    );
    let notice = format!("could not write its log file {}", log.display());
    assert_eq!(
        text.matches(&notice).count(),
        1,
        "the failure is said once the terminal is back, naming the file:\n{text}"
    );
    assert!(text.contains("No space left on device"), "{text}");
}
