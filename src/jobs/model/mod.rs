//! What a job directory means: its id, meta.json, its checks, progress, what its session did and is doing, the question or gate it waits on,
//! a requested stop, the status derived from all of them, a scan of the whole root, a typed id
//! (or its prefix) resolved to a job, and the `jobs ID` description.

pub mod checks;
pub mod describe;
pub mod format;
pub mod id;
pub mod index;
pub mod job;
pub mod lifecycle;
pub mod limit;
pub mod meta;
pub mod process;
pub mod progress;
pub mod resolve;
pub mod review;
pub mod scan;
pub mod session;
pub mod status;
pub mod stop;
pub mod time;
pub mod waiting;
