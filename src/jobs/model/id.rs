//! Job ids: the only strings from outside that ever become path components.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Longest id the protocol allows (1 leading character + 127 more).
pub const MAX_LEN: usize = 128;

/// A validated job id: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, or the key of a queued task's row
/// (`queued:` and a queue id, or `queued:#` and its place; see [`JobId::queued`]).
///
/// Holding a `JobId` proves the string cannot climb out of the jobs root (`..`, `/`, NUL and
/// leading dots are all impossible), so paths are only ever built from this type. A queued key
/// is one path component too, and names no job: the colon is outside the pattern, so no job
/// directory luzia reads has that name.
///
/// Shared, not copied: the cockpit keeps each id in several places (the jobs, the table's rows,
/// the issue scanners), and at 100,000 jobs a copy each would cost megabytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(Arc<str>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{shown}' is not a valid job id: an id is 1 to 128 letters, digits, '.', '_' or '-', \
     starting with a letter or digit (run `luzia jobs` to list the ids)"
)]
pub struct InvalidJobId {
    shown: String,
}

impl JobId {
    pub fn parse(s: &str) -> Result<Self, InvalidJobId> {
        if is_valid(s) {
            Ok(JobId(Arc::from(s)))
        } else {
            Err(InvalidJobId {
                shown: s.escape_debug().take(80).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The row key of the queued task `queue_id`, distinct from every job id; `None` when the
    /// queue id is not itself a valid id (see [`JobId::queued_at`]).
    pub fn queued(queue_id: &str) -> Option<JobId> {
        is_valid(queue_id).then(|| JobId(format!("{QUEUED}{queue_id}").into()))
    }

    /// The row key of the queued task at `place`, for an entry whose id cannot be a key.
    pub fn queued_at(place: usize) -> JobId {
        JobId(format!("{QUEUED}#{place}").into())
    }

    /// A queued task's row, not a job directory.
    pub fn is_queued(&self) -> bool {
        self.0.starts_with(QUEUED)
    }

    /// The cockpit's key of job `id` on host `host`: `"<id>@<host>"`.
    ///
    /// '@' is outside the id pattern, so the key never names a local directory (no path is
    /// ever built from it) and splits back unambiguously: host names follow the id pattern
    /// (the config refuses others), so neither half holds an '@'.
    pub fn on_host(host: &str, id: &JobId) -> JobId {
        debug_assert!(
            is_valid(host),
            "host name {host:?} passed the config's check"
        );
        JobId(format!("{id}{AT}{host}").into())
    }

    /// The host of a remote key, `None` for a local job (no '@').
    pub fn host(&self) -> Option<&str> {
        // A byte search: asked of every job in every pass over a large root, where the general
        // char search cost more than the rest of the pass ('@' is ASCII).
        let at = self.0.bytes().position(|b| b == AT as u8)?;
        Some(&self.0[at + 1..])
    }

    /// The job's own id on its host (itself for a local job).
    pub fn local_id(&self) -> JobId {
        match self.0.split_once(AT) {
            Some((id, _)) => JobId(id.into()),
            None => self.clone(),
        }
    }
}

/// What separates a remote job's id from its host in the cockpit's key.
const AT: char = '@';

/// What a queued task's row key starts with.
const QUEUED: &str = "queued:";

/// The protocol's pattern, checked by hand: a regex engine for eight lines is not worth it.
pub fn is_valid(s: &str) -> bool {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    bytes.len() <= MAX_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl FromStr for JobId {
    type Err = InvalidJobId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobId::parse(s)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_refuses_per_protocol() {
        let cases: &[(&str, bool)] = &[
            ("142315-a1b2", true),
            ("a", true),
            ("A.b_c-d", true),
            ("9", true),
            ("", false),
            (".", false),
            ("..", false),
            ("../../etc/passwd", false),
            ("-rf", false),
            ("_x", false),
            (".hidden", false),
            ("a/b", false),
            ("a b", false),
            ("a\0b", false),
            ("é", false),
            ("job\n", false),
        ];
        for (input, ok) in cases {
            assert_eq!(is_valid(input), *ok, "{input:?}");
            assert_eq!(JobId::parse(input).is_ok(), *ok, "{input:?}");
        }
    }

    #[test]
    fn queued_keys_never_equal_a_job_id_and_stay_one_component() {
        let key = JobId::queued("00c885a0").unwrap();
        assert_ne!(key, JobId::parse("00c885a0").unwrap());
        assert!(key.is_queued() && !JobId::parse("00c885a0").unwrap().is_queued());
        assert!(!is_valid(key.as_str()), "no job directory has this name");
        assert!(JobId::parse(key.as_str()).is_err(), "nor can one be typed");
        assert_eq!(JobId::queued("../../etc"), None);
        assert_eq!(JobId::queued(""), None);
        let at = JobId::queued_at(3);
        assert!(at.is_queued() && !at.as_str().contains('/'));
        assert_ne!(at, JobId::queued("3").unwrap());
    }

    #[test]
    fn a_remote_key_splits_back_into_its_id_and_host() {
        let id = JobId::parse("142315-a1b2").unwrap();
        let key = JobId::on_host("gpu2", &id);
        assert_eq!(key.as_str(), "142315-a1b2@gpu2");
        assert_eq!(key.host(), Some("gpu2"));
        assert_eq!(key.local_id(), id);
        assert_ne!(key, id, "the same id on two hosts is two jobs");
        assert_ne!(key, JobId::on_host("gpu3", &id));
        assert!(!is_valid(key.as_str()), "no job directory has this name");
        assert!(JobId::parse(key.as_str()).is_err(), "nor can one be typed");
        // Host names follow the id pattern, dots and all.
        let dotted = JobId::on_host("gpu-2.lab_a", &id);
        assert_eq!(dotted.host(), Some("gpu-2.lab_a"));
        assert_eq!(dotted.local_id(), id);
    }

    #[test]
    fn a_local_key_has_no_host_and_is_its_own_id() {
        let id = JobId::parse("142315-a1b2").unwrap();
        assert_eq!(id.host(), None);
        assert_eq!(id.local_id(), id);
        let queued = JobId::queued("00c885a0").unwrap();
        assert_eq!(queued.host(), None);
        assert_eq!(queued.local_id(), queued);
        let remote_queued = JobId::on_host("gpu2", &queued);
        assert_eq!(remote_queued.host(), Some("gpu2"));
        assert_eq!(remote_queued.local_id(), queued);
        assert!(remote_queued.is_queued());
    }

    #[test]
    fn length_limit_is_128() {
        assert!(is_valid(&"a".repeat(128)));
        assert!(!is_valid(&"a".repeat(129)));
    }

    #[test]
    fn error_names_the_input_escaped() {
        let err = JobId::parse("../\x1b[2Jx").unwrap_err().to_string();
        assert!(err.contains("'../\\u{1b}[2Jx'"), "{err}");
        assert!(!err.contains('\x1b'));
    }
}
