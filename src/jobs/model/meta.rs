//! `meta.json`, read leniently: the orchestrator writes pids as strings, naive local times, and
//! fields this code has never heard of. Nothing here fails on a missing or odd field; only JSON
//! that is not an object at all is an error, and that error belongs to one job.

use chrono::{DateTime, Utc};
use compact_str::CompactString;
use serde_json::{Map, Value};

use crate::jobs::model::checks::Checks;
use crate::jobs::model::review::Review;
use crate::jobs::model::session::{RunResult, Usage};
use crate::jobs::model::stop::StopRequest;
use crate::jobs::model::time::parse_timestamp;

/// How many ports a job gets: `port` (`LUZIA_PORT`) and the ones after it.
pub const PORTS_PER_JOB: u16 = 10;

/// What the dispatcher wrote. Every field is optional in practice; absent text is empty. Text
/// is a [`CompactString`]: up to 24 bytes held in place, without an allocation.
///
/// The fields every job has are here; the others are in [`MetaMore`], boxed apart and read
/// through this record as if they were its own (`meta.cwd`): the cockpit keeps every job's
/// record, and most jobs of a long-lived root have none of them.
///
/// Serialized, the record is what the index of settled jobs keeps of meta.json ([`Meta::record`]):
/// read back by serde's derived code, in a third of the time the lenient reading of meta.json
/// takes.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Meta {
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub id: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub project: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub task: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub kind: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub user: CompactString,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    /// Advisory only: written once at start. The real status is derived (see `status`).
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub status: CompactString,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub debug: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The rest, `None` when all of it is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<Box<MetaMore>>,
}

/// The fields of meta.json that the orchestrator's jobs leave out (luzia's dispatcher writes
/// some of them).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MetaMore {
    pub estimated_duration_seconds: Option<u64>,
    pub priority: Option<String>,
    pub retry_of: CompactString,
    pub host: CompactString,
    pub agent: CompactString,
    /// The directory the agent ran in (luzia's dispatcher writes it).
    pub cwd: CompactString,
    /// Dispatched by luzia: meta.json names the argument vector its supervisor runs.
    pub supervised: bool,
    /// A requested stop, as the supervisor recorded it when the agent ended.
    pub stop: Option<Box<StopRequest>>,
    /// The Claude Code session the job runs (fixed at dispatch, confirmed by the stream).
    pub session_id: CompactString,
    /// The job whose session this one continues (`luzia reply`, a resuming retry).
    pub resumes: CompactString,
    /// The figures of the run, as the supervisor recorded them from the agent's stream.
    pub usage: Option<Box<Usage>>,
    /// Each result of the run, with its own figures (`usage` adds them up).
    pub results: Vec<RunResult>,
    /// The jobs that continued this one's session (`luzia reply`, a resuming retry, `attach`),
    /// oldest first.
    pub resumed_by: Vec<String>,
    /// Run interactively in an operator's terminal (`luzia run --fg`, `luzia attach`): its
    /// output went there, not to output.log.
    pub foreground: bool,
    /// What the job changed in its project, where and how it was isolated.
    pub review: Option<Box<Review>>,
    /// The project's checks and how they went.
    pub checks: Option<Box<Checks>>,
    /// The first of the job's ports (`LUZIA_PORT`), chosen when it started.
    pub port: Option<u16>,
    /// Why the project's setup failed, when it did (the agent was then not started).
    pub setup_error: CompactString,
}

/// What a record without any of [`MetaMore`]'s fields reads as.
static NO_MORE: MetaMore = MetaMore {
    estimated_duration_seconds: None,
    priority: None,
    retry_of: CompactString::const_new(""),
    host: CompactString::const_new(""),
    agent: CompactString::const_new(""),
    cwd: CompactString::const_new(""),
    supervised: false,
    stop: None,
    session_id: CompactString::const_new(""),
    resumes: CompactString::const_new(""),
    usage: None,
    results: Vec::new(),
    resumed_by: Vec::new(),
    foreground: false,
    review: None,
    checks: None,
    port: None,
    setup_error: CompactString::const_new(""),
};

impl std::ops::Deref for Meta {
    type Target = MetaMore;

    fn deref(&self) -> &MetaMore {
        self.more.as_deref().unwrap_or(&NO_MORE)
    }
}

impl std::ops::DerefMut for Meta {
    fn deref_mut(&mut self) -> &mut MetaMore {
        self.more.get_or_insert_with(Box::default)
    }
}

/// Equal when every field is: a record whose rest was written empty equals one without it.
impl PartialEq for Meta {
    fn eq(&self, other: &Meta) -> bool {
        let Meta {
            id,
            project,
            task,
            kind,
            user,
            pid,
            started,
            status,
            debug,
            finished,
            exit_code,
            more: _,
        } = self;
        (id, project, task, kind, user, pid, started, status, debug)
            == (
                &other.id,
                &other.project,
                &other.task,
                &other.kind,
                &other.user,
                &other.pid,
                &other.started,
                &other.status,
                &other.debug,
            )
            && (finished, exit_code) == (&other.finished, &other.exit_code)
            && **self == **other
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("is not valid JSON ({0})")]
    Json(#[from] serde_json::Error),
    #[error("holds JSON {0}, not an object")]
    NotAnObject(&'static str),
}

impl Meta {
    /// The record as the index of settled jobs keeps it: its fields, as JSON.
    pub fn record(&self) -> Option<Vec<u8>> {
        serde_json::to_vec(self).ok()
    }

    /// A record that [`Meta::record`] made.
    pub fn from_record(bytes: &[u8]) -> Result<Meta, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    pub fn parse(bytes: &[u8]) -> Result<Meta, MetaError> {
        let value: Value = serde_json::from_slice(bytes)?;
        let Value::Object(raw) = value else {
            return Err(MetaError::NotAnObject(json_kind(&value)));
        };
        let more = MetaMore {
            estimated_duration_seconds: integer(&raw, "estimated_duration_seconds")
                .and_then(|n| u64::try_from(n).ok()),
            priority: raw.get("priority").and_then(scalar_text),
            retry_of: text(&raw, "retry_of"),
            host: text(&raw, "host"),
            agent: text(&raw, "agent"),
            cwd: text(&raw, "cwd"),
            supervised: raw.get("argv").is_some_and(Value::is_array),
            stop: raw
                .get("stop")
                .filter(|v| v.is_object())
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
            session_id: text(&raw, "session_id"),
            resumes: text(&raw, "resumes"),
            usage: Usage::from_meta(raw.get("usage")).map(Box::new),
            results: RunResult::list_from_meta(raw.get("results")),
            resumed_by: raw
                .get("resumed_by")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            foreground: raw.get("foreground").is_some_and(truthy),
            review: Review::from_meta(raw.get("review")),
            checks: Checks::from_meta(raw.get("checks")),
            port: integer(&raw, "port").and_then(|n| u16::try_from(n).ok()),
            setup_error: text(&raw, "setup_error"),
        };
        Ok(Meta {
            id: text(&raw, "id"),
            project: text(&raw, "project"),
            task: text(&raw, "task"),
            kind: text(&raw, "type"),
            user: text(&raw, "user"),
            pid: integer(&raw, "pid")
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&p| p > 0),
            started: time(&raw, "started"),
            status: text(&raw, "status"),
            debug: raw.get("debug").is_some_and(truthy),
            finished: time(&raw, "finished"),
            exit_code: integer(&raw, "exit_code").and_then(|n| i32::try_from(n).ok()),
            more: (more != NO_MORE).then(|| Box::new(more)),
        })
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string field, or a number rendered as text; anything else reads as empty. Kept in place,
/// not on the heap, when short (ids, projects, users, types, statuses): the cockpit keeps every
/// job's record, and at 100,000 jobs an allocation each is megabytes.
fn text(raw: &Map<String, Value>, key: &str) -> CompactString {
    match raw.get(key) {
        Some(Value::String(s)) => CompactString::from(s.as_str()),
        Some(v) => scalar_text(v).map(CompactString::from).unwrap_or_default(),
        None => CompactString::default(),
    }
}

/// For serde: a string field, or a number or boolean rendered as text; anything else (a list,
/// an object, null) reads as empty instead of failing the whole record.
pub fn lenient_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::Deserialize;
    Ok(scalar_text(&Value::deserialize(d)?).unwrap_or_default())
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A number, or a string holding one (`"pid": "12847"`), or a float with no fraction.
fn integer(raw: &Map<String, Value>, key: &str) -> Option<i64> {
    match raw.get(key)? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn time(raw: &Map<String, Value>, key: &str) -> Option<DateTime<Utc>> {
    match raw.get(key)? {
        Value::String(s) => parse_timestamp(s),
        // Unix seconds, as a few hand-written agents emit.
        Value::Number(n) => DateTime::from_timestamp(n.as_f64()? as i64, 0),
        _ => None,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => matches!(s.to_ascii_lowercase().as_str(), "true" | "1" | "yes"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_orchestrator_form() {
        let m = Meta::parse(
            br#"{"id": "142315-a1b2", "project": "musica", "task": "Run tests and report results",
             "type": "agent", "user": "musica", "pid": "12847", "started": "2026-01-09T14:23:15Z",
             "status": "running", "debug": false, "zzz_future": {"x": 1}}"#,
        )
        .unwrap();
        assert_eq!(m.id, "142315-a1b2");
        assert_eq!(m.project, "musica");
        assert_eq!(m.kind, "agent");
        assert_eq!(m.pid, Some(12847));
        assert_eq!(m.started.unwrap().to_rfc3339(), "2026-01-09T14:23:15+00:00");
        assert!(!m.debug);
        assert!(
            !m.supervised,
            "unknown fields are ignored; no argv, no supervisor"
        );
    }

    #[test]
    fn lenient_field_table() {
        // (json, pid, started is some, exit_code)
        let cases: &[(&str, Option<u32>, bool, Option<i32>)] = &[
            (r#"{}"#, None, false, None),
            (r#"{"pid": 12847}"#, Some(12847), false, None),
            (r#"{"pid": " 42 "}"#, Some(42), false, None),
            (r#"{"pid": "abc"}"#, None, false, None),
            (r#"{"pid": -1}"#, None, false, None),
            (r#"{"pid": 0}"#, None, false, None),
            (r#"{"pid": null}"#, None, false, None),
            (r#"{"pid": 12.0}"#, Some(12), false, None),
            (r#"{"started": "2026-01-09T14:23:15"}"#, None, true, None),
            (r#"{"started": "not a time"}"#, None, false, None),
            (r#"{"started": 1767968595}"#, None, true, None),
            (r#"{"exit_code": "-9"}"#, None, false, Some(-9)),
            (r#"{"project": 7, "task": ["x"]}"#, None, false, None),
        ];
        for (json, pid, started, exit) in cases {
            let m = Meta::parse(json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(m.pid, *pid, "{json}");
            assert_eq!(m.started.is_some(), *started, "{json}");
            assert_eq!(m.exit_code, *exit, "{json}");
        }
        assert_eq!(Meta::parse(br#"{"project": 7}"#).unwrap().project, "7");
    }

    #[test]
    fn a_recorded_stop_is_read_and_an_odd_one_is_none() {
        let m = Meta::parse(
            br#"{"exit_code": 0, "stop": {"requested_by": "bruno@host",
                 "requested_at": "2026-01-11T14:31:02Z", "source": "tui"}}"#,
        )
        .unwrap();
        let stop = m.stop.clone().unwrap();
        assert_eq!(
            (stop.requested_by.as_str(), stop.source.as_str()),
            ("bruno@host", "tui")
        );
        for odd in [
            r#"{}"#,
            r#"{"stop": null}"#,
            r#"{"stop": "yes"}"#,
            r#"{"stop": [1]}"#,
        ] {
            assert_eq!(Meta::parse(odd.as_bytes()).unwrap().stop, None, "{odd}");
        }
    }

    #[test]
    fn the_session_chain_is_read_leniently() {
        let m = Meta::parse(
            br#"{"session_id": "s", "resumes": "j1", "resumed_by": ["j3", 4, "j5"],
                 "foreground": true}"#,
        )
        .unwrap();
        assert_eq!((m.session_id.as_str(), m.resumes.as_str()), ("s", "j1"));
        assert_eq!(m.resumed_by, ["j3", "j5"]);
        assert!(m.foreground);
        let odd = Meta::parse(br#"{"resumed_by": "j3"}"#).unwrap();
        assert!(odd.resumed_by.is_empty() && !odd.foreground);
    }

    #[test]
    fn the_results_of_a_run_are_read_leniently_and_survive_the_index_record() {
        let m = Meta::parse(
            br#"{"results": [{"at": "2026-11-21T09:05:00Z", "usage": {"turns": 3, "cost_usd": 0.03}},
                 {"usage": {"turns": "x"}}, 7, {"at": "2026-11-21T09:06:00Z"}]}"#,
        )
        .unwrap();
        let turns: Vec<Option<u64>> = m.results.iter().map(|r| r.usage.turns).collect();
        assert_eq!(turns, [Some(3), None]);
        assert!(m.results[0].at.is_some() && m.results[1].at.is_none());
        assert_eq!(Meta::from_record(&m.record().unwrap()).unwrap(), m);
        assert!(
            Meta::parse(br#"{"results": {"turns": 1}}"#)
                .unwrap()
                .results
                .is_empty()
        );
    }

    #[test]
    fn the_rest_is_boxed_only_when_meta_json_has_some_of_it() {
        let plain = Meta::parse(
            br#"{"id": "142315-a1b2", "project": "musica", "task": "t", "type": "agent",
             "user": "musica", "status": "running", "pid": "1"}"#,
        )
        .unwrap();
        assert!(
            plain.more.is_none(),
            "the orchestrator's form has none of it"
        );
        assert_eq!((plain.cwd.as_str(), plain.supervised), ("", false));
        let mut dispatched = Meta::parse(br#"{"cwd": "/srv/p", "argv": ["x"]}"#).unwrap();
        assert_eq!(dispatched.more.as_ref().unwrap().cwd, "/srv/p");
        assert!(dispatched.supervised);
        // Emptied by hand, it equals a record that never had any.
        dispatched.cwd = "".into();
        dispatched.supervised = false;
        assert_eq!(dispatched, Meta::parse(b"{}").unwrap());
        // The cockpit keeps one per job: the fields every job has, and a pointer.
        assert!(
            std::mem::size_of::<Meta>() <= 208,
            "{}",
            std::mem::size_of::<Meta>()
        );
    }

    #[test]
    fn malformed_is_an_error_not_a_panic() {
        for bad in [
            &br#"{"id": "x", "proj"#[..],
            b"",
            b"\xff\xfe",
            b"[1,2]",
            b"null",
        ] {
            assert!(
                Meta::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
