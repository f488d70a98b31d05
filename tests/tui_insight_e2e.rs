//! End-to-end tests of the cockpit's insight, in a real terminal: known issues found in agent
//! output (the `alert` column, the detail view, `[` and `]` in the output pane), alarms (a
//! stalled agent), and the recent-events view (`e`). Each test starts the built binary in a
//! private tmux server at 160x45 against job directories written by real processes: a test's
//! own scripts, or the demo's agents.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::time::Duration;

use chrono::Utc;

use tmux::{Cockpit, DemoRun, Opts, Sandbox, Screen, now_rfc3339};

/// How long an alarm or a demo agent may take to show. Generous: alarms are raised seconds
/// after a silence by design, and the machine may be loaded; no test asserts anything about
/// speed.
const SLOW: Duration = Duration::from_secs(90);

/// The demo's failing task and its stalling task (see `src/demo.rs`).
const DEMO_FAILS: &str = "Upgrade the importer dependencies (this one fails)";
const DEMO_STALLS: &str = "Generate the API reference (goes quiet and stalls)";

/// The alert cell of job `id`, or "" when its row or the column is not on screen.
fn alert(s: &Screen, id: &str) -> String {
    s.cell(id, "alert").unwrap_or_default()
}

/// Whether the rows above the jobs table hold `text`.
fn header_has(s: &Screen, text: &str) -> bool {
    s.header_rows().iter().any(|r| r.contains(text))
}

/// Filters the table to the jobs whose text holds `words` (`/`, the words, Enter) and waits
/// until job `id`, the one left, is the selected one (the output pane shows it).
fn select_by_filter(ck: &Cockpit, words: &str, id: &str) {
    ck.key("/");
    ck.wait_for("the filter prompt", |s| s.footer().contains("filter jobs:"));
    ck.type_text(words);
    ck.key("Enter");
    ck.wait_for(&format!("{id} alone in the table, selected"), |s| {
        s.job_rows().len() == 1 && s.job_row(id).is_some() && s.output_title().contains(id)
    });
}

/// Focus on the output pane (its keys show in the footer).
fn focus_output(ck: &Cockpit) {
    ck.key("Tab");
    ck.wait_for("the focus in the output pane", |s| {
        s.footer().contains("follow")
    });
}

/// meta.json of a job that finished `ago_min` minutes ago after running `took_min` minutes.
fn finished_meta(sb: &Sandbox, id: &str, project: &str, task: &str, ago_min: i64, took_min: i64) {
    let fmt = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let finished = Utc::now() - chrono::Duration::minutes(ago_min);
    let started = finished - chrono::Duration::minutes(took_min);
    let meta = serde_json::json!({
        "id": id, "project": project, "task": task,
        "started": fmt(started), "finished": fmt(finished),
    });
    sb.write(id, "meta.json", meta.to_string());
}

// ----------------------------------------------------------------------------------------------
// Known issues
// ----------------------------------------------------------------------------------------------

/// In the demo, the agent that fails with a Python traceback: its row names the known issue in
/// the alert column, its detail view lists it with the fix, and `[` in its output pane shows the
/// `ModuleNotFoundError` line.
#[test]
fn the_demo_failure_is_a_known_python_module_not_found() {
    require_tmux!();
    let sb = Sandbox::new();
    let demo = DemoRun::new(&sb);
    let ck = Cockpit::start(&sb, demo.opts());
    ck.wait_ready();
    let id = demo.job_with_task(DEMO_FAILS);
    // Only its row, whatever else the demo shows.
    select_by_filter(&ck, "importer dependencies", &id);
    ck.wait_for_up_to(
        SLOW,
        "the failed importer upgrade with its known issue",
        |s| {
            s.job_row(&id).is_some_and(|r| r.contains("failed"))
                && alert(s, &id).contains("python-module-not-found")
        },
    );

    ck.key("v");
    let s = ck.wait_for("the detail view with its known issues", |s| {
        s.contains(&format!("{id} · detail"))
            && s.contains("Known issues")
            && s.contains("python-module-not-found")
    });
    assert!(
        s.lines.iter().any(|l| l
            .find("error")
            .is_some_and(|at| l[at..].contains("python-module-not-found"))),
        "no `error python-module-not-found` line in the known issues:\n{}",
        s.text()
    );
    let fixes = s.segments_starting("fix:");
    assert!(
        fixes
            .iter()
            .any(|f| f.contains("Install it in the environment the agent uses")),
        "no `fix:` line with the pattern's fix: {fixes:?}\n{}",
        s.text()
    );
    ck.esc();
    ck.wait_for("back to the main screen", |s| {
        s.table_box().is_some() && !s.contains("· detail")
    });

    focus_output(&ck);
    ck.type_text("[");
    ck.wait_for("the ModuleNotFoundError line in the output pane", |s| {
        s.output_title().contains(&id)
            && s.output_lines()
                .iter()
                .any(|l| l.contains("ModuleNotFoundError: No module named 'yaml'"))
    });
}

/// `[` and `]` in the output pane move between the lines that show known issues, however far
/// from the end they are: lines only a jump brings into view.
#[test]
fn brackets_jump_between_known_issue_lines_in_the_output() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "200010-jump";
    finished_meta(&sb, id, "librec", "Migrate the otter catalogue", 30, 5);
    let mut log = String::new();
    for i in 1..=400 {
        match i {
            100 => log.push_str("ModuleNotFoundError: No module named 'otterlib'\n"),
            250 => log.push_str("OSError: [Errno 28] No space left on device\n"),
            _ => log.push_str(&format!("otter step {i} ok\n")),
        }
    }
    log.push_str("\nexit:1\n");
    sb.write(id, "output.log", log);
    let module = "No module named 'otterlib'";
    let disk = "No space left on device";
    let shows = |s: &Screen, text: &str| s.output_lines().iter().any(|l| l.contains(text));

    let ck = Cockpit::start(&sb, Opts::default());
    let s = ck.wait_for("the end of the log in the output pane", |s| {
        s.output_title().contains(id) && shows(s, "otter step 400 ok")
    });
    assert!(
        !shows(&s, module) && !shows(&s, disk),
        "the issue lines are in view before any jump:\n{}",
        s.text()
    );
    focus_output(&ck);

    ck.type_text("[");
    ck.wait_for(
        "`[`: the disk-full line (the last issue before the end)",
        |s| shows(s, disk) && !shows(s, "otter step 400 ok"),
    );
    ck.type_text("[");
    ck.wait_for("`[` again: the missing module line", |s| {
        shows(s, module) && !shows(s, disk)
    });
    ck.type_text("]");
    ck.wait_for("`]`: the disk-full line again", |s| {
        shows(s, disk) && !shows(s, module)
    });
}

/// A `known_issues.json` beside the config file adds a pattern: it matches in either case, its
/// name shows in the alert column of the job whose output has it (and not of one whose output
/// does not), and the detail view shows its fix.
#[test]
fn a_known_issues_file_beside_the_config_adds_a_pattern() {
    require_tmux!();
    let sb = Sandbox::new();
    let etc = sb.tmp.path().join("etc");
    fs::create_dir(&etc).unwrap();
    let config = etc.join("config.toml");
    fs::write(
        &config,
        "# known_issues.json beside this file adds patterns\n",
    )
    .unwrap();
    fs::write(
        etc.join("known_issues.json"),
        r#"{"patterns":[{"name":"flux-capacitor","description":"d","error_patterns":["flux capacitor overheated"],"fix":"Let it cool down","severity":"critical"}]}"#,
    )
    .unwrap();
    let hot = "200020-hot";
    let cool = "200021-cool";
    finished_meta(&sb, hot, "overbits", "Calibrate the delorean", 20, 3);
    sb.write(
        hot,
        "output.log",
        "calibrating...\nFlux Capacitor overheated at 88 mph\n\nexit:1\n",
    );
    finished_meta(&sb, cool, "overbits", "Inspect the hoverboard", 25, 3);
    sb.write(
        cool,
        "output.log",
        "inspecting...\nflux capacitor nominal\n\nexit:1\n",
    );

    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .global_arg("--config")
            .global_arg(config.to_str().unwrap()),
    );
    let s = ck.wait_for_up_to(SLOW, "flux-capacitor in the alert column", |s| {
        alert(s, hot).contains("flux-capacitor")
    });
    let other = s.job_row(cool).unwrap_or_default();
    assert!(
        !other.contains("flux-capacitor"),
        "a job whose output does not match shows the pattern: {other}"
    );

    select_by_filter(&ck, "delorean", hot);
    ck.key("v");
    // The timeline is read off the loop: wait for it too, not only for the issues.
    let s = ck.wait_for(
        "the detail view with the pattern, its fix and the timeline",
        |s| {
            s.contains(&format!("{hot} · detail"))
                && s.contains("Known issues")
                && s.contains("Let it cool down")
                && timeline_read(s)
        },
    );
    assert!(
        s.lines.iter().any(|l| l
            .find("critical")
            .is_some_and(|at| l[at..].contains("flux-capacitor"))),
        "no `critical flux-capacitor` line in the known issues:\n{}",
        s.text()
    );
    assert!(
        s.segments_starting("fix:")
            .iter()
            .any(|f| f.contains("Let it cool down")),
        "the fix is not on a `fix:` line:\n{}",
        s.text()
    );
    // The timeline, below its heading: the job's end.
    let heading = s
        .lines
        .iter()
        .position(|l| l.contains("Timeline"))
        .unwrap_or_else(|| panic!("no Timeline section:\n{}", s.text()));
    assert!(
        s.lines[heading + 1..]
            .iter()
            .any(|l| l.contains("finished")),
        "the timeline does not say the job finished:\n{}",
        s.text()
    );
}

// ----------------------------------------------------------------------------------------------
// Alarms
// ----------------------------------------------------------------------------------------------

/// A running agent that writes nothing for `stall_after` (3s here) is stalled: its row says so
/// and the header counts it, while an agent that keeps writing is not. Output clears the alarm;
/// a new silence raises it again.
#[test]
fn a_silent_agent_is_stalled_until_it_writes_again() {
    require_tmux!();
    let sb = Sandbox::new();
    let config = sb.config_file("stall.toml", "[alarms]\nstall_after = \"3s\"\n");
    let quiet = "200030-quiet";
    let busy = "200031-busy";
    sb.running_job(
        quiet,
        "musica",
        "Compile the walrus atlas",
        Some(&now_rfc3339()),
    );
    sb.append(quiet, "output.log", "walrus: compiling the atlas\n");
    sb.running_job(busy, "overbits", "Count the narwhals", Some(&now_rfc3339()));
    sb.append(busy, "output.log", "narwhals: counting\n");
    let writer = "while :; do echo 'still counting' >> output.log; sleep 0.5; done";
    sb.spawn_script(&sb.job_dir(busy), writer);

    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .global_arg("--config")
            .global_arg(config.to_str().unwrap()),
    );
    let s = ck.wait_for_up_to(SLOW, "the silent job stalled, counted in the header", |s| {
        alert(s, quiet).contains("stalled") && header_has(s, "1 stalled")
    });
    assert!(
        !s.job_row(busy).unwrap_or_default().contains("stalled"),
        "the job that keeps writing is called stalled:\n{}",
        s.text()
    );
    assert!(
        s.job_row(quiet).is_some_and(|r| r.contains("running")),
        "a stalled job is still running:\n{}",
        s.text()
    );

    // It writes again (and keeps writing): the alarm clears.
    sb.append(quiet, "output.log", "walrus: page 2\n");
    let again = sb.spawn_script(&sb.job_dir(quiet), writer);
    ck.wait_for_up_to(SLOW, "the alarm cleared by new output", |s| {
        s.job_row(quiet).is_some_and(|r| !r.contains("stalled")) && !header_has(s, "stalled")
    });

    // Silent again: stalled again.
    sb.kill_child(again);
    ck.wait_for_up_to(SLOW, "stalled again after a new silence", |s| {
        alert(s, quiet).contains("stalled") && header_has(s, "1 stalled")
    });
}

/// In the demo, the agent that goes quiet is called stalled (the demo's `stall_after` is 20s).
#[test]
fn the_demo_stalling_agent_raises_the_alarm() {
    require_tmux!();
    let sb = Sandbox::new();
    let demo = DemoRun::new(&sb);
    let ck = Cockpit::start(&sb, demo.opts());
    ck.wait_ready();
    let id = demo.job_with_task(DEMO_STALLS);
    select_by_filter(&ck, "API reference", &id);
    let s = ck.wait_for_up_to(SLOW, "the demo's stalling agent called stalled", |s| {
        alert(s, &id).contains("stalled")
    });
    assert!(
        s.job_row(&id).is_some_and(|r| r.contains("running")),
        "the stalled demo agent is still running:\n{}",
        s.text()
    );
    // The agent really has been silent: its log ends with what it said before it went quiet.
    let log = fs::read_to_string(demo.jobs_dir().unwrap().join(&id).join("output.log")).unwrap();
    assert!(
        log.trim_end()
            .ends_with("waiting for the lock on docs/_build/.doctrees (held by pid 4242)"),
        "{log}"
    );
}

// ----------------------------------------------------------------------------------------------
// Recent events
// ----------------------------------------------------------------------------------------------

/// `e` opens the recent events, newest first: a job that finished while the cockpit watched
/// comes before one that finished an hour ago. Esc closes the view.
#[test]
fn e_shows_recent_events_newest_first_and_esc_closes_them() {
    require_tmux!();
    let sb = Sandbox::new();
    let old = "200040-old";
    let live = "200041-live";
    finished_meta(&sb, old, "librec", "Sort the beaver archive", 60, 10);
    sb.write(old, "output.log", "beavers sorted\n\nexit:0\n");
    sb.write_meta(live, "musica", "Tune the lynx organ", Some(&now_rfc3339()));
    let go = sb.ctl.join("go");
    let script = format!(
        "echo $$ > .pid.tmp && mv .pid.tmp pid; echo 'lynx: tuning' >> output.log; \
         while [ ! -e {go} ]; do sleep 0.1; done; \
         echo 'lynx: tuned' >> output.log; printf '\\nexit:0\\n' >> output.log",
        go = tmux::sh_quote(go.to_str().unwrap())
    );
    sb.spawn_script(&sb.job_dir(live), &script);

    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_row(live, "running", |r| r.contains("running"));
    sb.touch_ctl("go");
    ck.wait_row(live, "completed", |r| r.contains("completed"));

    ck.key("e");
    let names = |l: &str, id: &str, task: &str| l.contains(id) || l.contains(task);
    let s = ck.wait_for("the recent events with both jobs' ends", |s| {
        s.contains("Recent events")
            && s.lines
                .iter()
                .any(|l| l.contains("finished") && names(l, live, "Tune the lynx organ"))
            && s.lines
                .iter()
                .any(|l| l.contains("finished") && names(l, old, "Sort the beaver archive"))
    });
    let row_of = |id: &str, task: &str| {
        s.lines
            .iter()
            .position(|l| l.contains("finished") && names(l, id, task))
            .unwrap()
    };
    assert!(
        row_of(live, "Tune the lynx organ") < row_of(old, "Sort the beaver archive"),
        "the newest event is not first:\n{}",
        s.text()
    );

    ck.esc();
    ck.wait_for("the events closed", |s| {
        !s.contains("Recent events") && s.table_box().is_some()
    });
}

#[test]
fn memory_running_out_and_load_above_the_cores_show_in_the_header_and_clear() {
    require_tmux!();
    let sb = Sandbox::new();
    finished_meta(&sb, "200050-done", "librec", "Index the otters", 30, 2);
    sb.write("200050-done", "output.log", "otters indexed\n\nexit:0\n");
    // A proc root of our own, rewritten while the cockpit runs (it looks every 5 s).
    let proc = sb.ctl.join("busy-proc");
    std::fs::create_dir_all(&proc).unwrap();
    let write = |avail_kb: u64, load: &str| {
        std::fs::write(
            proc.join("meminfo"),
            format!("MemTotal: 1000000 kB\nMemFree: 1000 kB\nMemAvailable: {avail_kb} kB\n"),
        )
        .unwrap();
        std::fs::write(proc.join("loadavg"), format!("{load} 1.00 1.00 3/300 42\n")).unwrap();
        std::fs::write(
            proc.join("stat"),
            "cpu  1 0 1 9 0\ncpu0 1 0 1 9 0\ncpu1 1 0 1 9 0\n",
        )
        .unwrap();
    };
    write(50_000, "6.50");
    let ck = Cockpit::start(
        &sb,
        Opts {
            env: vec![("LUZIA_PROC".into(), proc.to_str().unwrap().into())],
            ..Opts::default()
        },
    );
    ck.wait_for_up_to(Duration::from_secs(30), "memory and load alerts", |s| {
        header_has(s, "memory 95% used") && header_has(s, "load 6.50 on 2 cores")
    });
    write(900_000, "0.20");
    ck.wait_for_up_to(Duration::from_secs(30), "the alerts gone", |s| {
        !header_has(s, "memory") && !header_has(s, "load ") && header_has(s, "1 completed")
    });
}

#[test]
fn status_watch_redraws_in_place_in_a_real_terminal_and_ctrl_c_leaves_it_sane() {
    require_tmux!();
    let sb = Sandbox::new();
    let live = "200060-live";
    sb.running_job(live, "musica", "Catalogue the herons", Some(&now_rfc3339()));
    sb.write(
        live,
        "progress.json",
        r#"{"percent": 30, "step_name": "counting"}"#,
    );
    finished_meta(&sb, "200061-fail", "librec", "Feed the cormorants", 20, 3);
    sb.write(
        "200061-fail",
        "output.log",
        "Error: Cannot find module 'fishfood'\n\nexit:1\n",
    );
    let ck = Cockpit::start(
        &sb,
        Opts {
            command: "status".into(),
            args: vec!["--watch".into(), "--interval".into(), "500ms".into()],
            ..Opts::default()
        },
    );
    let s = ck.wait_for("the dashboard", |s| {
        s.contains(live) && s.contains("30%") && s.contains("node-module-not-found")
    });
    // In place: one dashboard on the screen, not a scroll of them.
    assert_eq!(
        s.text().matches("Catalogue the herons").count(),
        1,
        "{}",
        s.text()
    );
    sb.write(
        live,
        "progress.json",
        r#"{"percent": 80, "step_name": "counting"}"#,
    );
    let s = ck.wait_for("the new percent", |s| {
        s.contains("80%") && !s.contains("30%")
    });
    assert_eq!(
        s.text().matches("Catalogue the herons").count(),
        1,
        "{}",
        s.text()
    );
    ck.key("C-c");
    assert_eq!(ck.wait_exit(), 0);
    let (before, after) = ck.stty();
    assert_eq!(before, after, "the terminal's settings changed");
}

/// Whether the detail view's timeline has been read (its heading is not followed by
/// `reading…`).
fn timeline_read(s: &Screen) -> bool {
    s.lines
        .iter()
        .position(|l| l.contains("Timeline"))
        .and_then(|at| s.lines.get(at + 1))
        .is_some_and(|next| !next.contains("reading"))
}
