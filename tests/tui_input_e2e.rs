//! End-to-end: what reaches the cockpit from the terminal acts only where the operator can see
//! it. The built `luzia tui` in a real terminal (tmux):
//!
//! - while the window is too small for it, keys act on nothing (`K` `y` kills no job), and the
//!   cockpit comes back as it was when the window grows.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.

mod common;
#[macro_use]
mod tmux;

use tmux::{Cockpit, Opts, Sandbox, now_rfc3339, process_alive};

const RUNNING: &str = "200001-busy";
const DONE: &str = "200002-done";

fn resize(ck: &Cockpit, w: u16, h: u16) {
    ck.tmux(&[
        "resize-window",
        "-t",
        "e2e",
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
    ]);
}

// ----------------------------------------------------------------------------------------------
// Too small: only quit works
// ----------------------------------------------------------------------------------------------

#[test]
fn keys_act_on_nothing_while_the_window_is_too_small() {
    require_tmux!();
    let sb = Sandbox::new();
    let pid = sb.running_job(RUNNING, "musica", "Keep running", Some(&now_rfc3339()));
    sb.finished_job(DONE, "musica", "Finished before", 2, 0);
    let ck = Cockpit::start(&sb, Opts::default());
    let s = ck.wait_row(RUNNING, "running", |r| r.contains("running"));
    assert!(
        s.job_rows()[0].contains(RUNNING),
        "the running job is selected:\n{}",
        s.text()
    );
    let before = tmux::snapshot(&sb.root);

    resize(&ck, 50, 12);
    ck.wait_text("50x12 now");
    // Kill and confirm, and everything else a hidden popup or the table might take.
    ck.keys(&["K", "y", "Enter", "r", "n", "i", "a", "Tab", "K", "Y"]);
    // A resize that is still too small: once it shows, the keys sent before it were read.
    resize(&ck, 52, 12);
    ck.wait_text("52x12 now");
    assert!(process_alive(pid), "the job's process was killed unseen");
    assert!(!ck.exited(), "the cockpit quit");

    resize(&ck, 160, 45);
    let s = ck.wait_stable("the main screen again", |s| {
        s.job_row(RUNNING).is_some_and(|r| r.contains("running"))
    });
    assert!(
        !s.contains("Kill job"),
        "a confirmation opened:\n{}",
        s.text()
    );
    assert!(!s.contains("new task for"), "the input bar opened");
    assert!(process_alive(pid));
    let after = tmux::snapshot(&sb.root);
    assert!(
        before == after,
        "the jobs tree changed: {:?}",
        tmux::snapshot_diff(&before, &after)
    );

    // Quit works while too small.
    resize(&ck, 40, 10);
    ck.wait_text("40x10 now");
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    assert!(process_alive(pid), "quitting leaves the job running");
}
