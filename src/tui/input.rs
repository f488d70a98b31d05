//! A one-line text input (filter, search): characters, cursor movement, deletion. Pasted or
//! typed control characters never enter it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineInput {
    text: String,
    /// Cursor position in characters.
    cursor: usize,
}

/// What a key did to the input.
#[derive(Debug, PartialEq, Eq)]
pub enum InputOutcome {
    Edited,
    Moved,
    Submit,
    Cancel,
    Ignored,
}

impl LineInput {
    pub fn with_text(text: &str) -> LineInput {
        LineInput {
            text: text.to_owned(),
            cursor: text.chars().count(),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    fn byte_at(&self, char_idx: usize) -> usize {
        self.text
            .char_indices()
            .nth(char_idx)
            .map_or(self.text.len(), |(i, _)| i)
    }

    pub fn handle(&mut self, key: &KeyEvent) -> InputOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Enter => InputOutcome::Submit,
            KeyCode::Esc => InputOutcome::Cancel,
            KeyCode::Char('c') if ctrl => InputOutcome::Cancel,
            KeyCode::Char('u') if ctrl => {
                self.text.clear();
                self.cursor = 0;
                InputOutcome::Edited
            }
            KeyCode::Char('w') if ctrl => {
                let end = self.byte_at(self.cursor);
                let before = self.text[..end].trim_end();
                let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
                self.cursor -= self.text[start..end].chars().count();
                self.text.replace_range(start..end, "");
                InputOutcome::Edited
            }
            KeyCode::Char('a') if ctrl => self.move_to(0),
            KeyCode::Char('e') if ctrl => self.move_to(self.text.chars().count()),
            KeyCode::Char(c) if !ctrl && !c.is_control() => {
                let at = self.byte_at(self.cursor);
                self.text.insert(at, c);
                self.cursor += 1;
                InputOutcome::Edited
            }
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                let at = self.byte_at(self.cursor);
                self.text.remove(at);
                InputOutcome::Edited
            }
            KeyCode::Delete if self.cursor < self.text.chars().count() => {
                let at = self.byte_at(self.cursor);
                self.text.remove(at);
                InputOutcome::Edited
            }
            KeyCode::Left => self.move_to(self.cursor.saturating_sub(1)),
            KeyCode::Right => self.move_to((self.cursor + 1).min(self.text.chars().count())),
            KeyCode::Home => self.move_to(0),
            KeyCode::End => self.move_to(self.text.chars().count()),
            _ => InputOutcome::Ignored,
        }
    }

    fn move_to(&mut self, pos: usize) -> InputOutcome {
        self.cursor = pos;
        InputOutcome::Moved
    }
}

/// What a key did in a multi-line editor (an answer, a reason, a task).
#[derive(Debug, PartialEq, Eq)]
pub enum Multiline {
    Send,
    Edited,
}

/// The one rule for multi-line editors: Enter sends; Alt-Enter, Shift-Enter or Ctrl-J start a
/// new line; every other key edits.
pub fn multiline_key(editor: &mut TextArea<'_>, key: &KeyEvent) -> Multiline {
    let m = key.modifiers;
    match key.code {
        KeyCode::Enter if !m.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) => {
            return Multiline::Send;
        }
        KeyCode::Enter => editor.insert_newline(),
        KeyCode::Char('j') if m.contains(KeyModifiers::CONTROL) => editor.insert_newline(),
        _ => {
            editor.input(*key);
        }
    }
    Multiline::Edited
}

/// The editor's text, lines joined with `\n`.
pub fn text_of(editor: &TextArea<'_>) -> String {
    editor.lines().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(input: &mut LineInput, code: KeyCode, mods: KeyModifiers) -> InputOutcome {
        input.handle(&KeyEvent::new(code, mods))
    }

    #[test]
    fn editing() {
        let mut i = LineInput::default();
        for c in "héllo wörld".chars() {
            press(&mut i, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert_eq!(i.text(), "héllo wörld");
        press(&mut i, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(i.text(), "héllo wörl");
        press(&mut i, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(i.text(), "héllo ");
        press(&mut i, KeyCode::Home, KeyModifiers::NONE);
        press(&mut i, KeyCode::Delete, KeyModifiers::NONE);
        assert_eq!(i.text(), "éllo ");
        press(&mut i, KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!((i.text(), i.cursor()), ("xéllo ", 1));
        assert_eq!(
            press(&mut i, KeyCode::Char('\u{1b}'), KeyModifiers::NONE),
            InputOutcome::Ignored
        );
        assert_eq!(
            press(&mut i, KeyCode::Enter, KeyModifiers::NONE),
            InputOutcome::Submit
        );
        assert_eq!(
            press(&mut i, KeyCode::Esc, KeyModifiers::NONE),
            InputOutcome::Cancel
        );
        press(&mut i, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(i.text(), "");
    }
}
