//! Text from agents is hostile: decoding, dropping escape sequences, capping lines; and its
//! display width, measured one way for everything shown (`width`); and text made safe for a
//! shell (`shell_quote`).

pub mod sanitize;
pub mod width;

/// `'it'\''s'`: safe inside a POSIX shell, whatever the text.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
pub(crate) mod tests;
