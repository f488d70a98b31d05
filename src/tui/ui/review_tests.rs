//! Snapshots of a job's change: the CHANGES column, the diff view, the merge confirmation.

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;

use super::render_with;
use crate::jobs::model::review::Isolation;
use crate::tui::app::App;
use crate::tui::effect::ReviewOp;
use crate::tui::event::Event;
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

fn buffer(app: &App) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().buffer().clone()
}

fn draw(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().to_string()
}

/// The fixtures, three finished jobs with their change recorded (a worktree, a snapshot that
/// changed nothing, a worktree whose change was discarded), the first selected.
fn reviewing(w: u16, h: u16) -> App {
    let mut app = app(w, h);
    let job = reviewed("142315-a1b2", Isolation::Worktree);
    let mut none = reviewed("143002-c3d4", Isolation::Snapshot);
    if let Some(r) = none.meta.as_mut().and_then(|m| m.review.as_mut()) {
        r.changes = Some(Default::default());
    }
    let mut gone = reviewed("152000-f00d", Isolation::Worktree);
    if let Some(r) = gone.meta.as_mut().and_then(|m| m.review.as_mut()) {
        r.outcome = "discarded".into();
    }
    app.update(
        Event::JobsRead(vec![
            (job.id.clone(), Some(job)),
            (none.id.clone(), Some(none)),
            (gone.id.clone(), Some(gone)),
        ]),
        now(),
    );
    let i = app
        .table
        .view
        .iter()
        .position(|j| j.as_str() == "142315-a1b2");
    for _ in 0..i.unwrap() {
        press(&mut app, [ch('j')]);
    }
    app
}

fn diff_view(w: u16, h: u16) -> App {
    let mut app = reviewing(w, h);
    press(&mut app, [ch('d')]);
    app.update(
        Event::ChangeLoaded {
            id: id("142315-a1b2"),
            change: Ok(change()),
        },
        now(),
    );
    app
}

#[test]
fn the_changes_column() {
    for (w, h) in SIZES {
        insta::assert_snapshot!(format!("changes_column_{w}x{h}"), draw(&reviewing(w, h)));
    }
}

#[test]
fn the_diff_view() {
    for (w, h) in SIZES {
        insta::assert_snapshot!(format!("diff_{w}x{h}"), draw(&diff_view(w, h)));
    }
    // Further down, and sideways: the second file's diff from column 9.
    let mut app = diff_view(80, 24);
    press(&mut app, [ch('n'), ch('n'), ch('l')]);
    insta::assert_snapshot!("diff_second_file_80x24", draw(&app));
}

#[test]
fn the_diff_view_loading_and_failing() {
    let mut app = reviewing(80, 24);
    press(&mut app, [ch('d')]);
    insta::assert_snapshot!("diff_loading_80x24", draw(&app));
    app.update(
        Event::ChangeLoaded {
            id: id("142315-a1b2"),
            change: Err("/srv/api is not a git repository: git status failed there".into()),
        },
        now(),
    );
    insta::assert_snapshot!("diff_error_80x24", draw(&app));
}

#[test]
fn the_diff_is_coloured_and_nothing_but_text_reaches_the_screen() {
    let app = diff_view(160, 45);
    let buf = buffer(&app);
    let row = |text: &str| {
        (0..buf.area.height)
            .find(|y| {
                let line: String = (0..buf.area.width)
                    .map(|x| buf[(x, *y)].symbol().to_string())
                    .collect();
                line.contains(text)
            })
            .unwrap_or_else(|| panic!("{text} is on screen"))
    };
    let fg = |text: &str| buf[(2, row(text))].fg;
    assert_eq!(fg("+    let wait"), Color::Green);
    assert_eq!(fg("-    base * 2u32"), Color::Red);
    assert_eq!(fg("@@ -10,7"), Color::Cyan);
    assert_eq!(
        fg("--- retried forever"),
        Color::Red,
        "content, not a header"
    );
    assert_ne!(fg("--- a/src/retry.rs"), Color::Red, "a header");
    let all: String = buf.content.iter().map(|c| c.symbol()).collect();
    assert!(!all.contains('\x1b') && !all.contains('\x07'));
    assert!(!all.contains("pwned"), "an OSC title is dropped whole");
    assert!(all.contains("Spreads retries out so clients"));
}

#[test]
fn the_merge_confirmation() {
    for (w, h) in SIZES {
        let mut app = reviewing(w, h);
        press(&mut app, [ch('M')]);
        app.update(
            Event::ReviewPreviewed {
                job: id("142315-a1b2"),
                op: ReviewOp::Merge,
                preview: Ok(
                    "merge branch luzia/142315-a1b2 (2 commits) into main at /srv/api\n\
                             then remove the worktree /srv/api.luzia/142315-a1b2 and the branch"
                        .into(),
                ),
            },
            now(),
        );
        insta::assert_snapshot!(format!("merge_confirm_{w}x{h}"), draw(&app));
        press(&mut app, [key(KeyCode::Esc)]);
    }
    // The narrowest cockpit: the popup fits inside, its lines cut, nothing fails.
    let mut app = reviewing(60, 15);
    press(&mut app, [ch('X')]);
    let preview = "remove the worktree /srv/api.luzia/142315-a1b2 and delete the branch \
                   luzia/142315-a1b2 (1 commit not merged: lost)\n2\n3\n4\n5\n6\n7\n8";
    app.update(
        Event::ReviewPreviewed {
            job: id("142315-a1b2"),
            op: ReviewOp::Discard,
            preview: Ok(preview.into()),
        },
        now(),
    );
    let screen = draw(&app);
    assert!(screen.contains("y discard"), "{screen}");
    assert!(screen.contains("more lines"), "{screen}");
}

/// [`reviewing`]'s jobs with their project's checks: the worktree job's failed (one of three),
/// the snapshot's passed, the discarded one's never ran.
fn checking(w: u16, h: u16) -> App {
    use crate::jobs::Status;
    use crate::jobs::model::checks::{CheckResult, CheckState, Checks};
    let ran = |command: &str, code: i32| CheckResult {
        command: command.into(),
        exit_code: Some(code),
        seconds: 1.5,
        tail: vec!["assertion failed: retry waits at most 30s".into()],
    };
    let mut jobs = Vec::new();
    for (from, isolation, checks, status) in [
        (
            "142315-a1b2",
            Isolation::Worktree,
            Checks {
                commands: vec![
                    "cargo test".into(),
                    "cargo clippy".into(),
                    "npm run lint".into(),
                ],
                state: CheckState::Failed,
                results: vec![
                    ran("cargo test", 101),
                    ran("cargo clippy", 0),
                    ran("npm run lint", 0),
                ],
                ..Checks::default()
            },
            Status::ChecksFailed,
        ),
        (
            "143002-c3d4",
            Isolation::Snapshot,
            Checks {
                commands: vec!["cargo test".into(), "cargo clippy".into()],
                state: CheckState::Passed,
                results: vec![ran("cargo test", 0), ran("cargo clippy", 0)],
                ..Checks::default()
            },
            Status::Completed,
        ),
        (
            "152000-f00d",
            Isolation::Worktree,
            Checks {
                note: "the agent did not end well (exit 1)".into(),
                ..Checks::planned(vec!["cargo test".into()])
            },
            Status::Failed,
        ),
    ] {
        let mut job = reviewed(from, isolation);
        job.status = status;
        if let Some(m) = job.meta.as_mut() {
            m.checks = Some(Box::new(checks));
        }
        jobs.push((job.id.clone(), Some(job)));
    }
    let mut app = app(w, h);
    app.update(Event::JobsRead(jobs), now());
    let i = app
        .table
        .view
        .iter()
        .position(|j| j.as_str() == "142315-a1b2");
    for _ in 0..i.unwrap() {
        press(&mut app, [ch('j')]);
    }
    app
}

#[test]
fn the_checks_column_and_a_failure_in_the_diff_view() {
    for (w, h) in SIZES {
        let app = checking(w, h);
        let screen = draw(&app);
        insta::assert_snapshot!(format!("checks_column_{w}x{h}"), screen);
        let mut diff = app;
        press(&mut diff, [ch('d')]);
        diff.update(
            Event::ChangeLoaded {
                id: id("142315-a1b2"),
                change: Ok(change()),
            },
            now(),
        );
        let screen = draw(&diff);
        assert!(
            screen.contains("checks failed: cargo test (exit 101)") || w < 100,
            "{screen}"
        );
        insta::assert_snapshot!(format!("diff_checks_failed_{w}x{h}"), screen);
    }
}
