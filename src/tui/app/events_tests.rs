//! The recent events: progress hidden unless asked for, one kind at a time, and the mark under
//! what arrived since the view was last closed.

use crossterm::event::KeyCode;
use serde_json::json;

use super::events::Kinds;
use super::*;
use crate::jobs::insight::timeline::EventKind;
use crate::tui::event::Event;
use crate::tui::testing::*;

/// Opens the view at `at` with a history of milestones for a finished job.
fn open(app: &mut App, at: DateTime<Utc>) {
    let effects = app.update(ch('e'), at);
    let Some(Effect::LoadFeed(ids)) = effects.into_iter().next() else {
        panic!("e asks for the feed")
    };
    let milestones: Vec<serde_json::Value> = (1..=4)
        .map(|i| json!({"progress": {"percent": i * 20}, "at": format!("2026-01-09T14:2{i}:00Z")}))
        .collect();
    let histories = ids
        .into_iter()
        .map(|i| {
            let h = if i.as_str() == "142315-a1b2" {
                milestones.clone()
            } else {
                Vec::new()
            };
            (i, h)
        })
        .collect();
    app.update(
        Event::FeedLoaded {
            histories,
            notifications: vec![],
            problems: vec![],
        },
        at,
    );
}

fn feed(app: &App) -> &events::Feed {
    match &app.mode {
        Mode::Events(feed) => feed,
        other => panic!("not the events: {other:?}"),
    }
}

fn kinds(app: &App) -> Vec<EventKind> {
    let f = feed(app);
    f.shown.iter().map(|&i| f.events[i].kind).collect()
}

#[test]
fn progress_is_hidden_until_asked_for_and_kinds_narrow_the_view() {
    let mut app = app(160, 45);
    open(&mut app, now());
    let all = kinds(&app);
    assert!(!all.is_empty());
    assert!(!all.contains(&EventKind::Progress), "hidden at first");
    assert!(
        feed(&app)
            .events
            .iter()
            .any(|e| e.kind == EventKind::Progress)
    );

    press(&mut app, [ch('p')]);
    assert_eq!(
        kinds(&app)
            .iter()
            .filter(|k| **k == EventKind::Progress)
            .count(),
        4
    );
    press(&mut app, [ch('p')]);
    assert_eq!(kinds(&app), all, "p again hides them");

    press(&mut app, [ch('5')]);
    assert_eq!(kinds(&app), [EventKind::Progress; 4], "only progress");
    press(&mut app, [ch('4')]);
    assert_eq!(app.events_view.kinds, Kinds::Alarms);
    assert!(
        kinds(&app)
            .iter()
            .all(|k| matches!(k, EventKind::Alarm | EventKind::Issue))
    );
    press(&mut app, [ch('1')]);
    let questions = kinds(&app);
    assert!(!questions.is_empty());
    assert!(
        questions
            .iter()
            .all(|k| matches!(k, EventKind::Asked | EventKind::Answered))
    );
    // Failures are the finishes of jobs that failed, died or were killed.
    press(&mut app, [ch('3')]);
    let finishes = kinds(&app).len();
    press(&mut app, [ch('2')]);
    let f = feed(&app);
    let failed: Vec<&str> = f
        .shown
        .iter()
        .map(|&i| f.events[i].job.as_ref().unwrap().as_str())
        .collect();
    assert!(!failed.is_empty() && failed.len() < finishes, "{failed:?}");
    assert!(failed.iter().all(|id| matches!(
        app.jobs[&crate::tui::testing::id(id)].status,
        crate::jobs::Status::Failed | crate::jobs::Status::Died | crate::jobs::Status::Killed
    )));
    press(&mut app, [ch('2')]);
    assert_eq!(
        app.events_view.kinds,
        Kinds::All,
        "the same key again: every kind"
    );
    assert_eq!(kinds(&app), all);

    // The view's settings outlive the view.
    press(&mut app, [ch('3'), key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
    open(&mut app, now());
    assert_eq!(kinds(&app).len(), finishes);
}

#[test]
fn a_mark_separates_what_arrived_since_the_view_was_last_closed() {
    let mut app = app(160, 45);
    let first = now() - chrono::Duration::hours(1);
    open(&mut app, first);
    assert_eq!(feed(&app).new, None, "never looked before");
    app.update(ch('e'), first);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.events_view.seen, Some(first));

    open(&mut app, now());
    let f = feed(&app);
    let (new, seen) = f.new.expect("a mark");
    assert_eq!(seen, first);
    let newer = f
        .shown
        .iter()
        .filter(|&&i| f.events[i].at.is_some_and(|t| t > first))
        .count();
    assert!(
        new > 0 && new == newer && new < f.shown.len(),
        "{new} of {}",
        f.shown.len()
    );
    // Closed by going to a job, it counts as looked at too.
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.events_view.seen, Some(now()));
    open(&mut app, now());
    assert_eq!(feed(&app).new.map(|(n, _)| n), Some(0), "nothing new since");
}

#[test]
fn the_wheel_moves_through_the_events_not_the_table_under_them() {
    use crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let mut app = app(160, 45);
    let table_before = app.table.selected_index();
    open(&mut app, now());
    press(&mut app, [ch('p')]); // progress too: enough events to move through
    assert!(feed(&app).shown.len() > 2);
    let start = feed(&app).selected;
    let table = app.areas().table;
    let wheel = |kind| {
        Event::Mouse(MouseEvent {
            kind,
            column: 10,
            row: table.y + 3,
            modifiers: KeyModifiers::NONE,
        })
    };
    let down = if start == 0 {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    press(&mut app, [wheel(down)]);
    assert_ne!(feed(&app).selected, start, "the wheel moved the events");
    assert_eq!(app.table.selected_index(), table_before, "not the table");
}
