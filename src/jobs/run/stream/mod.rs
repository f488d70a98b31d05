//! Claude Code's stream-json, made readable and recorded. The supervisor reads the agent's
//! stdout ([`reader`]); when it is stream-json, each line is rendered ([`render`]) into
//! output.log, kept as it came in stream.jsonl, and what it means is recorded here: the call in
//! flight in activity.json, the session's id and the run's figures in meta.json. An agent that
//! prints its figures as plain text has them read from output.log once it has ended ([`text`]).
//!
//! Everything here runs on the supervisor's thread, before it writes the exit line and
//! `finished` into meta.json: meta.json never has two writers at once.

pub mod reader;
pub mod render;
pub mod text;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

use crate::jobs::fs::files::open_append;
use crate::jobs::fs::names::{ACTIVITY_FILE, STREAM_FILE};
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::session::{Activity, RESULTS_KEPT, RunResult, Usage};
use reader::Sink;
use render::Event;

/// Calls in flight remembered at once (they run a few at a time).
const CALLS_REMEMBERED: usize = 64;

/// What is in flight: the tool calls started and not ended, a message being written, and the
/// background tasks the session waits for (after a result, `-p` waits for them: the job is
/// not idle, it is waiting on them).
#[derive(Debug, Default)]
pub struct InFlight {
    calls: Vec<(String, Activity)>,
    writing: Option<DateTime<Utc>>,
    background: Option<Activity>,
}

impl InFlight {
    /// Takes in what a line meant, at `now`.
    pub fn apply(&mut self, event: &Event, now: DateTime<Utc>) {
        match event {
            Event::ToolStarted { id, what } => {
                if self.calls.len() >= CALLS_REMEMBERED {
                    self.calls.remove(0);
                }
                let activity = Activity {
                    what: what.clone(),
                    since: Some(now),
                };
                self.calls.push((id.clone(), activity));
            }
            Event::ToolEnded { id } => self.calls.retain(|(i, _)| i != id),
            Event::Writing(true) => self.writing = self.writing.or(Some(now)),
            Event::Writing(false) => self.writing = None,
            Event::Finished(_) => {
                self.calls.clear();
                self.writing = None;
            }
            Event::Background(tasks) if tasks.is_empty() => self.background = None,
            Event::Background(tasks) => {
                let what = format!("waiting for background tasks: {}", tasks.join(", "));
                let since = self.background.as_ref().and_then(|a| a.since).or(Some(now));
                self.background = Some(Activity { what, since });
            }
            Event::Session { .. } | Event::Result(_) => {}
        }
    }

    /// What activity.json says: the oldest call in flight, else the message being written,
    /// else the background tasks waited for.
    pub fn current(&self) -> Option<Activity> {
        match (self.calls.first(), self.writing) {
            (Some((_, a)), _) => Some(a.clone()),
            (None, Some(since)) => Some(Activity {
                what: "writing".into(),
                since: Some(since),
            }),
            (None, None) => self.background.clone(),
        }
    }
}

/// The job directory as the reader's [`Sink`].
pub struct JobSink {
    dir: PathBuf,
    log: File,
    /// Opened at the first raw line: an agent that does not speak stream-json gets no file.
    stream: Option<File>,
    in_flight: InFlight,
    /// What activity.json holds now.
    shown: Option<Activity>,
    /// The run's results so far, each with its own figures, for meta.json's `results`.
    results: Vec<RunResult>,
}

impl JobSink {
    /// `log` is output.log, opened for appending.
    pub fn new(dir: &Path, log: File) -> JobSink {
        JobSink {
            dir: dir.to_owned(),
            log,
            stream: None,
            in_flight: InFlight::default(),
            shown: None,
            results: Vec::new(),
        }
    }

    fn show_activity(&mut self) {
        let now = self.in_flight.current();
        if now == self.shown {
            return;
        }
        // Through a temporary file created exclusively (never through a link the agent may
        // have planted: the supervisor may be root in a directory that is the agent's).
        let _ = match &now {
            Some(a) => write_atomic(&self.dir, ACTIVITY_FILE, &a.to_json()),
            None => remove(&self.dir.join(ACTIVITY_FILE)),
        };
        self.shown = now;
    }
}

impl Sink for JobSink {
    fn log(&mut self, bytes: &[u8]) {
        // A full disk loses output, as it did when the agent wrote output.log itself; the
        // agent must not be held up for it.
        let _ = (&self.log).write_all(bytes);
    }

    fn raw(&mut self, bytes: &[u8]) {
        if self.stream.is_none() {
            self.stream = open_append(&self.dir.join(STREAM_FILE)).ok();
        }
        if let Some(f) = &self.stream {
            let _ = (&*f).write_all(bytes);
        }
    }

    fn event(&mut self, event: Event) {
        self.in_flight.apply(&event, Utc::now());
        match event {
            Event::Session { id } => {
                let _ = update_meta(&self.dir, |m| {
                    let new = Value::from(id);
                    // Fixed at dispatch, it is the same: no write.
                    m.insert("session_id".into(), new.clone()).as_ref() != Some(&new)
                });
            }
            Event::Result(own) if self.results.len() < RESULTS_KEPT => {
                self.results.push(RunResult {
                    // To the second, as meta.json's `finished` is: a last result then shares its
                    // second with the end rather than seeming to come after it.
                    at: Some(Utc::now().trunc_subsecs(0)),
                    usage: *own,
                });
            }
            Event::Finished(usage) => {
                let _ = record_usage(&self.dir, &usage, &self.results);
            }
            _ => {}
        }
        self.show_activity();
    }

    fn end(&mut self) {
        // Nothing is in flight once the agent has ended, whatever its last line said.
        self.in_flight = InFlight::default();
        let _ = remove(&self.dir.join(ACTIVITY_FILE));
        self.shown = None;
    }
}

/// meta.json's `usage` (the run's figures so far) and `results` (each result's own), in one
/// write.
pub fn record_usage(dir: &Path, usage: &Usage, results: &[RunResult]) -> io::Result<()> {
    let value = serde_json::to_value(usage).map_err(io::Error::other)?;
    let results = serde_json::to_value(results).map_err(io::Error::other)?;
    update_meta(dir, |m| {
        m.insert("usage".into(), value);
        m.insert("results".into(), results);
        true
    })
}

pub use crate::jobs::fs::publish::update_meta;

fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
