//! The needs-input lifecycle in the cockpit: a job that stopped for an answer leaves the
//! Waiting tab and the header's count once answered, and is linked to its retry both ways.

use crossterm::event::KeyCode;

use super::table::view::Tab;
use super::*;
use crate::jobs::Status;
use crate::jobs::model::lifecycle::{Answer, Exchange};
use crate::tui::event::Event;
use crate::tui::testing::*;

const STOPPED: &str = "151200-q1q1";

/// The sample that stopped for an answer, as read again once `ana` answered it.
fn answered(app: &App) -> Job {
    let mut job = crate::jobs::Job::clone(&app.jobs[&id(STOPPED)]);
    let question = job
        .question
        .take()
        .or_else(|| {
            job.exchange
                .as_deref()
                .map(|e| e.question.clone())
                .map(Box::new)
        })
        .expect("the sample asks");
    job.exchange = Some(Box::new(Exchange {
        question: *question,
        answer: Some(Answer {
            question_id: "q1".into(),
            answer: "staging".into(),
            answered_by: "ana@host".into(),
            answered_at: Some(now()),
            source: "tui".into(),
        }),
    }));
    // Read alone, a job knows nothing of its retries.
    job.retried_by = Box::default();
    job
}

fn read(app: &mut App, jobs: Vec<Job>) -> Vec<Effect> {
    let read = jobs.into_iter().map(|j| (j.id.clone(), Some(j))).collect();
    app.update(Event::JobsRead(read), now())
}

fn waiting_tab(app: &mut App) -> Vec<String> {
    while app.table.tab != Tab::Waiting {
        press(app, [key(KeyCode::Right)]);
    }
    let mut ids: Vec<String> = ids_of(app).into_iter().map(str::to_owned).collect();
    ids.sort();
    ids
}

fn waiting_count(app: &App) -> usize {
    [Status::Waiting, Status::NeedsInput]
        .iter()
        .map(|s| app.table.counts.get(s).copied().unwrap_or(0))
        .sum()
}

#[test]
fn answered_leaves_waiting_and_the_retry_links_both_ways() {
    let mut app = app(160, 45);
    assert_eq!(waiting_tab(&mut app), ["151200-q1q1", "155700-gate"]);
    assert_eq!(waiting_count(&app), 2);
    assert_eq!(app.row_note(&app.jobs[&id(STOPPED)]), Default::default());

    let job = answered(&app);
    read(&mut app, vec![job]);
    assert_eq!(
        waiting_tab(&mut app),
        ["155700-gate"],
        "answered: not waiting"
    );
    assert_eq!(waiting_count(&app), 1, "nor counted as waiting");
    let note = app.row_note(&app.jobs[&id(STOPPED)]);
    assert_eq!(note.stage.as_deref(), Some("answered · r retries"));
    assert_eq!(note.stage_short.as_deref(), Some("answered"));

    // `r` on it: the retry appears as a job naming it.
    let retry = live("142315-a1b2", "160000-again", 0, |j| {
        j.meta.as_mut().unwrap().retry_of = STOPPED.into();
    });
    read(&mut app, vec![retry]);
    let stopped = &app.jobs[&id(STOPPED)];
    assert_eq!(stopped.retried_by, [id("160000-again")].into());
    let note = app.row_note(stopped);
    assert_eq!(note.stage.as_deref(), Some("retried → 160000-again"));
    let link = app.row_note(&app.jobs[&id("160000-again")]).link;
    assert_eq!(link.as_deref(), Some("retry of 151200-q1q1"));

    // Read again alone (its log or files moved), it keeps its retry.
    let again = answered(&app);
    read(&mut app, vec![again]);
    assert_eq!(
        app.jobs[&id(STOPPED)].retried_by,
        [id("160000-again")].into()
    );
    // The status sort puts a retried job among the finished, after the live retry.
    while app.table.tab != Tab::All {
        press(&mut app, [key(KeyCode::Right)]);
    }
    let order = ids_of(&app);
    let at = |id: &str| order.iter().position(|x| *x == id).unwrap();
    assert!(at("160000-again") < at(STOPPED), "{order:?}");
}

#[test]
fn a_retried_job_that_was_never_answered_leaves_waiting_too() {
    let mut app = app(160, 45);
    let retry = live("142315-a1b2", "160000-again", 0, |j| {
        j.meta.as_mut().unwrap().retry_of = STOPPED.into();
    });
    read(&mut app, vec![retry]);
    assert_eq!(waiting_tab(&mut app), ["155700-gate"]);
    assert_eq!(waiting_count(&app), 1);
    // A full listing links it the same way.
    let all: Vec<Job> = app
        .jobs
        .values()
        .map(|j| crate::jobs::Job::clone(j))
        .collect();
    let present = all.iter().map(|j| j.id.clone()).collect();
    app.update(
        Event::Synced(crate::tui::event::Synced {
            present,
            read: all,
            error: None,
        }),
        now(),
    );
    assert_eq!(
        app.jobs[&id(STOPPED)].retried_by,
        [id("160000-again")].into()
    );
}
