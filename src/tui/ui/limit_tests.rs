//! Snapshots of the cockpit while the account's usage limit stands: the job it stopped says
//! when it resets, the queued tasks say what holds them, and the header says the limit and how
//! many wait on it.

use super::tests::{draw, snapshot};
use crate::tui::app::App;
use crate::tui::event::{Event, Synced};
use crate::tui::testing::*;

/// A running job, the job the limit stopped (selected, its output loaded) and two tasks queued
/// since, held until the reset.
fn limited_app(w: u16, h: u16) -> App {
    let mut app = App::new(options(false), now());
    app.update(Event::Resize(w, h), now());
    let running = jobs()
        .into_iter()
        .find(|j| j.id.as_str() == "155900-run1")
        .unwrap();
    let limited = limited_job();
    let key = limited.id.clone();
    let read = vec![running, limited];
    let present = read.iter().map(|j| j.id.clone()).collect();
    app.update(
        Event::Synced(Synced {
            present,
            read,
            error: None,
        }),
        now(),
    );
    let rows = queued_rows(&["Write the changelog", "Bump the version"]);
    app.update(
        Event::QueueListed(rows, crate::jobs::model::limit::Holds(vec![claude_hold()])),
        now(),
    );
    let at = app.table.view.iter().position(|j| *j == key).unwrap();
    for _ in 0..at {
        press(&mut app, [ch('j')]);
    }
    let lines = lines(&[
        "── Claude Code session 5f0c6a1e-9d7b-4c1a-8f3e-155000limt · claude-sonnet-4-5 · 2.1.197",
        "I'll start with the billing module's client.",
        "── failed (API error 429): You've hit your session limit · resets 5pm (UTC) · 1 turn \
         · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000",
        "",
        "exit:1",
    ]);
    app.update(
        Event::LogLoaded {
            id: key,
            lines,
            error: None,
        },
        now(),
    );
    app
}

#[test]
fn a_limited_job_and_the_tasks_its_limit_holds() {
    snapshot("limit_held", limited_app);
    for (w, h) in [(80, 24), (160, 45)] {
        let screen = draw(&limited_app(w, h));
        let header = screen.lines().next().unwrap();
        assert!(header.contains("2 held"), "{header}");
        assert!(screen.contains("resets"), "{screen}");
        assert!(screen.contains("held"), "{screen}");
    }
}

/// With nothing else live, the limited row still has room to say when its limit resets.
#[test]
fn a_limited_job_alone_says_its_reset_whole() {
    for (w, h, want) in [(160, 45, "limit · resets 17:00"), (80, 24, "limit 17:00")] {
        let mut app = App::new(options(false), now());
        app.update(Event::Resize(w, h), now());
        let read = vec![limited_job()];
        let present = read.iter().map(|j| j.id.clone()).collect();
        app.update(
            Event::Synced(Synced {
                present,
                read,
                error: None,
            }),
            now(),
        );
        let screen = draw(&app);
        let row = screen.lines().find(|l| l.contains("155000")).unwrap();
        assert!(row.contains(want), "{w}x{h}: {row}");
    }
}
