//! meta.json on the wire: the fields every job has, and [`MetaMore`]'s rarer ones carried
//! beside them in the same object, as meta.json has them.

use chrono::{DateTime, Utc};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use super::is_false;
use crate::jobs::model::checks::Checks;
use crate::jobs::model::meta::{Meta, MetaMore};
use crate::jobs::model::review::Review;
use crate::jobs::model::session::{RunResult, Usage};
use crate::jobs::model::stop::StopRequest;

/// meta.json as read (`type` is meta.json's name for `kind`); the fields [`MetaMore`] holds
/// are carried beside the others, as meta.json has them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetaRecord {
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub id: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub project: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub task: CompactString,
    #[serde(rename = "type", skip_serializing_if = "CompactString::is_empty")]
    pub kind: CompactString,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub user: CompactString,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub status: CompactString,
    #[serde(skip_serializing_if = "is_false")]
    pub debug: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(flatten)]
    pub more: MetaMoreRecord,
}

impl From<Meta> for MetaRecord {
    fn from(model: Meta) -> MetaRecord {
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
            more,
        } = model;
        MetaRecord {
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
            more: more.map(|m| *m).unwrap_or_default().into(),
        }
    }
}

impl From<MetaRecord> for Meta {
    fn from(record: MetaRecord) -> Meta {
        let MetaRecord {
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
            more,
        } = record;
        let more = MetaMore::from(more);
        Meta {
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
            more: (more != MetaMore::default()).then(|| Box::new(more)),
        }
    }
}

mirror! {
    /// The rest of meta.json (see [`MetaMore`]).
    #[derive(Default)]
    #[serde(default)]
    MetaMoreRecord <=> MetaMore {
        #[serde(skip_serializing_if = "Option::is_none")]
        estimated_duration_seconds: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        priority: Option<String>,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        retry_of: CompactString,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        host: CompactString,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        agent: CompactString,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        cwd: CompactString,
        #[serde(skip_serializing_if = "is_false")]
        supervised: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop: Option<Box<StopRequest>>,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        session_id: CompactString,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        resumes: CompactString,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Box<Usage>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        results: Vec<RunResult>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        resumed_by: Vec<String>,
        #[serde(skip_serializing_if = "is_false")]
        foreground: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        review: Option<Box<Review>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        checks: Option<Box<Checks>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        port: Option<u16>,
        #[serde(skip_serializing_if = "CompactString::is_empty")]
        setup_error: CompactString,
    }
}
