//! The queue: tasks waiting for a free slot, one JSON file each under
//! `<queue root>/pending/{high,normal}/<priority>_<timestamp>_<project>_<id>.json`. A task is
//! taken by renaming its file out of `pending/` (only one taker can succeed), high before
//! normal, then oldest first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::meta::lenient_text;
use crate::jobs::{Job, JobId, Meta, Status};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    High,
    Normal,
}

impl Priority {
    pub fn dir(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
        }
    }

    fn number(self) -> u8 {
        match self {
            Priority::High => 1,
            Priority::Normal => 5,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub id: String,
    pub project: String,
    pub priority: Priority,
    pub task: String,
    pub enqueued_at: String,
    pub enqueued_by: String,
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(
        "cannot use the queue at {path}: {source} (set queue_dir in the config to a writable directory)"
    )]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no queued task '{0}' (`luzia queue` lists them)")]
    NotFound(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> QueueError + '_ {
    move |source| QueueError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A queue file as it is on disk (protocol.md), in the order its keys are written. Read
/// leniently: a missing field, or one of another type, is empty; unknown fields (the
/// orchestrator's `skill_match`) are ignored.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(default, deserialize_with = "lenient_text")]
    id: String,
    #[serde(default, deserialize_with = "lenient_text")]
    project: String,
    /// 1 (high) or 5 (normal). The directory the file is in is what counts when reading.
    #[serde(default, deserialize_with = "lenient_priority")]
    priority: u8,
    #[serde(default, deserialize_with = "lenient_text")]
    prompt: String,
    #[serde(default, deserialize_with = "lenient_text")]
    enqueued_at: String,
    #[serde(default, deserialize_with = "lenient_text")]
    enqueued_by: String,
    #[serde(default, deserialize_with = "lenient_text")]
    status: String,
}

fn lenient_priority<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let text = lenient_text(d)?;
    Ok(text.trim().parse::<u8>().unwrap_or_default())
}

pub fn enqueue(
    queue: &Path,
    project: &str,
    task: &str,
    priority: Priority,
    by: &str,
) -> Result<Queued, QueueError> {
    let dir = queue.join("pending").join(priority.dir());
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let now = Utc::now();
    let id = format!(
        "{:08x}",
        (now.timestamp_nanos_opt().unwrap_or_default() as u64 ^ u64::from(std::process::id()) << 32)
            as u32
    );
    let name = format!(
        "{}_{}_{project}_{id}.json",
        priority.number(),
        now.format("%Y%m%dT%H%M%S%.6f")
    );
    let entry = Entry {
        id,
        project: project.into(),
        priority: priority.number(),
        prompt: task.into(),
        enqueued_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        enqueued_by: by.into(),
        status: "pending".into(),
    };
    // Strings and a number: serializing cannot fail.
    let body = serde_json::to_vec_pretty(&entry).unwrap_or_default();
    write_atomic(&dir, &name, &body).map_err(io(&dir))?;
    Ok(Queued {
        id: entry.id,
        project: entry.project,
        priority,
        task: entry.prompt,
        enqueued_at: entry.enqueued_at,
        enqueued_by: entry.enqueued_by,
        path: dir.join(name),
    })
}

/// Every pending task, in the order they will start.
pub fn list(queue: &Path) -> Result<Vec<Queued>, QueueError> {
    let mut all = Vec::new();
    for priority in [Priority::High, Priority::Normal] {
        let dir = queue.join("pending").join(priority.dir());
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir)(e)),
        };
        let mut these: Vec<Queued> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| read(&e.path(), priority))
            .collect();
        // The file name starts with the time: name order is age order.
        these.sort_by(|a, b| a.path.cmp(&b.path));
        all.extend(these);
    }
    Ok(all)
}

/// A queue file, or `None` when it is not JSON (a file being written by another tool).
fn read(path: &Path, priority: Priority) -> Option<Queued> {
    let value: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    // JSON that is not an object is an entry with nothing known about it, as before.
    let entry: Entry = match value {
        v @ Value::Object(_) => serde_json::from_value(v).ok()?,
        _ => Entry::default(),
    };
    Some(Queued {
        id: entry.id,
        project: entry.project,
        priority,
        task: entry.prompt,
        enqueued_at: entry.enqueued_at,
        enqueued_by: entry.enqueued_by,
        path: path.to_owned(),
    })
}

/// Takes the next task off the queue; `None` when it is empty. Safe against other takers.
pub fn take_next(queue: &Path) -> Result<Option<Queued>, QueueError> {
    let taken = queue.join("taken");
    for q in list(queue)? {
        std::fs::create_dir_all(&taken).map_err(io(&taken))?;
        let to = taken.join(q.path.file_name().unwrap_or_default());
        match std::fs::rename(&q.path, &to) {
            Ok(()) => {
                let _ = std::fs::remove_file(&to);
                return Ok(Some(q));
            }
            // Someone else took it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&q.path)(e)),
        }
    }
    Ok(None)
}

impl Queued {
    /// The task as a row of the jobs table: status `queued`, at `position` (1 starts next),
    /// keyed by `key` (see [`rows`]).
    fn row(&self, key: JobId, position: usize) -> Job {
        let meta = Meta {
            id: self.id.clone(),
            project: self.project.clone(),
            task: self.task.clone(),
            ..Default::default()
        };
        Job {
            id: key,
            dir: self.path.clone(),
            meta: Some(meta),
            status: Status::Queued,
            exit_code: None,
            pid: None,
            process_record: None,
            progress: None,
            question: None,
            gate: None,
            started: None,
            finished: None,
            log_len: 0,
            log_mtime: None,
            queue_position: Some(position),
            stop: None,
            problems: Vec::new(),
        }
    }
}

/// The queue (as [`list`] gives it) as rows of the jobs table, in order, each at its place.
/// A row is keyed by [`JobId::queued`] of its queue id, which no job directory can have; an
/// entry whose id cannot be a key (empty, not an id, or already taken by an earlier entry) is
/// keyed by its place instead, so every entry is exactly one row.
pub fn rows(queued: &[Queued]) -> Vec<Job> {
    let mut taken = HashSet::new();
    queued
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let key = JobId::queued(&q.id)
                .filter(|k| !taken.contains(k))
                .unwrap_or_else(|| JobId::queued_at(i + 1));
            taken.insert(key.clone());
            q.row(key, i + 1)
        })
        .collect()
}

/// The queue as rows, or none when it cannot be listed (`luzia queue` says why).
pub fn listed_rows(queue: &Path) -> Vec<Job> {
    rows(&list(queue).unwrap_or_default())
}

pub fn cancel(queue: &Path, id: &str) -> Result<Queued, QueueError> {
    let q = list(queue)?
        .into_iter()
        .find(|q| q.id == id)
        .ok_or_else(|| QueueError::NotFound(id.to_owned()))?;
    std::fs::remove_file(&q.path).map_err(io(&q.path))?;
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_first_then_oldest_and_each_taken_once() {
        let d = tempfile::tempdir().unwrap();
        let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
        let b = enqueue(d.path(), "p", "b", Priority::High, "me").unwrap();
        let c = enqueue(d.path(), "p", "c", Priority::Normal, "me").unwrap();
        let order: Vec<String> = list(d.path())
            .unwrap()
            .into_iter()
            .map(|q| q.task)
            .collect();
        assert_eq!(order, ["b", "a", "c"]);
        assert_eq!(cancel(d.path(), &c.id).unwrap().task, "c");
        assert!(matches!(
            cancel(d.path(), "nope"),
            Err(QueueError::NotFound(_))
        ));
        assert_eq!(take_next(d.path()).unwrap().unwrap().id, b.id);
        assert_eq!(take_next(d.path()).unwrap().unwrap().id, a.id);
        assert_eq!(take_next(d.path()).unwrap(), None);
    }

    #[test]
    fn an_entry_is_written_as_protocol_md_says_byte_for_byte() {
        let d = tempfile::tempdir().unwrap();
        let q = enqueue(d.path(), "musica", "Run tests", Priority::High, "admin").unwrap();
        let written = std::fs::read(&q.path).unwrap();
        // The form the queue had always been written in: these keys, in this order, pretty.
        let expected = serde_json::to_vec_pretty(&serde_json::json!({
            "id": q.id, "project": "musica", "priority": 1, "prompt": "Run tests",
            "enqueued_at": q.enqueued_at, "enqueued_by": "admin", "status": "pending",
        }))
        .unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        assert!(q.path.starts_with(d.path().join("pending/high")));
    }

    #[test]
    fn entries_are_read_leniently() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pending/normal");
        std::fs::create_dir_all(&dir).unwrap();
        let put = |name: &str, body: &str| std::fs::write(dir.join(name), body).unwrap();
        // The orchestrator's form, with a field luzia does not know.
        put(
            "5_20260109T153045.000001_musica_a1b2c3d4.json",
            r#"{"id": "a1b2c3d4", "project": "musica", "priority": 5, "prompt": "Run tests",
               "skill_match": "test-runner", "enqueued_at": "2026-01-09T15:30:45Z",
               "enqueued_by": "admin", "status": "pending"}"#,
        );
        put(
            "5_20260109T153045.000002_x_odd.json",
            r#"{"id": 7, "project": ["x"], "priority": "high", "prompt": null}"#,
        );
        put("5_20260109T153045.000003_x_list.json", "[1, 2]");
        put("5_20260109T153045.000004_x_torn.json", "{\"id\": ");
        let all = list(d.path()).unwrap();
        let seen: Vec<(&str, &str, &str, &str)> = all
            .iter()
            .map(|q| {
                (
                    q.id.as_str(),
                    q.project.as_str(),
                    q.task.as_str(),
                    q.enqueued_by.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("a1b2c3d4", "musica", "Run tests", "admin"),
                ("7", "", "", ""),
                ("", "", "", ""),
            ],
            "a torn file is left out until it is whole"
        );
    }

    #[test]
    fn every_entry_is_one_row_in_order_keyed_apart_from_jobs() {
        let q = |id: &str| Queued {
            id: id.into(),
            project: "p".into(),
            priority: Priority::Normal,
            task: format!("task {id}"),
            enqueued_at: String::new(),
            enqueued_by: String::new(),
            path: PathBuf::from("/q").join(id),
        };
        let rows = rows(&[q("00c885a0"), q("../../etc"), q("00c885a0"), q("")]);
        let keys: Vec<&str> = rows.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(
            keys,
            ["queued:00c885a0", "queued:#2", "queued:#3", "queued:#4"]
        );
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.status, Status::Queued);
            assert_eq!(row.queue_position, Some(i + 1));
            assert!(row.id.is_queued());
            assert_ne!(row.id, JobId::parse("00c885a0").unwrap());
        }
        assert_eq!(rows[0].shown_id(), "00c885a0");
        assert_eq!(rows[0].task(), "task 00c885a0");
        assert_eq!(
            rows[1].shown_id(),
            "../../etc",
            "shown as text, never a path"
        );
    }

    #[test]
    fn racing_takers_never_take_one_task_twice() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..40 {
            enqueue(d.path(), "p", &i.to_string(), Priority::Normal, "me").unwrap();
        }
        let taken: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        std::iter::from_fn(|| take_next(d.path()).unwrap())
                            .map(|q| q.task)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = taken.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 40);
        assert_eq!(taken.len(), 40);
    }
}
