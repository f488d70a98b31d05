//! The figures of an agent that prints them as text in its output (Aider's `Tokens: ...`
//! lines) rather than in a stream read as it comes: once the agent has ended, its output.log is
//! read through the one log follower, the agent's kind reads the lines
//! (`agents::Kind::text_usage`), and what it found goes to meta.json's `usage`. The supervisor
//! does it on its own thread, before the exit line: meta.json keeps its one writer.

use std::path::Path;

use crate::jobs::fs::follow::Follower;
use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::run::agents::Kind;

/// How much of the log is read at once.
const READ_AT_ONCE: u64 = 256 * 1024;

/// Reads the figures of a `kind` that prints them from the job's output.log into meta.json.
/// Does nothing for any other kind, or when the agent printed none.
pub fn record_usage(dir: &Path, kind: Kind) {
    let Some(mut reader) = kind.text_usage() else {
        return;
    };
    let mut log = Follower::from_start(&dir.join(LOG_FILE)).read_at_most(READ_AT_ONCE);
    // A log that cannot be read has no figures to give: the job ends without them.
    while log
        .poll_lines(u64::MAX, |line, _| reader.line(line))
        .is_ok_and(|chunk| chunk.more)
    {}
    if !log.partial().is_empty() {
        reader.line(log.partial());
    }
    if let Some(usage) = reader.finish() {
        let _ = super::record_usage(dir, &usage, &[]);
    }
}
