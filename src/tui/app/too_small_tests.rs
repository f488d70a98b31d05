//! While the terminal is too small the screen says only that: in every mode, with any popup
//! open when it shrank, no key, click, wheel or paste may act on what it hides. Quitting works.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

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

fn mods(code: KeyCode, m: KeyModifiers) -> Event {
    Event::Key(KeyEvent::new(code, m))
}

/// The keys that move the selection from the first row to job `to`.
fn down_to(to: &str) -> Vec<Event> {
    let app = full_app();
    let at = app.table.view.iter().position(|v| v.as_str() == to);
    (0..at.expect("the job is in the table"))
        .map(|_| ch('j'))
        .collect()
}

const RUNNING: &str = "155900-run1";

/// Every mode, as the keys that open it from a fresh app (the first row is the gate).
fn every_mode() -> Vec<(&'static str, Vec<Event>)> {
    let typed = |s: &str| s.chars().map(ch).collect::<Vec<_>>();
    let then = |mut a: Vec<Event>, b: Vec<Event>| {
        a.extend(b);
        a
    };
    vec![
        ("main screen, table", down_to(RUNNING)),
        ("main screen, output", vec![key(KeyCode::Tab)]),
        ("help", vec![ch('?')]),
        ("detail", vec![ch('v')]),
        ("inbox, a gate", vec![key(KeyCode::Enter)]),
        ("inbox, a reason", vec![key(KeyCode::Enter), ch('d')]),
        ("inbox, a choice", vec![ch('i')]),
        (
            "inbox, a text answer",
            then(down_to("155600-text"), vec![key(KeyCode::Enter)]),
        ),
        ("input bar", then(vec![ch('n')], typed("run it"))),
        ("kill confirmation", then(down_to(RUNNING), vec![ch('K')])),
        ("recent events", vec![ch('e')]),
        ("filter", then(vec![ch('/')], typed("mus"))),
        ("search", then(vec![key(KeyCode::Tab), ch('/')], typed("x"))),
        ("project picker", vec![ch('p')]),
        ("command line", then(vec![ch(':')], typed("sort"))),
    ]
}

/// Every key a mode might act on, but the quit keys (`q`, ctrl-c).
fn every_key_but_quit() -> Vec<Event> {
    let mut keys: Vec<Event> = (' '..='~').filter(|c| *c != 'q').map(ch).collect();
    for c in ('a'..='z').filter(|c| *c != 'c') {
        keys.push(mods(KeyCode::Char(c), KeyModifiers::CONTROL));
        keys.push(mods(KeyCode::Char(c), KeyModifiers::ALT));
    }
    for code in [
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::Insert,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::F(1),
    ] {
        keys.push(key(code));
        keys.push(mods(code, KeyModifiers::ALT));
        keys.push(mods(code, KeyModifiers::SHIFT));
    }
    keys
}

/// Clicks and the wheel on every row, where the table and the output pane were.
fn every_click() -> Vec<Event> {
    let mut events = Vec::new();
    for row in 0..45 {
        for kind in [
            MouseEventKind::Down(MouseButton::Left),
            MouseEventKind::ScrollDown,
            MouseEventKind::ScrollUp,
        ] {
            events.push(Event::Mouse(MouseEvent {
                kind,
                column: 10,
                row,
                modifiers: KeyModifiers::NONE,
            }));
        }
    }
    events
}

/// What the operator finds once the terminal grows again.
fn state(app: &App) -> String {
    format!(
        "{:?}\n{:?} {:?} {:?} {:?} {:?}\n{:?}\n{:?} follow={} top={} wrap={} search={:?}\n{:?} {}",
        app.mode,
        app.table.selected,
        app.table.filter,
        app.table.tab,
        app.table.sort,
        app.table.projects,
        app.draft,
        app.focus,
        app.log.follow,
        app.log.top_abs,
        app.log.wrap,
        app.log.search.as_ref().map(|s| &s.query),
        app.message,
        app.quit,
    )
}

#[test]
fn nothing_but_quit_acts_while_too_small_in_any_mode() {
    let pastes = ["y", "K", "a line\nand another\n"];
    for (mode, open) in every_mode() {
        let mut app = full_app();
        press(&mut app, open);
        app.update(Event::Resize(50, 12), now());
        let before = state(&app);
        // The frame saying "too small" is drawn.
        app.dirty = false;
        let events = every_key_but_quit()
            .into_iter()
            .chain(every_click())
            .chain(pastes.map(|t| Event::Paste(t.into())));
        for ev in events {
            let what = format!("{ev:?}");
            let effects = app.update(ev, now());
            assert!(effects.is_empty(), "{mode}: {what} asked for {effects:?}");
            assert_eq!(state(&app), before, "{mode}: {what} changed the state");
            assert!(!app.dirty, "{mode}: {what} wants a frame");
        }
        assert_eq!(press(&mut app, [ch('q')]), [Effect::Quit], "{mode}: q");
        let mut app = full_app();
        press(&mut app, every_mode_opener(mode));
        app.update(Event::Resize(59, 24), now());
        assert_eq!(
            press(&mut app, [mods(KeyCode::Char('c'), KeyModifiers::CONTROL)]),
            [Effect::Quit],
            "{mode}: ctrl-c"
        );
    }
}

fn every_mode_opener(mode: &str) -> Vec<Event> {
    every_mode()
        .into_iter()
        .find(|(m, _)| *m == mode)
        .map(|(_, open)| open)
        .unwrap_or_default()
}

#[test]
fn every_mode_opens_as_the_list_says() {
    for (mode, open) in every_mode() {
        let mut app = full_app();
        press(&mut app, open);
        let ok = match mode {
            "main screen, table" => app.mode == Mode::Normal && app.focus == Focus::Table,
            "main screen, output" => app.mode == Mode::Normal && app.focus == Focus::Output,
            "help" => app.mode == Mode::Help,
            "detail" => matches!(app.mode, Mode::Detail(_)),
            "inbox, a gate" | "inbox, a choice" => {
                matches!(&app.mode, Mode::Inbox(i) if i.editor.is_none())
            }
            "inbox, a reason" => matches!(&app.mode, Mode::Inbox(i) if i.editing_reason()),
            "inbox, a text answer" => {
                matches!(&app.mode, Mode::Inbox(i) if i.editor.is_some() && !i.editing_reason())
            }
            "input bar" => app.mode == Mode::InputBar,
            "kill confirmation" => matches!(app.mode, Mode::Confirm(_)),
            "recent events" => matches!(app.mode, Mode::Events(_)),
            "filter" => matches!(app.mode, Mode::Filter(_)),
            "search" => matches!(app.mode, Mode::Search(_)),
            "project picker" => matches!(app.mode, Mode::Picker(_)),
            "command line" => matches!(app.mode, Mode::Command(_)),
            other => panic!("no check for {other}"),
        };
        assert!(ok, "{mode}: {:?} (focus {:?})", app.mode, app.focus);
    }
}

#[test]
fn k_then_y_while_too_small_kills_nothing() {
    let mut app = full_app();
    press(&mut app, down_to(RUNNING));
    assert_eq!(app.table.selected, Some(id(RUNNING)));
    app.update(Event::Resize(50, 12), now());
    assert!(press(&mut app, [ch('K'), ch('y')]).is_empty());
    assert_eq!(app.mode, Mode::Normal, "no confirmation opened unseen");
    app.update(Event::Resize(160, 45), now());
    assert_eq!(
        press(&mut app, [ch('K'), ch('y')]),
        [Effect::Kill(id(RUNNING))],
        "the same keys work once the screen shows"
    );
}

#[test]
fn a_popup_open_when_the_terminal_shrinks_waits_for_it_to_grow() {
    let mut app = full_app();
    press(&mut app, down_to(RUNNING));
    press(&mut app, [ch('K')]);
    app.update(Event::Resize(80, 14), now());
    assert!(press(&mut app, [ch('y')]).is_empty(), "y on a hidden popup");
    assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.mode);
    app.update(Event::Resize(80, 24), now());
    assert_eq!(
        press(&mut app, [ch('y')]),
        [Effect::Kill(id(RUNNING))],
        "the popup shows again, and answers"
    );
    let mut app = full_app();
    press(&mut app, [key(KeyCode::Enter)]); // the gate
    app.update(Event::Resize(40, 30), now());
    assert!(press(&mut app, [ch('a')]).is_empty(), "no approval unseen");
    app.update(Event::Resize(60, 15), now());
    assert!(matches!(
        press(&mut app, [ch('a')]).as_slice(),
        [Effect::Decide { approved: true, .. }]
    ));
}

#[test]
fn a_remapped_quit_key_still_quits_while_too_small() {
    let keys = crate::config::KeyBindings::from_toml("quit = \"x\"").unwrap();
    let opts = Options {
        keymap: KeyMap::new(&keys).unwrap(),
        ..options(false)
    };
    let mut app = app_with(opts, 50, 12).0;
    assert!(
        press(&mut app, [ch('q')]).is_empty(),
        "q is no quit key now"
    );
    assert_eq!(press(&mut app, [ch('x')]), [Effect::Quit]);
}
