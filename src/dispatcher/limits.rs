//! The account's usage limit: a Claude Code job it stopped continues its own session at the
//! reset, and meanwhile the queue starts none of that agent's tasks. Both are on disk, in the
//! queue root's `limits/`, so they outlive every process (a reboot too):
//!
//! - `limits/<agent>.json`, `{"resets_at", "job"}`: the hold, written by the supervisor of the
//!   job the limit stopped, before its exit line (the latest reset wins); it lapses by itself
//!   at its time.
//! - `limits/resume/<job id>`: a resume to do at the reset, written beside it.
//!
//! Whichever luzia looks first after the reset (the queue's starter, a cockpit, `luzia notify
//! --watch`) carries the resume out, under the queue's lock, after claiming it in the job's
//! directory with a file published once (`limit-resume.json`): a job is never resumed twice for
//! the same stop, however many look at once. A stop asked for (`luzia kill`) or a retry of the
//! job cancels it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Utc};

use super::sessions::Nowhere;
use super::{Continuation, Dispatcher};
use crate::config::Config;
use crate::jobs::fs::names::{HISTORY_FILE, LIMIT_RESUME_FILE};
use crate::jobs::fs::publish::{Published, append_line, publish_once, write_atomic};
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::read_job;
use crate::jobs::model::lifecycle::find_retries;
use crate::jobs::model::limit::{Hold, Holds};
use crate::jobs::model::status::ended_limited;
use crate::jobs::run::agents::account;
use crate::jobs::run::dispatch::DispatchError;
use crate::jobs::run::queue::{self, Slots};
use crate::jobs::run::resume::ResumeError;
use crate::jobs::run::resume::continuable;
use crate::jobs::{Job, Status};

use crate::jobs::model::limit::RESUME_MARGIN as MARGIN;
const LIMITS_DIR: &str = "limits";
const RESUME_DIR: &str = "resume";

/// The prompt of a job continued after the limit: the task is in its transcript already.
pub const LIMIT_PROMPT: &str = "The usage limit that stopped you has reset. Continue the task \
     from where you stopped: check what is already done before doing anything again.";

pub(super) fn limits_dir(queue: &Path) -> PathBuf {
    queue.join(LIMITS_DIR)
}

/// The limits that stand at `now` in the queue root `queue`, one per account, the first to
/// reset first: what holds its tasks. A read of a few small files, for whoever lists the queue
/// (`luzia queue`, the cockpit's listing) or starts its tasks.
pub fn standing_holds(queue: &Path, now: DateTime<Utc>) -> Holds {
    let mut holds: Vec<Hold> = std::fs::read_dir(limits_dir(queue))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let bytes = crate::jobs::fs::files::read_small(&e.path()).ok()??;
            serde_json::from_slice::<Hold>(&bytes).ok()
        })
        .filter(|h| h.stands(now))
        .collect();
    holds.sort_by(|a, b| (a.resets_at, &a.agent).cmp(&(b.resets_at, &b.agent)));
    Holds(holds)
}

/// The account a task of `project` runs its agent on (chosen by name as `agent`, or by the
/// project or the config): whose limit holds it. Empty when the config cannot say (the agent
/// named is no longer configured): no limit holds it, and starting it says why it cannot.
pub fn account_of(cfg: &Config, project: &str, agent: Option<&str>) -> String {
    cfg.agent_command(project, agent)
        .ok()
        .and_then(|argv| argv.first().map(|p| account(p)))
        .unwrap_or_default()
}

/// The queue as rows of the jobs table, each queued task with the program its agent runs
/// (meta.json's `agent`, as a job has it): the cockpit shows its kind, and which limit holds it.
pub fn listed_rows(cfg: &Config) -> Vec<Job> {
    queue::listed_rows_of(&cfg.queue_dir, &|q| {
        cfg.agent_command(&q.project, q.agent.as_deref())
            .ok()
            .and_then(|argv| argv.into_iter().next())
    })
}

/// What one look at the pending resumes did.
#[derive(Debug, Default)]
pub struct Resumed {
    /// `(limited job, the job that continues it)`
    pub started: Vec<(String, String)>,
    /// Why a resume due was not done: not now (it is tried again at the next look), or never
    /// (said once, and noted in its job).
    pub notes: Vec<String>,
}

impl Dispatcher<'_> {
    /// The limits that stand now, one per account.
    pub fn holds(&self, now: DateTime<Utc>) -> Holds {
        standing_holds(&self.cfg.queue_dir, now)
    }

    /// The limit that holds a task of `project` run by the agent named `agent` (or the one its
    /// project or the config chooses), if one stands.
    pub fn hold_for(&self, project: &str, agent: Option<&str>, now: DateTime<Utc>) -> Option<Hold> {
        let account = account_of(self.cfg, project, agent);
        self.holds(now).of(&account, now).cloned()
    }

    /// Whether the queue's starter has something to do for the limit now: a job to continue, or
    /// a hold that has lapsed (its tasks may start). A look at one small directory: cheap
    /// enough for every tick of a watcher.
    pub fn limits_due(&self, now: DateTime<Utc>) -> bool {
        self.dues().any(|at| at <= now)
    }

    /// The first time after `after` when the queue's starter will have something to do for
    /// the limit (a hold lapsing, a job to continue), if any: when the waiter looks next.
    pub fn next_due(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.dues().filter(|at| *at > after).min()
    }

    /// When each hold and each pending resume is due: its reset and the margin.
    fn dues(&self) -> impl Iterator<Item = DateTime<Utc>> {
        let dir = limits_dir(&self.cfg.queue_dir);
        let files = |d: &Path| {
            std::fs::read_dir(d)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .collect::<Vec<_>>()
        };
        let mut all = files(&dir);
        all.extend(files(&dir.join(RESUME_DIR)));
        all.into_iter().filter_map(|path| {
            let bytes = crate::jobs::fs::files::read_small(&path).ok()??;
            let hold: Hold = serde_json::from_slice(&bytes).ok()?;
            Some(hold.resets_at + MARGIN)
        })
    }

    /// Removes the holds that have lapsed (the queue's lock held): their tasks are started now,
    /// and a watcher need not look again.
    pub(super) fn clear_lapsed(&self, now: DateTime<Utc>) {
        let dir = limits_dir(&self.cfg.queue_dir);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in entries.flatten() {
            let lapsed = crate::jobs::fs::files::read_small(&e.path())
                .ok()
                .flatten()
                .and_then(|b| serde_json::from_slice::<Hold>(&b).ok())
                .is_some_and(|h| !h.stands(now));
            if lapsed {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Whether a job waits to be continued after the usage limit.
    pub fn resumes_pending(&self) -> bool {
        std::fs::read_dir(limits_dir(&self.cfg.queue_dir).join(RESUME_DIR))
            .is_ok_and(|mut d| d.next().is_some())
    }

    /// Called as a job ends with `code`, before its exit line is written (so `job` may still
    /// read as running): a job the limit stopped holds its agent's tasks until the reset and,
    /// where its project allows, is to be continued then. Whether it holds the queue: a
    /// waiter is to look at the reset.
    pub fn record_limit(&self, job: &Job, code: i32) -> Result<bool> {
        let limit_stands = job.limit_resets_at().is_some();
        if ended_limited(code, job.stop.is_some(), limit_stands) != Status::Limited {
            return Ok(false);
        }
        let (Some(resets_at), Some(meta)) = (job.limit_resets_at(), job.meta.as_ref()) else {
            return Ok(false);
        };
        let dir = limits_dir(&self.cfg.queue_dir);
        std::fs::create_dir_all(dir.join(RESUME_DIR))?;
        let hold = Hold {
            agent: account(&meta.agent),
            resets_at,
            job: job.id.to_string(),
        };
        let name = format!("{}.json", hold.agent);
        let standing = crate::jobs::fs::files::read_small(&dir.join(&name))
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Hold>(&b).ok());
        if standing.is_none_or(|s| s.resets_at < resets_at) {
            write_atomic(&dir, &name, &serde_json::to_vec(&hold)?)?;
        }
        let wanted = self
            .cfg
            .projects
            .get(meta.project.as_str())
            .and_then(|p| p.resume_after_limit)
            .unwrap_or(true);
        if wanted && continuable(&meta.agent) && !meta.session_id.is_empty() {
            write_atomic(
                &dir.join(RESUME_DIR),
                job.id.as_str(),
                &serde_json::to_vec(&hold)?,
            )?;
        }
        Ok(true)
    }

    /// Continues every job whose limit has reset (and a margin), once each, as slots allow;
    /// the caller holds the queue's lock. A resume cancelled since (the job killed or retried)
    /// is dropped.
    pub(super) fn resume_due(&self, slots: &Slots, now: DateTime<Utc>) -> Resumed {
        let mut done = Resumed::default();
        let dir = limits_dir(&self.cfg.queue_dir).join(RESUME_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return done;
        };
        let mut due: Vec<(DateTime<Utc>, JobId)> = entries
            .flatten()
            .filter_map(|e| {
                let id = JobId::parse(e.file_name().to_str()?).ok()?;
                let bytes = crate::jobs::fs::files::read_small(&e.path()).ok()??;
                let hold: Hold = serde_json::from_slice(&bytes).ok()?;
                Some((hold.resets_at, id))
            })
            .filter(|(at, _)| *at + MARGIN <= now)
            .collect();
        due.sort();
        for (_, id) in due {
            let entry = dir.join(id.as_str());
            match self.resume_one(slots, &id, now) {
                Ok(Some(by)) => {
                    done.started.push((id.to_string(), by));
                    let _ = std::fs::remove_file(&entry);
                }
                Ok(None) => {
                    let _ = std::fs::remove_file(&entry);
                }
                Err(NotDone::Later(e)) => done.notes.push(format!(
                    "job {id} could not be resumed after the usage limit: {e:#}"
                )),
                // Said once: the resume goes, and its job keeps why.
                Err(NotDone::Never(why)) => {
                    done.notes.push(format!(
                        "job {id} cannot be resumed after the usage limit: {why} (noted in its \
                         timeline; `luzia jobs {id}`)"
                    ));
                    let _ = std::fs::remove_file(&entry);
                }
            }
        }
        done
    }

    /// `Some(new job)` when `id` was continued now, `None` when it is no longer to be (killed,
    /// retried, continued already, gone).
    fn resume_one(
        &self,
        slots: &Slots,
        id: &JobId,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, NotDone> {
        let Some(mut job) = read_job(self.root(), id, now) else {
            return Ok(None);
        };
        job.retried_by = find_retries(self.root(), &job).into();
        if job.status != Status::Limited || job.continued_by().is_some() {
            return Ok(None);
        }
        let claim = serde_json::json!({
            "by": crate::jobs::hitl::operator::operator(),
            "at": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "why": "resumed after the usage limit",
        });
        let published = publish_once(&job.dir(), LIMIT_RESUME_FILE, claim.to_string().as_bytes())
            .map_err(|e| NotDone::Later(e.into()))?;
        if let Published::Lost(_) = published {
            return Ok(None);
        }
        let how = Continuation {
            task: job.task().to_owned(),
            prompt: Some(LIMIT_PROMPT.to_owned()),
            interactive: false,
            addendum: None,
            retry_of: Some(job.id.to_string()),
        };
        let resumed = self
            .transcript_kept(&job)
            .and_then(|()| self.resume_locked(slots, &job, &how));
        match resumed {
            Ok(created) => Ok(Some(created.id.to_string())),
            Err(e) if cannot_be_continued(&e) => {
                // The claim stays, saying why: no look tries again.
                let why = format!("{e:#}");
                not_resumed(&job, &why, now);
                Err(NotDone::Never(why))
            }
            Err(e) => {
                // Not done: the claim goes, so that the next look (under the same lock) tries
                // again.
                let _ = std::fs::remove_file(job.dir().join(LIMIT_RESUME_FILE));
                Err(NotDone::Later(e))
            }
        }
    }

    /// Refuses a session whose transcript is known to be gone: `claude --resume` would only
    /// fail on it.
    fn transcript_kept(&self, job: &Job) -> Result<()> {
        let session = job.meta.as_ref().map_or("", |m| m.session_id.as_str());
        match self.transcript_saved(job, session) {
            Some(false) => Err(TranscriptGone {
                job: job.id.to_string(),
                session: session.to_owned(),
            }
            .into()),
            _ => Ok(()),
        }
    }
}

/// Why a resume due was not done.
enum NotDone {
    /// Not now (every slot taken, the session being continued by another job, the machine at
    /// fault): tried again at the next look.
    Later(anyhow::Error),
    /// Never: the session cannot be continued.
    Never(String),
}

#[derive(Debug, thiserror::Error)]
#[error(
    "the transcript of its session {session} is gone from the agent's Claude Code projects, and \
     Claude Code cannot continue a session without it; `luzia retry {job}` starts the task over"
)]
struct TranscriptGone {
    job: String,
    session: String,
}

/// Whether a resume failed for a reason no later look removes: the session or the place to
/// continue it is gone, or the job or the config cannot start it. What the moment or the
/// machine is at fault for (every slot taken, the session being continued, a write refused) is
/// not.
fn cannot_be_continued(e: &anyhow::Error) -> bool {
    e.downcast_ref::<TranscriptGone>().is_some()
        || e.downcast_ref::<Nowhere>().is_some()
        || matches!(
            e.downcast_ref::<ResumeError>(),
            Some(ResumeError::NotClaude { .. } | ResumeError::NoSession { .. })
        )
        || e.downcast_ref::<DispatchError>().is_some_and(|d| {
            !matches!(
                d,
                DispatchError::Io { .. } | DispatchError::Write { .. } | DispatchError::Spawn(..)
            )
        })
}

/// Records in `job` that it was not resumed after the usage limit, and why: the claim says so
/// (no look tries again), and its history, which its timeline shows.
fn not_resumed(job: &Job, why: &str, now: DateTime<Utc>) {
    let at = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let claim = serde_json::json!({
        "by": crate::jobs::hitl::operator::operator(),
        "at": at,
        "why": format!("not resumed after the usage limit: {why}"),
    });
    let _ = write_atomic(&job.dir(), LIMIT_RESUME_FILE, claim.to_string().as_bytes());
    let record = serde_json::json!({"limit_resume": {"at": at, "resumed": false, "why": why}});
    let _ = append_line(&job.dir(), HISTORY_FILE, &record.to_string());
}
