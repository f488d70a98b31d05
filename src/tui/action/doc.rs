//! The key tables of docs/cockpit.md, written from the action table (a test keeps the page
//! and the table the same).

use super::{Defaults, Section};

/// Every mode's actions with their default keys, as markdown.
pub fn markdown() -> String {
    let mut out = String::new();
    for &section in Section::ALL {
        out.push_str(&format!(
            "\n#### `{}`: {}\n\n| action | default keys | does |\n|---|---|---|\n",
            section.table_name(),
            section.title()
        ));
        for row in section.rows() {
            let keys = match row.keys {
                Defaults::Keys(list) => list
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                Defaults::Main => format!("as `{}` in `[keys]`", row.name),
                Defaults::Any(_) => "any other key (not rebound)".to_string(),
            };
            out.push_str(&format!("| `{}` | {keys} | {} |\n", row.name, row.about));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::markdown;
    use crate::tui::action::Section;

    const BEGIN: &str = "<!-- key tables: begin -->\n";
    const END: &str = "<!-- key tables: end -->";

    #[test]
    fn docs_list_every_action_of_every_mode_with_its_defaults() {
        let page = include_str!("../../../docs/cockpit.md");
        let start = page
            .find(BEGIN)
            .expect("docs/cockpit.md marks its key tables")
            + BEGIN.len();
        let end = page[start..].find(END).expect("and where they end") + start;
        let want = markdown();
        assert!(
            page[start..end] == want,
            "docs/cockpit.md's key tables differ from src/tui/action/mod.rs; put this between \
             the markers:\n{want}"
        );
    }

    #[test]
    fn the_readme_names_every_modes_table() {
        let readme = include_str!("../../../README.md");
        for section in Section::ALL {
            let table = section.table_name();
            assert!(readme.contains(&format!("`{table}`")), "README.md: {table}");
        }
    }
}
