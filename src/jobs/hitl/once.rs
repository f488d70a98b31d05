//! Publishing an answer or a decision exactly once, for the one instance it was meant for. The
//! same rule for everyone: an operator at the CLI or in the cockpit, and the agent taking its
//! own default (a timeout, an auto-approval).
//!
//! 1. The instance must be pending: the request file asks it (by id). If it does not, nothing
//!    is written and the publisher is told what became of it.
//! 2. The answer is `link()`ed into place ([`publish_once`]): it fails if any file is there.
//!    One for this instance means someone was first: theirs stands. One for another instance is
//!    stale: it is moved into the history and the link tried again.
//! 3. After a link wins, the instance must still be pending. The agent may have settled it a
//!    moment before (its own default, or an answer it read and archived just before ours
//!    landed): then ours is read nowhere. The publisher removes its own file (only while it holds
//!    its token: never anyone else's) and is told the answer that stands, from the history.
//!
//! Who won is told by the `token` that stands, never by the value: two operators may send the
//! same answer within the same second.

use std::io;
use std::path::Path;

use chrono::Utc;
use serde::Serialize;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::{DECISION_FILE, RESPONSE_FILE};
use crate::jobs::fs::publish::{Published, locked, publish_once};
use crate::jobs::hitl::archive;
use crate::jobs::hitl::history::{self, Fate};
use crate::jobs::hitl::published::{Decision, Response, timestamp};
use crate::jobs::model::format::FileError;
use crate::jobs::model::waiting::{read_gate, read_question};

/// What came of answering.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    Done(T),
    /// Someone answered first; theirs stands.
    Already(T),
}

/// Why nothing was published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The instance is no longer pending and no answer to it stands.
    #[error("{0}")]
    Closed(Closed),
}

/// How an instance ended without anybody's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Closed {
    #[error("it timed out with no answer (the agent had no default)")]
    Unanswered,
    #[error("no answer to it is on record (it was withdrawn, or never asked here)")]
    Unrecorded,
    #[error("the agent withdrew it before anyone answered (it stopped waiting)")]
    Withdrawn,
}

/// The instance a request file asks now.
#[derive(Debug)]
pub struct Instance {
    pub id: String,
    /// The gate's name (empty for a question).
    pub name: String,
}

/// An answer or a decision, as far as publishing it goes.
pub trait Settlement: Clone + Serialize + Sized {
    /// `response.json` or `approved.json`.
    const FILE: &'static str;
    fn parse(bytes: &[u8]) -> Option<Self>;
    /// The instance it was written for.
    fn instance(&self) -> &str;
    fn token(&self) -> &str;
    /// Whether it settles `pending` (the older forms, naming no instance, settle what they can).
    fn settles(&self, pending: &Instance) -> bool;
    /// The instance `dir`'s request file asks now.
    fn pending(dir: &Path) -> Result<Option<Instance>, FileError>;
    /// What `dir`'s history says became of instance `id`.
    fn fate(dir: &Path, id: &str) -> io::Result<Fate<Self>>;
}

impl Settlement for Response {
    const FILE: &'static str = RESPONSE_FILE;
    fn parse(bytes: &[u8]) -> Option<Self> {
        Response::parse(bytes)
    }
    fn instance(&self) -> &str {
        &self.question_id
    }
    fn token(&self) -> &str {
        &self.token
    }
    fn settles(&self, pending: &Instance) -> bool {
        self.question_id == pending.id
    }
    fn pending(dir: &Path) -> Result<Option<Instance>, FileError> {
        Ok(read_question(dir)?.map(|q| Instance {
            id: q.id,
            name: String::new(),
        }))
    }
    fn fate(dir: &Path, id: &str) -> io::Result<Fate<Self>> {
        history::question_fate(dir, id)
    }
}

impl Settlement for Decision {
    const FILE: &'static str = DECISION_FILE;
    fn parse(bytes: &[u8]) -> Option<Self> {
        Decision::parse(bytes)
    }
    fn instance(&self) -> &str {
        &self.gate_id
    }
    fn token(&self) -> &str {
        &self.token
    }
    fn settles(&self, pending: &Instance) -> bool {
        self.decides(&pending.id, &pending.name)
    }
    fn pending(dir: &Path) -> Result<Option<Instance>, FileError> {
        Ok(read_gate(dir)?.map(|g| Instance {
            id: g.id,
            name: g.gate,
        }))
    }
    fn fate(dir: &Path, id: &str) -> io::Result<Fate<Self>> {
        history::gate_fate(dir, id)
    }
}

/// Publishes an answer to question `r.question_id`, exactly once (see the module's comment).
pub fn publish_response(dir: &Path, r: &Response) -> Result<Outcome<Response>, PublishError> {
    publish(dir, r)
}

/// Publishes a decision at gate instance `d.gate_id`, exactly once.
pub fn publish_decision(dir: &Path, d: &Decision) -> Result<Outcome<Decision>, PublishError> {
    publish(dir, d)
}

/// How many stale files may be set aside before giving up: each attempt moves one away, and
/// only a late publisher (which removes its own at once) can put another there.
const ATTEMPTS: usize = 8;

fn publish<T: Settlement>(dir: &Path, ours: &T) -> Result<Outcome<T>, PublishError> {
    let bytes = serde_json::to_vec_pretty(ours).map_err(io::Error::other)?;
    for _ in 0..ATTEMPTS {
        let Some(pending) = pending::<T>(dir)?.filter(|p| p.id == ours.instance()) else {
            return what_became_of(dir, ours.instance());
        };
        match publish_once(dir, T::FILE, &bytes)? {
            Published::Won => return recheck(dir, ours),
            // Taken by the agent between our link() and our read: look again.
            Published::Lost(None) => {}
            Published::Lost(Some(existing)) => match T::parse(&existing) {
                // Theirs stands if the instance is still pending now that we have read it: a
                // file only lands for a pending instance by winning. Otherwise it may be a late
                // one about to be taken back, and the history says who won.
                Some(theirs) if theirs.settles(&pending) => {
                    return match still_pending::<T>(dir, ours.instance())? {
                        true => Ok(Outcome::Already(theirs)),
                        false => what_became_of(dir, ours.instance()),
                    };
                }
                Some(_) => {
                    archive::set_aside(dir, T::FILE, &existing, &timestamp(Utc::now()))?;
                }
                None => return Err(unreadable(dir, T::FILE).into()),
            },
        }
    }
    Err(io::Error::other(format!(
        "{} kept being replaced by answers to other questions or gates: nothing was written",
        dir.join(T::FILE).display()
    ))
    .into())
}

/// The instance pending in `dir`. No request there is "nothing pending", but no directory at
/// all is an error to report as such (the job is gone, or the path is wrong).
fn pending<T: Settlement>(dir: &Path) -> io::Result<Option<Instance>> {
    let pending = T::pending(dir).map_err(|e| match e {
        FileError::Read(e) => e,
        other => io::Error::other(format!(
            "the agent's request in {} cannot be read: {other}",
            dir.display()
        )),
    })?;
    if pending.is_none() {
        std::fs::metadata(dir)?;
    }
    Ok(pending)
}

fn unreadable(dir: &Path, name: &str) -> io::Error {
    io::Error::other(format!(
        "{} is in the way and is no answer luzia can read: nothing was written (remove it if \
         it is left over)",
        dir.join(name).display()
    ))
}

fn still_pending<T: Settlement>(dir: &Path, id: &str) -> io::Result<bool> {
    Ok(pending::<T>(dir)?.is_some_and(|p| p.id == id))
}

/// Ours is in place: it stands if the instance is still pending, or if the agent already took
/// it (its record in the history carries our token). Otherwise it is taken back.
fn recheck<T: Settlement>(dir: &Path, ours: &T) -> Result<Outcome<T>, PublishError> {
    if still_pending::<T>(dir, ours.instance())? {
        return Ok(Outcome::Done(ours.clone()));
    }
    let fate = T::fate(dir, ours.instance())?;
    if matches!(&fate, Fate::Settled(s) if s.token() == ours.token()) {
        return Ok(Outcome::Done(ours.clone()));
    }
    take_back(dir, ours)?;
    settled(fate)
}

/// Removes our own file, if it is still ours: the lock keeps anyone from replacing it between
/// the look and the removal.
fn take_back<T: Settlement>(dir: &Path, ours: &T) -> io::Result<()> {
    locked(dir, || {
        let path = dir.join(T::FILE);
        let mine = read_small(&path)?
            .and_then(|b| T::parse(&b))
            .is_some_and(|t| t.token() == ours.token());
        if !mine {
            return Ok(());
        }
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    })
}

/// What became of instance `id` (settled, withdrawn, or never asked): `Already` with the answer
/// that stands, or why none does. An answer file for `id` stands if `id` is still pending once it
/// is read (a file only lands for a pending instance by winning); otherwise the history says,
/// and failing that the file is the best there is (an agent writing its files by hand keeps no
/// history; luzia's agent records an exchange before it removes anything).
pub fn what_became_of<T: Settlement>(dir: &Path, id: &str) -> Result<Outcome<T>, PublishError> {
    let waiting = read_small(&dir.join(T::FILE))?
        .and_then(|b| T::parse(&b))
        .filter(|t| t.instance() == id);
    if let Some(w) = &waiting
        && still_pending::<T>(dir, id)?
    {
        return Ok(Outcome::Already(w.clone()));
    }
    settled(match T::fate(dir, id)? {
        Fate::Unknown => waiting.map_or(Fate::Unknown, Fate::Settled),
        known => known,
    })
}

fn settled<T>(fate: Fate<T>) -> Result<Outcome<T>, PublishError> {
    match fate {
        Fate::Settled(theirs) => Ok(Outcome::Already(theirs)),
        Fate::Unanswered => Err(PublishError::Closed(Closed::Unanswered)),
        Fate::Withdrawn => Err(PublishError::Closed(Closed::Withdrawn)),
        Fate::Unknown => Err(PublishError::Closed(Closed::Unrecorded)),
    }
}

#[cfg(test)]
#[path = "once_tests.rs"]
mod tests;
