//! Which events were sent, and what the rate limit holds back: one small JSON file in the
//! user's state directory, read and replaced (atomically) under an exclusive lock on that
//! directory, so that a restarted notifier, or two at once, never send an event twice.
//!
//! An event is *claimed* (its key written) before its command runs: the rule is at most once. A
//! command that fails or hangs is reported, not retried, since a notifier that fails every time
//! would otherwise be run again for every event at every look.
//!
//! The rate limit counts commands run in the last minute, across every notifier of the user.
//! What does not fit is never lost: the events past the limit go into one `more` event that
//! lists them; when not even that fits, they are *held* here and summed up in the first `more`
//! event the limit allows (at the next look: a watcher's next tick, cron's next run).

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Brief, Event, summary};
use crate::jobs::fs::files::read_capped;
use crate::jobs::fs::publish::{locked, write_atomic};

/// The file's name in the state directory.
pub const LEDGER_FILE: &str = "notify-sent.json";

/// A key is forgotten once its event has stood no more for this long: by then it is never
/// derived again (failures older than a day are not), and the file stays small.
const KEEP: chrono::Duration = chrono::Duration::days(7);

/// The ledger is read whole: a week of keys of a busy fleet is well under this.
const LEDGER_CAP: u64 = 16 * 1024 * 1024;

/// Events held back are listed one by one up to this many, and counted beyond.
const HELD_LISTED: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Commands run per minute at most (a `more` summary counts as one).
    pub max_per_minute: u32,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    version: u32,
    /// Per jobs root: each key sent and when it was.
    #[serde(default)]
    roots: BTreeMap<String, BTreeMap<String, DateTime<Utc>>>,
    /// When commands were run in the last minute (for every root: it is one person's phone).
    #[serde(default)]
    sends: Vec<DateTime<Utc>>,
    /// Held back by the rate limit, oldest first, for the next `more` event.
    #[serde(default)]
    held: Vec<Brief>,
    /// Held back beyond those listed.
    #[serde(default)]
    held_more: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot use the notifications' state in {dir}: {source}")]
    Io { dir: PathBuf, source: io::Error },
    #[error(
        "the notifications' state file {path} is not valid: {message} (move it aside to start \
         afresh: what stands now is then sent again)"
    )]
    Corrupt { path: PathBuf, message: String },
}

/// What one look decided.
#[derive(Debug, Default, PartialEq)]
pub struct Claimed {
    /// To run the command for, in this order (a `more` summary first, when there is one).
    pub send: Vec<Event>,
    /// How many events are held back now, waiting for the rate limit.
    pub held: usize,
}

/// The sent keys and held events of one user, in `dir`.
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    pub fn new(dir: &Path) -> Ledger {
        Ledger {
            dir: dir.to_owned(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(LEDGER_FILE)
    }

    /// Claims the events of `events` not sent before for jobs root `root`, and decides what to
    /// run now under the rate limit. `standing`, given after a look at every job, holds the keys
    /// of every event standing now: keys not among them are forgotten after [`KEEP`].
    pub fn claim(
        &self,
        root: &str,
        events: Vec<Event>,
        standing: Option<&HashSet<String>>,
        limits: Limits,
        now: DateTime<Utc>,
        host: &str,
    ) -> Result<Claimed, LedgerError> {
        let io_err = |source| LedgerError::Io {
            dir: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io_err)?;
        let mut outcome = Ok(Claimed::default());
        locked(&self.dir, || {
            outcome = self.claim_locked(root, events, standing, limits, now, host);
            Ok(())
        })
        .map_err(io_err)?;
        outcome
    }

    fn claim_locked(
        &self,
        root: &str,
        events: Vec<Event>,
        standing: Option<&HashSet<String>>,
        limits: Limits,
        now: DateTime<Utc>,
        host: &str,
    ) -> Result<Claimed, LedgerError> {
        let mut state = self.read()?;
        let sent = state.roots.entry(root.to_owned()).or_default();
        let mut new: Vec<Event> = Vec::new();
        for e in events {
            if !sent.contains_key(&e.key) && !new.iter().any(|n| n.key == e.key) {
                new.push(e);
            }
        }
        let mut dirty = !new.is_empty();
        for e in &new {
            sent.insert(e.key.clone(), now);
        }
        if let Some(standing) = standing {
            let before = sent.len();
            sent.retain(|k, at| standing.contains(k) || now - *at < KEEP);
            dirty |= sent.len() != before;
        }
        let window = now - chrono::Duration::minutes(1);
        state.sends.retain(|t| *t > window && *t <= now);
        let had_held = !state.held.is_empty() || state.held_more > 0;
        let free = (limits.max_per_minute as usize).saturating_sub(state.sends.len());
        let claimed = plan(&mut state, new, free, now, host);
        dirty |= had_held || !claimed.send.is_empty();
        state.sends.extend(claimed.send.iter().map(|_| now));
        if dirty {
            self.write(&state)?;
        }
        Ok(claimed)
    }

    fn read(&self) -> Result<State, LedgerError> {
        let path = self.path();
        let bytes = read_capped(&path, LEDGER_CAP).map_err(|source| LedgerError::Io {
            dir: self.dir.clone(),
            source,
        })?;
        match bytes {
            None => Ok(State {
                version: 1,
                ..State::default()
            }),
            Some(b) => serde_json::from_slice(&b).map_err(|e| LedgerError::Corrupt {
                path,
                message: e.to_string(),
            }),
        }
    }

    fn write(&self, state: &State) -> Result<(), LedgerError> {
        let io_err = |source| LedgerError::Io {
            dir: self.dir.clone(),
            source,
        };
        let bytes = serde_json::to_vec(state).map_err(|e| io_err(io::Error::other(e)))?;
        write_atomic(&self.dir, LEDGER_FILE, &bytes).map_err(io_err)
    }
}

/// Splits what is held and what is new between single events, one `more` summary, and what is
/// held for later, so that at most `free` commands run.
fn plan(
    state: &mut State,
    new: Vec<Event>,
    free: usize,
    now: DateTime<Utc>,
    host: &str,
) -> Claimed {
    if free == 0 {
        hold(state, new.iter().map(Event::brief));
        return Claimed {
            send: Vec::new(),
            held: state.held.len() + state.held_more,
        };
    }
    let pending = usize::from(!state.held.is_empty() || state.held_more > 0);
    let singles = if new.len() + pending <= free {
        new.len()
    } else {
        free - 1
    };
    let mut new = new.into_iter();
    let single: Vec<Event> = new.by_ref().take(singles).collect();
    hold(state, new.map(|e| e.brief()));
    let mut send = Vec::new();
    if !state.held.is_empty() || state.held_more > 0 {
        let briefs = std::mem::take(&mut state.held);
        let extra = std::mem::take(&mut state.held_more);
        send.push(summary(briefs, extra, now, host));
    }
    send.extend(single);
    Claimed { send, held: 0 }
}

fn hold(state: &mut State, briefs: impl Iterator<Item = Brief>) {
    for b in briefs {
        if state.held.len() < HELD_LISTED {
            state.held.push(b);
        } else {
            state.held_more += 1;
        }
    }
}
