//! What the help popup and the footer show, made from the action table and the key map in
//! force: they name the keys that do the thing, whatever `[keys]` says.

use super::{Help, Hint, Key, KeyMap, Pane, Section};

/// One hint of the footer: `↑/↓ select`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterHint {
    pub keys: String,
    pub label: &'static str,
    /// When the line is too narrow, hints go in this order (1 first); 0 never goes.
    pub drop: u8,
}

/// Where the operator is, for the footer: on the main screen, the pane with the focus, and
/// whether a search of the output is going on (other modes use `Pane::Both`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub pane: Pane,
    pub searching: bool,
}

impl Place {
    pub const fn pane(pane: Pane) -> Place {
        Place {
            pane,
            searching: false,
        }
    }

    fn shows(self, hint: &Hint) -> bool {
        match hint.pane {
            Pane::Both => true,
            Pane::Searching => self.searching,
            pane => pane == self.pane,
        }
    }
}

impl KeyMap {
    /// The footer's hints for a mode (on the main screen, for where the operator is), left to
    /// right; a read-only cockpit does not offer what writes. A key that an action of the moment
    /// takes (`n` while there is a search) is not offered for what it does otherwise.
    pub fn footer(&self, section: Section, place: Place, read_only: bool) -> Vec<FooterHint> {
        let rows = section.rows();
        let situational = |i: usize| rows[i].hints.iter().any(|h| h.pane == Pane::Searching);
        let taken: Vec<Key> = (0..rows.len())
            .filter(|&i| place.searching && situational(i))
            .flat_map(|i| self.row_keys(section, i).iter().copied())
            .collect();
        let mut hints: Vec<(u8, FooterHint)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let first = self.row_keys(section, i).first();
            if !situational(i) && first.is_some_and(|k| taken.contains(k)) {
                continue;
            }
            let shown = row
                .hints
                .iter()
                .filter(|h| place.shows(h) && !(read_only && h.writes));
            for h in shown {
                let key = self.shown(section, i, 1, "/");
                match hints.iter_mut().find(|(at, _)| *at == h.at) {
                    Some((_, hint)) => {
                        hint.keys.push('/');
                        hint.keys.push_str(&key);
                    }
                    None => hints.push((
                        h.at,
                        FooterHint {
                            keys: key,
                            label: h.label,
                            drop: h.drop,
                        },
                    )),
                }
            }
        }
        hints.sort_by_key(|(at, _)| *at);
        hints.into_iter().map(|(_, h)| h).collect()
    }

    /// The help popup's lines: the keys of the actions on a line (each set once), and what the
    /// line says.
    pub fn help_lines(&self) -> Vec<(String, &'static str)> {
        let mut lines: Vec<(Vec<String>, &'static str)> = Vec::new();
        for (i, row) in Section::Normal.rows().iter().enumerate() {
            let keys = self.shown(Section::Normal, i, usize::MAX, "/");
            match (row.help, lines.last_mut()) {
                (Help::Line(text), _) => lines.push((vec![keys], text)),
                (Help::Joined, Some((on_line, _)))
                    if !keys.is_empty() && !on_line.contains(&keys) =>
                {
                    on_line.push(keys)
                }
                _ => {}
            }
        }
        lines
            .into_iter()
            .map(|(keys, text)| (keys.join("  "), text))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KeyBindings;

    fn hints(km: &KeyMap, section: Section, pane: Pane) -> Vec<String> {
        km.footer(section, Place::pane(pane), false)
            .into_iter()
            .map(|h| format!("{} {}", h.keys, h.label))
            .collect()
    }

    #[test]
    fn footer_and_help_name_the_keys_in_force() {
        let km = KeyMap::default();
        assert_eq!(
            hints(&km, Section::Normal, Pane::Output)[..3],
            ["↑/↓ scroll", "end follow", "/ search"]
        );
        assert_eq!(
            hints(&km, Section::Confirm, Pane::Both),
            ["y yes", "any no"]
        );
        let lines = km.help_lines();
        assert_eq!(lines[0], ("↑/k  ↓/j".to_string(), "move / scroll"));
        assert!(lines.contains(&(
            "/".to_string(),
            "filter jobs (table) / search output (output)"
        )));

        let written = "quit = \"x\"\nsearch = \"f\"\n[inbox]\nnext = \"ctrl-n\"\n\
                       [confirm]\nyes = \"o\"";
        let km = KeyMap::new(&KeyBindings::from_toml(written).unwrap()).unwrap();
        assert_eq!(
            hints(&km, Section::Normal, Pane::Table).last().unwrap(),
            "x quit"
        );
        assert_eq!(hints(&km, Section::Inbox, Pane::Both)[0], "ctrl-n next");
        assert_eq!(hints(&km, Section::Confirm, Pane::Both)[0], "o yes");
        let lines = km.help_lines();
        assert!(lines.contains(&("x".to_string(), "quit")), "{lines:?}");
        assert!(lines.contains(&(
            "/  f".to_string(),
            "filter jobs (table) / search output (output)"
        )));
    }

    #[test]
    fn help_lists_every_action_of_the_main_screen() {
        let km = KeyMap::default();
        let lines = km.help_lines();
        for section in Section::ALL {
            for (i, row) in section.rows().iter().enumerate() {
                let keys = km.shown(*section, i, usize::MAX, "/");
                if *section != Section::Normal {
                    // The help is the main screen's; a popup's keys are in its own footer.
                    assert_eq!(row.help, Help::Hidden, "{section:?} {}", row.name);
                    continue;
                }
                assert_ne!(row.help, Help::Hidden, "help omits {}", row.name);
                assert!(!keys.is_empty(), "{} is bound", row.name);
                assert!(
                    lines
                        .iter()
                        .any(|(on_line, _)| on_line.split("  ").any(|k| k == keys)),
                    "help does not name {keys} ({}): {lines:?}",
                    row.name
                );
            }
        }
    }

    #[test]
    fn read_only_offers_nothing_that_writes() {
        let km = KeyMap::default();
        let labels: Vec<&str> = km
            .footer(Section::Normal, Place::pane(Pane::Table), true)
            .iter()
            .map(|h| h.label)
            .collect();
        assert!(labels.contains(&"open"));
        for writes in ["new", "kill", "retry"] {
            assert!(!labels.contains(&writes), "{labels:?}");
        }
    }
}
