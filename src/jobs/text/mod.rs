//! Text from agents is hostile: decoding, dropping escape sequences, capping lines.

pub mod sanitize;
