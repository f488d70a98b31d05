//! The one text input: the jobs filter, the output search, the input bar's task, and the
//! inbox's free-text answer and reason for a denial. It only edits; what Enter, Esc or Tab mean
//! is the mode's to say, through its key map.
//!
//! Editing keys: characters (control characters, typed or pasted, never enter), Backspace,
//! Delete, the arrows, Home/End, ctrl-a/ctrl-e (start/end of the line), ctrl-w (the word
//! before), ctrl-k (to the end of the line), ctrl-u (the whole line), ctrl-z/ctrl-r (undo,
//! redo), alt-b/alt-f (a word back/forward). One-line inputs refuse what would start a line.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};

#[derive(Clone, Debug)]
pub struct TextInput {
    area: TextArea<'static>,
    multi_line: bool,
}

impl PartialEq for TextInput {
    fn eq(&self, other: &Self) -> bool {
        self.multi_line == other.multi_line
            && self.area.lines() == other.area.lines()
            && self.area.cursor() == other.area.cursor()
    }
}

impl Eq for TextInput {}

impl TextInput {
    /// One line holding `text`, the cursor at its end.
    pub fn line(text: &str) -> TextInput {
        let mut area = TextArea::new(vec![text.to_owned()]);
        area.move_cursor(CursorMove::End);
        TextInput::with(area, false)
    }

    /// An empty input of several lines.
    pub fn lines() -> TextInput {
        TextInput::with(TextArea::default(), true)
    }

    fn with(mut area: TextArea<'static>, multi_line: bool) -> TextInput {
        // The cursor shows where typing goes; the line it is on needs no underline.
        area.set_cursor_line_style(ratatui::style::Style::new());
        TextInput { area, multi_line }
    }

    /// The text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// Characters before the cursor on its line.
    pub fn cursor(&self) -> usize {
        self.area.cursor().1
    }

    /// For drawing: the editor, with its cursor and scrolling.
    pub fn editor(&self) -> &TextArea<'static> {
        &self.area
    }

    pub fn new_line(&mut self) {
        if self.multi_line {
            self.area.insert_newline();
        }
    }

    /// Keys that edit whatever a mode binds to them, while the input has the keyboard: typing,
    /// Backspace, Delete and the cursor keys (so `k` is a letter and `←` moves the cursor).
    pub fn always_edits(key: &KeyEvent) -> bool {
        !key.modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            && matches!(
                key.code,
                KeyCode::Char(_)
                    | KeyCode::Backspace
                    | KeyCode::Delete
                    | KeyCode::Left
                    | KeyCode::Right
                    | KeyCode::Up
                    | KeyCode::Down
                    | KeyCode::Home
                    | KeyCode::End
            )
    }

    /// Edits with `key`; true when the text changed.
    pub fn edit(&mut self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char(c) if c.is_control() => false,
            KeyCode::Char('u') if ctrl && !alt => {
                self.area.move_cursor(CursorMove::Head);
                self.area.delete_line_by_end()
            }
            KeyCode::Char('z') if ctrl && !alt => self.area.undo(),
            KeyCode::Enter | KeyCode::Tab if !self.multi_line => false,
            KeyCode::Char('m' | 'j') if ctrl && !self.multi_line => false,
            _ => self.area.input(*key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(input: &mut TextInput, code: KeyCode, mods: KeyModifiers) -> bool {
        input.edit(&KeyEvent::new(code, mods))
    }

    #[test]
    fn editing() {
        let mut i = TextInput::line("");
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
        assert_eq!((i.text().as_str(), i.cursor()), ("xéllo ", 1));
        assert!(!press(&mut i, KeyCode::Char('\u{1b}'), KeyModifiers::NONE));
        assert_eq!(i.text(), "xéllo ", "control characters never enter");
        for code in [KeyCode::Enter, KeyCode::Tab] {
            assert!(!press(&mut i, code, KeyModifiers::NONE));
        }
        assert!(!press(&mut i, KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(i.text(), "xéllo ", "one line stays one line");
        press(&mut i, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(i.text(), "");
        press(&mut i, KeyCode::Char('z'), KeyModifiers::CONTROL);
        assert_eq!(i.text(), "xéllo ", "undo");
    }

    #[test]
    fn several_lines() {
        let mut i = TextInput::lines();
        for c in "first".chars() {
            press(&mut i, KeyCode::Char(c), KeyModifiers::NONE);
        }
        i.new_line();
        for c in "second".chars() {
            press(&mut i, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert_eq!(i.text(), "first\nsecond");
        press(&mut i, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(i.text(), "first\n", "ctrl-u clears the cursor's line only");
        let mut one = TextInput::line("a");
        one.new_line();
        assert_eq!(one.text(), "a");
    }

    #[test]
    fn what_always_edits() {
        let k = |code, mods| TextInput::always_edits(&KeyEvent::new(code, mods));
        assert!(k(KeyCode::Char('k'), KeyModifiers::NONE));
        assert!(k(KeyCode::Char('K'), KeyModifiers::SHIFT));
        assert!(k(KeyCode::Left, KeyModifiers::NONE));
        assert!(!k(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert!(!k(KeyCode::Enter, KeyModifiers::NONE));
        assert!(!k(KeyCode::Tab, KeyModifiers::NONE));
        assert!(!k(KeyCode::Esc, KeyModifiers::NONE));
    }
}
