//! End-to-end: keys that keep work, in the built `luzia tui` in a real terminal (tmux):
//!
//! - `:q` Enter quits, and starts no job (a k9s or vim hand's habit is not a task);
//! - ctrl-c in the input bar empties the draft, a second closes the bar, and the cockpit runs on;
//! - `luzia tui --demo` quit with `q` leaves none of its agents running; with `--keep` they run
//!   on (and are stopped by the test).
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tmux::{Cockpit, DemoRun, Opts, POLL, Sandbox, TIMEOUT};

const DONE: &str = "200002-done";

/// A config with one project whose agent would write its task to `ctl/task-<job id>`.
fn dispatch_config(sb: &Sandbox) -> PathBuf {
    let base = sb.tmp.path();
    let project = base.join("proj");
    fs::create_dir_all(&project).unwrap();
    let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
    let agent = r#"cat > "$1/task-$LUZIA_JOB_ID"; exec sleep 1000"#;
    let text = format!(
        "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
         command = [\"sh\", \"-c\", {}, \"sh\", {}]\nprompt_template = \"{{task}}\"\n\n\
         [projects.p]\npath = {}\n",
        q(&sb.root),
        q(&base.join("notifications.log")),
        q(&base.join("queue")),
        serde_json::to_string(agent).unwrap(),
        q(&sb.ctl),
        q(&project),
    );
    let config = base.join("dispatch.toml");
    fs::write(&config, text).unwrap();
    config
}

fn dispatching(sb: &Sandbox) -> Opts {
    let config = dispatch_config(sb);
    Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .env("USER", "tester")
}

/// The names in a directory (empty when it does not exist).
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Stops whatever a failed test may have started.
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.0);
    }
}

#[test]
fn colon_q_quits_and_starts_no_job() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    sb.finished_job(DONE, "p", "Finished before", 2, 0);
    let ck = Cockpit::start(&sb, dispatching(&sb));
    ck.wait_row(DONE, "listed", |_| true);
    let jobs = names(&sb.root);
    ck.type_text(":q");
    ck.wait_text(":q");
    ck.key("Enter");
    assert_eq!(ck.wait_exit(), 0, "the cockpit quits");
    assert_eq!(names(&sb.root), jobs, "no job directory was created");
    assert!(
        names(&sb.tmp.path().join("queue"))
            .iter()
            .all(|n| !n.starts_with("task")),
        "nothing was queued"
    );
    assert!(
        names(&sb.ctl).iter().all(|n| !n.starts_with("task-")),
        "no agent was started"
    );
}

#[test]
fn ctrl_c_in_the_input_bar_empties_the_draft_then_closes_the_bar() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    sb.finished_job(DONE, "p", "Finished before", 2, 0);
    let ck = Cockpit::start(&sb, dispatching(&sb));
    ck.wait_row(DONE, "listed", |_| true);
    ck.key("n");
    ck.wait_text("new task for");
    ck.type_text("fix the flaky test");
    ck.wait_text("fix the flaky test");
    ck.key("C-c");
    let s = ck.wait_for("the draft emptied, the bar open", |s| {
        !s.contains("fix the flaky test") && s.contains("new task for")
    });
    assert!(!ck.exited(), "ctrl-c quit the cockpit:\n{}", s.text());
    ck.key("C-c");
    ck.wait_for("the bar closed", |s| !s.contains("new task for"));
    ck.wait_ready();
    assert!(!ck.exited(), "the second ctrl-c quit the cockpit");
    // Nothing is kept now: the main screen's ctrl-c quits.
    ck.key("C-c");
    assert_eq!(ck.wait_exit(), 0);
    assert!(names(&sb.ctl).iter().all(|n| !n.starts_with("task-")));
}

/// Processes of the demo (its supervisors name their job directory, its agents carry it in
/// LUZIA_JOB_DIR), polled until `pred` holds for them or the deadline passes.
fn demo_processes_until(base: &Path, what: &str, pred: impl Fn(&[u32]) -> bool) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let found = common::processes_mentioning(base);
        if pred(&found) {
            return found;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "timed out after {TIMEOUT:?} waiting for {what}: still {found:?}"
        );
        std::thread::sleep(POLL);
    }
}

/// The demo running with its agents started; returns the demo's own directory.
fn demo_running(demo: &DemoRun, ck: &Cockpit) -> PathBuf {
    ck.wait_ready();
    let base = loop {
        if let Some(jobs) = demo.jobs_dir() {
            break jobs.parent().unwrap().to_owned();
        }
        std::thread::sleep(POLL);
    };
    demo_processes_until(&base, "the demo's agents to start", |p| p.len() >= 10);
    base
}

#[test]
fn the_demo_stops_its_agents_when_quit() {
    require_tmux!();
    let sb = Sandbox::new();
    let demo = DemoRun::new(&sb);
    let _reaper = Reaper(demo.tmp.clone());
    let ck = Cockpit::start(&sb, demo.opts());
    let base = demo_running(&demo, &ck);
    let quit_at = Instant::now();
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    let took = quit_at.elapsed();
    demo_processes_until(&base, "no demo process left", <[u32]>::is_empty);
    let s = ck.wait_text("demo agents; their jobs are in");
    assert!(s.contains("luzia: stopped "), "{}", s.text());
    // Said for whoever reads the test's output; never asserted (a loaded machine is slower).
    eprintln!("quitting the demo, its agents stopped, took {took:?}");
    assert!(took < Duration::from_secs(60));
}

#[test]
fn the_demo_with_keep_leaves_its_agents_running() {
    require_tmux!();
    let sb = Sandbox::new();
    let demo = DemoRun::new(&sb);
    let _reaper = Reaper(demo.tmp.clone());
    let ck = Cockpit::start(&sb, demo.opts().arg("--keep"));
    let base = demo_running(&demo, &ck);
    let quit_at = Instant::now();
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    let took = quit_at.elapsed();
    ck.wait_text("the demo's agents keep running (--keep)");
    // The demo stops its agents before it exits: were they stopped, they would be gone now.
    let supervisors = demo.supervisors();
    assert!(
        supervisors.len() >= 5,
        "the demo's supervisors are gone: {supervisors:?}"
    );
    assert!(!common::processes_mentioning(&base).is_empty());
    eprintln!("quitting the demo with --keep took {took:?}");
}
