//! The usage limit in the cockpit: the queue's listing brings the hold with it, the queued rows
//! say what they wait for and the header how many, and at the reset the hold lapses by itself
//! (the queue is listed again so that its tasks start).

use super::*;
use crate::jobs::Status;
use crate::tui::event::Event;
use crate::tui::testing::*;

fn listed(app: &mut App, rows: Vec<Job>, hold: Option<crate::jobs::model::limit::Hold>) {
    let holds = crate::jobs::model::limit::Holds(hold.into_iter().collect());
    app.update(Event::QueueListed(rows, holds), now());
}

fn note_of(app: &App, queued: &JobId) -> Option<String> {
    app.row_note(&app.jobs[queued]).stage
}

#[test]
fn a_listing_with_the_hold_says_it_on_every_queued_row_and_counts_them() {
    let mut app = app(160, 45);
    let rows = queued_rows(&["Write the changelog", "Bump the version"]);
    let (first, second) = (rows[0].id.clone(), rows[1].id.clone());
    listed(&mut app, rows.clone(), None);
    assert_eq!(app.held(), vec![], "no hold, nothing held");
    assert_eq!(note_of(&app, &first), None, "next in queue, as before");

    listed(&mut app, rows, Some(claude_hold()));
    let [(hold, waiting)] = app.held()[..] else {
        panic!("the hold stands until 17:00")
    };
    assert_eq!((hold, waiting), (&claude_hold(), 2));
    // The clock is the machine's local time: the words around it are what this checks.
    let clock = crate::jobs::model::limit::clock(claude_hold().resets_at, now());
    let held = format!("held: claude limit until {clock}");
    assert_eq!(note_of(&app, &first).as_deref(), Some(held.as_str()));
    assert_eq!(note_of(&app, &second).as_deref(), Some(held.as_str()));
    let short = app.row_note(&app.jobs[&first]).stage_short;
    assert_eq!(
        short,
        Some(format!("held {clock}")),
        "the narrow column's words"
    );
}

#[test]
fn the_same_listing_and_hold_change_nothing_and_a_new_hold_is_drawn() {
    let mut app = app(160, 45);
    let rows = queued_rows(&["Write the changelog"]);
    listed(&mut app, rows.clone(), Some(claude_hold()));
    app.dirty = false;
    let changes = app.changes;
    listed(&mut app, rows.clone(), Some(claude_hold()));
    assert!(!app.dirty, "the same queue and hold draw nothing");
    assert_eq!(app.changes, changes);

    let later = crate::jobs::model::limit::Hold {
        resets_at: claude_hold().resets_at + chrono::Duration::hours(2),
        ..claude_hold()
    };
    listed(&mut app, rows.clone(), Some(later.clone()));
    assert!(app.dirty, "a later reset is drawn");
    assert!(app.changes > changes, "the rows' words changed");
    assert_eq!(app.held().first().map(|(h, _)| *h), Some(&later));

    listed(&mut app, rows, None);
    assert_eq!(
        app.held(),
        vec![],
        "the hold removed (a reset seen elsewhere)"
    );
}

#[test]
fn after_the_reset_the_hold_lapses_and_the_queue_is_listed_again() {
    let mut app = app(160, 45);
    let rows = queued_rows(&["Write the changelog"]);
    let first = rows[0].id.clone();
    listed(&mut app, rows, Some(claude_hold()));
    let before = app.update(
        Event::Tick,
        claude_hold().resets_at - chrono::Duration::seconds(1),
    );
    assert!(
        !app.held().is_empty(),
        "a second before the reset it stands"
    );
    assert!(!app.holds.is_empty());
    // Queued rows are live: the queue is listed at every tick anyway.
    assert!(before.contains(&Effect::SyncQueue));

    app.dirty = false;
    let margin = crate::jobs::model::limit::RESUME_MARGIN;
    let at = app.update(Event::Tick, claude_hold().resets_at + margin);
    assert_eq!(app.held(), vec![]);
    assert!(app.holds.is_empty(), "lapsed, not only hidden");
    assert!(
        at.contains(&Effect::SyncQueue),
        "its tasks may start: {at:?}"
    );
    assert!(app.dirty, "the header and the rows stop saying it");
    assert_eq!(note_of(&app, &first), None, "next in queue again");
}

#[test]
fn a_lapsing_hold_with_no_task_queued_still_lists_the_queue_and_draws() {
    let mut app = app(160, 45);
    listed(&mut app, Vec::new(), Some(claude_hold()));
    assert_eq!(app.held(), vec![(&claude_hold(), 0)]);
    app.dirty = false;
    let margin = crate::jobs::model::limit::RESUME_MARGIN;
    let at = app.update(Event::Tick, claude_hold().resets_at + margin);
    assert!(app.holds.is_empty());
    assert!(at.contains(&Effect::SyncQueue), "{at:?}");
    assert!(app.dirty);
}

#[test]
fn a_limited_job_says_its_reset_and_another_hosts_queued_rows_are_not_held() {
    let mut app = app(160, 45);
    let limited = limited_job();
    let key = limited.id.clone();
    app.update(Event::JobsRead(vec![(key.clone(), Some(limited))]), now());
    assert_eq!(app.jobs[&key].status, Status::Limited);
    let clock = crate::jobs::model::limit::clock(claude_hold().resets_at, now());
    assert_eq!(
        app.row_note(&app.jobs[&key]).stage,
        Some(format!("limit · resets {clock}"))
    );

    listed(
        &mut app,
        queued_rows(&["Write the changelog"]),
        Some(claude_hold()),
    );
    let remote = remote("gpu2", queued_rows(&["Train the model"]).remove(0));
    assert_eq!(remote.status, Status::Queued);
    assert_eq!(app.row_note(&remote).stage, None, "gpu2's queue is its own");
}

/// Nothing runs and nothing is queued: the cockpit still ticks while a job waits for its
/// limit's reset, and at the reset (and its margin) asks the queue's starter to continue it.
#[test]
fn a_cockpit_with_only_a_limited_job_ticks_and_continues_it_at_the_reset() {
    let mut app = App::new(options(false), now());
    app.update(Event::Resize(160, 45), now());
    let limited = limited_job();
    let read = vec![limited.clone()];
    let present = vec![limited.id.clone()];
    app.update(
        Event::Synced(crate::tui::event::Synced {
            present,
            read,
            error: None,
        }),
        now(),
    );
    assert!(app.wants_tick(), "nothing else would wake it at the reset");
    // Its words say the minute (`resets 5pm`): the reset is that minute's last second.
    let reset = limited.limit_resets_at().unwrap();
    assert!(reset > claude_hold().resets_at);
    let early = app.update(Event::Tick, reset);
    assert!(
        !early.contains(&Effect::SyncQueue),
        "the margin first: {early:?}"
    );
    let due = app.update(
        Event::Tick,
        reset + crate::jobs::model::limit::RESUME_MARGIN,
    );
    assert!(due.contains(&Effect::SyncQueue), "{due:?}");

    // Continued: nothing more to wait for.
    let mut continued = limited;
    continued.meta.as_mut().unwrap().resumed_by = vec!["170005-next".into()];
    let key = continued.id.clone();
    app.update(Event::JobsRead(vec![(key, Some(continued))]), now());
    assert!(!app.wants_tick());
}

/// The hold stands through the margin too: the job it stopped goes on before the tasks
/// queued since.
#[test]
fn the_hold_stands_until_the_job_it_stopped_is_continued() {
    let mut app = App::new(options(false), now());
    listed(
        &mut app,
        queued_rows(&["Write the changelog"]),
        Some(claude_hold()),
    );
    assert!(app.wants_tick());
    let reset = claude_hold().resets_at;
    app.update(Event::Tick, reset);
    assert!(!app.held().is_empty(), "at the reset, within the margin");
    app.update(
        Event::Tick,
        reset + crate::jobs::model::limit::RESUME_MARGIN,
    );
    assert_eq!(app.held(), vec![]);
}

/// A limit is an account's: a queued task whose agent runs on another account is not held by
/// it, says its place, and is not counted in the header.
#[test]
fn only_the_rows_whose_agent_runs_on_the_account_are_held() {
    let mut app = app(160, 45);
    let mut rows = queued_rows(&["Write the changelog", "Review with gemini", "Plain script"]);
    rows[1].meta.as_mut().unwrap().agent = "gemini".into();
    rows[2].meta.as_mut().unwrap().agent = "/opt/bin/my-agent.sh".into();
    let ids: Vec<JobId> = rows.iter().map(|r| r.id.clone()).collect();
    let gemini = crate::jobs::model::limit::Hold {
        agent: "gemini".into(),
        resets_at: claude_hold().resets_at + chrono::Duration::hours(1),
        job: "155001-gemi".into(),
    };
    let holds = crate::jobs::model::limit::Holds(vec![claude_hold(), gemini.clone()]);
    app.update(Event::QueueListed(rows, holds), now());
    let clock =
        |h: &crate::jobs::model::limit::Hold| crate::jobs::model::limit::clock(h.resets_at, now());
    assert_eq!(
        note_of(&app, &ids[0]),
        Some(format!(
            "held: claude limit until {}",
            clock(&claude_hold())
        ))
    );
    assert_eq!(
        note_of(&app, &ids[1]),
        Some(format!("held: gemini limit until {}", clock(&gemini)))
    );
    assert_eq!(
        note_of(&app, &ids[2]),
        None,
        "no limit of its own: its place"
    );
    assert_eq!(app.held(), vec![(&claude_hold(), 1), (&gemini, 1)]);
}
