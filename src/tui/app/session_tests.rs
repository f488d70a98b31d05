//! Reply and attach in the cockpit: which jobs offer them, the input bar in reply mode, and
//! read-only refusing both.

use crossterm::event::KeyCode;

use super::*;
use crate::jobs::{Meta, Status};
use crate::tui::event::Event;
use crate::tui::testing::*;

/// An app whose last row is a finished Claude Code job with a session.
fn with_a_finished_session(read_only: bool) -> (App, JobId) {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(read_only)
    };
    let mut app = app_with(opts, 160, 45).0;
    press(&mut app, [ch('G')]);
    let mut job = app.selected_job().unwrap().clone();
    assert!(!job.status.is_active(), "{:?}", job.status);
    let mut meta = job.meta.take().unwrap_or_default();
    meta.agent = "/usr/local/bin/claude".into();
    meta.session_id = "0b6f5f0e-4c8e-4d0a-9c7e-3f2a1b0c9d8e".into();
    job.meta = Some(meta);
    let id = job.id.clone();
    app.update(Event::JobsRead(vec![(id.clone(), Some(job))]), now());
    app.table.selected = Some(id.clone());
    (app, id)
}

#[test]
fn reply_opens_the_input_bar_for_the_job_and_enter_sends_it() {
    let (mut app, job) = with_a_finished_session(false);
    assert!(press(&mut app, [ch('R')]).is_empty());
    assert_eq!(app.mode, Mode::InputBar);
    assert_eq!(app.draft.as_ref().unwrap().reply_to.as_ref(), Some(&job));
    press(&mut app, "now fix the docs".chars().map(ch));
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Reply {
            job: job.clone(),
            text: "now fix the docs".into()
        }]
    );
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "sent once, while it is being started"
    );
    let new = id("170000-cafe");
    app.update(
        Event::Dispatched(Ok((Some(new.clone()), "continues".into()))),
        now(),
    );
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.draft.is_none());
    assert_eq!(app.table.select_when_seen, Some(new));
}

#[test]
fn a_reply_typed_and_hidden_comes_back_and_a_new_task_does_not_take_its_place() {
    let (mut app, job) = with_a_finished_session(false);
    press(&mut app, [ch('R')]);
    press(&mut app, "half a reply".chars().map(ch));
    press(&mut app, [key(KeyCode::Esc), ch('n')]);
    let draft = app.draft.as_ref().unwrap();
    assert_eq!(
        (draft.reply_to.as_ref(), draft.text().as_str()),
        (Some(&job), "half a reply"),
        "nothing typed is lost"
    );
    press(&mut app, [key(KeyCode::Esc)]);
    // An empty reply gives way to a new task.
    app.draft.as_mut().unwrap().task = crate::tui::input::TextInput::lines();
    press(&mut app, [ch('n')]);
    assert_eq!(app.draft.as_ref().unwrap().reply_to, None);
}

#[test]
fn attach_asks_the_loop_to_open_the_session() {
    let (mut app, job) = with_a_finished_session(false);
    assert_eq!(press(&mut app, [ch('a')]), [Effect::Attach(job)]);
}

#[test]
fn a_running_job_or_one_without_a_session_offers_neither() {
    let (mut app, job) = with_a_finished_session(false);
    let mut running = crate::jobs::Job::clone(&app.jobs[&job]);
    running.status = Status::Running;
    app.update(Event::JobsRead(vec![(job.clone(), Some(running))]), now());
    app.table.selected = Some(job.clone());
    for k in ['R', 'a'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        assert_eq!(app.mode, Mode::Normal);
        assert!(
            app.message.as_deref().unwrap().contains("still running"),
            "{k}"
        );
    }
    let mut other = crate::jobs::Job::clone(&app.jobs[&job]);
    other.status = Status::Failed;
    other.meta = Some(Box::new(Meta {
        more: Some(Box::new(crate::jobs::model::meta::MetaMore {
            agent: "codex".into(),
            ..Default::default()
        })),
        ..Meta::default()
    }));
    app.update(Event::JobsRead(vec![(job.clone(), Some(other))]), now());
    app.table.selected = Some(job);
    for k in ['R', 'a'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        let said = app.message.as_deref().unwrap();
        assert!(said.contains("no Claude Code session"), "{said}");
    }
}

#[test]
fn read_only_refuses_reply_and_attach() {
    let (mut app, _) = with_a_finished_session(true);
    for k in ['R', 'a'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        assert_eq!(app.mode, Mode::Normal);
        assert!(app.message.as_deref().unwrap().contains("read-only"), "{k}");
    }
    assert!(
        Effect::Attach(id("1-a")).writes()
            && Effect::Reply {
                job: id("1-a"),
                text: "x".into()
            }
            .writes()
    );
}
