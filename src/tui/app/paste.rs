//! A paste (bracketed, so it arrives whole and is never read as keys) goes into the text input
//! that has the keyboard: the input bar's task, the inbox's answer or reason, the filter, a
//! search. With none open it does nothing, and says so: pasted text never acts as keys.

use super::{App, Mode};
use crate::tui::effect::Effect;

impl App {
    pub(super) fn on_paste(&mut self, text: &str) -> Vec<Effect> {
        if self.too_small() {
            self.dirty = false;
            return vec![];
        }
        self.message = None;
        let pasted = match &mut self.mode {
            Mode::InputBar => self.draft.as_mut().map(|d| d.task.paste(text)),
            Mode::Inbox(inbox) => inbox.editor.as_mut().map(|e| e.paste(text)),
            Mode::Search(input) => Some(input.paste(text)),
            Mode::Filter(input) => {
                let changed = input.paste(text);
                if changed {
                    self.table.filter = input.text();
                    return self.refresh_view();
                }
                Some(changed)
            }
            _ => None,
        };
        if pasted.is_none() {
            self.message = Some("paste ignored: no text field is open to take it".into());
        }
        vec![]
    }
}
