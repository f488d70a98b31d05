//! The command line in `update`: what each command does, what a wrong one says, Tab, and its
//! keys through `[keys]`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::command::Note;
use super::table::view::{SortKey, Tab};
use super::*;
use crate::config::KeyBindings;
use crate::tui::event::Event;
use crate::tui::testing::*;

fn with_projects(toml: &str, read_only: bool) -> App {
    let keys = KeyBindings::from_toml(toml).unwrap();
    let opts = Options {
        keymap: KeyMap::new(&keys).unwrap(),
        dispatch_projects: vec!["librec".into(), "musica".into()],
        known_projects: vec!["librec".into(), "musica".into()],
        ..options(read_only)
    };
    app_with(opts, 160, 45).0
}

/// `:`, the line typed, then Enter.
fn command(app: &mut App, line: &str) -> Vec<Effect> {
    press(app, [ch(':')]);
    press(app, line.chars().map(ch));
    press(app, [key(KeyCode::Enter)])
}

fn note(app: &App) -> Option<Note> {
    match &app.mode {
        Mode::Command(line) => line.note.clone(),
        _ => None,
    }
}

fn line_text(app: &App) -> String {
    match &app.mode {
        Mode::Command(line) => line.input.text(),
        other => panic!("no command line: {other:?}"),
    }
}

#[test]
fn colon_opens_the_command_line_not_the_input_bar() {
    let mut app = with_projects("", false);
    press(&mut app, [ch(':')]);
    assert!(matches!(app.mode, Mode::Command(_)), "{:?}", app.mode);
    assert!(app.draft.is_none());
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn q_quits_and_dispatches_nothing() {
    for line in ["q", "quit", "q!"] {
        let mut app = with_projects("", false);
        assert_eq!(command(&mut app, line), [Effect::Quit], "{line}");
    }
}

#[test]
fn each_command_does_what_it_says() {
    let mut app = with_projects("", false);
    // The selected job (the first row, the gate) is overbits', which takes no tasks here: the
    // input bar would pick the first project.
    assert_eq!(app.selected_job().unwrap().project(), "overbits");
    let project = "librec".to_owned();
    assert_eq!(
        command(&mut app, "run fix the flaky test"),
        [Effect::Dispatch {
            host: None,
            project,
            task: "fix the flaky test".into(),
            retry_of: None,
            agent: None,
        }]
    );
    assert_eq!(app.mode, Mode::Normal);
    command(&mut app, "project musica");
    assert_eq!(app.table.projects, ["musica"]);
    command(&mut app, "project");
    assert!(app.table.projects.is_empty(), ":project alone clears it");
    command(&mut app, "sort longest");
    assert_eq!(app.table.sort, SortKey::Elapsed);
    command(&mut app, "view failed");
    assert_eq!(app.table.tab, Tab::Failed);
    command(&mut app, "help");
    assert_eq!(app.mode, Mode::Help);
}

#[test]
fn a_wrong_command_says_so_in_the_line_and_does_nothing() {
    let mut app = with_projects("", false);
    let before = (app.table.projects.clone(), app.table.sort, app.table.tab);
    for (line, said) in [
        ("wq", "unknown command 'wq'"),
        ("sort size", "no sort 'size'"),
        ("project nope", "no project 'nope': librec, musica"),
    ] {
        assert!(command(&mut app, line).is_empty(), "{line}");
        match note(&app) {
            Some(Note::Error(e)) => assert!(e.starts_with(said), "{line}: {e}"),
            other => panic!("{line}: {other:?}"),
        }
        assert_eq!(line_text(&app), line, "the line stays, to be mended");
        press(&mut app, [key(KeyCode::Backspace)]);
        assert_eq!(note(&app), None, "typing clears the note");
        press(&mut app, [key(KeyCode::Esc)]);
    }
    assert_eq!(
        (app.table.projects.clone(), app.table.sort, app.table.tab),
        before
    );
    let mut read_only = with_projects("", true);
    assert!(command(&mut read_only, "run it").is_empty());
    assert!(matches!(note(&read_only), Some(Note::Error(e)) if e.contains("read-only")));
}

#[test]
fn tab_completes_the_name_then_the_argument() {
    let mut app = with_projects("", false);
    press(&mut app, [ch(':'), ch('s'), key(KeyCode::Tab)]);
    assert_eq!(line_text(&app), "sort ");
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(
        note(&app),
        Some(Note::Choices(
            ["status", "newest", "project", "longest"]
                .map(String::from)
                .into()
        ))
    );
    press(&mut app, [ch('n'), key(KeyCode::Tab)]);
    assert_eq!(line_text(&app), "sort newest");
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.table.sort, SortKey::Started);
    press(&mut app, [ch(':')]);
    press(&mut app, "project m".chars().map(ch));
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(line_text(&app), "project musica");
}

#[test]
fn its_keys_rebind() {
    let mut app = with_projects(
        "command_line = \";\"\n[command]\nrun = \"ctrl-s\"\ncomplete = \"ctrl-t\"",
        false,
    );
    press(&mut app, [ch(':')]);
    assert_eq!(app.mode, Mode::Normal, ": no longer opens it");
    press(&mut app, [ch(';'), ch('v')]);
    press(
        &mut app,
        [Event::Key(KeyEvent::new(
            KeyCode::Char('t'),
            KeyModifiers::CONTROL,
        ))],
    );
    assert_eq!(line_text(&app), "view ");
    press(&mut app, "done".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(matches!(app.mode, Mode::Command(_)), "enter no longer runs");
    press(
        &mut app,
        [Event::Key(KeyEvent::new(
            KeyCode::Char('s'),
            KeyModifiers::CONTROL,
        ))],
    );
    assert_eq!(app.table.tab, Tab::Done);
}
