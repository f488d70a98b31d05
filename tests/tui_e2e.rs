//! End-to-end tests of the built `luzia tui` in a real terminal: each test starts the binary in
//! a private tmux server, drives it with keys, and reads the screen with `capture-pane`.
//! Job directories are written by the test and by real processes while the cockpit watches.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use tmux::{
    Cockpit, DemoAgents, Opts, POLL, Sandbox, Screen, TIMEOUT, now_rfc3339, process_alive,
    send_signal, sh_quote, snapshot, snapshot_diff, wait_file,
};

// ----------------------------------------------------------------------------------------------
// Helpers
// ----------------------------------------------------------------------------------------------

/// The numbers of the `line N` rows in the output pane, top to bottom.
fn line_numbers(s: &Screen) -> Vec<u64> {
    s.output_lines()
        .iter()
        .filter_map(|l| l.strip_prefix("line ").and_then(|n| n.trim().parse().ok()))
        .collect()
}

/// Consecutive numbers: nothing skipped or repeated.
fn contiguous(n: &[u64]) -> bool {
    !n.is_empty() && n.windows(2).all(|w| w[1] == w[0] + 1)
}

/// The number on the last `line N` written to a log file.
fn last_line_in_file(path: &Path) -> u64 {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("line ").and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0)
}

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

/// Whether the text `needle` in an escaped capture row is drawn in reverse video (SGR 7): the
/// last SGR sequence before it switches reverse on.
fn reversed(escaped_row: &str, needle: &str) -> bool {
    let Some(at) = escaped_row.find(needle) else {
        return false;
    };
    let before = &escaped_row[..at];
    let Some(esc) = before.rfind("\x1b[") else {
        return false;
    };
    let params = before[esc + 2..].trim_end_matches('m');
    params.split(';').any(|p| p == "7")
}

/// Tokens of `stty -a` output.
fn stty_flags(s: &str) -> Vec<&str> {
    s.split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .collect()
}

/// After the cockpit has exited: the terminal is as it was before it started.
fn assert_terminal_restored(ck: &Cockpit) {
    let (before, after) = ck.stty();
    assert!(!before.is_empty(), "the wrapper recorded no stty before");
    assert!(!after.is_empty(), "the wrapper recorded no stty after");
    let flags = stty_flags(&after);
    for want in ["icanon", "echo", "isig", "icrnl", "opost"] {
        assert!(
            flags.contains(&want),
            "'{want}' is not set after the cockpit exited:\n{after}"
        );
        let off = format!("-{want}");
        assert!(
            !flags.contains(&off.as_str()),
            "'{off}' after the cockpit exited:\n{after}"
        );
    }
    assert_eq!(
        before, after,
        "the terminal settings differ from those before the cockpit started"
    );
    for (flag, want) in [
        ("alternate_on", "0"),
        ("cursor_flag", "1"),
        ("mouse_any_flag", "0"),
        ("mouse_all_flag", "0"),
        ("mouse_button_flag", "0"),
        ("mouse_standard_flag", "0"),
        ("mouse_sgr_flag", "0"),
    ] {
        assert_eq!(
            ck.display(&format!("#{{{flag}}}")),
            want,
            "tmux's {flag} after the cockpit exited"
        );
    }
    let s = ck.wait_text("AFTER-COCKPIT");
    assert!(
        s.contains("BEFORE-COCKPIT"),
        "the normal screen (with the wrapper's first line) is not back:\n{}",
        s.text()
    );
    assert!(
        s.table_box().is_none() && s.output_box().is_none(),
        "the cockpit's boxes are still on the screen:\n{}",
        s.text()
    );
}

// The jobs the feature tests share: four projects' worth of states, each task with a unique word.
const ALPHA: &str = "300001-alpha"; // running, musica, started now
const BETA: &str = "300002-beta"; // completed, overbits, Jan 2
const GAMMA: &str = "300003-gamma"; // failed, librec, Jan 3
const DELTA: &str = "300004-delta"; // completed, musica, Jan 4
const FEATURE_JOBS: [&str; 4] = [ALPHA, BETA, GAMMA, DELTA];
/// The default sort (status, then newest): running, failed, completed.
const BY_STATUS: [&str; 4] = [ALPHA, GAMMA, DELTA, BETA];
const BY_NEWEST: [&str; 4] = [ALPHA, DELTA, GAMMA, BETA];
const ALPHA_PROMPT: &str = "PROMPT-MARKER compose an anthem for the zebras";

fn feature_jobs(sb: &Sandbox) {
    sb.running_job(
        ALPHA,
        "musica",
        "Compose the zebra anthem",
        Some(&now_rfc3339()),
    );
    sb.append(ALPHA, "output.log", "alpha is composing\n");
    sb.write(
        ALPHA,
        "prompt.txt",
        format!("{ALPHA_PROMPT}\nand keep it short\n"),
    );
    sb.finished_job(BETA, "overbits", "Index the quokka archive", 2, 0);
    sb.finished_job(GAMMA, "librec", "Refactor the wombat importer", 3, 1);
    sb.finished_job(DELTA, "musica", "Tune the ocelot mixer", 4, 0);
}

fn ids(s: &Screen) -> Vec<String> {
    s.job_ids(&FEATURE_JOBS)
}

// ----------------------------------------------------------------------------------------------
// 1. Jobs appear and change status live
// ----------------------------------------------------------------------------------------------

#[test]
fn jobs_appear_change_status_and_vanish_live() {
    require_tmux!();
    let sb = Sandbox::new();
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_text("no jobs under");

    // A job as a dispatcher creates it: meta.json, then the pid of a live process.
    let live = "100001-live";
    let now = now_rfc3339();
    sb.write_meta(live, "musica", "Watch the live job", Some(&now));
    let pid = sb.spawn_sleep();
    sb.write(live, "pid", format!("{pid}\n"));
    sb.append(live, "output.log", "working on it\n");
    ck.wait_row(live, "running", |r| r.contains("running"));

    // The supervisor appends the exit line.
    sb.append(live, "output.log", "\nexit:0\n");
    let s = ck.wait_row(live, "completed", |r| r.contains("completed"));
    assert!(s.header().contains("1 completed"), "{}", s.header());

    // A job that appears and is then removed.
    let gone = "100002-gone";
    sb.write_meta(gone, "overbits", "About to vanish", Some(&now));
    sb.write(gone, "pid", format!("{pid}\n"));
    ck.wait_row(gone, "running", |r| r.contains("running"));
    fs::remove_dir_all(sb.job_dir(gone)).unwrap();
    ck.wait_for("the removed job's row to disappear", |s| {
        s.job_row(gone).is_none() && s.job_row(live).is_some()
    });

    // A job that a real shell script writes over time; it waits on gates so that every state
    // is seen, whatever the machine's load.
    let scripted = "100003-script";
    let meta = serde_json::json!({
        "id": scripted, "project": "librec", "task": "Scripted agent", "started": now,
    })
    .to_string();
    let script = format!(
        r#"
set -e
J={job}
CTL={ctl}
gate() {{ while [ ! -e "$CTL/$1" ]; do sleep 0.05; done; }}
mkdir "$J"
printf '%s\n' {meta} > "$J/.meta.json.tmp"
mv "$J/.meta.json.tmp" "$J/meta.json"
echo $$ > "$J/pid"
echo "step 1: reading the code" >> "$J/output.log"
echo "step 2: running the tests" >> "$J/output.log"
gate go-progress
printf '{{"percent": 50}}\n' > "$J/.progress.json.tmp"
mv "$J/.progress.json.tmp" "$J/progress.json"
echo "step 3: half way" >> "$J/output.log"
gate go-exit
echo "step 4: the tests failed" >> "$J/output.log"
printf '\nexit:1\n' >> "$J/output.log"
"#,
        job = sh_quote(sb.job_dir(scripted).to_str().unwrap()),
        ctl = sh_quote(sb.ctl.to_str().unwrap()),
        meta = sh_quote(&meta),
    );
    sb.spawn_script(sb.tmp.path(), &script);
    let s = ck.wait_row(scripted, "running", |r| r.contains("running"));
    assert!(
        !s.job_row(scripted).unwrap().contains('%'),
        "progress shown before there is any: {:?}",
        s.job_row(scripted)
    );
    sb.touch_ctl("go-progress");
    ck.wait_row(scripted, "running at 50%", |r| {
        r.contains("running") && r.contains("50%")
    });
    sb.touch_ctl("go-exit");
    ck.wait_row(scripted, "failed", |r| r.contains("failed"));
}

/// An agent that vanishes without an exit line is `died` (protocol: no exit line and the pid
/// is not alive). Nothing on disk changes when a process dies, so only a re-check of the pid
/// can notice it.
#[test]
fn a_job_whose_process_dies_becomes_died() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100004-dies";
    let pid = sb.running_job(id, "musica", "Vanish without a word", Some(&now_rfc3339()));
    sb.append(id, "output.log", "about to vanish\n");
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "running", |r| r.contains("running"));
    sb.kill_child(pid);
    assert!(!process_alive(pid));
    ck.wait_row(id, "died", |r| r.contains("died"));
}

/// The same when polling: every poll re-reads the jobs that can still change.
#[test]
fn a_job_whose_process_dies_becomes_died_when_polling() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100005-dies";
    let pid = sb.running_job(id, "musica", "Vanish without a word", Some(&now_rfc3339()));
    sb.append(id, "output.log", "about to vanish\n");
    let ck = Cockpit::start(&sb, Opts::default().env("LUZIA_WATCH", "poll"));
    ck.wait_row(id, "running", |r| r.contains("running"));
    sb.kill_child(pid);
    ck.wait_row(id, "died", |r| r.contains("died"));
}

// ----------------------------------------------------------------------------------------------
// 2. The output pane follows, pauses and resumes
// ----------------------------------------------------------------------------------------------

#[test]
fn output_pane_follows_pauses_and_follows_again() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100010-tail";
    sb.write_meta(id, "musica", "Stream numbered lines", Some(&now_rfc3339()));
    let first: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    sb.write(id, "output.log", first);
    let log = sb.job_dir(id).join("output.log");
    sb.spawn_script(
        &sb.job_dir(id),
        "echo $$ > .pid.tmp && mv .pid.tmp pid\n\
         i=100\n\
         while :; do i=$((i+1)); echo \"line $i\" >> output.log; sleep 0.1; done\n",
    );
    let ck = Cockpit::start(&sb, Opts::default());

    // Following: the pane ends with the newest line, and keeps up.
    let s = ck.wait_for(
        "lines written after the start, in order, in the output pane",
        |s| {
            let shown = line_numbers(s);
            s.output_title().contains(id)
                && shown.last().is_some_and(|&n| n > 100)
                && contiguous(&shown)
                && s.output_lines().iter().rev().find(|l| !l.is_empty())
                    == Some(&format!("line {}", shown.last().unwrap()))
        },
    );
    assert!(
        s.output_title().contains("FOLLOWING"),
        "{}",
        s.output_title()
    );
    let newest = *line_numbers(&s).last().unwrap();
    ck.wait_for("newer lines at the bottom of the output pane", |s| {
        line_numbers(s).last().is_some_and(|&n| n >= newest + 5)
    });

    // Scrolling up in the output pane pauses it.
    ck.key("Tab");
    ck.wait_for(
        "the focus in the output pane (its keys in the footer)",
        |s| s.footer().contains("follow"),
    );
    ck.keys(&["k", "k", "k"]);
    let s = ck.wait_stable("the output pane PAUSED", |s| {
        s.output_title().contains("PAUSED")
    });
    let view = line_numbers(&s);
    assert!(contiguous(&view), "{view:?}");
    let (top, bottom) = (view[0], *view.last().unwrap());
    wait_until("the writer to add 15 more lines", || {
        last_line_in_file(&log) >= bottom + 3 + 15
    });
    // While paused, new lines do not move the view (watched for a second: a negative).
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        let s = ck.screen();
        assert_eq!(
            line_numbers(&s),
            view,
            "a paused output pane moved:\n{}",
            s.text()
        );
        std::thread::sleep(POLL);
    }
    // ...yet they arrived: the paused view can now scroll further down than before.
    ck.keys(&["-N", "10", "j"]);
    ck.wait_for("the paused view scrolled down by 10 lines", |s| {
        line_numbers(s).first() == Some(&(top + 10)) && s.output_title().contains("PAUSED")
    });

    // G follows again and shows the newest line.
    ck.key("G");
    let target = last_line_in_file(&log);
    ck.wait_for("FOLLOWING again, with the newest lines in order", |s| {
        let shown = line_numbers(s);
        s.output_title().contains("FOLLOWING")
            && shown.last().is_some_and(|&n| n >= target)
            && contiguous(&shown)
    });
}

/// A job selected before it has any output says so; once output arrives, the notice must go.
#[test]
fn no_output_yet_notice_goes_once_output_arrives() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100011-quiet";
    sb.running_job(id, "musica", "Silent at first", None);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("the notice that there is no output yet", |s| {
        s.output_title().contains(id) && s.output_lines().iter().any(|l| l == "no output yet")
    });
    sb.append(id, "output.log", "first words\n");
    ck.wait_for("the output, without the stale notice", |s| {
        let lines = s.output_lines();
        lines.iter().any(|l| l == "first words") && !lines.iter().any(|l| l == "no output yet")
    });
}

// ----------------------------------------------------------------------------------------------
// 3. A hostile log stays inside the output pane
// ----------------------------------------------------------------------------------------------

/// A log full of what must never reach the terminal, ending with `marker` on its own line.
fn hostile_log(marker: &str) -> Vec<u8> {
    let mut b: Vec<u8> = Vec::new();
    b.extend_from_slice(b"before the hostile part\n");
    b.extend_from_slice(b"\x1b]0;PWNED\x07title-bel\n");
    b.extend_from_slice(b"\x1b]2;PWNED\x1b\\title-st\n");
    b.extend_from_slice(b"\x1b[2J\x1b[Hcleared-screen\n");
    b.extend_from_slice(b"\x1b[10;10Hcursor-moved\x1b[5Aup-five\n");
    b.extend_from_slice(b"\x1b]52;c;UFdORUQ=\x07clipboard-write\n");
    b.extend_from_slice(b"\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1006lmode-switches\n");
    b.extend_from_slice(b"\x1bcfull-reset\n");
    b.extend_from_slice(b"invalid utf-8: \xff\xfe\xc3\x28\xed\xa0\x80 end\n");
    b.extend((0..1_000_000u32).map(|i| b'a' + (i % 26) as u8));
    b.push(b'\n');
    b.extend_from_slice(marker.as_bytes());
    b.push(b'\n');
    b
}

/// The pane's title, alternate screen, cursor and mouse modes.
fn terminal_state(ck: &Cockpit) -> String {
    ck.display(
        "title=#{pane_title} alt=#{alternate_on} cursor=#{cursor_flag} \
         mouse=#{mouse_any_flag}#{mouse_all_flag}#{mouse_button_flag}#{mouse_sgr_flag}",
    )
}

/// The hostile output changed nothing outside the output pane.
fn assert_contained(ck: &Cockpit, before: &Screen, state_before: &str, after: &Screen) {
    let state = terminal_state(ck);
    assert!(!state.contains("PWNED"), "the pane title was set: {state}");
    assert_eq!(state, state_before, "the terminal's modes changed");
    assert_eq!(
        ck.tmux(&["list-buffers"]),
        "",
        "an OSC 52 clipboard write reached the terminal"
    );

    let w = ck.width as usize;
    assert_eq!(after.lines.len(), ck.height as usize, "{}", after.text());
    for (i, l) in after.lines.iter().enumerate() {
        assert!(
            l.chars().count() <= w,
            "row {i} is wider than the pane: {l}"
        );
        assert!(!l.contains("PWNED"), "row {i} shows an OSC payload: {l}");
    }
    let out = after.output_box().expect("the output pane");
    assert_eq!(Some(out), before.output_box(), "the output pane moved");
    // Everything above the output pane is as it was (bar the selected row's number).
    let table_title = before.table_title().to_owned();
    for i in 0..out.top {
        let row = after.row(i).replace("jobs 2/2", "jobs 1/2");
        assert_eq!(
            row,
            before.row(i),
            "row {i} above the output pane changed (table title before: {table_title})"
        );
    }
    // The pane's own borders are whole, and the footer below it is intact.
    let top = after.row(out.top);
    assert!(
        top.starts_with("┌ output") && top.ends_with('┐') && top.chars().count() == w,
        "the output pane's top border: {top}"
    );
    for i in out.top + 1..out.bottom {
        let l = after.row(i);
        assert!(
            l.starts_with('│') && l.ends_with('│') && l.chars().count() == w,
            "row {i} of the output pane is not inside its borders: {l}"
        );
    }
    let bottom = format!("└{}┘", "─".repeat(w - 2));
    assert_eq!(
        after.row(out.bottom),
        bottom,
        "the output pane's bottom border"
    );
    assert_eq!(after.footer(), before.footer(), "the footer changed");
    assert_eq!(
        out.bottom + 2,
        after.lines.len(),
        "rows below the output pane"
    );
}

#[test]
fn hostile_output_stays_inside_the_output_pane() {
    require_tmux!();
    let sb = Sandbox::new();
    // Both running, without a start time: nothing on their rows moves while the test looks.
    // Same status and no start time: the higher id comes first, so `calm` is selected first.
    let calm = "200000-calm";
    let evil = "100000-evil";
    sb.running_job(calm, "musica", "A calm job", None);
    sb.append(calm, "output.log", "calm output\n");
    sb.running_job(
        evil,
        "overbits",
        "A hostile job \u{1b}]0;PWNED\u{7}\u{1b}[2J with a title in its task",
        None,
    );
    sb.append(evil, "output.log", hostile_log("AFTER-HOSTILE"));

    let ck = Cockpit::start(&sb, Opts::default());
    let before = ck.wait_stable("the calm job's output", |s| {
        s.output_title().contains(calm) && s.output_lines().iter().any(|l| l == "calm output")
    });
    assert!(
        before.table_title().contains("jobs 1/2"),
        "{}",
        before.text()
    );
    let state_before = terminal_state(&ck);
    assert!(state_before.contains("alt=1"), "{state_before}");

    ck.key("j");
    let after = ck.wait_stable("the hostile job's output down to its marker", |s| {
        s.output_title().contains(evil) && s.output_lines().iter().any(|l| l == "AFTER-HOSTILE")
    });
    assert_contained(&ck, &before, &state_before, &after);

    // The same again, appended while the cockpit follows the log.
    sb.append(evil, "output.log", hostile_log("AFTER-LIVE-HOSTILE"));
    let after = ck.wait_stable("the appended hostile output down to its marker", |s| {
        s.output_lines().iter().any(|l| l == "AFTER-LIVE-HOSTILE")
    });
    assert_contained(&ck, &before, &state_before, &after);
}

// ----------------------------------------------------------------------------------------------
// 4. The terminal is restored however the cockpit ends
// ----------------------------------------------------------------------------------------------

/// Starts the cockpit on one running job, ends it with `end`, checks the terminal; returns the
/// cockpit's exit code.
fn end_and_check_terminal(end: impl Fn(&Cockpit, u32)) -> i32 {
    let sb = Sandbox::new();
    let id = "100020-term";
    sb.running_job(id, "musica", "Outlive the cockpit", Some(&now_rfc3339()));
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "running", |r| r.contains("running"));
    assert_eq!(
        ck.display("#{alternate_on}"),
        "1",
        "not on the alternate screen"
    );
    let pid = ck.pid();
    assert!(process_alive(pid));
    end(&ck, pid);
    let rc = ck.wait_exit();
    eprintln!("the cockpit exited with {rc}");
    assert!(
        !process_alive(pid),
        "the cockpit (pid {pid}) is still there"
    );
    assert_terminal_restored(&ck);
    rc
}

#[test]
fn sigterm_exits_and_restores_the_terminal() {
    require_tmux!();
    let rc = end_and_check_terminal(|_, pid| send_signal(pid, Signal::TERM));
    assert_eq!(rc, 128 + 15, "exit code after SIGTERM");
}

#[test]
fn sighup_exits_promptly_and_restores_the_terminal() {
    require_tmux!();
    let rc = end_and_check_terminal(|_, pid| send_signal(pid, Signal::HUP));
    assert_eq!(rc, 128 + 1, "exit code after SIGHUP");
}

/// The terminal goes away (the SSH connection drops): the cockpit must not linger.
#[test]
fn closing_the_terminal_ends_the_cockpit() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100021-hup";
    sb.running_job(id, "musica", "Outlive the terminal", Some(&now_rfc3339()));
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "running", |r| r.contains("running"));
    let pid = ck.pid();
    ck.tmux(&["kill-pane", "-t", "e2e"]);
    wait_until("the cockpit to end after its terminal closed", || {
        !process_alive(pid)
    });
}

#[test]
fn q_quits_and_restores_the_terminal() {
    require_tmux!();
    let rc = end_and_check_terminal(|ck, _| ck.key("q"));
    assert_eq!(rc, 0);
}

// ----------------------------------------------------------------------------------------------
// 5. Read-only writes nothing, anywhere
// ----------------------------------------------------------------------------------------------

#[test]
fn read_only_writes_nothing_whatever_keys_are_pressed() {
    require_tmux!();
    let sb = Sandbox::new();
    sb.copy_into_root(&Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/sample-jobs"));
    assert!(
        fs::symlink_metadata(sb.root.join("160500-link"))
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(true),
        "the sample symlink was not copied as a symlink"
    );
    let live = "170000-live";
    sb.running_job(
        live,
        "musica",
        "Run while the wall watches",
        Some(&now_rfc3339()),
    );
    sb.append(live, "output.log", "still running\n");

    // Everything the cockpit could write to: the jobs root, the XDG homes and HOME (the
    // wrapper's own files are in ctl/, tmux's next to it).
    let tree = || {
        let mut all = std::collections::BTreeMap::new();
        for dir in [&sb.root, &sb.state, &sb.config, &sb.home] {
            for (p, e) in snapshot(dir) {
                all.insert(dir.join(p), e);
            }
        }
        all
    };
    let before = tree();

    let ck = Cockpit::start(&sb, Opts::default().arg("--read-only"));
    let s = ck.wait_row(live, "running", |r| r.contains("running"));
    assert!(s.header().contains("READ-ONLY"), "{}", s.header());

    // Every printable ASCII key but q, then the special keys; ESC after each closes whatever
    // the key opened.
    let mut keys: Vec<String> = (0x20u8..=0x7e)
        .filter(|&b| b != b'q')
        .map(|b| (b as char).to_string())
        .collect();
    keys.extend(
        [
            "Enter", "Escape", "Tab", "BTab", "Up", "Down", "Left", "Right", "PageUp", "PageDown",
            "Home", "End", "F1", "BSpace", "DC", "IC",
        ]
        .map(String::from),
    );
    for key in &keys {
        if key.chars().count() == 1 {
            ck.type_text(key);
        } else {
            ck.key(key);
        }
        ck.esc();
    }
    // All those keys were read, and the cockpit is still there.
    ck.key("?");
    ck.wait_text("help (any key closes)");
    assert!(
        !ck.exited(),
        "a key other than q made the read-only cockpit exit"
    );
    ck.esc();
    ck.wait_for("help closed", |s| !s.contains("help (any key closes)"));
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);

    let after = tree();
    let diff = snapshot_diff(&before, &after);
    assert!(
        diff.is_empty(),
        "read-only changed files:\n{}",
        diff.join("\n")
    );
    assert!(
        !sb.state.join("luzia/cockpit.log").exists(),
        "read-only wrote its log file"
    );
    assert_eq!(
        fs::read_dir(&sb.state).unwrap().count(),
        0,
        "read-only wrote into XDG_STATE_HOME"
    );
}

// ----------------------------------------------------------------------------------------------
// 6. Features a user sees
// ----------------------------------------------------------------------------------------------

#[test]
fn help_opens_with_question_mark_and_any_key_closes_it() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("all jobs", |s| ids(s).len() == 4);
    ck.key("?");
    // Whole frames only: a capture may catch one half drawn (the popup, not yet the footer).
    let s = ck.wait_for("help and its footer", |s| {
        s.contains("help (any key closes)") && s.footer().contains("close")
    });
    assert!(s.contains("quit"), "{}", s.text());
    ck.key("x");
    let s = ck.wait_for("help closed", |s| !s.contains("help (any key closes)"));
    assert_eq!(
        ids(&s),
        BY_STATUS,
        "a key that closes help did something else"
    );
}

#[test]
fn enter_opens_the_detail_view_with_path_and_prompt() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("all jobs, the running one selected", |s| {
        ids(s) == BY_STATUS && s.output_title().contains(ALPHA)
    });
    ck.key("Enter");
    let s = ck.wait_for("the detail view with the prompt", |s| {
        s.contains(&format!("{ALPHA} · detail")) && s.contains(ALPHA_PROMPT)
    });
    let path = sb.job_dir(ALPHA);
    let path_row = s
        .lines
        .iter()
        .find(|l| l.contains("path "))
        .unwrap_or_else(|| panic!("no path row:\n{}", s.text()));
    assert!(
        path_row.contains(path.to_str().unwrap()),
        "the path row does not show {}: {path_row}",
        path.display()
    );
    assert!(s.contains("Compose the zebra anthem"), "{}", s.text());
    ck.esc();
    ck.wait_for("back to the main screen", |s| {
        s.table_box().is_some() && !s.contains("· detail")
    });
}

/// The job shown in the detail view is removed: the view must not go on as if nothing happened
/// with another job's details and a prompt that never loads.
#[test]
fn detail_view_of_a_removed_job() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    sb.write(GAMMA, "prompt.txt", "GAMMA-PROMPT refactor it\n");
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    ck.key("Enter");
    ck.wait_text(ALPHA_PROMPT);
    fs::remove_dir_all(sb.job_dir(ALPHA)).unwrap();
    // Either the view closes or says the job is gone, or it shows the job it moved to whole.
    let s = ck.wait_for("the detail view to react to the removal", |s| {
        !s.contains(&format!("{ALPHA} · detail"))
    });
    let shows_gamma = s.contains(&format!("{GAMMA} · detail"));
    if shows_gamma {
        ck.wait_for("the prompt of the job the view moved to", |s| {
            s.contains("GAMMA-PROMPT") && !s.contains("reading…")
        });
    }
}

#[test]
fn slash_filters_the_table_and_esc_clears_it() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    ck.key("/");
    ck.wait_for("the filter prompt", |s| s.footer().contains("filter jobs:"));
    ck.type_text("wombat");
    // The text arrives a key at a time, and a prefix of it may already leave only this job:
    // wait for the whole filter.
    let s = ck.wait_for("only the wombat job", |s| {
        ids(s) == [GAMMA] && s.row(1).contains("filter: wombat")
    });
    assert!(s.table_title().contains("jobs 1/1"), "{}", s.table_title());
    ck.esc();
    let s = ck.wait_for("all jobs again", |s| ids(s) == BY_STATUS);
    assert!(!s.row(1).contains("filter:"), "{}", s.row(1));
}

#[test]
fn right_arrow_switches_to_the_active_tab() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    assert!(reversed(&ck.screen_escaped()[1], " All 4 "));
    ck.key("Right");
    ck.wait_for("only the running job", |s| ids(s) == [ALPHA]);
    let tabs = ck.screen_escaped()[1].clone();
    assert!(
        reversed(&tabs, " Active 1 "),
        "the Active tab is not highlighted: {tabs:?}"
    );
    assert!(
        !reversed(&tabs, " All 4 "),
        "the All tab is still highlighted: {tabs:?}"
    );
}

#[test]
fn s_cycles_the_sort_order() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    let s = ck.wait_for("all jobs by status", |s| ids(s) == BY_STATUS);
    assert!(s.row(1).contains("sort: status"), "{}", s.row(1));
    ck.key("s");
    let s = ck.wait_for("sorted by newest", |s| {
        s.row(1).contains("sort: newest") && ids(s) == BY_NEWEST
    });
    assert!(s.footer().contains("sorted by newest"), "{}", s.footer());
}

#[test]
fn p_picks_a_project_and_filters_the_table() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default());
    let s = ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    assert!(s.header().contains("all projects"), "{}", s.header());
    ck.key("p");
    let s = ck.wait_text("┌ project");
    for item in ["(all projects)", "librec", "musica", "overbits"] {
        assert!(s.contains(item), "the picker lacks {item}:\n{}", s.text());
    }
    // (all projects), librec, musica, overbits: two down is musica.
    ck.keys(&["Down", "Down", "Enter"]);
    let s = ck.wait_for("only the musica jobs", |s| ids(s) == [ALPHA, DELTA]);
    assert!(s.header().contains("│ musica "), "{}", s.header());
    assert!(!s.contains("┌ project"), "the picker is still open");
}

#[test]
fn project_flag_shows_only_that_project() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default().arg("--project").arg("musica"));
    let s = ck.wait_for("only the musica jobs", |s| ids(s) == [ALPHA, DELTA]);
    assert!(s.header().contains("│ musica "), "{}", s.header());
}

#[test]
fn a_tiny_terminal_says_it_is_too_small_and_recovers() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default().size(50, 12));
    let s = ck.wait_text("terminal too small");
    assert!(s.contains("50x12 now"), "{}", s.text());
    ck.tmux(&["resize-window", "-t", "e2e", "-x", "160", "-y", "45"]);
    ck.wait_for("the main screen after growing", |s| ids(s) == BY_STATUS);
}

#[test]
fn polling_mode_says_so_and_still_sees_new_jobs() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default().env("LUZIA_WATCH", "poll"));
    let s = ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    assert!(s.header().contains("polling every 2s"), "{}", s.header());
    let new = "300005-later";
    sb.running_job(new, "librec", "Arrive while polling", Some(&now_rfc3339()));
    ck.wait_row(new, "running", |r| r.contains("running"));
}

#[test]
fn keys_section_of_the_config_remaps_quit() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let config = sb.config_file("remap.toml", "[keys]\nquit = \"x\"\n");
    let opts = Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap());
    let ck = Cockpit::start(&sb, opts);
    let s = ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    assert!(s.footer().contains("x quit"), "{}", s.footer());
    // q no longer quits: the help opened after it proves q was read.
    ck.key("q");
    ck.key("?");
    let names_x = |s: &Screen| {
        s.lines
            .iter()
            .any(|l| l.contains(" x  quit") && !l.contains("q/") && !l.contains(" q  "))
    };
    // Waited for as a whole: a capture may catch a frame half drawn.
    let s = ck.wait_for("the help naming x as the quit key", |s| {
        s.contains("help (any key closes)") && names_x(s)
    });
    assert!(!ck.exited(), "q still quits");
    assert!(names_x(&s), "{}", s.text());
    ck.esc();
    ck.wait_for("help closed", |s| !s.contains("help (any key closes)"));
    ck.key("x");
    assert_eq!(ck.wait_exit(), 0);
}

// ----------------------------------------------------------------------------------------------
// 7. 80x24
// ----------------------------------------------------------------------------------------------

#[test]
fn main_screen_fits_80x24() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let s = ck.wait_for("all jobs and the selected job's output", |s| {
        ids(s) == BY_STATUS && s.output_lines().iter().any(|l| l == "alpha is composing")
    });
    assert_eq!(s.lines.len(), 24, "{}", s.text());
    assert!(
        s.header().contains("1 run")
            && (s.header().contains("2 done") || s.header().contains("2 completed")),
        "header: {}",
        s.header()
    );
    assert!(s.row(1).contains("All 4"), "tabs: {}", s.row(1));
    let table = s.table_box().expect("the jobs box");
    let output = s.output_box().expect("the output box");
    assert_eq!(table.top, 2, "{}", s.text());
    assert_eq!(output.top, table.bottom + 1, "{}", s.text());
    assert_eq!(output.bottom, 22, "{}", s.text());
    for b in [table, output] {
        for i in b.top..=b.bottom {
            assert_eq!(s.row(i).chars().count(), 80, "row {i}: {}", s.row(i));
        }
        assert!(s.row(b.top).ends_with('┐') && s.row(b.bottom).ends_with('┘'));
    }
    assert!(s.footer().contains("select"), "footer: {}", s.footer());
}

#[test]
fn footer_at_80_columns_names_quit_and_help() {
    require_tmux!();
    let sb = Sandbox::new();
    feature_jobs(&sb);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let s = ck.wait_for("all jobs", |s| ids(s) == BY_STATUS);
    assert!(
        s.footer().contains("q quit") && s.footer().contains("? help"),
        "footer: {}",
        s.footer()
    );
}

// ----------------------------------------------------------------------------------------------
// Questions and gates answered from the cockpit's inbox
// ----------------------------------------------------------------------------------------------

/// A real agent script asks a choice, then free text, then stops at a gate; each is answered
/// with keys sent to the inbox popup, and the script receives exactly those answers.
#[test]
fn questions_and_gates_are_answered_from_the_inbox() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100030-asks";
    sb.write_meta(id, "musica", "Ask the operator", Some(&now_rfc3339()));
    let dir = sb.job_dir(id);
    let ctl = sb.ctl.display().to_string();
    let bin = sh_quote(tmux::BIN);
    let script = format!(
        "echo $$ > pid; export LUZIA_JOB_DIR=\"$PWD\"; \
         {bin} ask 'Which database?' --option production --option staging --context 'migrations' > {ctl}/a1; \
         {bin} ask 'Anything to add?' --type text > {ctl}/a2; \
         {bin} gate deploy 'Deploy now' 2> {ctl}/g.err; echo $? > {ctl}/g.rc; sleep 1000"
    );
    sb.spawn_script(&dir, &script);
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "waiting", |r| r.contains("waiting"));

    ck.key("i");
    ck.wait_text("Which database?");
    ck.keys(&["2", "Enter"]);
    wait_file(&sb.ctl.join("a1"), "staging");

    // The next question arrives when the agent asks it. If the cockpit read it before the
    // first answer's outcome came back, the inbox went on to it by itself; otherwise the inbox
    // closed and `i` opens it. A key sent into an open text question would be typed into it.
    // Until the cockpit has read the new question, `i` says that nothing is waiting: ask again.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = ck.wait_for("the next question, or the closed inbox", |s| {
            s.contains("Anything to add?") || !s.contains("Which database?")
        });
        if screen.contains("Anything to add?") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the second question never showed"
        );
        ck.wait_row(id, "waiting again", |r| r.contains("waiting"));
        ck.key("i");
        ck.wait_for("the inbox, or nothing waiting", |s| {
            s.contains("Anything to add?") || s.contains("nothing is waiting")
        });
    }
    ck.type_text("ship it");
    ck.key("Enter");
    wait_file(&sb.ctl.join("a2"), "ship it");

    ck.wait_text("needs approval");
    ck.key("Enter"); // on the waiting row: opens the inbox on its gate
    ck.wait_text("Deploy now");
    ck.key("d");
    ck.wait_text("reason for the denial");
    ck.type_text("not during business hours");
    ck.key("Enter");
    wait_file(&sb.ctl.join("g.rc"), "4");
    wait_file(&sb.ctl.join("g.err"), "not during business hours");

    let history = fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 3, "{history}");
    assert_eq!(
        history.matches("\"source\":\"tui\"").count(),
        3,
        "{history}"
    );
    for gone in [
        "clarification.json",
        "response.json",
        "approval.json",
        "approved.json",
    ] {
        assert!(!dir.join(gone).exists(), "{gone} left behind");
    }
}

/// Read-only shows the question but cannot answer it.
#[test]
fn read_only_shows_questions_but_cannot_answer() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100031-asks";
    sb.running_job(id, "musica", "Ask the operator", Some(&now_rfc3339()));
    sb.write(
        id,
        "clarification.json",
        r#"{"id": "q1", "type": "confirm", "question": "Proceed?"}"#,
    );
    let ck = Cockpit::start(&sb, Opts::default().arg("--read-only"));
    ck.wait_row(id, "waiting", |r| r.contains("waiting"));
    ck.key("i");
    ck.wait_text("Proceed?");
    ck.key("y");
    ck.wait_text("read-only");
    assert!(!sb.job_dir(id).join("response.json").exists());
}

// ----------------------------------------------------------------------------------------------
// Dispatch, in the demo
// ----------------------------------------------------------------------------------------------

/// In `luzia tui --demo`: a task typed into the input bar starts and is selected; it is killed
/// (with a confirmation); it is retried; the demo's question and gate are answered; and the
/// agents outlive the cockpit.
#[test]
fn the_demo_dispatches_kills_retries_and_answers() {
    require_tmux!();
    let sb = Sandbox::new();
    let tmp = sb.tmp.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let agents = DemoAgents(tmp.clone());
    let opts = Opts {
        no_jobs_dir: true,
        ..Opts::default()
    }
    .arg("--demo")
    // The agents outlive the demo (quitting it without --keep stops them).
    .arg("--keep")
    .env("TMPDIR", tmp.to_str().unwrap());
    let ck = Cockpit::start(&sb, opts);
    ck.wait_text("needs approval");

    // Dispatch from the input bar: the new job appears, running, and is selected.
    ck.key("n");
    ck.wait_text("new task for");
    ck.type_text("stream a fast index for the e2e test");
    ck.key("Enter");
    let s = ck.wait_for("the dispatched job, selected", |s| {
        s.output_title().contains("FOLLOWING")
            && s.text().contains("stream a fast index for the e2e test")
            && s.text().contains("started ")
    });
    let row = s
        .job_rows()
        .into_iter()
        .find(|r| r.contains("stream a fast index for the e2e"))
        .unwrap();
    let id = row.split_whitespace().nth(2).unwrap().to_string();
    ck.wait_row(&id, "running", |r| r.contains("running"));

    // Kill it, with a confirmation.
    ck.key("K");
    ck.wait_text("Kill job");
    ck.key("y");
    ck.wait_row(&id, "killed", |r| r.contains("killed"));

    // Retry it: a new job with retry_of.
    ck.key("r");
    ck.wait_text("started ");
    let jobs = agents.jobs_dir();
    let deadline = Instant::now() + Duration::from_secs(15);
    let retried = loop {
        let found = common::job_ids(&jobs).into_iter().find(|job| {
            fs::read_to_string(jobs.join(job).join("meta.json"))
                .is_ok_and(|m| m.contains(&format!("\"retry_of\": \"{id}\"")))
        });
        if let Some(job) = found {
            break jobs.join(job);
        }
        assert!(Instant::now() < deadline, "no job with retry_of {id}");
        std::thread::sleep(Duration::from_millis(50));
    };

    // The demo's question, answered from the inbox (Enter on its row, the first).
    // (The inbox is in age order; the question is one of its items: Tab until it shows.)
    ck.key("i");
    for _ in 0..8 {
        if ck.screen().contains("Which database") {
            break;
        }
        ck.key("Tab");
        std::thread::sleep(Duration::from_millis(150));
    }
    ck.wait_text("Which database");
    ck.keys(&["2", "Enter"]);
    // The popup confirms, then shows whatever waits next (or closes when nothing does).
    ck.wait_for("the answer confirmed", |s| {
        s.contains("answered ") && s.contains("staging")
    });
    ck.esc();

    // Quitting with --keep leaves the agents running. The retry's meta.json can be found before its
    // supervisor has written the pid file: wait for it.
    let deadline = Instant::now() + Duration::from_secs(15);
    let supervisor: u32 = loop {
        if let Some(pid) = fs::read_to_string(retried.join("pid"))
            .ok()
            .and_then(|p| p.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "no pid file in {}",
            retried.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    ck.key("q");
    ck.wait_exit();
    assert!(
        tmux::process_alive(supervisor),
        "the retried job's supervisor outlives the cockpit"
    );
}

/// A job reads as running from its meta.json before its pid is published (a dispatcher has
/// not got that far yet): `K` then asks to kill it, and the kill waits for the pid and stops the
/// process that publishes it, rather than saying the job is not running.
#[test]
fn a_job_killed_before_its_pid_is_published_is_stopped_once_it_is() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100005-early";
    sb.write_meta(id, "musica", "Killed as it starts", Some(&now_rfc3339()));
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(id, "running, with no pid yet", |r| r.contains("running"));
    ck.key("K");
    ck.wait_text("Kill job");
    ck.key("y");
    // Only now does the agent start and publish its pid.
    let script = format!(
        "echo $$ > {pid}; trap 'exit 0' TERM; while :; do sleep 0.05; done",
        pid = sh_quote(sb.job_dir(id).join("pid").to_str().unwrap())
    );
    let agent = sb.spawn_script(sb.tmp.path(), &script);
    ck.wait_row(id, "killed", |r| r.contains("killed"));
    wait_until("the agent to be stopped", || !process_alive(agent));
}

/// A mistyped `--project` on a wall display must not look like a quiet, healthy fleet: the
/// header names it first, at 80x24 too, and Esc goes back to every project.
#[test]
fn an_unknown_project_is_loud_and_esc_clears_it() {
    require_tmux!();
    let sb = Sandbox::new();
    sb.finished_job("120000-aaaa", "musica", "Build the index", 1, 0);
    let opts = Opts {
        width: 80,
        height: 24,
        ..Opts::default()
    }
    .arg("--project")
    .arg("musicaa");
    let ck = Cockpit::start(&sb, opts);
    let s = ck.wait_for("the unknown project named in the header", |s| {
        s.header().contains("NO PROJECT musicaa")
    });
    assert!(!s.contains("Build the index"), "{}", s.text());
    ck.esc();
    ck.wait_for("every project again", |s| {
        s.contains("Build the index") && !s.header().contains("NO PROJECT")
    });
    ck.key("q");
    ck.wait_exit();
}
