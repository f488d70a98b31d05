//! What keys do: popups and text inputs first, then the main screen, where one key may mean
//! several actions and the focus decides which applies.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Focus, Mode};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::{InputOutcome, LineInput};

impl App {
    pub(super) fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.message = None;
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        match &mut self.mode {
            // The inbox's editor and the input bar take every key but ctrl-c.
            Mode::Inbox if !ctrl_c => return self.on_inbox_key(&key),
            Mode::Dispatch if !ctrl_c => return self.on_dispatch_key(&key),
            Mode::Confirm(what) => {
                let what = what.clone();
                return self.on_confirm_key(&key, what);
            }
            Mode::FilterInput(input) => {
                let outcome = input.handle(&key);
                let text = input.text().to_owned();
                match outcome {
                    InputOutcome::Edited => {
                        self.filter = text;
                        return self.refresh_view();
                    }
                    InputOutcome::Submit => self.mode = Mode::Normal,
                    InputOutcome::Cancel => {
                        self.mode = Mode::Normal;
                        self.filter.clear();
                        return self.refresh_view();
                    }
                    InputOutcome::Moved | InputOutcome::Ignored => {}
                }
                return vec![];
            }
            Mode::SearchInput(input) => {
                match input.handle(&key) {
                    InputOutcome::Submit => {
                        let q = input.text().to_owned();
                        self.mode = Mode::Normal;
                        let height = self.areas().output_lines();
                        self.log.set_search(&q, height);
                        if self
                            .log
                            .search
                            .as_ref()
                            .is_some_and(|s| s.matches.is_empty())
                        {
                            self.message = Some(format!("no match for '{q}' in the output"));
                        }
                    }
                    InputOutcome::Cancel => self.mode = Mode::Normal,
                    _ => {}
                }
                return vec![];
            }
            _ => {}
        }
        let actions: Vec<Action> = self.opts.keymap.actions(&key).to_vec();
        // Ctrl-C always quits, whatever the key map says: a way out must never be remapped away.
        if ctrl_c && (actions.is_empty() || self.mode == Mode::Inbox) {
            return self.quit();
        }
        match self.mode.clone() {
            Mode::Help => self.on_help_key(&actions),
            Mode::Detail => self.on_detail_key(&actions),
            Mode::Events => self.on_feed_key(&actions),
            Mode::ProjectPicker { items, selected } => {
                self.on_picker_key(&key, &actions, items, selected)
            }
            _ => self.on_main_key(&actions),
        }
    }

    fn quit(&mut self) -> Vec<Effect> {
        self.quit = true;
        vec![Effect::Quit]
    }

    fn on_help_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        if actions.contains(&Action::Quit) && !actions.contains(&Action::Back) {
            return self.quit();
        }
        // Any other key closes help: there is nothing to do inside it.
        self.mode = Mode::Normal;
        vec![]
    }

    fn on_detail_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        for action in actions {
            match action {
                Action::Back | Action::Open => {
                    self.mode = Mode::Normal;
                    return vec![];
                }
                Action::Quit => return self.quit(),
                Action::Up => self.detail_scroll = self.detail_scroll.saturating_sub(1),
                Action::Down => self.detail_scroll = self.detail_scroll.saturating_add(1),
                Action::PageUp => self.detail_scroll = self.detail_scroll.saturating_sub(10),
                Action::PageDown => self.detail_scroll = self.detail_scroll.saturating_add(10),
                Action::Top => self.detail_scroll = 0,
                Action::Help => self.mode = Mode::Help,
                _ => continue,
            }
            return vec![];
        }
        vec![]
    }

    fn on_picker_key(
        &mut self,
        key: &KeyEvent,
        actions: &[Action],
        items: Vec<String>,
        selected: usize,
    ) -> Vec<Effect> {
        let last = items.len().saturating_sub(1);
        let mut sel = selected;
        if key.code == KeyCode::Enter || actions.contains(&Action::Open) {
            self.mode = Mode::Normal;
            self.projects = match selected {
                0 => vec![],
                i => vec![items[i].clone()],
            };
            return self.refresh_view();
        }
        for action in actions {
            match action {
                Action::Back => {
                    self.mode = Mode::Normal;
                    return vec![];
                }
                Action::Quit => return self.quit(),
                Action::Up => sel = sel.saturating_sub(1),
                Action::Down => sel = (sel + 1).min(last),
                Action::Top => sel = 0,
                Action::Bottom => sel = last,
                _ => continue,
            }
            break;
        }
        self.mode = Mode::ProjectPicker {
            items,
            selected: sel,
        };
        vec![]
    }

    fn open_details(&mut self, id: crate::jobs::JobId) -> Vec<Effect> {
        self.mode = Mode::Detail;
        self.detail_scroll = 0;
        self.insight.history = None;
        if id.is_queued() {
            // No job directory yet: no prompt.txt, no history.
            self.prompt = Some((id.clone(), Ok(None)));
            self.insight.history = Some((id, Ok(Vec::new())));
            return vec![];
        }
        vec![Effect::LoadPrompt(id.clone()), Effect::LoadHistory(id)]
    }

    fn on_main_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        let table = self.focus == Focus::Table;
        for action in actions {
            // A key may mean several actions; the first that applies where the focus is wins.
            let done = self
                .navigate(*action, table)
                .or_else(|| self.change_view(*action, table))
                .or_else(|| self.act_on_output(*action, table))
                .or_else(|| self.general(*action));
            if let Some(effects) = done {
                return effects;
            }
        }
        self.dirty = false;
        vec![]
    }

    /// Moving the selection (table) or scrolling (output).
    fn navigate(&mut self, action: Action, table: bool) -> Option<Vec<Effect>> {
        let areas = self.areas();
        let page = if table {
            areas.table_rows()
        } else {
            areas.output_lines()
        }
        .max(1) as i64;
        let delta = match action {
            Action::Up => -1,
            Action::Down => 1,
            Action::PageUp => -page,
            Action::PageDown => page,
            Action::Top if table => return Some(self.select_index(0)),
            Action::Top => {
                self.log.to_top();
                return Some(vec![]);
            }
            Action::Bottom if table => {
                return Some(self.select_index(self.view.len().saturating_sub(1)));
            }
            _ => return None,
        };
        if table {
            Some(self.move_selection(delta))
        } else {
            self.log.scroll(delta, areas.output_lines());
            Some(vec![])
        }
    }

    /// Which jobs the table shows, and how.
    fn change_view(&mut self, action: Action, table: bool) -> Option<Vec<Effect>> {
        match action {
            Action::NextTab | Action::PrevTab => {
                self.tab = self.tab.step(action == Action::NextTab);
                Some(self.refresh_view())
            }
            Action::Filter if table => {
                self.mode = Mode::FilterInput(LineInput::with_text(&self.filter));
                Some(vec![])
            }
            Action::PickProject => {
                self.open_picker();
                Some(vec![])
            }
            Action::Sort => {
                self.sort = self.sort.next();
                self.message = Some(format!("sorted by {}", self.sort.title()));
                Some(self.refresh_view())
            }
            _ => None,
        }
    }

    /// Following, searching and wrapping the output pane.
    fn act_on_output(&mut self, action: Action, table: bool) -> Option<Vec<Effect>> {
        let height = self.areas().output_lines();
        match action {
            Action::Follow => self.log.resume_follow(),
            Action::Search if !table => {
                let current = self.log.search.as_ref().map_or("", |s| s.query.as_str());
                self.mode = Mode::SearchInput(LineInput::with_text(current));
            }
            Action::SearchNext | Action::SearchPrev if self.log.search.is_some() => {
                self.log.next_match(action == Action::SearchNext, height);
            }
            Action::ToggleWrap => self.log.wrap = !self.log.wrap,
            Action::Back if !table && self.log.search.is_some() => self.log.search = None,
            Action::NextIssue | Action::PrevIssue => {
                if !self.log.next_issue(action == Action::NextIssue, height) {
                    self.message = Some("no known issue in the output shown".into());
                }
            }
            _ => return None,
        }
        Some(vec![])
    }

    fn general(&mut self, action: Action) -> Option<Vec<Effect>> {
        match action {
            Action::Quit => Some(self.quit()),
            Action::Events => Some(self.open_feed()),
            Action::Help => {
                self.mode = Mode::Help;
                Some(vec![])
            }
            Action::FocusNext => {
                self.focus = match self.focus {
                    Focus::Table => Focus::Output,
                    Focus::Output => Focus::Table,
                };
                Some(vec![])
            }
            Action::Open => {
                let id = self.selected.clone()?;
                // A job waiting for a person opens on what it waits for.
                if self.inbox_items().iter().any(|i| i.job == id) {
                    return Some(self.open_inbox(Some(&id)));
                }
                Some(self.open_details(id))
            }
            Action::Details => {
                let id = self.selected.clone()?;
                Some(self.open_details(id))
            }
            Action::Inbox => Some(self.open_inbox(None)),
            Action::NewTask => Some(self.open_dispatch_bar()),
            Action::Kill => Some(self.ask_kill()),
            Action::Retry => Some(self.retry_selected()),
            Action::Back if !self.filter.is_empty() => {
                self.filter.clear();
                Some(self.refresh_view())
            }
            Action::Back => Some(vec![]),
            _ => None,
        }
    }

    fn open_picker(&mut self) {
        let mut names: Vec<String> = self
            .jobs
            .values()
            .map(|j| j.project().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        names.extend(self.opts.known_projects.iter().cloned());
        names.sort();
        names.dedup();
        let mut items = vec!["(all projects)".to_string()];
        items.extend(names);
        let selected = match self.projects.as_slice() {
            [one] => items.iter().position(|i| i == one).unwrap_or(0),
            _ => 0,
        };
        self.mode = Mode::ProjectPicker { items, selected };
    }
}
