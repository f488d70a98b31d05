//! The wire: a jobs root as JSON lines, what `luzia watch --json` writes and what another
//! machine's cockpit reads over ssh (docs/protocol.md, "luzia watch --json").
//!
//! One JSON object a line, `"type"` first. A reader ignores fields it does not know and turns a
//! line of a type it does not know into [`Line::Unknown`], so a newer host's additions never
//! break an older reader; anything that would is a new [`PROTOCOL`], which `hello` announces.

mod record;
mod settled;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::model::id::JobId;

pub use record::{
    ActivityRecord, AnswerRecord, ExchangeRecord, GateRecord, MetaRecord, ProblemRecord,
    ProgressRecord, QuestionRecord, Record,
};
pub use settled::{Covers, How, Pending, Settlement};

/// The version of the wire. A reader refuses a `hello` with another one; fields may be added
/// within a version, never removed or given another meaning.
pub const PROTOCOL: u32 = 1;

/// The first line of a stream: who speaks, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Hello {
    pub protocol: u32,
    /// The speaking luzia's version (`CARGO_PKG_VERSION`).
    pub luzia: String,
    /// The machine's host name, as its kernel knows it.
    pub host: String,
    /// Its jobs root (shown, never read by the other side).
    pub root: String,
    /// The projects its config names (where a job may be dispatched there).
    pub projects: Vec<String>,
    /// How often a `heartbeat` comes: silence for a few of these means the link is dead.
    pub heartbeat_secs: u64,
}

/// What happened to the job a `job` line carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Part of the initial state, or a new job directory.
    Added,
    /// A question or gate appeared: someone is needed.
    Raised,
    /// A question or gate is gone (answered, decided, withdrawn).
    Settled,
    /// Anything else that is shown. A kind of change this reader does not know reads as this.
    #[serde(other)]
    Changed,
}

/// One line of the stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    Hello(Hello),
    Job {
        change: Change,
        job: Box<Record>,
        /// The questions and gates this line saw go, and how each was settled (none from a
        /// luzia older than this field).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        settled: Vec<Settlement>,
    },
    /// The initial state has been sent: `jobs` lines of it.
    Synced {
        jobs: usize,
    },
    /// The job's directory is gone from the root.
    Gone {
        #[serde(with = "record::key")]
        id: JobId,
    },
    /// Nothing to say, and still there.
    Heartbeat {
        at: DateTime<Utc>,
    },
    /// Something the speaker could not do (read its root, ...); the stream goes on if it can.
    Error {
        message: String,
    },
    /// A line of a type this reader does not know (from a newer luzia): skipped.
    #[serde(other)]
    Unknown,
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error(
        "not a line of luzia's watch protocol ({0}): is the other side running `luzia watch --json`?"
    )]
    Json(#[from] serde_json::Error),
}

/// The line as JSON, without its newline.
pub fn encode(line: &Line) -> String {
    serde_json::to_string(line).unwrap_or_else(|e| {
        // Every field is a string, number, list or map with string keys: this does not happen,
        // and if it did, the reader should hear of it rather than get nothing.
        let message = serde_json::Value::from(format!("cannot encode a line: {e}"));
        format!(r#"{{"type":"error","message":{message}}}"#)
    })
}

/// One line (with or without its newline) read back.
pub fn decode(line: &str) -> Result<Line, WireError> {
    Ok(serde_json::from_str(line.trim_end_matches(['\n', '\r']))?)
}

#[cfg(test)]
mod tests;
