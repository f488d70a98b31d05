//! The queue: tasks waiting for a free slot, one JSON file each under
//! `<queue root>/pending/{high,normal}/<priority>_<timestamp>_<project>_<id>.json`. A task is
//! taken by renaming its file out of `pending/` (only one taker can succeed), high before
//! normal, then oldest first.

use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::{Value, json};

use crate::jobs::fs::publish::write_atomic;

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
    let body = json!({
        "id": id, "project": project, "priority": priority.number(), "prompt": task,
        "enqueued_at": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "enqueued_by": by, "status": "pending",
    });
    write_atomic(
        &dir,
        &name,
        &serde_json::to_vec_pretty(&body).expect("JSON"),
    )
    .map_err(io(&dir))?;
    Ok(Queued {
        id,
        project: project.into(),
        priority,
        task: task.into(),
        enqueued_at: body["enqueued_at"].as_str().unwrap_or_default().into(),
        enqueued_by: by.into(),
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

fn read(path: &Path, priority: Priority) -> Option<Queued> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    Some(Queued {
        id: s("id"),
        project: s("project"),
        priority,
        task: s("prompt"),
        enqueued_at: s("enqueued_at"),
        enqueued_by: s("enqueued_by"),
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
    /// The task as a row of the jobs table: status `queued`, at `position`.
    pub fn as_job(&self, position: usize) -> Option<crate::jobs::Job> {
        let id = crate::jobs::JobId::parse(&self.id).ok()?;
        let meta = crate::jobs::Meta {
            id: self.id.clone(),
            project: self.project.clone(),
            task: self.task.clone(),
            ..Default::default()
        };
        Some(crate::jobs::Job {
            id,
            dir: self.path.clone(),
            meta: Some(meta),
            status: crate::jobs::Status::Queued,
            exit_code: None,
            pid: None,
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
        })
    }
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
