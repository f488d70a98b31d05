//! The tokens of a Codex turn, read from Codex's own session file: its ACP adapter (`codex-acp`
//! 0.16) reports none, but Codex writes every session to
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`, one JSON event a line,
//! among them a `token_count` after each response of the model, with the session's running
//! total (`info.total_token_usage`). A turn begins with `task_started` and ends with
//! `task_complete` (or `turn_aborted`); a loaded session goes on in the same file, its totals
//! going on from where they were. A turn's tokens are the total at its end less the total
//! before it began.
//!
//! The file is the agent's, written by another program and as long as the session: it is read
//! from its end, line by line, within a budget of bytes, only from a regular file owned by the
//! user the agent runs as, and whatever is wrong with it costs the figures, never the job.

use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::tail::backwards::{Ended, lines_backwards};
use crate::jobs::model::session::Usage;

/// The most of the file read back from its end for one turn.
pub const READ_BUDGET: u64 = 16 * 1024 * 1024;
/// The longest line looked at: the events wanted are a few hundred bytes; a command's output
/// or the instructions are longer, and not wanted.
const LINE_MAX: usize = 16 * 1024;
/// The most directory entries looked at to find a session's file.
const ENTRIES_MAX: usize = 100_000;
/// How much earlier than the prompt (in seconds) the turn may say it began: Codex gives whole
/// seconds.
const CLOCK_SLACK: i64 = 2;

/// Where a Codex agent keeps its sessions, and whose they must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sessions {
    /// `$CODEX_HOME/sessions`, else `~/.codex/sessions`, as the agent's environment has them.
    pub dir: PathBuf,
    /// The user the agent runs as: a file of anyone else's is not read.
    pub owner: u32,
}

impl Sessions {
    /// Where the agent whose environment is `var` keeps its sessions; `None` with neither
    /// `CODEX_HOME` nor `HOME`.
    pub fn of(var: &dyn Fn(&str) -> Option<String>, owner: u32) -> Option<Sessions> {
        let home = match var("CODEX_HOME").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(var("HOME").filter(|h| !h.is_empty())?).join(".codex"),
        };
        Some(Sessions {
            dir: home.join("sessions"),
            owner,
        })
    }
}

/// The token counts Codex keeps, OpenAI's: `input` counts the cached ones too, `output` the
/// reasoning ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    pub reasoning: u64,
}

impl Tokens {
    fn of(usage: &Value) -> Option<Tokens> {
        let count = |k: &str| usage[k].as_u64();
        Some(Tokens {
            input: count("input_tokens")?,
            cached_input: count("cached_input_tokens").unwrap_or(0),
            output: count("output_tokens")?,
            reasoning: count("reasoning_output_tokens").unwrap_or(0),
        })
    }

    /// This total less an earlier one: a total smaller than it (counting began again) is
    /// all this turn's.
    fn since(self, before: Tokens) -> Tokens {
        if self.input < before.input || self.output < before.output {
            return self;
        }
        Tokens {
            input: self.input - before.input,
            cached_input: self.cached_input.saturating_sub(before.cached_input),
            output: self.output - before.output,
            reasoning: self.reasoning.saturating_sub(before.reasoning),
        }
    }

    /// Into the fields Claude Code's fill: input without the cached part (read from the cache
    /// instead), output with the reasoning it includes.
    pub fn into_usage(self, usage: &mut Usage) {
        let cached = self.cached_input.min(self.input);
        usage.input_tokens = Some(self.input - cached);
        usage.cache_read_tokens = Some(cached);
        usage.output_tokens = Some(self.output);
    }
}

/// Why no tokens were read, and whether reading again may find them: Codex may not have
/// written the turn's end yet when its adapter answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unread {
    pub why: String,
    pub again: bool,
}

impl Unread {
    fn now(why: String) -> Unread {
        Unread { why, again: false }
    }

    fn later(why: String) -> Unread {
        Unread { why, again: true }
    }
}

/// The tokens of the last turn of session `session`, begun at `since` (Unix seconds) or
/// after, as its file under `sessions` says them.
pub fn turn_of(sessions: &Sessions, session: &str, since: i64) -> Result<Turn, Unread> {
    let path = find(&sessions.dir, session)?;
    last_turn(&path, sessions.owner, since)
}

/// What the file says of its last turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    pub tokens: Tokens,
    /// The turn's end was written (`task_complete` or `turn_aborted`): the figures are whole.
    pub ended: bool,
}

/// The file of session `session` under `sessions`: looked for first in the days around the
/// time its id gives (Codex's ids are UUIDv7), then in every day, newest first, within a bound.
pub fn find(sessions: &Path, session: &str) -> Result<PathBuf, Unread> {
    let valid = !session.is_empty()
        && session.len() <= 64
        && session.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !valid {
        return Err(Unread::now(format!(
            "{session:?} is not a Codex session id"
        )));
    }
    let suffix = format!("-{session}.jsonl");
    let mut budget = ENTRIES_MAX;
    let hinted = days_of(session);
    for day in &hinted {
        if let Some(found) = in_day(&sessions.join(day), &suffix, &mut budget) {
            return Ok(found);
        }
    }
    for year in newest_first(sessions, &mut budget) {
        for month in newest_first(&year, &mut budget) {
            for day in newest_first(&month, &mut budget) {
                if hinted.iter().any(|h| day.ends_with(h)) {
                    continue;
                }
                if let Some(found) = in_day(&day, &suffix, &mut budget) {
                    return Ok(found);
                }
            }
        }
    }
    if budget == 0 {
        return Err(Unread::now(format!(
            "no file of session {session} among the first {ENTRIES_MAX} entries of {}",
            sessions.display()
        )));
    }
    Err(Unread::later(format!(
        "no file of session {session} in {}",
        sessions.display()
    )))
}

/// `YYYY/MM/DD` of the day before, of and after the time in a UUIDv7 (its first 48 bits, in
/// milliseconds): Codex names the directory by its local day, which is within a day of UTC's.
fn days_of(session: &str) -> Vec<String> {
    let hex: String = session.chars().filter(|c| *c != '-').take(12).collect();
    let Some(ms) = u64::from_str_radix(&hex, 16)
        .ok()
        .filter(|_| hex.len() == 12)
    else {
        return Vec::new();
    };
    let Some(at) = i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
    else {
        return Vec::new();
    };
    [-1, 0, 1]
        .into_iter()
        .filter_map(|d| at.checked_add_signed(chrono::TimeDelta::days(d)))
        .map(|t| t.format("%Y/%m/%d").to_string())
        .collect()
}

fn in_day(day: &Path, suffix: &str, budget: &mut usize) -> Option<PathBuf> {
    let entries = std::fs::read_dir(day).ok()?;
    for entry in entries.flatten() {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("rollout-") && name.ends_with(suffix) {
            return Some(entry.path());
        }
    }
    None
}

/// The directories in `dir` named by digits (years, months, days), the greatest first.
fn newest_first(dir: &Path, budget: &mut usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut named: Vec<(u32, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let n = entry.file_name().to_str().and_then(|s| s.parse().ok());
        if let Some(n) = n.filter(|_| entry.file_type().is_ok_and(|t| t.is_dir())) {
            named.push((n, entry.path()));
        }
    }
    named.sort_by_key(|n| std::cmp::Reverse(n.0));
    named.into_iter().map(|(_, p)| p).collect()
}

/// The tokens of the last turn of the session file `path`, which must be `owner`'s and must
/// have begun at `since` (Unix seconds) or after: an earlier turn is not this job's.
pub fn last_turn(path: &Path, owner: u32, since: i64) -> Result<Turn, Unread> {
    let io = |e: std::io::Error| Unread::now(format!("{}: {e}", path.display()));
    let file = open_nofollow(path)
        .map_err(io)?
        .ok_or_else(|| Unread::now(format!("{}: no such file", path.display())))?;
    let meta = file.metadata().map_err(io)?;
    if meta.uid() != owner {
        return Err(Unread::now(format!(
            "{} belongs to uid {}, not to the agent's user (uid {owner}): not read",
            path.display(),
            meta.uid()
        )));
    }
    let mut scan = Scan::default();
    let ended =
        lines_backwards(&file, meta.len(), READ_BUDGET, LINE_MAX, |l| scan.line(l)).map_err(io)?;
    scan.turn(ended, since).map_err(|u| Unread {
        why: format!("{}: {}", path.display(), u.why),
        again: u.again,
    })
}

/// What a backward read has found so far.
#[derive(Default)]
struct Scan {
    /// The last total of the file: the turn's end.
    end: Option<Tokens>,
    /// The turn's end was written.
    ended: bool,
    /// When the last turn began (`task_started`), once its line has been read.
    started: Option<i64>,
    /// The last total before it.
    before: Option<Tokens>,
}

impl Scan {
    fn line(&mut self, line: &[u8]) -> ControlFlow<()> {
        // Only the lines worth parsing: the events named here, and nothing else.
        let wanted = [
            &b"\"token_count\""[..],
            b"\"task_started\"",
            b"\"task_complete\"",
            b"\"turn_aborted\"",
        ];
        if !wanted
            .iter()
            .any(|w| memchr::memmem::find(line, w).is_some())
        {
            return ControlFlow::Continue(());
        }
        let Ok(event) = serde_json::from_slice::<Value>(line) else {
            return ControlFlow::Continue(());
        };
        if event["type"] != "event_msg" {
            return ControlFlow::Continue(());
        }
        let payload = &event["payload"];
        match payload["type"].as_str().unwrap_or_default() {
            "token_count" => {
                let total = Tokens::of(&payload["info"]["total_token_usage"]);
                if self.started.is_some() {
                    if total.is_some() {
                        self.before = total;
                        return ControlFlow::Break(());
                    }
                } else if self.end.is_none() {
                    self.end = total;
                }
            }
            "task_complete" | "turn_aborted" if self.started.is_none() => self.ended = true,
            "task_started" if self.started.is_none() => {
                self.started = Some(payload["started_at"].as_i64().unwrap_or(i64::MIN));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn turn(self, ended: Ended, since: i64) -> Result<Turn, Unread> {
        let Some(started) = self.started else {
            return Err(match ended {
                Ended::Budget => Unread::now(format!(
                    "no turn begins in its last {} MiB",
                    READ_BUDGET / (1024 * 1024)
                )),
                // This job's turn may not be written yet.
                _ => Unread::later("no turn in it".into()),
            });
        };
        if started < since.saturating_sub(CLOCK_SLACK) {
            return Err(Unread::later(
                "its last turn began before this job's prompt: it is another's".into(),
            ));
        }
        let before = match (self.before, ended) {
            (Some(b), _) => b,
            // Nothing counted before this turn: the session's first.
            (None, Ended::Start) => Tokens::default(),
            (None, _) => {
                return Err(Unread::now(format!(
                    "no count before this turn in its last {} MiB",
                    READ_BUDGET / (1024 * 1024)
                )));
            }
        };
        let end = self
            .end
            .ok_or_else(|| Unread::later("no token count in this turn".into()))?;
        Ok(Turn {
            tokens: end.since(before),
            ended: self.ended,
        })
    }
}

#[cfg(test)]
mod tests;
