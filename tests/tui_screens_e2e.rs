//! What the cockpit shows, in a real terminal. The terminal's title (tmux's pane title): what
//! waits for a person, else what runs, as a tab or a tmux window shows it while the cockpit is
//! out of sight; the read-only wall display too; and the terminal's own title back once the
//! cockpit has quit. A message longer than the footer: cut with `…` on the row above, and
//! whole in the recent events.
//!
//! Without tmux the tests print a loud SKIPPED message and pass, unless `LUZIA_REQUIRE_TMUX=1`
//! (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::time::Instant;

use tmux::{Cockpit, Opts, POLL, Sandbox, TIMEOUT};

/// Waits until the pane's title is `want`; fails with the title last seen.
fn wait_title(ck: &Cockpit, want: &str) {
    let start = Instant::now();
    loop {
        let title = ck.display("#{pane_title}");
        if title == want {
            return;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "the title is {title:?}, not {want:?}, after {TIMEOUT:?}\n{}",
            ck.screen().text()
        );
        std::thread::sleep(POLL);
    }
}

/// Two running jobs, one of them asking a question.
fn one_waiting(sb: &Sandbox) {
    sb.running_job("120000-asks", "musica", "Pick the database", None);
    sb.running_job("120100-runs", "musica", "Index the archive", None);
    sb.write(
        "120000-asks",
        "clarification.json",
        r#"{"id": "q1", "type": "text", "question": "Which database?"}"#,
    );
}

#[test]
fn the_title_says_what_waits_then_what_runs() {
    require_tmux!();
    let sb = Sandbox::new();
    one_waiting(&sb);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    wait_title(&ck, "luzia · 1 waiting");
    // The question withdrawn: nothing waits, two jobs run.
    std::fs::remove_file(sb.job_dir("120000-asks").join("clarification.json")).unwrap();
    wait_title(&ck, "luzia · 2 running");
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    // The one restore path gave the terminal its own title back.
    let after = ck.display("#{pane_title}");
    assert!(!after.starts_with("luzia"), "after quitting: {after:?}");
}

#[test]
fn the_read_only_wall_display_sets_the_title_too() {
    require_tmux!();
    let sb = Sandbox::new();
    one_waiting(&sb);
    let ck = Cockpit::start(&sb, Opts::default().arg("--read-only"));
    wait_title(&ck, "luzia · 1 waiting");
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
}

#[test]
fn a_long_message_is_cut_above_the_footer_and_whole_in_the_recent_events() {
    require_tmux!();
    let sb = Sandbox::new();
    // A long id makes a long refusal.
    let id = "120200-tidy-the-release-notes";
    sb.finished_job(id, "musica", "Tidy the release notes", 3, 0);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    ck.wait_row(id, "listed", |_| true);
    // Merging a job that ran without isolation: refused, at more length than 80 columns hold
    // beside the keys.
    ck.key("M");
    let s = ck.wait_text("ran without isolation");
    let above = s.row(s.lines.len() - 2);
    assert!(above.contains('…'), "cut with an ellipsis:\n{}", s.text());
    assert!(above.contains("(e shows it whole)"), "{}", s.text());
    assert!(
        s.footer().contains("q quit"),
        "the keys stay:\n{}",
        s.text()
    );
    ck.key("e");
    let s = ck.wait_text("messages, newest first");
    let inside: String = s.lines.iter().map(|l| l.trim_matches('│')).collect();
    let text: String = inside.split_whitespace().collect();
    let whole = format!("job{id}ranwithoutisolation:thereisnochangerecordedtomerge");
    assert!(text.contains(&whole), "{}", s.text());
    // q closes the view (as it closes every view), then quits.
    ck.key("q");
    ck.wait_for("the events view closed", |s| {
        !s.text().contains("messages, newest first")
    });
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
}
