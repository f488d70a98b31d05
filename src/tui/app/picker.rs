//! The project picker: every project with jobs or in the config, to filter the table by one
//! (or by none: "all projects").

use super::{App, Mode};
use crate::tui::action::{Key, PickerAction};
use crate::tui::effect::Effect;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    /// "(all projects)", then the projects by name; or the hosts a task can go to.
    pub items: Vec<String>,
    pub selected: usize,
    pub purpose: Purpose,
    /// What is shown beside each item, if anything (a host's projects).
    pub notes: Vec<String>,
}

/// What the pick is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// The project filter of the table.
    Filter,
    /// The host a new task goes to (`local`: this machine); the input bar follows.
    DispatchHost,
}

impl App {
    pub(super) fn open_picker(&mut self) -> Vec<Effect> {
        let mut items = vec!["(all projects)".to_string()];
        items.extend(self.project_names());
        let selected = match self.table.projects.as_slice() {
            [one] => items.iter().position(|i| i == one).unwrap_or(0),
            _ => 0,
        };
        self.mode = Mode::Picker(Picker {
            items,
            selected,
            purpose: Purpose::Filter,
            notes: Vec::new(),
        });
        vec![]
    }

    /// The projects of the filter that neither the config nor any job knows: a typo, or a
    /// project whose jobs are all gone. The table would just be empty.
    pub fn unknown_projects(&self) -> Vec<&str> {
        if !self.loaded {
            return Vec::new();
        }
        self.table
            .projects
            .iter()
            .filter(|p| !self.opts.known_projects.contains(p))
            .filter(|p| !self.jobs.values().any(|j| j.project() == p.as_str()))
            .map(String::as_str)
            .collect()
    }

    pub(super) fn on_picker_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(actions) = self.bound::<PickerAction>(key) else {
            return self.ask_quit(key);
        };
        let Mode::Picker(picker) = &mut self.mode else {
            return vec![];
        };
        use PickerAction as A;
        if actions.contains(&A::Choose) && picker.purpose == Purpose::DispatchHost {
            let host = picker.items.get(picker.selected).cloned();
            self.mode = Mode::Normal;
            return match host {
                Some(host) => self.open_input_bar_on(&host),
                None => vec![],
            };
        }
        if actions.contains(&A::Choose) {
            self.table.projects = match picker.selected {
                0 => vec![],
                i => picker.items.get(i).cloned().into_iter().collect(),
            };
            self.mode = Mode::Normal;
            return self.refresh_view();
        }
        let last = picker.items.len().saturating_sub(1);
        let Some(action) = actions.first() else {
            return vec![];
        };
        match action {
            A::Up => picker.selected = picker.selected.saturating_sub(1),
            A::Down => picker.selected = (picker.selected + 1).min(last),
            A::Top => picker.selected = 0,
            A::Bottom => picker.selected = last,
            A::Cancel => self.mode = Mode::Normal,
            A::Help => self.open_help(),
            A::Choose => {}
        }
        vec![]
    }
}
