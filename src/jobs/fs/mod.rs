//! How job files are touched: safe reads (no links, capped), publish-once and atomic writes,
//! luzia's private directory in a job (what the agent cannot write),
//! reading a log's tail, following it as it grows, being told of changes (native watcher or
//! polling), and waiting for a directory to change.

pub mod files;
pub mod follow;
pub mod names;
pub mod notify;
pub mod private;
pub mod publish;
pub mod tail;
pub mod wait;
