//! The table's keys on the main screen (moving the selection when it has the focus, which jobs
//! it shows), and typing the filter, which narrows the table as it changes.

use crossterm::event::KeyEvent;

use crate::tui::action::{FilterAction, Key, NormalAction};
use crate::tui::app::keys::Typed;
use crate::tui::app::{App, Mode};
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;

impl App {
    /// `focused`: the table has the focus. `None`: not the table's to do.
    pub(in crate::tui::app) fn table_key(
        &mut self,
        action: NormalAction,
        focused: bool,
    ) -> Option<Vec<Effect>> {
        use NormalAction as A;
        let page = self.job_rows().max(1) as i64;
        let effects = match action {
            A::Up if focused => self.move_selection(-1),
            A::Down if focused => self.move_selection(1),
            A::PageUp if focused => self.move_selection(-page),
            A::PageDown if focused => self.move_selection(page),
            A::Top if focused => self.select_index(0),
            A::Bottom if focused => self.select_index(self.table.view.len().saturating_sub(1)),
            A::NextTab | A::PrevTab => {
                self.table.tab = self.table.tab.step(action == A::NextTab);
                self.refresh_view()
            }
            A::Filter if focused => {
                self.mode = Mode::Filter(TextInput::line(&self.table.filter));
                vec![]
            }
            A::Sort => {
                self.table.sort = self.table.sort.next();
                self.message = Some(format!("sorted by {}", self.table.sort.title()));
                self.refresh_view()
            }
            A::Back if !self.table.filter.is_empty() => {
                self.table.filter.clear();
                self.refresh_view()
            }
            _ => return None,
        };
        Some(effects)
    }

    pub(in crate::tui::app) fn on_filter_key(&mut self, ev: &KeyEvent, key: &Key) -> Vec<Effect> {
        match self.typed::<FilterAction>(ev, key) {
            // Ctrl-C: the text first (the table follows), then the line.
            Typed::Interrupt => {
                let Mode::Filter(input) = &mut self.mode else {
                    return vec![];
                };
                if !input.clear() {
                    self.mode = Mode::Normal;
                    return vec![];
                }
                self.table.filter.clear();
                self.refresh_view()
            }
            Typed::Act(FilterAction::Keep) => {
                self.mode = Mode::Normal;
                vec![]
            }
            Typed::Act(FilterAction::Clear) => {
                self.mode = Mode::Normal;
                self.table.filter.clear();
                self.refresh_view()
            }
            Typed::Edit => {
                let Mode::Filter(input) = &mut self.mode else {
                    return vec![];
                };
                if !input.edit(ev) {
                    return vec![];
                }
                self.table.filter = input.text();
                self.refresh_view()
            }
        }
    }
}
