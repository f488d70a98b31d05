//! What a key does. Whatever is on top of the main screen gets it first, and reads it with its
//! own key map; on the main screen, the table's and the output pane's keys apply by focus.
//! Ctrl-C bound to nothing in a mode quits: a way out must never be remapped away.

use crossterm::event::KeyEvent;

use super::{App, Focus, Mode};
use crate::tui::action::{HelpAction, Key, ModeAction, NormalAction};
use crate::tui::effect::{Effect, ReviewOp};
use crate::tui::input::TextInput;

/// What a key means while a text input has the keyboard.
pub(super) enum Typed<A> {
    Edit,
    Act(A),
    Quit,
}

impl App {
    pub(super) fn on_key(&mut self, ev: KeyEvent) -> Vec<Effect> {
        let key = Key::from_event(&ev);
        if self.too_small() {
            return self.on_key_too_small(&key);
        }
        self.message = None;
        match &self.mode {
            Mode::Normal => self.on_normal_key(&key),
            Mode::Help => self.on_help_key(&key),
            Mode::Detail(_) => self.on_detail_key(&key),
            Mode::Diff(_) => self.on_diff_key(&key),
            Mode::Events(_) => self.on_events_key(&key),
            Mode::Picker(_) => self.on_picker_key(&key),
            Mode::Confirm(_) => self.on_confirm_key(&key),
            Mode::Inbox(_) => self.on_inbox_key(&ev, &key),
            Mode::InputBar => self.on_input_bar_key(&ev, &key),
            Mode::Filter(_) => self.on_filter_key(&ev, &key),
            Mode::Search(_) => self.on_search_key(&ev, &key),
        }
    }

    /// Only quitting works while the screen says the terminal is too small: its quit keys (the
    /// screen names the first) and ctrl-c, which nothing there binds. Every other key is
    /// dropped, whatever popup is open under it, so nothing hidden is killed, answered or sent.
    fn on_key_too_small(&mut self, key: &Key) -> Vec<Effect> {
        let quit = self.opts.keymap.actions::<NormalAction>(key);
        if quit.contains(&NormalAction::Quit) || key.is_ctrl_c() {
            return self.quit();
        }
        self.dirty = false;
        vec![]
    }

    /// The mode's actions bound to `key`, in table order; `None` when it is an unbound ctrl-c,
    /// which quits.
    pub(super) fn bound<A: ModeAction>(&self, key: &Key) -> Option<Vec<A>> {
        let actions = self.opts.keymap.actions::<A>(key);
        (!actions.is_empty() || !key.is_ctrl_c()).then_some(actions)
    }

    /// While a text input has the keyboard: typing and cursor keys edit; other keys are the
    /// mode's actions if it binds them (the first, in table order), else they edit too.
    pub(super) fn typed<A: ModeAction>(&self, ev: &KeyEvent, key: &Key) -> Typed<A> {
        if TextInput::always_edits(ev) {
            return Typed::Edit;
        }
        match self.opts.keymap.actions::<A>(key).first() {
            Some(action) => Typed::Act(*action),
            None if key.is_ctrl_c() => Typed::Quit,
            None => Typed::Edit,
        }
    }

    fn on_help_key(&mut self, key: &Key) -> Vec<Effect> {
        match self.bound::<HelpAction>(key) {
            Some(actions) if actions.contains(&HelpAction::Quit) => self.quit(),
            // Where the help is taller than the screen, it scrolls; else any key closes it.
            Some(actions) if actions.contains(&HelpAction::Up) && self.help_scrolls() => {
                self.help_top = self.help_top.saturating_sub(1);
                vec![]
            }
            Some(actions) if actions.contains(&HelpAction::Down) && self.help_scrolls() => {
                self.help_top = (self.help_top + 1).min(self.opts.keymap.help_lines().len());
                vec![]
            }
            Some(_) => {
                // Any other key closes help: there is nothing else to do inside it.
                self.mode = Mode::Normal;
                self.help_top = 0;
                vec![]
            }
            None => self.quit(),
        }
    }

    fn help_scrolls(&self) -> bool {
        let lines = self.opts.keymap.help_lines().len();
        crate::tui::layout::help_scrolls(lines, self.opts.read_only, self.size.height)
    }

    /// The main screen: a key may mean several actions; the first that applies where the
    /// focus is wins, those that apply only in some places tried first.
    fn on_normal_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(mut actions) = self.bound::<NormalAction>(key) else {
            return self.quit();
        };
        actions.sort_by_key(|a| !a.situational());
        let table = self.focus == Focus::Table;
        for action in actions {
            let done = self
                .output_key(action, !table)
                .or_else(|| self.table_key(action, table))
                .or_else(|| self.screen_key(action));
            if let Some(effects) = done {
                return effects;
            }
        }
        self.dirty = false;
        vec![]
    }

    /// The main screen's actions that belong to neither pane: they open something.
    fn screen_key(&mut self, action: NormalAction) -> Option<Vec<Effect>> {
        use NormalAction as A;
        let effects = match action {
            A::Quit => self.quit(),
            A::Help => {
                self.mode = Mode::Help;
                vec![]
            }
            A::FocusNext => {
                self.focus = match self.focus {
                    Focus::Table => Focus::Output,
                    Focus::Output => Focus::Table,
                };
                vec![]
            }
            A::Open => {
                let id = self.table.selected.clone()?;
                // A job waiting for a person opens on what it waits for.
                if self.inbox_items().iter().any(|i| i.job == id) {
                    self.open_inbox(Some(&id))
                } else {
                    self.open_details(id)
                }
            }
            A::Details => {
                let id = self.table.selected.clone()?;
                self.open_details(id)
            }
            A::Zoom => {
                self.zoomed = !self.zoomed;
                vec![]
            }
            A::Inbox => self.open_inbox(None),
            A::NewTask => self.open_input_bar(),
            A::Kill => self.ask_kill(),
            A::Diff => self.open_diff(),
            A::Merge => self.ask_review_selected(ReviewOp::Merge),
            A::Discard => self.ask_review_selected(ReviewOp::Discard),
            A::Retry => self.retry_selected(),
            A::Reply => self.open_reply(),
            A::Attach => self.attach_selected(),
            A::Events => self.open_events(),
            A::PickProject => self.open_picker(),
            // The text filter (cleared by the table first), then the project filter: Esc
            // always leads back to the whole fleet.
            A::Back if !self.table.projects.is_empty() => {
                self.table.projects.clear();
                self.refresh_view()
            }
            // Nothing left to close or clear: the key did what it could.
            A::Back => vec![],
            _ => return None,
        };
        Some(effects)
    }
}
