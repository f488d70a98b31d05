//! Text from agents is hostile: decoding, dropping escape sequences, capping lines; and its
//! display width, measured one way for everything shown (`width`).

pub mod sanitize;
pub mod width;

#[cfg(test)]
pub(crate) mod tests;
