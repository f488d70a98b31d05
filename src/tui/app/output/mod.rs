//! The output pane: the selected job's log (`log`: follow, pause, wrap, search, known-issue
//! lines) and the main screen's keys for it, plus typing a search (`keys`).

mod keys;
pub mod log;

pub use log::{KEEP_LINES, LogView, Search};

#[cfg(test)]
mod tests;
