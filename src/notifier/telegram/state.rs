//! What the bridge remembers across restarts, in the user's state directory: the next update to
//! ask Telegram for, and each question or gate posted (its message, its buttons' serial number,
//! whether it was closed and the message edited to say how). Replaced atomically and fsynced
//! after every change that matters, so a bridge killed at any instant, started again, neither
//! posts a question twice nor takes an update it already handled for a new one.
//!
//! A post is recorded *before* it is sent (`message_id: None`) and completed after: a post that
//! was interrupted between the two is sent again at the next start, saying so, since the Bot API
//! cannot be asked whether the first one arrived. A lock on a file beside the state keeps a
//! second bridge of the same user from answering the same updates.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::fs::files::read_capped;
use crate::jobs::fs::publish::write_atomic;

/// The state's file name in the state directory.
pub const STATE_FILE: &str = "telegram.json";
const LOCK_FILE: &str = "telegram.lock";
const STATE_CAP: u64 = 16 * 1024 * 1024;
/// A closed post is forgotten this long after it was closed: its buttons then say only that
/// luzia no longer knows them.
const KEEP: chrono::Duration = chrono::Duration::days(7);

/// Questions or gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum What {
    Question,
    Gate,
}

/// One question or gate posted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Posted {
    /// Its buttons' number (callback data `SERIAL:ACTION`): short, and never used twice.
    pub serial: u64,
    /// The job's key: its id, `ID@HOST` for another host's.
    pub job: String,
    pub what: What,
    /// The question's or gate's instance id: the only one its answers may settle.
    pub instance: String,
    /// The options the buttons stand for, in order.
    #[serde(default)]
    pub options: Vec<String>,
    /// Whether the gate offered to be approved for the session when it was posted (its
    /// Approve for session button): a press of that button is refused on any other post.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session: bool,
    /// The message as posted (an outcome is added below it), and its buttons.
    pub text: String,
    #[serde(default)]
    pub markup: Option<serde_json::Value>,
    /// `None` between recording the post and Telegram's answer.
    pub message_id: Option<i64>,
    /// The messages asking for a denial's reason, whose replies deny.
    #[serde(default)]
    pub prompts: Vec<i64>,
    #[serde(default)]
    pub closed: Option<Closed>,
    /// For a question with a default or a gate that approves itself: what its message says of
    /// the time left, kept true while it is open (`countdown`). None in a post saved before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub countdown: Option<Countdown>,
}

/// The lines of a post that tell time (since when it waits, what is taken when, and how soon),
/// and where they stand in its text, so that they alone are written again as time passes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Countdown {
    /// When the question's default is taken, or the gate approves itself.
    pub deadline: DateTime<Utc>,
    /// Since when it waits, if known.
    #[serde(default)]
    pub since: Option<DateTime<Utc>>,
    /// The question's default as the message shows it (plain, capped); none for a gate.
    #[serde(default)]
    pub default: Option<String>,
    /// Where those lines start in `Posted::text`, in bytes, and how long they are.
    pub at: usize,
    pub len: usize,
    /// How soon, as the message says it now (`in 25m`).
    pub shown: String,
    /// When its message was last edited, or an edit tried, for the time left; none since it
    /// was posted.
    #[serde(default)]
    pub edited: Option<DateTime<Utc>>,
}

/// How a post ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Closed {
    /// "approved by @bruno from Telegram", "answered in the cockpit by bruno@host: 'x'".
    pub outcome: String,
    pub at: DateTime<Utc>,
    /// Whether the message says so yet (its edit may wait for the API).
    pub edited: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    #[serde(default)]
    pub version: u32,
    /// The next update to ask for: one past the last handled.
    #[serde(default)]
    pub offset: i64,
    #[serde(default)]
    pub next_serial: u64,
    /// By event key (`JOB:question:QID`, `JOB:gate:GID`, the same as `luzia notify`'s).
    #[serde(default)]
    pub posted: BTreeMap<String, Posted>,
}

impl State {
    pub fn by_serial(&self, serial: u64) -> Option<(&String, &Posted)> {
        self.posted.iter().find(|(_, p)| p.serial == serial)
    }

    /// The post a message is (or asks a reason for).
    pub fn by_message(&self, message_id: i64) -> Option<String> {
        self.posted
            .iter()
            .find(|(_, p)| p.message_id == Some(message_id) || p.prompts.contains(&message_id))
            .map(|(k, _)| k.clone())
    }

    /// Forgets the posts closed and told long enough ago.
    pub fn prune(&mut self, now: DateTime<Utc>) {
        self.posted.retain(|_, p| {
            p.closed
                .as_ref()
                .is_none_or(|c| !c.edited || now - c.at < KEEP)
        });
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot use the Telegram bridge's state in {dir}: {source}")]
    Io { dir: PathBuf, source: io::Error },
    #[error(
        "the Telegram bridge's state file {path} is not valid: {message} (move it aside to start \
         afresh: what stands now is then posted again)"
    )]
    Corrupt { path: PathBuf, message: String },
    #[error(
        "another luzia notify --watch of this user runs the Telegram bridge already (it holds \
         {path}): one bridge a bot"
    )]
    Busy { path: PathBuf },
}

/// The state's file, and the lock held for as long as the bridge runs.
pub struct Store {
    dir: PathBuf,
    _lock: File,
}

impl Store {
    /// Takes the bridge's lock in `dir` (made if missing).
    pub fn open(dir: &Path) -> Result<Store, StateError> {
        let io_err = |source| StateError::Io {
            dir: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io_err)?;
        let path = dir.join(LOCK_FILE);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err)?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(StateError::Busy { path }),
            // No locks on this file system: one bridge is then the user's to keep to.
            Err(_) => {}
        }
        Ok(Store {
            dir: dir.to_owned(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    pub fn load(&self) -> Result<State, StateError> {
        let path = self.path();
        let bytes = read_capped(&path, STATE_CAP).map_err(|source| StateError::Io {
            dir: self.dir.clone(),
            source,
        })?;
        match bytes {
            None => Ok(State {
                version: 1,
                ..State::default()
            }),
            Some(b) => serde_json::from_slice(&b).map_err(|e| StateError::Corrupt {
                path,
                message: e.to_string(),
            }),
        }
    }

    /// Replaces the file with `state`, fsynced (file and directory) before it returns.
    pub fn save(&self, state: &State) -> Result<(), StateError> {
        let io_err = |source| StateError::Io {
            dir: self.dir.clone(),
            source,
        };
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| io_err(io::Error::other(e)))?;
        write_atomic(&self.dir, STATE_FILE, &bytes).map_err(io_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_saved_reads_back_and_a_second_bridge_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(matches!(
            Store::open(dir.path()),
            Err(StateError::Busy { .. })
        ));
        let mut state = store.load().unwrap();
        assert_eq!(state.offset, 0);
        state.offset = 42;
        state.posted.insert(
            "j:question:q1".into(),
            Posted {
                serial: 3,
                job: "j".into(),
                what: What::Question,
                instance: "q1".into(),
                options: vec!["a".into()],
                session: false,
                text: "t".into(),
                markup: None,
                message_id: Some(9),
                prompts: vec![11],
                closed: None,
                countdown: None,
            },
        );
        let gate = Posted {
            serial: 4,
            what: What::Gate,
            instance: "g1".into(),
            options: Vec::new(),
            session: true,
            message_id: Some(10),
            prompts: Vec::new(),
            ..state.posted["j:question:q1"].clone()
        };
        state.posted.insert("j:gate:g1".into(), gate);
        store.save(&state).unwrap();
        let saved = std::fs::read_to_string(dir.path().join(STATE_FILE)).unwrap();
        assert_eq!(saved.matches("\"session\"").count(), 1, "{saved}");
        // A post saved before the session's button: its gate offered nothing more.
        let older = saved
            .replace("\"session\":true,", "")
            .replace("\"session\": true,", "");
        assert!(!older.contains("session"), "{older}");
        let older: State = serde_json::from_str(&older).unwrap();
        assert!(!older.by_serial(4).unwrap().1.session);
        let back = store.load().unwrap();
        assert!(back.by_serial(4).unwrap().1.session);
        assert!(!back.by_serial(3).unwrap().1.session);
        assert_eq!(back.offset, 42);
        assert_eq!(back.by_message(11).as_deref(), Some("j:question:q1"));
        assert_eq!(back.by_serial(3).unwrap().1.instance, "q1");
        drop(store);
        assert!(
            Store::open(dir.path()).is_ok(),
            "the lock goes with its bridge"
        );
        std::fs::write(dir.path().join(STATE_FILE), "{nope").unwrap();
        let err = Store::open(dir.path()).unwrap().load().unwrap_err();
        assert!(err.to_string().contains("move it aside"), "{err}");
    }
}
