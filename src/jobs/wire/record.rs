//! A job as the wire carries it: everything the cockpit and the CLI show of it, and nothing that
//! only makes sense on its own machine (its directory).
//!
//! The model reads its files leniently and by hand (meta.json as the orchestrator writes it, a
//! question as a person writes it), so its types have no serde form of their own; these mirrors
//! are that form, strict and exact, for luzia talking to luzia. Each mirror is converted by
//! taking the model's struct apart field by field, without `..`: a field added to the model does
//! not compile until the wire has decided how to carry it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use crate::jobs::model::id::JobId;
use crate::jobs::model::job::{Job, Problem};
use crate::jobs::model::lifecycle::{Answer, Exchange};
use crate::jobs::model::process::ProcessRecord;
use crate::jobs::model::progress::Progress;
use crate::jobs::model::session::Activity;
use crate::jobs::model::status::Status;
use crate::jobs::model::stop::StopRequest;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};

/// A serde mirror of a model struct whose fields it carries as they are, and the two
/// conversions, each naming every field.
macro_rules! mirror {
    ($(#[$attr:meta])* $record:ident <=> $model:ident {
        $($(#[$fattr:meta])* $field:ident: $ty:ty,)*
    }) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        $(#[$attr])*
        pub struct $record {
            $($(#[$fattr])* pub $field: $ty,)*
        }

        impl From<$model> for $record {
            fn from(model: $model) -> $record {
                let $model { $($field),* } = model;
                $record { $($field),* }
            }
        }

        impl From<$record> for $model {
            fn from(record: $record) -> $model {
                let $record { $($field),* } = record;
                $model { $($field),* }
            }
        }
    };
}

fn is_false(b: &bool) -> bool {
    !*b
}

mod meta;
pub use meta::MetaRecord;

mirror! {
    /// progress.json as read (`percent` already clamped).
    #[derive(Default)]
    #[serde(default)]
    ProgressRecord <=> Progress {
        #[serde(skip_serializing_if = "Option::is_none")]
        percent: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        total_steps: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        step_name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        updated_at: Option<DateTime<Utc>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        eta_seconds: Option<u64>,
    }
}

mirror! {
    /// activity.json: what the agent is doing now.
    #[derive(Default)]
    #[serde(default)]
    ActivityRecord <=> Activity {
        what: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        since: Option<DateTime<Utc>>,
    }
}

mirror! {
    /// A question as read: its type already decided, its options as labels with their
    /// descriptions beside them.
    QuestionRecord <=> Question {
        #[serde(default)]
        id: String,
        #[serde(rename = "type", default = "question_type::text", with = "question_type")]
        kind: QuestionType,
        #[serde(default)]
        question: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        options: Vec<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        context: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_at: Option<DateTime<Utc>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_minutes: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_if_timeout: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        header: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        descriptions: Vec<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        multi_select: bool,
    }
}

mirror! {
    /// An approval gate, with its instance id (derived on its machine when the file has none).
    #[derive(Default)]
    #[serde(default)]
    GateRecord <=> Gate {
        id: String,
        gate: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        description: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        context: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        awaiting_since: Option<DateTime<Utc>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        auto_approve_after_minutes: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        allow_session: Option<String>,
    }
}

mirror! {
    /// The answer a stopped job was given.
    #[derive(Default)]
    #[serde(default)]
    AnswerRecord <=> Answer {
        question_id: String,
        answer: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        answered_by: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        answered_at: Option<DateTime<Utc>>,
        #[serde(skip_serializing_if = "String::is_empty")]
        source: String,
    }
}

/// The question a job stopped for (`needs_input`), and its answer once given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExchangeRecord {
    pub question: QuestionRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerRecord>,
}

impl From<Exchange> for ExchangeRecord {
    fn from(Exchange { question, answer }: Exchange) -> ExchangeRecord {
        ExchangeRecord {
            question: question.into(),
            answer: answer.map(Into::into),
        }
    }
}

impl From<ExchangeRecord> for Exchange {
    fn from(ExchangeRecord { question, answer }: ExchangeRecord) -> Exchange {
        Exchange {
            question: question.into(),
            answer: answer.map(Into::into),
        }
    }
}

/// What could not be read, and where (a path on the job's machine: shown, never opened).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProblemRecord {
    pub path: String,
    pub message: String,
}

/// One job: what a reading of its directory found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its id on its own machine.
    #[serde(with = "key")]
    pub id: JobId,
    #[serde(with = "status", default = "status::unknown")]
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// process.json: which processes are the job's (only meaningful on its machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    #[serde(default)]
    pub log_len: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_mtime: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<ProgressRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<ActivityRecord>,
    /// The question pending (unanswered), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionRecord>,
    /// The gate pending (undecided), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<ExchangeRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "keys")]
    pub retried_by: Vec<JobId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<ProblemRecord>,
}

impl Record {
    pub fn of(job: &Job) -> Record {
        let Job {
            id,
            // A path on its own machine: the reader chooses its own.
            home: _,
            under_root: _,
            meta,
            status,
            exit_code,
            pid,
            process_record,
            progress,
            activity,
            question,
            gate,
            started,
            finished,
            log_len,
            log_mtime,
            queue_position,
            stop,
            exchange,
            retried_by,
            problems,
        } = job;
        Record {
            id: id.clone(),
            status: *status,
            exit_code: *exit_code,
            pid: *pid,
            process: process_record.as_deref().cloned(),
            started: *started,
            finished: *finished,
            log_len: *log_len,
            log_mtime: *log_mtime,
            meta: meta.as_deref().cloned().map(Into::into),
            progress: progress.as_deref().cloned().map(Into::into),
            activity: activity.as_deref().cloned().map(Into::into),
            question: question.as_deref().cloned().map(Into::into),
            gate: gate.as_deref().cloned().map(Into::into),
            stop: stop.as_deref().cloned(),
            exchange: exchange.as_deref().cloned().map(Into::into),
            queue_position: queue_position.map(|p| p as usize),
            retried_by: retried_by.to_vec(),
            problems: problems
                .iter()
                .map(|p| ProblemRecord {
                    path: p.path.to_string_lossy().into_owned(),
                    message: p.message.clone(),
                })
                .collect(),
        }
    }

    /// The job, keyed `id` and placed at `dir` by the reader (a remote job's `dir` is never
    /// read: it names no directory here).
    pub fn into_job(self, id: JobId, dir: PathBuf) -> Job {
        let Record {
            id: _, // the reader's key stands for it
            status,
            exit_code,
            pid,
            process,
            started,
            finished,
            log_len,
            log_mtime,
            meta,
            progress,
            activity,
            question,
            gate,
            stop,
            exchange,
            queue_position,
            retried_by,
            problems,
        } = self;
        let (home, under_root) = Job::home_of(&id, dir);
        Job {
            id,
            home,
            under_root,
            meta: meta.map(|m| Box::new(m.into())),
            status,
            exit_code,
            pid,
            process_record: process.map(Box::new),
            progress: progress.map(|p| Box::new(p.into())),
            activity: activity.map(|a| Box::new(a.into())),
            question: question.map(|q| Box::new(q.into())),
            gate: gate.map(|g| Box::new(g.into())),
            started,
            finished,
            log_len,
            log_mtime,
            // A place past u32::MAX (no queue is that long) is shown as none.
            queue_position: queue_position.and_then(|p| u32::try_from(p).ok()),
            stop: stop.map(Box::new),
            exchange: exchange.map(|e| Box::new(e.into())),
            retried_by: retried_by.into(),
            problems: problems
                .into_iter()
                .map(|p| Problem {
                    path: p.path.into(),
                    message: p.message,
                })
                .collect(),
        }
    }

    /// The question's and the gate's instances pending: what `raised` and `settled` are about.
    pub fn pending(&self) -> [Option<&str>; 2] {
        [
            self.question.as_ref().map(|q| q.id.as_str()),
            self.gate.as_ref().map(|g| g.id.as_str()),
        ]
    }
}

/// A job key as text: a job id, or a queued task's row key (`queued:ID`, `queued:#N`).
pub(super) mod key {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::jobs::model::id::JobId;

    pub fn parse(s: &str) -> Option<JobId> {
        if let Ok(id) = JobId::parse(s) {
            return Some(id);
        }
        let rest = s.strip_prefix("queued:")?;
        match rest.strip_prefix('#') {
            Some(place) => place.parse().ok().map(JobId::queued_at),
            None => JobId::queued(rest),
        }
    }

    pub fn serialize<S: Serializer>(id: &JobId, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(id.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<JobId, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("'{}' is not a job id", text.escape_debug()))
        })
    }
}

/// A list of job ids; one that is not an id is left out rather than refusing the job.
mod keys {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::jobs::model::id::JobId;

    pub fn serialize<S: Serializer>(ids: &[JobId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(JobId::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<JobId>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        Ok(texts.iter().filter_map(|t| super::key::parse(t)).collect())
    }
}

/// A status by its name; a name this reader does not know (a newer luzia's) is `unknown`.
mod status {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::jobs::model::status::Status;

    pub fn unknown() -> Status {
        Status::Unknown
    }

    pub fn serialize<S: Serializer>(status: &Status, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(status.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        Ok(String::deserialize(d)?.parse().unwrap_or(Status::Unknown))
    }
}

/// A question's type by its name; one this reader does not know is answered in free text.
mod question_type {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::jobs::model::waiting::QuestionType;

    pub fn text() -> QuestionType {
        QuestionType::Text
    }

    pub fn serialize<S: Serializer>(kind: &QuestionType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<QuestionType, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "choice" => QuestionType::Choice,
            "confirm" => QuestionType::Confirm,
            _ => QuestionType::Text,
        })
    }
}
