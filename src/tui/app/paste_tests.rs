//! A paste goes into the text input that has the keyboard, whole, and never acts as keys.

use crossterm::event::KeyCode;

use super::*;
use crate::jobs::hitl::operator::Scope;
use crate::tui::event::Event;
use crate::tui::testing::*;

fn paste(text: &str) -> Event {
    Event::Paste(text.into())
}

fn with_projects() -> App {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(false)
    };
    app_with(opts, 160, 45).0
}

/// Terminals send line breaks in a paste as `\r` (most), `\r\n` or `\n`.
const TASK: &str = "Fix the flaky test\r\n\tthen run the suite\rand report\n";

#[test]
fn into_the_input_bar_with_its_lines() {
    let mut app = with_projects();
    press(&mut app, [ch('n')]);
    press(&mut app, "Task: ".chars().map(ch));
    assert!(press(&mut app, [paste(TASK)]).is_empty());
    press(&mut app, "done".chars().map(ch));
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [Effect::Dispatch {
            host: None,
            project: "librec".into(),
            task: "Task: Fix the flaky test\n\tthen run the suite\nand report\ndone".into(),
            retry_of: None,
            agent: None,
        }]
    );
}

#[test]
fn into_a_free_text_answer_with_its_lines() {
    let mut app = app(160, 45);
    let job = text_question_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    let at = app
        .table
        .view
        .iter()
        .position(|v| v.as_str() == "155600-text");
    press(&mut app, (0..at.unwrap()).map(|_| ch('j')));
    press(&mut app, [key(KeyCode::Enter)]);
    press(&mut app, [paste("Spring\r\nq (for quiet)")]);
    assert!(!app.quit, "a q pasted is text");
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [Effect::Answer {
            job: id("155600-text"),
            question_id: "q3".into(),
            answer: "Spring\nq (for quiet)".into()
        }]
    );
}

#[test]
fn into_the_reason_for_a_denial() {
    let mut app = app(160, 45);
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(
        press(&mut app, [paste("a")]).is_empty(),
        "a paste on the gate is no approval"
    );
    let Mode::Inbox(inbox) = &app.mode else {
        panic!("the inbox closed: {:?}", app.mode)
    };
    assert!(!inbox.sending && inbox.editor.is_none());
    assert!(app.message.as_deref().unwrap().contains("paste ignored"));
    press(&mut app, [ch('d'), paste("not during\rbusiness hours")]);
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [Effect::Decide {
            job: id("155700-gate"),
            gate_id: "g1".into(),
            approved: false,
            scope: Scope::Once,
            reason: "not during\nbusiness hours".into()
        }]
    );
}

#[test]
fn into_the_filter_on_one_line_narrowing_the_table() {
    let mut app = app(160, 45);
    press(&mut app, [ch('/')]);
    press(&mut app, [paste("hostile\r\n")]);
    assert_eq!(app.table.filter, "hostile", "a copied line's break dropped");
    assert_eq!(ids_of(&app), ["155500-evil"], "the table follows at once");
    press(&mut app, [paste("\nmore\nwords")]);
    assert_eq!(app.table.filter, "hostile more words");
    assert!(matches!(app.mode, Mode::Filter(_)));
}

#[test]
fn into_a_search_on_one_line() {
    let mut app = app(160, 45);
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&["alpha", "the needle here", "omega"]),
            error: None,
        },
        now(),
    );
    press(
        &mut app,
        [key(KeyCode::Tab), ch('/'), paste("the needle\n")],
    );
    press(&mut app, [key(KeyCode::Enter)]);
    let search = app.log.search.as_ref().expect("a search");
    assert_eq!(search.query, "the needle");
    assert_eq!(search.matches.len(), 1);
}

#[test]
fn with_nothing_to_take_it_nothing_happens_and_it_says_so() {
    let opened: [(&str, Vec<Event>); 6] = [
        ("main screen", vec![]),
        ("kill confirmation", vec![ch('j'), ch('K')]),
        ("help", vec![ch('?')]),
        ("detail", vec![ch('v')]),
        ("a choice", vec![ch('i')]),
        ("project picker", vec![ch('p')]),
    ];
    for (what, open) in opened {
        let mut app = app(160, 45);
        press(&mut app, open);
        let mode = app.mode.clone();
        let selected = app.table.selected.clone();
        // Keys that would quit, kill, confirm, answer or approve, were they typed.
        let effects = press(&mut app, [paste("qKy1a\n"), paste("\r")]);
        assert!(effects.is_empty(), "{what}: {effects:?}");
        assert!(!app.quit, "{what}");
        assert_eq!(app.mode, mode, "{what}");
        assert_eq!(app.table.selected, selected, "{what}");
        assert_eq!(
            app.message.as_deref(),
            Some("paste ignored: no text field is open to take it"),
            "{what}"
        );
    }
}
