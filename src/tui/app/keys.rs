//! What a key does. Whatever is on top of the main screen gets it first, and reads it with its
//! own key map; on the main screen, the table's and the output pane's keys apply by focus.
//!
//! Ctrl-C bound to nothing in a mode is a way out that must never be remapped away, and it never
//! loses work: in an editor it empties the text, then (on the empty editor) closes it; elsewhere
//! it quits, but while a draft is kept in the hidden input bar it first says so, and only a
//! second press quits. `q` and Esc close a view; only the main screen's `q` quits.

use crossterm::event::KeyEvent;

use super::{App, Focus, Mode};
use crate::tui::action::{HelpAction, Key, ModeAction, NormalAction};
use crate::tui::effect::{Effect, ReviewOp};
use crate::tui::input::TextInput;

/// What a key means while a text input has the keyboard.
pub(super) enum Typed<A> {
    Edit,
    Act(A),
    /// An unbound ctrl-c: empty the text, or close the editor when it is empty.
    Interrupt,
}

impl App {
    pub(super) fn on_key(&mut self, ev: KeyEvent) -> Vec<Effect> {
        let key = Key::from_event(&ev);
        if self.too_small() {
            return self.on_key_too_small(&key);
        }
        self.message = None;
        // A quit that asked first waits for the very next key only.
        let quit_was_asked = self.quit_asked;
        let effects = match &self.mode {
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
            Mode::Command(_) => self.on_command_key(&ev, &key),
        };
        if quit_was_asked {
            self.quit_asked = false;
        }
        effects
    }

    /// Quits, unless a draft is kept in the hidden input bar and this is not the second ask in
    /// a row: then the footer says what would be lost and how to see it.
    pub(super) fn ask_quit(&mut self, key: &Key) -> Vec<Effect> {
        let kept = self
            .draft
            .as_ref()
            .is_some_and(|d| !d.sending && !d.text().trim().is_empty());
        if !kept || self.quit_asked {
            return self.quit();
        }
        self.quit_asked = true;
        let see = self.opts.keymap.first_key(NormalAction::NewTask);
        self.message = Some(format!(
            "a draft is kept in the input bar: {key} again to quit, {see} to see it"
        ));
        vec![]
    }

    /// The help, over whatever is open: closing it goes back there.
    pub(super) fn open_help(&mut self) {
        let under = std::mem::replace(&mut self.mode, Mode::Help);
        self.help_over = (under != Mode::Normal && under != Mode::Help).then_some(under);
        self.help_top = 0;
    }

    /// Only quitting works while the screen says the terminal is too small: its quit keys (the
    /// screen names the first) and ctrl-c, which nothing there binds. Every other key is
    /// dropped, whatever popup is open under it, so nothing hidden is killed, answered or sent.
    fn on_key_too_small(&mut self, key: &Key) -> Vec<Effect> {
        let quit = self.opts.keymap.actions::<NormalAction>(key);
        // Nothing else can be seen there, not even a question: this quits at once.
        if quit.contains(&NormalAction::Quit) || key.is_ctrl_c() {
            return self.quit();
        }
        self.dirty = false;
        vec![]
    }

    /// The mode's actions bound to `key`, in table order; `None` when it is an unbound ctrl-c,
    /// which asks to quit (`ask_quit`).
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
            None if key.is_ctrl_c() => Typed::Interrupt,
            None => Typed::Edit,
        }
    }

    fn on_help_key(&mut self, key: &Key) -> Vec<Effect> {
        // Where the help is taller than the screen, it scrolls, from its first line to the
        // one that shows its last; else any key closes it.
        let last_top = self.help_last_top();
        match self.bound::<HelpAction>(key) {
            Some(actions) if actions.contains(&HelpAction::Up) && last_top > 0 => {
                self.help_top = self.help_top.min(last_top).saturating_sub(1);
                vec![]
            }
            Some(actions) if actions.contains(&HelpAction::Down) && last_top > 0 => {
                self.help_top = (self.help_top + 1).min(last_top);
                vec![]
            }
            Some(_) => {
                // Any other key closes help (`q` too), back to what it was opened over.
                self.mode = self.help_over.take().unwrap_or(Mode::Normal);
                self.help_top = 0;
                vec![]
            }
            None => self.ask_quit(key),
        }
    }

    /// The first line of the help shown when it is scrolled to its end (0: it fits).
    fn help_last_top(&self) -> usize {
        let lines = self.opts.keymap.help_lines().len();
        crate::tui::layout::help_last_top(lines, self.opts.read_only, self.size.height)
    }

    /// The main screen: a key may mean several actions; the first that applies where the
    /// focus is wins, those that apply only in some places tried first.
    fn on_normal_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(mut actions) = self.bound::<NormalAction>(key) else {
            return self.ask_quit(key);
        };
        actions.sort_by_key(|a| !a.situational());
        let table = self.focus == Focus::Table;
        for action in actions {
            let done = self
                .output_key(action, !table)
                .or_else(|| self.table_key(action, table))
                .or_else(|| self.screen_key(action, key));
            if let Some(effects) = done {
                return effects;
            }
        }
        self.dirty = false;
        vec![]
    }

    /// The main screen's actions that belong to neither pane: they open something.
    fn screen_key(&mut self, action: NormalAction, key: &Key) -> Option<Vec<Effect>> {
        use NormalAction as A;
        let effects = match action {
            A::Quit => return Some(self.ask_quit(key)),
            A::Help => {
                self.open_help();
                vec![]
            }
            A::Command => self.open_command_line(),
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
