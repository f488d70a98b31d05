//! End-to-end: what reaches the cockpit from the terminal acts only where the operator can see
//! it. The built `luzia tui` in a real terminal (tmux):
//!
//! - while the window is too small for it, keys act on nothing (`K` `y` kills no job), and the
//!   cockpit comes back as it was when the window grows;
//! - a bracketed paste (`tmux paste-buffer -p`) goes whole into the input bar or the inbox's
//!   answer, line breaks kept, and does nothing on the main screen, whatever keys it holds;
//! - text whose width terminals measure differently (emoji sequences, combining accents,
//!   variation selectors) leaves no glyph debris when the rows holding it are drawn again.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tmux::{Cockpit, Opts, POLL, Sandbox, TIMEOUT, now_rfc3339, process_alive, sh_quote};

const RUNNING: &str = "200001-busy";
const DONE: &str = "200002-done";

/// Polls until `cond` holds (for conditions on disk, not on screen).
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < TIMEOUT,
            "timed out after {TIMEOUT:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

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

/// Pastes `text` as the terminal would (bracketed, since the cockpit asks for it), line
/// breaks sent as CR, as tmux and most terminals send them.
fn paste(ck: &Cockpit, text: &str) {
    ck.tmux(&["set-buffer", "-b", "e2e-paste", "--", text]);
    ck.tmux(&["paste-buffer", "-p", "-d", "-b", "e2e-paste", "-t", "e2e"]);
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

// ----------------------------------------------------------------------------------------------
// Bracketed paste
// ----------------------------------------------------------------------------------------------

/// A config with one project whose agent writes its prompt (the task) to `ctl/task-<job id>`
/// and waits.
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

/// The file the test agent wrote its task to, once it is there.
fn dispatched_task(ctl: &Path) -> String {
    let start = Instant::now();
    loop {
        let found = fs::read_dir(ctl)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("task-"));
        if let Some(e) = found
            && let Ok(text) = fs::read_to_string(e.path())
            && !text.is_empty()
        {
            return text;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "no agent received a task in {}",
            ctl.display()
        );
        std::thread::sleep(POLL);
    }
}

#[test]
fn a_paste_goes_into_the_input_bar_with_its_lines() {
    require_tmux!();
    let sb = Sandbox::new();
    let config = dispatch_config(&sb);
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let opts = Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .env("USER", "tester");
    let ck = Cockpit::start(&sb, opts);
    ck.wait_ready();
    ck.key("n");
    ck.wait_text("new task for");
    ck.type_text("Task: ");
    // Keys the bar binds (Enter dispatches, Tab changes the project, Esc hides it) arrive as
    // text inside a paste.
    paste(
        &ck,
        "fix the flaky test\n\tthen run the suite\nand report on it",
    );
    ck.wait_text("and report on it");
    let s = ck.screen();
    assert!(
        s.contains("Task: fix the flaky test") && s.contains("then run the suite"),
        "the pasted lines are not in the bar:\n{}",
        s.text()
    );
    ck.key("Enter");
    assert_eq!(
        dispatched_task(&sb.ctl),
        "Task: fix the flaky test\n\tthen run the suite\nand report on it"
    );
}

/// Stops every process that mentions the sandbox (the detached supervisor names its job
/// directory) when the test ends, also on a panic.
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.0);
    }
}

fn wait_file(path: &Path, want: &str) {
    wait_until(&format!("{} to hold {want:?}", path.display()), || {
        fs::read_to_string(path).is_ok_and(|s| s.contains(want))
    });
}

#[test]
fn a_paste_goes_into_an_answer_and_a_reason_with_their_lines() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "200010-asks";
    sb.write_meta(id, "musica", "Ask the operator", Some(&now_rfc3339()));
    let ctl = sb.ctl.display().to_string();
    let bin = sh_quote(tmux::BIN);
    let script = format!(
        "echo $$ > pid; export LUZIA_JOB_DIR=\"$PWD\"; \
         {bin} ask 'Anything to add?' --type text > {ctl}/a1; \
         {bin} gate deploy 'Deploy now' 2> {ctl}/g.err; echo $? > {ctl}/g.rc; sleep 1000"
    );
    sb.spawn_script(&sb.job_dir(id), &script);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "waiting", |r| r.contains("waiting"));
    ck.key("i");
    ck.wait_text("Anything to add?");
    paste(&ck, "first line\nsecond line");
    ck.wait_text("second line");
    ck.key("Enter");
    wait_file(&sb.ctl.join("a1"), "first line\nsecond line");

    ck.wait_text("needs approval");
    ck.key("Enter");
    ck.wait_text("Deploy now");
    // A paste on the gate itself approves nothing.
    paste(&ck, "a");
    ck.wait_text("paste ignored");
    ck.key("d");
    ck.wait_text("reason for the denial");
    paste(&ck, "not during\nbusiness hours");
    ck.wait_text("business hours");
    ck.key("Enter");
    wait_file(&sb.ctl.join("g.rc"), "4");
    wait_file(&sb.ctl.join("g.err"), "not during\nbusiness hours");
}

#[test]
fn a_paste_on_the_main_screen_is_no_keys() {
    require_tmux!();
    let sb = Sandbox::new();
    let pid = sb.running_job(RUNNING, "musica", "Keep running", Some(&now_rfc3339()));
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(RUNNING, "running", |r| r.contains("running"));
    let before = tmux::snapshot(&sb.root);
    // Typed, these would kill the selected job, confirm, and quit.
    paste(&ck, "Ky\nq");
    let s = ck.wait_text("paste ignored");
    assert!(!s.contains("Kill job"), "{}", s.text());
    assert!(!ck.exited(), "the paste quit the cockpit");
    assert!(process_alive(pid));
    assert!(before == tmux::snapshot(&sb.root), "the jobs tree changed");
    // Typing still works after it: the paste left no half-read sequence behind.
    ck.key("?");
    ck.wait_text("help (any key closes)");
}
