//! The rules every mode's keys keep, as one table: Ctrl-C empties an editor, then closes it,
//! and never quits while a draft is kept; `q` and Esc close a view, and only the main screen's
//! `q` quits; `?` opens the help over a view, and closing it goes back there.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::tui::event::Event;
use crate::tui::testing::*;

/// Two projects to dispatch to, and a job waiting for a free-text answer.
fn full_app() -> App {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(false)
    };
    let mut app = app_with(opts, 160, 45).0;
    let job = text_question_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    app
}

fn ctrl_c() -> Event {
    Event::Key(CTRL_C)
}

const CTRL_C: KeyEvent = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
const Q: KeyEvent = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
const ESC: KeyEvent = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);

/// Opens a mode from a fresh app.
type Opener = fn() -> Vec<Event>;

fn typed(s: &str) -> Vec<Event> {
    s.chars().map(ch).collect()
}

fn then(mut a: Vec<Event>, b: Vec<Event>) -> Vec<Event> {
    a.extend(b);
    a
}

/// What is on top, by name.
fn on_top(app: &App) -> &'static str {
    match &app.mode {
        Mode::Normal => "main",
        Mode::Help => "help",
        Mode::Detail(_) => "detail",
        Mode::Diff(_) => "diff",
        Mode::Inbox(i) if i.editing_reason() => "reason",
        Mode::Inbox(i) if i.editor.is_some() => "answer",
        Mode::Inbox(_) => "inbox",
        Mode::InputBar => "input bar",
        Mode::Confirm(_) => "confirm",
        Mode::Events(_) => "events",
        Mode::Filter(_) => "filter",
        Mode::Search(_) => "search",
        Mode::Picker(_) => "picker",
        Mode::Command(_) => "command",
    }
}

/// The text of the editor on top, if one is.
fn editor_text(app: &App) -> Option<String> {
    match &app.mode {
        Mode::Inbox(i) => i.editor.as_ref().map(|e| e.text()),
        Mode::InputBar => app.draft.as_ref().map(|d| d.text()),
        Mode::Filter(i) | Mode::Search(i) => Some(i.text()),
        Mode::Command(c) => Some(c.input.text()),
        _ => None,
    }
}

/// The keys that select the job waiting for a text answer.
fn to_text_question() -> Vec<Event> {
    let app = full_app();
    let at = app
        .table
        .view
        .iter()
        .position(|v| v.as_str() == "155600-text");
    (0..at.unwrap()).map(|_| ch('j')).collect()
}

#[test]
fn ctrl_c_empties_an_editor_then_closes_it_and_never_quits() {
    let editors: Vec<(&str, Vec<Event>)> = vec![
        ("input bar", then(vec![ch('n')], typed("run it"))),
        ("filter", then(vec![ch('/')], typed("mus"))),
        ("search", then(vec![key(KeyCode::Tab), ch('/')], typed("x"))),
        ("command", then(vec![ch(':')], typed("sort n"))),
        (
            "reason",
            then(vec![key(KeyCode::Enter), ch('d')], typed("no")),
        ),
        (
            "answer",
            then(
                to_text_question(),
                then(vec![key(KeyCode::Enter)], typed("yes")),
            ),
        ),
    ];
    // (editor, what the second ctrl-c leaves on top)
    let closes_to = |editor: &str| match editor {
        "reason" => "inbox",
        _ => "main",
    };
    for (editor, open) in editors {
        let mut app = full_app();
        press(&mut app, open);
        assert_eq!(on_top(&app), editor);
        assert!(!editor_text(&app).unwrap().is_empty(), "{editor}");
        assert!(press(&mut app, [ctrl_c()]).is_empty(), "{editor}: first");
        assert_eq!(on_top(&app), editor, "{editor}: stays open");
        assert_eq!(editor_text(&app).as_deref(), Some(""), "{editor}: emptied");
        assert!(press(&mut app, [ctrl_c()]).is_empty(), "{editor}: second");
        assert_eq!(on_top(&app), closes_to(editor), "{editor}: closed");
        assert!(!app.quit, "{editor}");
    }
}

#[test]
fn the_emptied_text_comes_back_with_undo() {
    let mut app = full_app();
    press(&mut app, then(vec![ch('n')], typed("run it")));
    press(&mut app, [ctrl_c()]);
    press(
        &mut app,
        [Event::Key(KeyEvent::new(
            KeyCode::Char('z'),
            KeyModifiers::CONTROL,
        ))],
    );
    assert_eq!(editor_text(&app).as_deref(), Some("run it"));
}

#[test]
fn quitting_with_a_draft_kept_asks_again_first() {
    // (keys before, the quit key, quits at once)
    for quit_key in [CTRL_C, Q] {
        let quit = || Event::Key(quit_key);
        let mut app = full_app();
        assert_eq!(press(&mut app, [quit()]), [Effect::Quit], "no draft");

        let mut app = full_app();
        press(&mut app, then(vec![ch('n')], typed("run it")));
        press(&mut app, [key(KeyCode::Esc)]);
        assert_eq!(on_top(&app), "main");
        assert!(press(&mut app, [quit()]).is_empty(), "{quit_key:?}");
        assert!(!app.quit);
        let said = app.message.clone().unwrap_or_default();
        let name = if quit_key == CTRL_C { "ctrl-c" } else { "q" };
        assert_eq!(
            said,
            format!("a draft is kept in the input bar: {name} again to quit, n to see it")
        );
        // Another key in between: the next quit asks again.
        press(&mut app, [ch('j')]);
        assert!(press(&mut app, [quit()]).is_empty(), "{quit_key:?}");
        assert_eq!(press(&mut app, [quit()]), [Effect::Quit], "twice");
        // n shows the draft, as it was.
        let mut app = full_app();
        press(&mut app, then(vec![ch('n')], typed("run it")));
        press(&mut app, [key(KeyCode::Esc), quit(), ch('n')]);
        assert_eq!(editor_text(&app).as_deref(), Some("run it"));
    }
    // A draft emptied by ctrl-c is no draft: the main screen's ctrl-c quits.
    let mut app = full_app();
    press(&mut app, then(vec![ch('n')], typed("run it")));
    press(&mut app, [ctrl_c(), ctrl_c()]);
    assert_eq!(press(&mut app, [ctrl_c()]), [Effect::Quit]);
}

#[test]
fn q_and_esc_close_every_view_and_only_the_main_screen_quits() {
    let views: Vec<(&str, Opener)> = vec![
        ("help", || vec![ch('?')]),
        ("detail", || vec![ch('v')]),
        ("inbox", || vec![key(KeyCode::Enter)]),
        ("events", || vec![ch('e')]),
        ("picker", || vec![ch('p')]),
        // The running job.
        ("confirm", || vec![ch('j'), ch('K')]),
    ];
    for (view, open) in views {
        for close in [Q, ESC] {
            let mut app = full_app();
            press(&mut app, open());
            assert_eq!(on_top(&app), view);
            let effects = press(&mut app, [Event::Key(close)]);
            assert!(
                effects.is_empty(),
                "{view}: {close:?} asked for {effects:?}"
            );
            assert_eq!(on_top(&app), "main", "{view}: {close:?}");
            assert!(!app.quit, "{view}: {close:?}");
        }
    }
    let mut app = full_app();
    assert_eq!(press(&mut app, [ch('q')]), [Effect::Quit]);
}

#[test]
fn help_opens_over_a_view_and_goes_back_to_it() {
    let views: Vec<(&str, Opener)> = vec![
        ("detail", || vec![ch('v')]),
        ("inbox", || vec![key(KeyCode::Enter)]),
        ("events", || vec![ch('e')]),
        ("picker", || vec![ch('p')]),
    ];
    for (view, open) in views {
        for help in [KeyCode::Char('?'), KeyCode::F(1)] {
            let mut app = full_app();
            press(&mut app, open());
            press(&mut app, [key(help)]);
            assert_eq!(on_top(&app), "help", "{view}: {help:?}");
            press(&mut app, [ch('q')]);
            assert_eq!(on_top(&app), view, "{view}: closing the help");
            assert!(!app.quit);
        }
    }
    // While an answer is typed, `?` is a letter.
    let mut app = full_app();
    press(&mut app, to_text_question());
    press(&mut app, [key(KeyCode::Enter), ch('?')]);
    assert_eq!(on_top(&app), "answer");
    assert_eq!(editor_text(&app).as_deref(), Some("?"));
}

#[test]
fn the_help_scrolls_to_its_last_line_and_no_further() {
    let mut app = app(80, 24);
    press(&mut app, [ch('?')]);
    let lines = app.opts.keymap.help_lines().len() + crate::tui::layout::HELP_EXTRA;
    let room = 24 - 2;
    assert!(lines > room, "the help is taller than 80x24: {lines}");
    let last_top = lines - room;
    for _ in 0..lines * 2 {
        press(&mut app, [ch('j')]);
    }
    assert_eq!(app.help_top, last_top, "stops where its last line shows");
    press(&mut app, [ch('k')]);
    assert_eq!(app.help_top, last_top - 1, "and comes back at once");
    for _ in 0..lines * 2 {
        press(&mut app, [key(KeyCode::Up)]);
    }
    assert_eq!(app.help_top, 0);
    // Tall enough: nothing scrolls, any key closes it.
    let mut app = crate::tui::testing::app(160, 45);
    press(&mut app, [ch('?'), ch('j')]);
    assert_eq!(on_top(&app), "main");
}
