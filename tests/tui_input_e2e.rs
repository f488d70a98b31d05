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
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use luzia::jobs::text::width::char_width;
use tmux::{Cockpit, Opts, POLL, Sandbox, Screen, TIMEOUT, now_rfc3339, process_alive, sh_quote};

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

/// A cockpit that dispatches through [`dispatch_config`], its input bar open; the reaper
/// (dropped after the cockpit) ends what the test dispatched.
fn cockpit_with_the_bar_open(sb: &Sandbox) -> (Cockpit<'_>, Reaper) {
    let config = dispatch_config(sb);
    let reaper = Reaper(sb.tmp.path().to_owned());
    let opts = Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .env("USER", "tester");
    let ck = Cockpit::start(sb, opts);
    ck.wait_ready();
    ck.key("n");
    ck.wait_text("new task for");
    (ck, reaper)
}

#[test]
fn a_paste_goes_into_the_input_bar_with_its_lines() {
    require_tmux!();
    let sb = Sandbox::new();
    let (ck, _reaper) = cockpit_with_the_bar_open(&sb);
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

/// 2,100 characters typed in one burst (a paste the terminal does not bracket, as
/// `tmux send-keys -l` sends it) all reach the bar, and are shown, with no key after them.
#[test]
fn a_burst_of_typing_of_any_size_is_delivered_without_another_key() {
    require_tmux!();
    let sb = Sandbox::new();
    let (ck, _reaper) = cockpit_with_the_bar_open(&sb);
    // Numbered words, so a character lost anywhere shows in the task.
    let burst: String = (0..300).map(|i| format!("w{i:04}. ")).collect::<String>() + "THE-END";
    assert!(burst.len() >= 2100);
    ck.tmux(&["send-keys", "-t", "e2e", "-l", "--", &burst]);
    ck.wait_text("THE-END");
    ck.key("Enter");
    assert_eq!(dispatched_task(&sb.ctl), burst);
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

// ----------------------------------------------------------------------------------------------
// Width: no glyph debris
// ----------------------------------------------------------------------------------------------

const WIDE_JOB: &str = "200020-wide";

/// Lines as an agent writes them, each with the text a terminal may then hold for it.
fn tricky_lines(round: usize) -> Vec<(String, Vec<String>)> {
    let family = "👨\u{200D}👩\u{200D}👧\u{200D}👦";
    let one = |shown: &str| vec![shown.to_string()];
    let cases = [
        (
            format!("family {family} photos"),
            one("family 👨👩👧👦 photos"),
        ),
        (
            "heart ❤\u{FE0F} and text ❤\u{FE0E} love".into(),
            one("heart ❤ and text ❤ love"),
        ),
        (
            "thumbs 👍\u{1F3FD} wave 👋\u{1F3FF} ok".into(),
            one("thumbs 👍 wave 👋 ok"),
        ),
        (
            "cafe\u{301} cre\u{300}me z\u{301}\u{302}\u{303}".into(),
            one("cafe\u{301} cre\u{300}me z\u{301}\u{302}\u{303}"),
        ),
        // A mark after a space stays on the space: how a mark is shown alone.
        (
            "\u{301}lone mark, keycap 1\u{FE0F}\u{20E3}".into(),
            one("\u{301}lone mark, keycap 1\u{20E3}"),
        ),
        (
            "soft\u{AD}hy\u{200B}phen\u{2060} ｶ\u{FF9E}ｷ\u{FF9E}".into(),
            one("softhyphen ｶ\u{3099}ｷ\u{3099}"),
        ),
        (
            format!("日本語 {family}{family} 🇫🇷 end"),
            one("日本語 👨👩👧👦👨👩👧👦 🇫🇷 end"),
        ),
        // A conjunct: one grapheme of two spacing letters.
        (
            "conjunct \u{915}\u{94D}\u{937}\u{92E}\u{93E} ok".into(),
            one("conjunct \u{915}\u{94D}\u{937}\u{92E}\u{93E} ok"),
        ),
        // Unicode 15: drawn where the terminal's tables know it, else blank; never debris.
        (
            "shaking \u{1FAE8} face".into(),
            vec!["shaking \u{1FAE8} face".into(), "shaking    face".into()],
        ),
    ];
    // Each round shifts the text sideways, so that every cell of a row changes.
    cases
        .into_iter()
        .enumerate()
        .map(|(i, (raw, shown))| {
            let pad = " ".repeat((round * 3 + i) % 7);
            let prefix = format!("{round}.{i} {pad}");
            let shown = shown.iter().map(|s| format!("{prefix}{s}")).collect();
            (format!("{prefix}{raw}"), shown)
        })
        .collect()
}

/// Whether the last rows of the output pane are the lines expected (one of the texts each
/// may show as).
fn output_is(s: &Screen, want: &[Vec<String>]) -> bool {
    let rows = s.output_lines();
    let shown: Vec<&str> = rows
        .iter()
        .map(|r| r.trim_end())
        .filter(|r| !r.is_empty())
        .collect();
    shown.len() >= want.len()
        && shown[shown.len() - want.len()..]
            .iter()
            .zip(want)
            .all(|(row, ways)| ways.iter().any(|w| w == row))
}

#[test]
fn text_of_disputed_width_leaves_no_debris_when_rows_redraw() {
    require_tmux!();
    let sb = Sandbox::new();
    sb.running_job(
        WIDE_JOB,
        "musica",
        "Plain task to start with",
        Some(&now_rfc3339()),
    );
    // A pane full of wide text first: whatever a row leaves behind shows against it.
    let filler: String = (0..40)
        .map(|i| format!("{i:02} {}\n", "#".repeat(150)))
        .collect();
    sb.append(WIDE_JOB, "output.log", filler);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("the filler in the output pane", |s| {
        s.output_lines().iter().any(|l| l.starts_with("39 ###"))
    });
    for round in 0..4 {
        let lines = tricky_lines(round);
        let raw: String = lines.iter().map(|(r, _)| format!("{r}\n")).collect();
        sb.append(WIDE_JOB, "output.log", raw);
        let want: Vec<Vec<String>> = lines.into_iter().map(|(_, shown)| shown).collect();
        let s = ck.wait_stable(&format!("round {round} of lines, whole"), |s| {
            output_is(s, &want)
        });
        // The rows above, still filler, are whole filler rows: nothing spilled up or across.
        for row in s.output_lines().iter().filter(|r| r.contains("###")) {
            assert!(
                row.trim_end().ends_with(&"#".repeat(20)),
                "a filler row was written over: {row:?}"
            );
        }
        borders_in_place(&s);
    }

    // The task in the table: a row drawn again with other text.
    for (raw, shown) in [
        (
            "Sort 👨\u{200D}👩\u{200D}👧 cafe\u{301} ❤\u{FE0F}",
            "Sort 👨👩👧 cafe\u{301} ❤",
        ),
        (
            "Plain task written over the emoji row",
            "Plain task written over the emoji row",
        ),
        (
            "👍\u{1F3FD}👍\u{1F3FD} then ｶ\u{FF9E} 日本",
            "👍👍 then ｶ\u{3099} 日本",
        ),
    ] {
        sb.write_meta(WIDE_JOB, "musica", raw, Some(&now_rfc3339()));
        let s = ck.wait_stable(&format!("the task {shown:?} in its row"), |s| {
            s.job_row(WIDE_JOB)
                .is_some_and(|r| r.trim_end().ends_with(shown))
        });
        borders_in_place(&s);
    }
}

/// Every row of the table and the output pane, as the terminal holds it, is as wide as the
/// terminal, and ends in the right border: nothing shifted a row's cells.
fn borders_in_place(s: &Screen) {
    let boxes = [s.table_box(), s.output_box()];
    for b in boxes
        .into_iter()
        .map(|b| b.expect("the table and the output pane"))
    {
        for row in &s.lines[b.top..=b.bottom] {
            let columns: usize = row.chars().map(char_width).sum();
            assert!(
                columns == 160 && ['┐', '│', '┘'].iter().any(|c| row.ends_with(*c)),
                "a row shifted ({columns} columns): {row:?}\n{}",
                s.text()
            );
        }
    }
}
