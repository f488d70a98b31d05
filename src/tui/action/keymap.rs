//! Keys to actions, one map per mode: the table's defaults with `[keys]` from the config
//! replacing the keys of the actions it names.

use std::collections::HashMap;

use super::{Defaults, Key, ModeAction, Row, Section};
use crate::config::{Binding, KeyBindings};

#[derive(Clone, Debug)]
pub struct KeyMap {
    /// Indexed like `Section::ALL`.
    modes: Vec<ModeKeys>,
}

/// One mode's bindings: the keys of each row, and the rows of each key (in table order).
#[derive(Clone, Debug, Default)]
struct ModeKeys {
    keys: Vec<Vec<Key>>,
    by_key: HashMap<Key, Vec<usize>>,
}

impl KeyMap {
    /// The defaults, with `[keys]` replacing the keys of the actions it names. The error says
    /// which table and action are wrong and what would be right; the caller adds the file.
    pub fn new(written: &KeyBindings) -> Result<KeyMap, String> {
        let mut overrides: HashMap<(Section, usize), Vec<Key>> = HashMap::new();
        for binding in &written.bindings {
            let (section, index, keys) = check(binding)?;
            overrides.insert((section, index), keys);
        }
        Ok(KeyMap::with(&overrides))
    }

    /// The defaults with `overrides` (already checked) in place of theirs.
    fn with(overrides: &HashMap<(Section, usize), Vec<Key>>) -> KeyMap {
        let main = resolve(Section::Normal, overrides, None);
        let modes = Section::ALL
            .iter()
            .map(|&s| resolve(s, overrides, Some(&main)))
            .collect();
        KeyMap { modes }
    }

    /// The keys of a mode: `modes` is built in the order of `Section::ALL`, which is the
    /// order the sections are declared in.
    fn mode(&self, section: Section) -> Option<&ModeKeys> {
        self.modes.get(section as usize)
    }

    /// The mode's actions bound to `key`, in table order.
    pub fn actions<A: ModeAction>(&self, key: &Key) -> Vec<A> {
        self.mode(A::SECTION)
            .and_then(|m| m.by_key.get(key))
            .map_or_else(Vec::new, |rows| {
                rows.iter().map(|&i| A::from_index(i)).collect()
            })
    }

    /// Every key of the action, for the help: `q/ctrl-c`.
    pub fn keys_for<A: ModeAction>(&self, action: A) -> String {
        self.shown(A::SECTION, action.index(), usize::MAX, "/")
    }

    /// The keys of one row of a mode, in the order they are shown.
    pub(super) fn row_keys(&self, section: Section, row: usize) -> &[Key] {
        self.mode(section)
            .and_then(|m| m.keys.get(row))
            .map_or(&[], Vec::as_slice)
    }

    /// The first key of the action, for the footer and the popups' hints.
    pub fn first_key<A: ModeAction>(&self, action: A) -> String {
        self.shown(A::SECTION, action.index(), 1, "/")
    }

    /// The first `n` keys of a row, joined by `sep` (`alt-enter or ctrl-j`); a row bound to "any
    /// other key" says so.
    pub fn shown(&self, section: Section, row: usize, n: usize, sep: &str) -> String {
        if let Defaults::Any(text) = section.rows()[row].keys {
            return text.to_string();
        }
        let keys = self.mode(section).and_then(|m| m.keys.get(row));
        keys.into_iter()
            .flatten()
            .take(n)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(sep)
    }
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap::with(&HashMap::new())
    }
}

/// The mode, row and keys a binding of the config names, or what is wrong with it.
fn check(binding: &Binding) -> Result<(Section, usize, Vec<Key>), String> {
    let section = match binding.mode.as_deref() {
        None => Section::Normal,
        Some(name) => *Section::ALL
            .iter()
            .find(|s| **s != Section::Normal && s.name() == name)
            .ok_or_else(|| {
                let modes: Vec<&str> = Section::ALL[1..].iter().map(|s| s.name()).collect();
                format!(
                    "[keys.{name}]: there is no mode '{name}' (modes: {}; the main screen's \
                     actions go in [keys] itself)",
                    modes.join(", ")
                )
            })?,
    };
    let table = section.table_name();
    let rows = section.rows();
    let action = &binding.action;
    let index = rows.iter().position(|r| r.name == action).ok_or_else(|| {
        let names: Vec<&str> = rows
            .iter()
            .filter(|r| !matches!(r.keys, Defaults::Any(_)))
            .map(|r| r.name)
            .collect();
        format!(
            "{table} has no action '{action}' (its actions: {})",
            names.join(", ")
        )
    })?;
    if let Defaults::Any(text) = rows[index].keys {
        return Err(format!(
            "{table} {action}: it is \"{text}\" not bound to another action, so it takes no keys \
             of its own"
        ));
    }
    let keys = binding
        .keys
        .iter()
        .map(|k| Key::parse(k).map_err(|e| format!("{table} {action}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((section, index, keys))
}

/// A mode's keys: its overrides, else its defaults (the main screen's keys for `Main` rows).
fn resolve(
    section: Section,
    overrides: &HashMap<(Section, usize), Vec<Key>>,
    main: Option<&ModeKeys>,
) -> ModeKeys {
    let rows = section.rows();
    let keys: Vec<Vec<Key>> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| match overrides.get(&(section, i)) {
            Some(keys) => keys.clone(),
            None => defaults(row, main),
        })
        .collect();
    let mut by_key: HashMap<Key, Vec<usize>> = HashMap::new();
    for (i, list) in keys.iter().enumerate() {
        for key in list {
            let rows = by_key.entry(*key).or_default();
            if !rows.contains(&i) {
                rows.push(i);
            }
        }
    }
    ModeKeys { keys, by_key }
}

fn defaults(row: &Row, main: Option<&ModeKeys>) -> Vec<Key> {
    match row.keys {
        Defaults::Keys(list) => list
            .iter()
            // Every default parses: a test of the table says so.
            .filter_map(|k| Key::parse(k).ok())
            .collect(),
        // The main screen's keys, resolved first, for a row that shares a main-screen action's.
        Defaults::Main => Section::Normal
            .rows()
            .iter()
            .position(|r| r.name == row.name)
            .and_then(|i| main?.keys.get(i))
            .cloned()
            .unwrap_or_default(),
        Defaults::Any(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
