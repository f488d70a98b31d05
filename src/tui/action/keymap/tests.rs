//! The key map: defaults, `[keys]` replacing them per mode, and errors that say what is wrong.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::tui::action::{
    ConfirmAction, DetailAction, EventsAction, InboxAction, NormalAction, PickerAction,
};

fn key(s: &str) -> Key {
    Key::parse(s).unwrap()
}

fn map(toml: &str) -> Result<KeyMap, String> {
    KeyMap::new(&KeyBindings::from_toml(toml).unwrap())
}

#[test]
fn every_default_key_parses_and_every_main_row_names_a_main_screen_action() {
    let main: Vec<&str> = Section::Normal.rows().iter().map(|r| r.name).collect();
    for &section in Section::ALL {
        for row in section.rows() {
            match row.keys {
                Defaults::Keys(list) => {
                    for k in list {
                        assert!(Key::parse(k).is_ok(), "{section:?} {}: {k}", row.name);
                    }
                }
                Defaults::Main => assert!(main.contains(&row.name), "{section:?} {}", row.name),
                Defaults::Any(_) => {}
            }
        }
    }
}

#[test]
fn defaults() {
    let km = KeyMap::default();
    let ev = |code, mods| Key::from_event(&KeyEvent::new(code, mods));
    assert_eq!(
        km.actions::<NormalAction>(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
        [NormalAction::Quit]
    );
    assert_eq!(
        km.actions::<NormalAction>(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
        [NormalAction::Bottom, NormalAction::Follow]
    );
    assert_eq!(
        km.actions::<NormalAction>(&ev(KeyCode::Char('C'), KeyModifiers::CONTROL)),
        [NormalAction::Quit]
    );
    assert_eq!(
        km.actions::<InboxAction>(&ev(KeyCode::BackTab, KeyModifiers::SHIFT)),
        [InboxAction::Prev]
    );
    assert_eq!(km.keys_for(NormalAction::Quit), "q/ctrl-c");
    assert_eq!(km.first_key(DetailAction::Close), "esc");
    assert_eq!(km.first_key(ConfirmAction::No), "any");
    assert!(km.actions::<ConfirmAction>(&key("n")).is_empty());
}

#[test]
fn a_mode_binding_replaces_only_that_modes_keys() {
    let km =
        map("quit = \"x\"\nhelp = \"h\"\ndown = [\"n\", \"ctrl-n\"]\n[inbox]\nnext = \"ctrl-n\"")
            .unwrap();
    assert!(km.actions::<NormalAction>(&key("q")).is_empty());
    assert_eq!(km.actions::<NormalAction>(&key("x")), [NormalAction::Quit]);
    assert!(
        km.actions::<NormalAction>(&key("n"))
            .contains(&NormalAction::Down)
    );
    assert_eq!(km.keys_for(NormalAction::Down), "n/ctrl-n");
    assert_eq!(
        km.actions::<InboxAction>(&key("ctrl-n")),
        [InboxAction::Next]
    );
    assert!(km.actions::<InboxAction>(&key("tab")).is_empty());
    // Lists take the main screen's movement keys, unless their own table says otherwise.
    assert_eq!(
        km.actions::<PickerAction>(&key("ctrl-n")),
        [PickerAction::Down]
    );
    assert_eq!(km.actions::<EventsAction>(&key("h")), [EventsAction::Help]);
    let own = map("down = \"n\"\n[picker]\ndown = \"J\"").unwrap();
    assert_eq!(own.actions::<PickerAction>(&key("J")), [PickerAction::Down]);
    assert!(own.actions::<PickerAction>(&key("n")).is_empty());
    assert_eq!(own.actions::<EventsAction>(&key("n")), [EventsAction::Down]);
}

#[test]
fn bad_bindings_say_what_is_wrong_and_what_is_accepted() {
    let cases = [
        (
            "qiut = \"x\"",
            &["[keys] has no action 'qiut'", "quit", "page_up"][..],
        ),
        (
            "quit = \"hyper-x\"",
            &["[keys] quit: 'hyper-x' is not a key", "ctrl-"],
        ),
        (
            "[inbx]\nnext = \"x\"",
            &["no mode 'inbx'", "inbox", "input_bar", "[keys] itself"],
        ),
        (
            "[inbox]\nsned = \"x\"",
            &["[keys.inbox] has no action 'sned'", "send", "approve"],
        ),
        (
            "[confirm]\nno = \"n\"",
            &["[keys.confirm] no", "takes no keys"],
        ),
        (
            "[filter]\nkeep = \"ctrl-\"",
            &["[keys.filter] keep", "'ctrl-' is not a key"],
        ),
    ];
    for (toml, says) in cases {
        let err = map(toml).unwrap_err();
        for s in says {
            assert!(err.contains(s), "{toml:?}: {err}");
        }
    }
}
