//! The layout in a real terminal: a paused output pane counts the lines a live process appends,
//! `z` zooms a pane and back, and at 80x24 the table gives the task its words.
//!
//! Without tmux the tests print a loud SKIPPED message and pass, unless `LUZIA_REQUIRE_TMUX=1`
//! (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use tmux::{Cockpit, Opts, Sandbox, Screen, now_rfc3339};

/// The `+N new lines` of the output pane's title, if it says so.
fn new_lines(s: &Screen) -> Option<u64> {
    let title = s.output_title();
    let at = title.find(" new line")?;
    let plus = title[..at].rfind('+')?;
    title[plus + 1..at].parse().ok()
}

#[test]
fn a_paused_pane_counts_the_lines_a_live_process_appends() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "120000-tail";
    sb.write_meta(id, "musica", "Append lines", Some(&now_rfc3339()));
    // More lines than the pane shows, so that scrolling up pauses.
    let early: String = (1..=200).map(|i| format!("early {i}\n")).collect();
    sb.write(id, "output.log", early);
    let dir = sb.job_dir(id);
    sb.spawn_script(
        &dir,
        "echo $$ > pid; i=0; while :; do i=$((i+1)); echo \"late $i\" >> output.log; \
         sleep 0.1; done",
    );
    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for("the appended lines, followed", |s| {
        s.output_title().contains("FOLLOWING")
            && s.output_lines().iter().any(|l| l.starts_with("late"))
    });
    ck.keys(&["Tab", "k"]);
    let paused = ck.wait_for("a count of new lines", |s| {
        s.output_title().contains("PAUSED") && new_lines(s).is_some_and(|n| n >= 1)
    });
    let first = new_lines(&paused).unwrap();
    let later = ck.wait_for("the count growing as lines arrive", |s| {
        new_lines(s).is_some_and(|n| n >= first + 3)
    });
    assert!(later.output_title().contains("PAUSED"), "{}", later.text());
    assert_eq!(
        later.output_lines(),
        paused.output_lines(),
        "a paused pane stays put while the lines arrive"
    );
    ck.key("End");
    ck.wait_for("following again, the count gone", |s| {
        s.output_title().contains("FOLLOWING") && new_lines(s).is_none()
    });
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
}

/// The titles of the bordered boxes on screen, top to bottom.
fn box_titles(s: &Screen) -> Vec<String> {
    s.boxes()
        .into_iter()
        .map(|b| s.row(b.top).trim_start_matches('┌').trim().to_string())
        .collect()
}

#[test]
fn z_zooms_the_focused_pane_and_back() {
    require_tmux!();
    let sb = Sandbox::new();
    let tasks = [
        "Index the quokka archive",
        "Tune the ocelot mixer",
        "Refactor the wombat importer",
    ];
    for (i, task) in tasks.iter().enumerate() {
        sb.finished_job(&format!("30000{i}-done"), "musica", task, 2 + i as u32, 0);
    }
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let shared = ck.wait_for("both panes", |s| {
        s.table_box().is_some() && s.output_box().is_some()
    });
    let table = shared.table_box().unwrap();
    assert_eq!(
        table.bottom - table.top,
        5,
        "three jobs take their rows, a header and borders, no more:\n{}",
        shared.text()
    );

    ck.key("z");
    let zoomed = ck.wait_for("the table alone", |s| {
        s.table_box().is_some() && s.output_box().is_none()
    });
    let t = zoomed.table_box().unwrap();
    assert_eq!((t.top, t.bottom), (2, 22), "{}", zoomed.text());

    ck.key("Tab");
    let output = ck.wait_for("the output alone", |s| {
        box_titles(s).len() == 1 && box_titles(s)[0].starts_with("output")
    });
    let b = output.boxes()[0];
    assert_eq!((b.top, b.bottom), (2, 22), "{}", output.text());

    ck.key("z");
    ck.wait_for("both panes again", |s| {
        s.table_box().is_some() && s.output_box().is_some()
    });
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
}

#[test]
fn at_80x24_the_table_shows_the_tasks_words() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "140000-long";
    let task = "Rebuild the search index of the whole music catalogue and report what changed";
    sb.running_job(id, "musica", task, Some(&now_rfc3339()));
    sb.finished_job("130000-done", "overbits", "Tidy the release notes", 2, 0);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let s = ck.wait_row(id, "the task's words", |r| {
        r.contains("Rebuild the search index")
    });
    let row = s.job_row(id).unwrap();
    assert!(row.trim_end().ends_with('…'), "a cut task says so: {row}");
    assert!(
        s.job_row("130000-done")
            .is_some_and(|r| r.contains("Tidy the release notes")),
        "{}",
        s.text()
    );
    let head = s.inner(s.table_box().unwrap())[0].clone();
    assert!(
        !head.contains("ALERT") && !head.contains("COST"),
        "empty columns take no room: {head}"
    );
    assert!(s.footer().contains("inbox 0"), "{}", s.footer());
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
}
