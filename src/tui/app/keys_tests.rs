//! `[keys]` in every mode: a remapped key does the action, and the default it replaced no
//! longer does.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::config::KeyBindings;
use crate::tui::event::Event;
use crate::tui::testing::*;

/// An app with two projects to dispatch to, and `[keys]` as `toml` says.
fn remapped(toml: &str) -> App {
    let keys = KeyBindings::from_toml(toml).unwrap();
    let opts = Options {
        keymap: KeyMap::new(&keys).unwrap(),
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(false)
    };
    app_with(opts, 160, 45).0
}

fn ctrl(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

#[test]
fn main_screen() {
    let mut app = remapped("kill = \"X\"\nfocus_next = \"o\"");
    press(&mut app, [ch('j')]); // a running job
    press(&mut app, [ch('K')]);
    assert_eq!(app.mode, Mode::Normal, "K no longer kills");
    press(&mut app, [ch('X')]);
    assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.mode);
    press(&mut app, [key(KeyCode::Esc), key(KeyCode::Tab)]);
    assert_eq!(app.focus, Focus::Table, "tab no longer switches focus");
    press(&mut app, [ch('o')]);
    assert_eq!(app.focus, Focus::Output);
}

#[test]
fn help_over_a_view_goes_back_to_it() {
    let mut app = remapped("help = \"h\"\n[detail]\nclose = \"c\"");
    press(&mut app, [ch('v'), ch('?')]);
    assert!(matches!(app.mode, Mode::Detail(_)), "? no longer opens it");
    press(&mut app, [ch('h')]);
    assert_eq!(
        app.mode,
        Mode::Help,
        "the main screen's help key, in the view"
    );
    press(&mut app, [ch('q')]);
    assert!(matches!(app.mode, Mode::Detail(_)), "{:?}", app.mode);
    assert!(!app.quit);
}

#[test]
fn detail_view() {
    let mut app = remapped("[detail]\nclose = \"c\"\ndown = \"J\"");
    press(&mut app, [ch('v'), key(KeyCode::Esc), ch('j'), ch('J')]);
    let Mode::Detail(detail) = &app.mode else {
        panic!("esc no longer closes it: {:?}", app.mode)
    };
    assert_eq!(detail.scroll, 1, "J scrolls, j no longer does");
    press(&mut app, [ch('c')]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn recent_events() {
    let mut app = remapped("[events]\nclose = \"x\"");
    press(&mut app, [ch('e'), key(KeyCode::Esc)]);
    assert!(matches!(app.mode, Mode::Events(_)), "esc no longer closes");
    press(&mut app, [ch('x')]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn project_picker_and_the_main_screens_keys_it_takes() {
    let mut app = remapped("down = \"ctrl-n\"\n[picker]\nchoose = \"space\"");
    press(&mut app, [ch('p'), ch('j'), ctrl('n'), key(KeyCode::Enter)]);
    let Mode::Picker(picker) = &app.mode else {
        panic!("enter no longer chooses: {:?}", app.mode)
    };
    assert_eq!(
        picker.selected, 1,
        "the picker moves with the main screen's down"
    );
    press(&mut app, [ch(' ')]);
    assert_eq!(app.table.projects, ["librec"]);
}

#[test]
fn kill_confirmation() {
    let mut app = remapped("[confirm]\nyes = \"o\"");
    press(&mut app, [ch('j')]);
    assert!(
        press(&mut app, [ch('K'), ch('y')]).is_empty(),
        "y is a no now"
    );
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(
        press(&mut app, [ch('K'), ch('o')]),
        [Effect::Kill(id("155900-run1"))]
    );
}

#[test]
fn inbox() {
    let mut app = remapped("[inbox]\nnext = \"ctrl-n\"\napprove = \"A\"");
    press(&mut app, [ch('i'), key(KeyCode::Tab)]);
    let on = |app: &App| match &app.mode {
        Mode::Inbox(inbox) => inbox.item.job.to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(on(&app), "151200-q1q1", "tab no longer goes on");
    press(&mut app, [ctrl('n')]);
    assert_eq!(on(&app), "155700-gate");
    assert!(
        press(&mut app, [ch('a')]).is_empty(),
        "a no longer approves"
    );
    assert!(matches!(
        &press(&mut app, [ch('A')])[..],
        [Effect::Decide { approved: true, .. }]
    ));
}

#[test]
fn inbox_while_typing() {
    let mut app = remapped("[inbox]\nsend = \"ctrl-s\"");
    let job = text_question_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    press(&mut app, [ch('j'), key(KeyCode::Enter)]);
    press(&mut app, "Spring".chars().map(ch));
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "enter no longer sends: the text takes it"
    );
    press(&mut app, "release".chars().map(ch));
    assert!(matches!(
        &press(&mut app, [ctrl('s')])[..],
        [Effect::Answer { answer, .. }] if answer == "Spring\nrelease"
    ));
}

#[test]
fn input_bar() {
    let mut app = remapped("[input_bar]\ndispatch = \"ctrl-s\"\nnew_line = \"enter\"");
    press(&mut app, [ch('n'), ch('a')]);
    assert!(press(&mut app, [key(KeyCode::Enter)]).is_empty());
    press(&mut app, [ch('b')]);
    assert_eq!(
        press(&mut app, [ctrl('s')]),
        [Effect::Dispatch {
            host: None,
            project: "librec".into(),
            task: "a\nb".into(),
            retry_of: None,
            agent: None,
        }]
    );
}

#[test]
fn filter_and_ctrl_c_once_it_is_not_bound() {
    let mut app = remapped("[filter]\nkeep = \"tab\"\nclear = \"esc\"");
    press(&mut app, [ch('/')]);
    press(&mut app, "musica".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(matches!(app.mode, Mode::Filter(_)), "enter no longer keeps");
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.table.filter, "musica");
    press(&mut app, [ch('/')]);
    assert!(press(&mut app, [ctrl('c')]).is_empty(), "ctrl-c empties it");
    assert!(matches!(&app.mode, Mode::Filter(i) if i.text().is_empty()));
    assert_eq!(app.table.filter, "", "the table follows");
    assert!(press(&mut app, [ctrl('c')]).is_empty());
    assert_eq!(app.mode, Mode::Normal, "a second one closes the line");
    assert!(!app.quit);
}

#[test]
fn search() {
    let mut app = remapped("[search]\nsearch = \"ctrl-s\"");
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&["a", "boom"]),
            error: None,
        },
        now(),
    );
    press(&mut app, [key(KeyCode::Tab), ch('/')]);
    press(&mut app, "boom".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(
        matches!(app.mode, Mode::Search(_)),
        "enter no longer searches"
    );
    press(&mut app, [ctrl('s')]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.log.search.as_ref().unwrap().matches, [1]);
}
