//! Which processes stand for a job. luzia's supervisor records its own pid and its agent's in
//! `process.json`, each with its start time, so that a later process given the same number is
//! never taken for the job's. A pid with no record (the orchestrator's directories, and luzia's
//! from before the record) is the job's only if its process started near the job's `started`.
//! In a job directory given to the agent's user, the record is read only from luzia's private
//! directory (see `fs::private`): anywhere else its bytes could be the agent's.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::fs::names::{PRIVATE_DIR, PROCESS_FILE};
use crate::jobs::fs::private;

use crate::jobs::os::process::{Claim, ProcessRef, Start};

/// One process as recorded: its pid, and when it started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    pub pid: u32,
    /// `/proc/PID/stat` field 22: clock ticks after boot.
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id` of the boot it started in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

impl Recorded {
    /// The live process `pid`, to be recorded.
    pub fn of(pid: u32) -> Option<Recorded> {
        let Start { ticks, boot_id } = Start::of(pid)?;
        Some(Recorded {
            pid,
            start_ticks: ticks,
            boot_id,
        })
    }

    pub fn process(&self) -> ProcessRef {
        ProcessRef::new(
            self.pid,
            Claim::Recorded(Start {
                ticks: self.start_ticks,
                boot_id: self.boot_id.clone(),
            }),
        )
    }
}

/// `process.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<Recorded>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Recorded>,
    /// The job it is the record of: a record found under another job's name is not this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

impl ProcessRecord {
    pub fn parse(bytes: &[u8]) -> Result<ProcessRecord, String> {
        let fallback = "its pids are checked against the job's start time instead";
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(v @ serde_json::Value::Object(_)) => serde_json::from_value(v)
                .map_err(|e| format!("is not a process record ({e}): {fallback}")),
            Ok(_) => Err(format!("is not a JSON object: {fallback}")),
            Err(e) => Err(format!("is not valid JSON ({e}): {fallback}")),
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

/// Where a job's processes may be read from.
#[derive(Debug, PartialEq, Eq)]
pub enum Source {
    /// luzia's private record of the job (`.luzia/process.json`), which the agent cannot write.
    Private(ProcessRecord),
    /// The job directory's `pid` and `process.json` (and meta.json's pid): the orchestrator's
    /// jobs and older luzia's, in a directory that only trusted users may write.
    JobFiles,
    /// None: the directory was given to someone luzia does not trust, who could have written
    /// any of its files, and luzia's private record is not there.
    Nowhere,
}

/// Where the processes of job `id`, in `dir`, may be read from; what could not be read is told to
/// `problem` (the file, relative to `dir`, and why).
pub fn source(dir: &Path, id: &str, problem: &mut dyn FnMut(&str, String)) -> Source {
    let names_job = |b: &[u8]| ProcessRecord::parse(b).is_ok_and(|r| r.job.as_deref() == Some(id));
    let private_file = format!("{PRIVATE_DIR}/{PROCESS_FILE}");
    match private::read(dir, PROCESS_FILE, names_job) {
        Ok(Some(bytes)) => {
            if let Ok(record) = ProcessRecord::parse(&bytes) {
                return Source::Private(record);
            }
        }
        Ok(None) => {}
        Err(e) => problem(&private_file, e.to_string()),
    }
    match private::given_away(dir) {
        None => Source::JobFiles,
        Some(why) => {
            problem(
                &private_file,
                format!(
                    "is missing, and the job directory {why}, so its pid files may be the \
                     agent's: no process is taken for the job's"
                ),
            );
            Source::Nowhere
        }
    }
}

/// The processes that stand for a job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Processes {
    /// The process whose life means the job runs: luzia's supervisor, or the orchestrator's agent.
    pub main: Option<ProcessRef>,
    /// The agent a supervisor started; it leads its own process group.
    pub agent: Option<ProcessRef>,
}

impl Processes {
    /// `pid` (the pid file's, else meta.json's) with what `record` says of it; a pid the record
    /// does not name is checked against `started`, and a pid with neither is taken as it is.
    pub fn identify(
        pid: Option<u32>,
        record: Option<&ProcessRecord>,
        started: Option<DateTime<Utc>>,
    ) -> Processes {
        let recorded = record
            .and_then(|r| r.supervisor.as_ref())
            .filter(|s| Some(s.pid) == pid);
        let main = pid.map(|pid| match recorded {
            Some(r) => r.process(),
            None => ProcessRef::new(
                pid,
                started.map_or(Claim::Unchecked, |t| Claim::StartedNear(t.timestamp())),
            ),
        });
        Processes {
            main,
            agent: record.and_then(|r| r.agent.as_ref()).map(Recorded::process),
        }
    }

    /// The pid shown for the job.
    pub fn pid(&self) -> Option<u32> {
        self.main.as_ref().map(|p| p.pid)
    }

    /// Some process is known at all.
    pub fn is_known(&self) -> bool {
        self.main.is_some() || self.agent.is_some()
    }

    /// The job's supervisor, or its agent, is alive (and is the process recorded). An agent
    /// outliving its supervisor still runs, though nobody will write its exit line.
    pub fn is_alive(&self) -> bool {
        self.main.as_ref().is_some_and(ProcessRef::is_alive)
            || self.agent.as_ref().is_some_and(ProcessRef::is_alive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_used_for_the_pid_it_names_and_the_start_rule_otherwise() {
        let me = std::process::id();
        let record = ProcessRecord {
            supervisor: Recorded::of(me),
            agent: None,
            job: Some("120000-abcd".into()),
        };
        let parsed = ProcessRecord::parse(&record.to_json()).unwrap();
        assert_eq!(parsed, record);
        let p = Processes::identify(Some(me), Some(&record), None);
        assert!(matches!(p.main.as_ref().unwrap().claim, Claim::Recorded(_)));
        assert!(p.is_alive());
        // A record of another pid says nothing of this one.
        let other = Processes::identify(Some(me + 1), Some(&record), Some(Utc::now()));
        assert!(matches!(other.main.unwrap().claim, Claim::StartedNear(_)));
        assert_eq!(
            Processes::identify(Some(7), None, None).main.unwrap().claim,
            Claim::Unchecked
        );
        assert!(!Processes::default().is_known() && !Processes::default().is_alive());
    }

    #[test]
    fn a_record_from_an_older_start_names_a_dead_job() {
        let me = std::process::id();
        let mut stale = Recorded::of(me).unwrap();
        stale.start_ticks -= 1;
        let record = ProcessRecord {
            supervisor: Some(stale.clone()),
            agent: Some(stale),
            job: None,
        };
        let p = Processes::identify(Some(me), Some(&record), None);
        assert!(!p.is_alive(), "this process is not the one recorded");
    }

    /// luzia's private record when there is one naming the job; else the job directory's own
    /// files, unless it was given to a user luzia does not trust.
    #[test]
    fn the_source_of_a_job_s_processes() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("120000-abcd");
        std::fs::create_dir(&dir).unwrap();
        let mut problems = Vec::new();
        let mut source = |dir: &Path| {
            let mut noted = |name: &str, m: String| problems.push(format!("{name}: {m}"));
            super::source(dir, "120000-abcd", &mut noted)
        };
        assert_eq!(source(&dir), Source::JobFiles);
        let record = ProcessRecord {
            supervisor: Recorded::of(std::process::id()),
            agent: None,
            job: Some("120000-abcd".into()),
        };
        let private = private::Private::create(&dir).unwrap();
        private
            .write(PROCESS_FILE, &record.to_json(), false)
            .unwrap();
        assert_eq!(source(&dir), Source::Private(record.clone()));
        // Another job's record is not this one's.
        let other = ProcessRecord {
            job: Some("120000-other".into()),
            ..record
        };
        private
            .write(PROCESS_FILE, &other.to_json(), false)
            .unwrap();
        assert_eq!(source(&dir), Source::JobFiles);
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&dir, Some(54321), None).unwrap();
            assert_eq!(source(&dir), Source::Nowhere);
        } else {
            eprintln!("SKIPPED (in part): giving a directory to another user needs root");
        }
        assert!(
            problems[0].contains(".luzia/process.json: is not this job's record"),
            "{problems:?}"
        );
    }

    #[test]
    fn malformed_records_are_refused_with_a_reason() {
        for bad in [&b"[]"[..], b"{\"supervisor\": {\"pid\": \"x\"}}", b"{"] {
            let e = ProcessRecord::parse(bad).unwrap_err();
            assert!(e.contains("start time instead"), "{e}");
        }
        // Unknown fields are ignored, absent ones empty.
        let r = ProcessRecord::parse(br#"{"host": "x"}"#).unwrap();
        assert_eq!(r, ProcessRecord::default());
    }
}
