//! `[keys]` as written, its shape checked: the main screen's actions at its top
//! (`quit = ["q", "ctrl-c"]`), each other mode's in a table of its own (`[keys.inbox]`
//! `next = "ctrl-n"`). Which actions and keys exist is the cockpit's to say
//! (`tui::action::KeyMap`); this only reads what the file says.

/// What `[keys]` binds, in the order the file gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyBindings {
    pub bindings: Vec<Binding>,
}

/// `action = keys` in the table of `mode` (`None`: the main screen, `[keys]` itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub mode: Option<String>,
    pub action: String,
    pub keys: Vec<String>,
}

const SHAPE: &str = "give a key or a list of keys, e.g. quit = [\"q\", \"ctrl-c\"]";

impl KeyBindings {
    pub fn from_table(table: &toml::Table) -> Result<KeyBindings, String> {
        let mut bindings = Vec::new();
        for (name, value) in table {
            match value {
                toml::Value::Table(mode) => {
                    for (action, value) in mode {
                        let keys = key_list(value).ok_or_else(|| {
                            format!("[keys.{name}] {action}: {SHAPE}")
                                + " (a mode's table holds actions, not more tables)"
                        })?;
                        bindings.push(Binding {
                            mode: Some(name.clone()),
                            action: action.clone(),
                            keys,
                        });
                    }
                }
                other => {
                    let keys = key_list(other).ok_or_else(|| format!("[keys] {name}: {SHAPE}"))?;
                    bindings.push(Binding {
                        mode: None,
                        action: name.clone(),
                        keys,
                    });
                }
            }
        }
        Ok(KeyBindings { bindings })
    }

    /// `[keys]` from the text of its table (for tests and examples): `quit = "x"\n[inbox]\n...`.
    pub fn from_toml(text: &str) -> Result<KeyBindings, String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        KeyBindings::from_table(&table)
    }
}

/// One key or several: `quit = "q"` or `quit = ["q", "ctrl-c"]`.
fn key_list(value: &toml::Value) -> Option<Vec<String>> {
    match value {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_screen_at_the_top_and_modes_in_tables() {
        let b = KeyBindings::from_toml(
            "quit = \"x\"\ndown = [\"j\", \"ctrl-n\"]\n[inbox]\nnext = \"ctrl-n\"\n",
        )
        .unwrap();
        let got: Vec<(Option<&str>, &str, Vec<&str>)> = b
            .bindings
            .iter()
            .map(|b| {
                let keys = b.keys.iter().map(String::as_str).collect();
                (b.mode.as_deref(), b.action.as_str(), keys)
            })
            .collect();
        assert_eq!(
            got,
            [
                (None, "down", vec!["j", "ctrl-n"]),
                (Some("inbox"), "next", vec!["ctrl-n"]),
                (None, "quit", vec!["x"]),
            ]
        );
    }

    #[test]
    fn anything_but_keys_names_where_it_is() {
        for (text, names) in [
            ("quit = 5", "[keys] quit"),
            ("quit = [\"q\", 5]", "[keys] quit"),
            ("[inbox]\nnext = true", "[keys.inbox] next"),
            ("[inbox.deep]\nnext = \"x\"", "[keys.inbox] deep"),
        ] {
            let err = KeyBindings::from_toml(text).unwrap_err();
            assert!(err.contains(names) && err.contains("list of keys"), "{err}");
        }
    }
}
