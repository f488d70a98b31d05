//! A key as the config file writes it and as the terminal reports it, made comparable.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A key as written in the config: `q`, `G`, `ctrl-c`, `alt-x`, `shift-tab`, `f5`, `pageup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

/// What `[keys]` accepts, for the error that says a key is not one.
pub const ACCEPTED: &str = "a character (q, G, /), ctrl-, alt- or shift- and a key (ctrl-c, \
    alt-enter, shift-tab), enter, esc, tab, space, backspace, delete, insert, up, down, left, \
    right, home, end, pageup, pagedown, f1 to f12";

impl Key {
    pub fn parse(s: &str) -> Result<Key, String> {
        let (mut mods, rest) = modifiers(s);
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
            f if f.len() > 1 && f.starts_with('f') => match f[1..].parse::<u8>() {
                Ok(n) if (1..=12).contains(&n) => KeyCode::F(n),
                _ => return Err(not_a_key(s)),
            },
            _ => {
                let mut chars = rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if !c.is_control() => KeyCode::Char(c),
                    _ => return Err(not_a_key(s)),
                }
            }
        };
        Ok(Key { code, mods })
    }

    /// The key as crossterm reports it, normalised: shift is part of an upper-case letter and of
    /// shift-tab.
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
        if code == KeyCode::BackTab {
            mods.remove(KeyModifiers::SHIFT);
        }
        Key { code, mods }
    }

    /// Ctrl-C: whatever a mode binds, the way out when it binds nothing to it.
    pub fn is_ctrl_c(&self) -> bool {
        self.code == KeyCode::Char('c') && self.mods == KeyModifiers::CONTROL
    }
}

/// The leading `ctrl-`, `alt-` and `shift-` of a key, and what follows them.
fn modifiers(s: &str) -> (KeyModifiers, &str) {
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
            break; // "ctrl-" alone is not a key; "-" after a modifier is the key `-`
        }
        mods |= m;
        rest = &rest[len..];
    }
    (mods, rest)
}

fn not_a_key(s: &str) -> String {
    format!("'{s}' is not a key (keys: {ACCEPTED})")
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
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
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Insert => f.write_str("insert"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("alt-enter", KeyCode::Enter, KeyModifiers::ALT),
            ("shift-enter", KeyCode::Enter, KeyModifiers::SHIFT),
            ("f5", KeyCode::F(5), KeyModifiers::NONE),
            ("PgUp", KeyCode::PageUp, KeyModifiers::NONE),
            ("space", KeyCode::Char(' '), KeyModifiers::NONE),
            ("-", KeyCode::Char('-'), KeyModifiers::NONE),
            ("ctrl--", KeyCode::Char('-'), KeyModifiers::CONTROL),
        ];
        for (s, code, mods) in cases {
            assert_eq!(Key::parse(s).unwrap(), Key { code, mods }, "{s}");
        }
        for bad in ["", "ctrl-", "f13", "f0", "foo", "\u{7}"] {
            let err = Key::parse(bad).unwrap_err();
            assert!(
                err.contains("is not a key") && err.contains("pageup"),
                "{err}"
            );
        }
    }

    #[test]
    fn events_compare_equal_to_what_the_config_writes() {
        let cases = [
            (KeyCode::Char('G'), KeyModifiers::SHIFT, "G"),
            (KeyCode::Char('C'), KeyModifiers::CONTROL, "ctrl-c"),
            (KeyCode::BackTab, KeyModifiers::SHIFT, "shift-tab"),
            (KeyCode::Enter, KeyModifiers::ALT, "alt-enter"),
            (KeyCode::Char('j'), KeyModifiers::CONTROL, "ctrl-j"),
        ];
        for (code, mods, written) in cases {
            let ev = KeyEvent::new(code, mods);
            assert_eq!(
                Key::from_event(&ev),
                Key::parse(written).unwrap(),
                "{written}"
            );
        }
        assert!(Key::parse("ctrl-c").unwrap().is_ctrl_c());
        assert!(!Key::parse("ctrl-alt-c").unwrap().is_ctrl_c());
    }

    #[test]
    fn shown_as_the_footer_writes_them() {
        for (written, shown) in [
            ("ctrl-c", "ctrl-c"),
            ("shift-tab", "shift-tab"),
            ("shift-enter", "shift-enter"),
            ("up", "↑"),
            ("pagedown", "pgdn"),
            ("space", "space"),
        ] {
            assert_eq!(Key::parse(written).unwrap().to_string(), shown);
        }
    }
}
