//! The domain: job directories as protocol.md defines them. Nothing in here knows about
//! terminals; the CLI and the cockpit both call these functions, so each rule lives once.

pub mod agent;
pub mod alarms;
pub mod answer;
pub mod describe;
pub mod dispatch;
pub mod files;
pub mod follow;
pub mod hitl;
pub mod id;
pub mod job;
pub mod kill;
pub mod known_issues;
pub mod meta;
pub mod process;
pub mod progress;
pub mod publish;
pub mod queue;
pub mod report;
pub mod sanitize;
pub mod scan;
pub mod status;
pub mod supervise;
pub mod system;
pub mod tail;
pub mod time;
pub mod timeline;
pub mod wait;

pub use hitl::{Gate, Question, QuestionType, Waiting};
pub use id::JobId;
pub use job::{Job, Problem, read_job};
pub use meta::Meta;
pub use progress::Progress;
pub use scan::{ScanError, scan};
pub use status::Status;
