//! The output pane's keys on the main screen (scrolling when it has the focus; following,
//! searching, wrapping and known-issue lines from either pane), and typing a search.

use crossterm::event::KeyEvent;

use crate::tui::action::{Key, NormalAction, SearchAction};
use crate::tui::app::keys::Typed;
use crate::tui::app::{App, Mode};
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;

impl App {
    /// `focused`: the output pane has the focus. `None`: not the pane's to do.
    pub(in crate::tui::app) fn output_key(
        &mut self,
        action: NormalAction,
        focused: bool,
    ) -> Option<Vec<Effect>> {
        use NormalAction as A;
        let height = self.areas().output_lines();
        let page = height.max(1) as i64;
        let log = &mut self.log;
        match action {
            A::Up if focused => log.scroll(-1, height),
            A::Down if focused => log.scroll(1, height),
            A::PageUp if focused => log.scroll(-page, height),
            A::PageDown if focused => log.scroll(page, height),
            A::Top if focused => log.to_top(),
            A::Follow => log.resume_follow(),
            A::Search if focused => {
                let current = log.search.as_ref().map_or("", |s| s.query.as_str());
                self.mode = Mode::Search(TextInput::line(current));
            }
            A::SearchNext | A::SearchPrev if log.search.is_some() => {
                log.next_match(action == A::SearchNext, height);
            }
            A::ToggleWrap => log.wrap = !log.wrap,
            A::ScrollLeft | A::ScrollRight => {
                let width = self.areas().output_width();
                let step = (width / 2).max(1) as i64;
                let delta = if action == A::ScrollLeft { -step } else { step };
                if !self.log.scroll_sideways(delta, width, height) {
                    let wrap = self.opts.keymap.first_key(A::ToggleWrap);
                    self.message = Some(format!(
                        "long lines are wrapped: {wrap} cuts them, then they scroll sideways"
                    ));
                }
            }
            A::Back if focused && log.search.is_some() => log.search = None,
            A::NextIssue | A::PrevIssue => {
                if !log.next_issue(action == A::NextIssue, height) {
                    self.message = Some("no known issue in the output shown".into());
                }
            }
            _ => return None,
        }
        Some(vec![])
    }

    pub(in crate::tui::app) fn on_search_key(&mut self, ev: &KeyEvent, key: &Key) -> Vec<Effect> {
        let typed = self.typed::<SearchAction>(ev, key);
        let Mode::Search(input) = &mut self.mode else {
            return vec![];
        };
        match typed {
            // Ctrl-C: the text first, then the line (the search as it was).
            Typed::Interrupt => {
                if !input.clear() {
                    self.mode = Mode::Normal;
                }
            }
            Typed::Edit => {
                input.edit(ev);
            }
            Typed::Act(SearchAction::Cancel) => self.mode = Mode::Normal,
            Typed::Act(SearchAction::Search) => {
                let query = input.text();
                self.mode = Mode::Normal;
                self.log.set_search(&query, self.areas().output_lines());
                if self
                    .log
                    .search
                    .as_ref()
                    .is_some_and(|s| s.matches.is_empty())
                {
                    self.message = Some(format!("no match for '{query}' in the output"));
                }
            }
        }
        vec![]
    }
}
