//! What a key means. Actions are data and the key map is configurable: `[keys]` in the config
//! file binds any action to any keys, e.g. `quit = ["q", "ctrl-c"]`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::config::KeyList;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    FocusNext,
    NextTab,
    PrevTab,
    Filter,
    PickProject,
    Sort,
    Help,
    Open,
    Back,
    ToggleWrap,
    Search,
    SearchNext,
    SearchPrev,
    Follow,
    Inbox,
    Details,
    NewTask,
    Kill,
    Retry,
    Events,
    NextIssue,
    PrevIssue,
}

impl Action {
    pub const ALL: [Action; 29] = [
        Action::Quit,
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::Top,
        Action::Bottom,
        Action::FocusNext,
        Action::NextTab,
        Action::PrevTab,
        Action::Filter,
        Action::PickProject,
        Action::Sort,
        Action::Help,
        Action::Open,
        Action::Back,
        Action::ToggleWrap,
        Action::Search,
        Action::SearchNext,
        Action::SearchPrev,
        Action::Follow,
        Action::Inbox,
        Action::Details,
        Action::NewTask,
        Action::Kill,
        Action::Retry,
        Action::Events,
        Action::NextIssue,
        Action::PrevIssue,
    ];

    /// The name used in `[keys]`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "page_up",
            Action::PageDown => "page_down",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::FocusNext => "focus_next",
            Action::NextTab => "next_tab",
            Action::PrevTab => "prev_tab",
            Action::Filter => "filter",
            Action::PickProject => "pick_project",
            Action::Sort => "sort",
            Action::Help => "help",
            Action::Open => "open",
            Action::Back => "back",
            Action::ToggleWrap => "toggle_wrap",
            Action::Search => "search",
            Action::SearchNext => "search_next",
            Action::SearchPrev => "search_prev",
            Action::Follow => "follow",
            Action::Inbox => "inbox",
            Action::Details => "details",
            Action::NewTask => "new_task",
            Action::Kill => "kill",
            Action::Retry => "retry",
            Action::Events => "events",
            Action::NextIssue => "next_issue",
            Action::PrevIssue => "prev_issue",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Up => "move up / scroll up",
            Action::Down => "move down / scroll down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "first job / top of output",
            Action::Bottom => "last job / end of output (follows again)",
            Action::FocusNext => "switch focus: jobs table / output pane",
            Action::NextTab => "next view (All, Active, Waiting, Done, Failed)",
            Action::PrevTab => "previous view",
            Action::Filter => "filter jobs by text (in the table)",
            Action::PickProject => "pick the project filter",
            Action::Sort => "change the sort order",
            Action::Help => "this help",
            Action::Open => "answer the selected job if it waits, else its detail view",
            Action::Back => "close / clear / back",
            Action::ToggleWrap => "wrap long output lines on/off",
            Action::Search => "search the output (in the output pane)",
            Action::SearchNext => "next match",
            Action::SearchPrev => "previous match",
            Action::Follow => "follow the output again",
            Action::Inbox => "answer pending questions and gates, oldest first",
            Action::Details => "detail view of the selected job",
            Action::NewTask => "dispatch a new task (the input bar)",
            Action::Kill => "kill the selected job (asks first)",
            Action::Retry => "retry the selected job",
            Action::Events => "recent events: what happened while you were away",
            Action::NextIssue => "next line showing a known issue (output pane)",
            Action::PrevIssue => "previous line showing a known issue (output pane)",
        }
    }

    fn defaults(self) -> &'static [&'static str] {
        match self {
            Action::Quit => &["q", "ctrl-c"],
            Action::Up => &["up", "k"],
            Action::Down => &["down", "j"],
            Action::PageUp => &["pageup", "ctrl-b"],
            Action::PageDown => &["pagedown", "ctrl-f"],
            Action::Top => &["home", "g"],
            Action::Bottom => &["G"],
            Action::FocusNext => &["tab"],
            Action::NextTab => &["right", "l"],
            Action::PrevTab => &["left", "h"],
            Action::Filter => &["/"],
            Action::PickProject => &["p"],
            Action::Sort => &["s"],
            Action::Help => &["?", "f1"],
            Action::Open => &["enter"],
            Action::Back => &["esc"],
            Action::ToggleWrap => &["w"],
            Action::Search => &["/"],
            Action::SearchNext => &["n"],
            Action::SearchPrev => &["N"],
            Action::Follow => &["end", "G"],
            Action::Inbox => &["i"],
            Action::Details => &["v"],
            Action::NewTask => &["n", ":"],
            Action::Kill => &["K"],
            Action::Retry => &["r"],
            Action::Events => &["e"],
            Action::NextIssue => &["]"],
            Action::PrevIssue => &["["],
        }
    }
}

/// A key as written in the config: `q`, `G`, `ctrl-c`, `alt-x`, `shift-tab`, `f5`, `pageup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    pub fn parse(s: &str) -> Result<Key, String> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (m, len) = if lower.starts_with("ctrl-") {
                (KeyModifiers::CONTROL, 5)
            } else if lower.starts_with("alt-") {
                (KeyModifiers::ALT, 4)
            } else if lower.starts_with("shift-") {
                (KeyModifiers::SHIFT, 6)
            } else {
                break;
            };
            if rest.len() == len {
                break; // "ctrl-" alone is not a key; "-" after a modifier is handled below
            }
            mods |= m;
            rest = &rest[len..];
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "insert" => KeyCode::Insert,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" => KeyCode::PageDown,
            f if f.len() > 1
                && f.starts_with('f')
                && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
            {
                KeyCode::F(f[1..].parse().expect("checked"))
            }
            _ => {
                let mut chars = rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if !c.is_control() => KeyCode::Char(c),
                    _ => {
                        return Err(format!(
                            "'{s}' is not a key (examples: q, G, ctrl-c, shift-tab, f1, pageup, enter)"
                        ));
                    }
                }
            }
        };
        Ok(Key { code, mods })
    }

    /// The key as crossterm reports it, normalised: shift is part of an upper-case letter.
    pub fn from_event(ev: &KeyEvent) -> Key {
        let mut mods =
            ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let mut code = ev.code;
        if let KeyCode::Char(c) = code {
            if mods.contains(KeyModifiers::CONTROL) {
                code = KeyCode::Char(c.to_ascii_lowercase());
            }
            // `G` arrives as Char('G') with SHIFT; the character already says it.
            mods.remove(KeyModifiers::SHIFT);
        }
        Key { code, mods }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Keys to actions. One key may mean several actions (`/` filters in the table and searches in
/// the output pane; `G` goes to the bottom and follows): the cockpit picks by context.
#[derive(Clone, Debug)]
pub struct KeyMap {
    by_key: HashMap<Key, Vec<Action>>,
    by_action: BTreeMap<Action, Vec<Key>>,
}

impl KeyMap {
    /// The defaults, with `[keys]` from the config replacing the keys of the actions it names.
    pub fn new(overrides: &BTreeMap<String, KeyList>) -> Result<KeyMap, String> {
        let mut by_action: BTreeMap<Action, Vec<Key>> = BTreeMap::new();
        for action in Action::ALL {
            let keys = action
                .defaults()
                .iter()
                .map(|k| Key::parse(k).expect("default keys parse"));
            by_action.insert(action, keys.collect());
        }
        for (name, list) in overrides {
            let action = Action::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| {
                    let names: Vec<_> = Action::ALL.iter().map(|a| a.name()).collect();
                    format!(
                        "[keys] has no action '{name}' (actions: {})",
                        names.join(", ")
                    )
                })?;
            let strings: Vec<&str> = match list {
                KeyList::One(s) => vec![s.as_str()],
                KeyList::Many(v) => v.iter().map(String::as_str).collect(),
            };
            let keys = strings
                .into_iter()
                .map(|s| Key::parse(s).map_err(|e| format!("[keys] {name}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            by_action.insert(action, keys);
        }
        let mut by_key: HashMap<Key, Vec<Action>> = HashMap::new();
        for (action, keys) in &by_action {
            for key in keys {
                by_key.entry(*key).or_default().push(*action);
            }
        }
        Ok(KeyMap { by_key, by_action })
    }

    pub fn actions(&self, ev: &KeyEvent) -> &[Action] {
        self.by_key
            .get(&Key::from_event(ev))
            .map_or(&[], Vec::as_slice)
    }

    /// The keys bound to an action, for the footer and help: `q/ctrl-c`.
    pub fn keys_for(&self, action: Action) -> String {
        let keys = self.by_action.get(&action).map_or(&[][..], Vec::as_slice);
        keys.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("/")
    }

    pub fn first_key(&self, action: Action) -> String {
        self.by_action
            .get(&action)
            .and_then(|k| k.first())
            .map_or(String::new(), ToString::to_string)
    }
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap::new(&BTreeMap::new()).expect("defaults are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn parses_key_names() {
        let cases = [
            ("q", KeyCode::Char('q'), KeyModifiers::NONE),
            ("G", KeyCode::Char('G'), KeyModifiers::NONE),
            ("ctrl-c", KeyCode::Char('c'), KeyModifiers::CONTROL),
            (
                "Ctrl-Alt-x",
                KeyCode::Char('x'),
                KeyModifiers::CONTROL | KeyModifiers::ALT,
            ),
            ("shift-tab", KeyCode::BackTab, KeyModifiers::NONE),
            ("f5", KeyCode::F(5), KeyModifiers::NONE),
            ("PgUp", KeyCode::PageUp, KeyModifiers::NONE),
            ("space", KeyCode::Char(' '), KeyModifiers::NONE),
            ("-", KeyCode::Char('-'), KeyModifiers::NONE),
            ("ctrl--", KeyCode::Char('-'), KeyModifiers::CONTROL),
        ];
        for (s, code, mods) in cases {
            assert_eq!(Key::parse(s).unwrap(), Key { code, mods }, "{s}");
        }
        for bad in ["", "ctrl-", "f13", "foo", "\u{7}"] {
            assert!(Key::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let km = KeyMap::default();
        assert_eq!(
            km.actions(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            [Action::Quit]
        );
        assert_eq!(
            km.actions(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            [Action::Bottom, Action::Follow]
        );
        assert_eq!(
            km.actions(&ev(KeyCode::Char('C'), KeyModifiers::CONTROL)),
            [Action::Quit]
        );

        let mut ov = BTreeMap::new();
        ov.insert("quit".to_string(), KeyList::One("x".into()));
        ov.insert(
            "down".to_string(),
            KeyList::Many(vec!["n".into(), "ctrl-n".into()]),
        );
        let km = KeyMap::new(&ov).unwrap();
        assert!(
            km.actions(&ev(KeyCode::Char('q'), KeyModifiers::NONE))
                .is_empty()
        );
        assert_eq!(
            km.actions(&ev(KeyCode::Char('x'), KeyModifiers::NONE)),
            [Action::Quit]
        );
        assert!(
            km.actions(&ev(KeyCode::Char('n'), KeyModifiers::NONE))
                .contains(&Action::Down)
        );
        assert_eq!(km.keys_for(Action::Down), "n/ctrl-n");
    }

    #[test]
    fn bad_overrides_say_what_is_wrong() {
        let mut ov = BTreeMap::new();
        ov.insert("qiut".to_string(), KeyList::One("x".into()));
        assert!(KeyMap::new(&ov).unwrap_err().contains("qiut"));
        let mut ov = BTreeMap::new();
        ov.insert("quit".to_string(), KeyList::One("hyper-x".into()));
        assert!(KeyMap::new(&ov).unwrap_err().contains("hyper-x"));
    }
}
