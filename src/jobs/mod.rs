//! The domain: job directories as protocol.md defines them. Nothing in here knows about
//! terminals; the CLI and the cockpit both call these functions, so each rule lives once.
//!
//! Rooms, lowest first (a room uses only the rooms above it in this list, never one below):
//! `text` and `os` (no domain knowledge), `fs` (how job files are read and written), `model`
//! (what a job directory means), `hitl` (questions and gates, both sides), `review` (what a
//! job changed in its project: snapshots, worktrees, diff, merge), `run` (starting and
//! stopping agents), `insight` (known issues, alarms, timelines, the status report), `wire`
//! (a jobs root as JSON lines, for another machine's cockpit).

pub mod fs;
pub mod hitl;
pub mod insight;
pub mod model;
pub mod os;
pub mod review;
pub mod run;
pub mod text;
pub mod wire;

pub use model::id::JobId;
pub use model::job::{Job, Problem, read_job};
pub use model::meta::Meta;
pub use model::progress::Progress;
pub use model::scan::{ScanError, scan};
pub use model::status::Status;
pub use model::waiting::{Gate, Question, QuestionType, Waiting};
