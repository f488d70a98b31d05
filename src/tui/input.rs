//! The one text input: the jobs filter, the output search, the input bar's task, and the
//! inbox's free-text answer and reason for a denial. It only edits; what Enter, Esc or Tab mean
//! is the mode's to say, through its key map.
//!
//! Editing keys: characters (control characters, typed or pasted, never enter), Backspace,
//! Delete, the arrows, Home/End, ctrl-a/ctrl-e (start/end of the line), ctrl-w (the word
//! before), ctrl-k (to the end of the line), ctrl-u (the whole line), ctrl-z/ctrl-r (undo,
//! redo), alt-b/alt-f (a word back/forward). One-line inputs refuse what would start a line.
//!
//! A paste goes in whole, as one edit (one undo takes it back): several-line inputs keep its
//! lines, one-line inputs get a space for each line break (a copied line's own last break is
//! dropped); control characters never enter, as when typed.

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

    /// Empties the input as one edit (ctrl-z brings the text back); false when it was empty.
    pub fn clear(&mut self) -> bool {
        if self.text().is_empty() {
            return false;
        }
        self.area.select_all();
        self.area.cut()
    }

    pub fn new_line(&mut self) {
        if self.multi_line {
            self.area.insert_newline();
        }
    }

    /// Inserts pasted text at the cursor; true when the text changed.
    pub fn paste(&mut self, text: &str) -> bool {
        let text = pasted(text, self.multi_line);
        !text.is_empty() && self.area.insert_str(text)
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

/// Pasted text as it may enter: line breaks as `\n` (terminals send `\r`, `\r\n` or `\n`),
/// or spaces in one line; tabs kept where lines are, spaces elsewhere; no control characters.
fn pasted(text: &str, multi_line: bool) -> String {
    let unified = text.replace("\r\n", "\n").replace('\r', "\n");
    let unified = if multi_line {
        unified.as_str()
    } else {
        unified.trim_end_matches('\n')
    };
    unified
        .chars()
        .filter_map(|c| match c {
            '\n' | '\t' if multi_line => Some(c),
            '\n' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
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
    fn pastes_keep_lines_where_there_are_lines() {
        let mut one = TextInput::line("find ");
        assert!(one.paste("first\r\nsecond\rthird\nfourth\tcol\u{1b}[2J\n"));
        assert_eq!(one.text(), "find first second third fourth col[2J");
        assert_eq!(
            one.cursor(),
            one.text().chars().count(),
            "the cursor after it"
        );
        let mut lines = TextInput::lines();
        lines.paste("fix the build\r\n\tthen run\u{7}\r\nthe tests\n");
        assert_eq!(lines.text(), "fix the build\n\tthen run\nthe tests\n");
        assert!(!lines.paste("\u{1b}\u{7}"), "nothing left to insert");
        lines.edit(&KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL));
        assert_eq!(lines.text(), "", "one undo takes the whole paste back");
        let mut mid = TextInput::line("ab");
        mid.edit(&KeyEvent::new(KeyCode::Left, KeyModifiers::NONE));
        mid.paste("XY");
        assert_eq!((mid.text().as_str(), mid.cursor()), ("aXYb", 3));
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
