//! Snapshots of what the needs-input lifecycle and the recent events' settings change on
//! screen: a job answered, then retried, and its retry; the events with progress shown and the
//! mark under what is new since the view was last closed.

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::render_with;
use crate::jobs::Job;
use crate::jobs::model::lifecycle::{Answer, Exchange};
use crate::tui::app::App;
use crate::tui::event::Event;
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

fn draw(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().to_string()
}

fn read(app: &mut App, jobs: Vec<Job>) {
    let read = jobs.into_iter().map(|j| (j.id.clone(), Some(j))).collect();
    app.update(Event::JobsRead(read), now());
}

/// The stopped sample answered by ana; with `retried`, a retry of it running.
fn answered_app(w: u16, h: u16, retried: bool) -> App {
    let mut app = app(w, h);
    let mut job = crate::jobs::Job::clone(&app.jobs[&id("151200-q1q1")]);
    let question = job.question.take().unwrap();
    job.exchange = Some(Box::new(Exchange {
        question: *question,
        answer: Some(Answer {
            question_id: "q1".into(),
            answer: "staging".into(),
            answered_by: "ana@host".into(),
            answered_at: Some(now() - chrono::Duration::minutes(3)),
            source: "tui".into(),
        }),
    }));
    let mut jobs = vec![job];
    if retried {
        jobs.push(live("151200-q1q1", "155950-again", 1, |j| {
            j.meta.as_mut().unwrap().retry_of = "151200-q1q1".into();
            j.progress = None;
        }));
    }
    read(&mut app, jobs);
    // Only these rows: the task is the same.
    press(&mut app, [ch('/')]);
    press(&mut app, "database migration".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    app
}

#[test]
fn an_answered_then_retried_job_and_its_retry() {
    for (w, h) in SIZES {
        let answered = draw(&answered_app(w, h, false));
        insta::assert_snapshot!(format!("lifecycle_answered_{w}x{h}"), answered);
        let retried = draw(&answered_app(w, h, true));
        insta::assert_snapshot!(format!("lifecycle_retried_{w}x{h}"), retried);
    }
}

#[test]
fn the_recent_events_with_progress_and_the_mark() {
    for (w, h) in SIZES {
        let mut app = app(w, h);
        let open = |app: &mut App, at| {
            let effects = app.update(ch('e'), at);
            let Some(crate::tui::effect::Effect::LoadFeed(ids)) = effects.into_iter().next() else {
                panic!("e asks for the feed")
            };
            let milestone = |pct: u32, at: &str| {
                serde_json::json!({"progress": {"percent": pct, "step_name": "Running tests"},
                    "at": at})
            };
            let histories = ids
                .into_iter()
                .map(|i| {
                    let h = if i.as_str() == "142315-a1b2" {
                        vec![
                            milestone(25, "2026-01-09T14:24:00Z"),
                            milestone(50, "2026-01-09T14:26:00Z"),
                        ]
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
        };
        // Looked at, and closed, at 15:30 (local time is UTC in the tests' environment or not:
        // the mark's place is what matters).
        let earlier = now() - chrono::Duration::minutes(30);
        open(&mut app, earlier);
        app.update(key(KeyCode::Esc), earlier);
        open(&mut app, now());
        press(&mut app, [ch('p')]);
        insta::assert_snapshot!(format!("events_marked_{w}x{h}"), draw(&app));
    }
}
