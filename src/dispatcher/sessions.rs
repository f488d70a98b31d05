//! Continuing a job's Claude Code session: `luzia reply`, the retry of a Claude job (which
//! resumes its session rather than starting over), and the interactive runs (`luzia run --fg`,
//! `luzia attach`), which are jobs too. A continuation runs in the old job's directory, as its
//! user, with the project's agent command; it is started at once or refused, never queued (a
//! queued task is a project and a task, and would lose its session).

use std::path::PathBuf;

use anyhow::{Result, bail};
use chrono::Utc;

use super::{Dispatched, Dispatcher, Request, retry_request};
use crate::jobs::model::review::Isolation;
use crate::jobs::run::agents::speaks_acp;
use crate::jobs::run::dispatch::{self, Created, DispatchError, Spec};
use crate::jobs::run::queue::Slots;
use crate::jobs::run::resume::{self, ResumeError};
use crate::jobs::run::session::{Resume, SessionPlan};
use crate::jobs::run::slots::{Entry, RUNNING_DIR};
use crate::jobs::run::steps::Steps;
use crate::jobs::{Job, Status, scan};

/// The prompt of a retry that resumes its session: the task is in the transcript already.
pub fn continue_prompt(status: Status) -> String {
    format!(
        "Your previous run of this task ended before it was done ({status}). Continue the task \
         from where you stopped: check what is already done before doing anything again."
    )
}

/// Every slot is taken, and a continuation is started at once or not at all.
#[derive(Debug, thiserror::Error)]
#[error(
    "every one of the {0} slots is taken: a continued session cannot wait in the queue; try \
     again when a job has ended"
)]
pub struct SlotsTaken(pub usize);

/// A job of a project the config does not name, whose meta.json names no directory.
#[derive(Debug, thiserror::Error)]
#[error(
    "job {job} names no directory in meta.json and its project '{project}' is not configured: \
     nowhere to continue it"
)]
pub struct Nowhere {
    job: String,
    project: String,
}

/// How a continuation runs.
#[derive(Clone, Debug)]
pub struct Continuation {
    /// meta.json's `task`: what the table shows.
    pub task: String,
    /// What the agent is told (on stdin in print mode, as its argument interactively).
    pub prompt: Option<String>,
    pub interactive: bool,
    /// The answer a retried job stopped for, after the prompt.
    pub addendum: Option<String>,
    /// meta.json's `retry_of`, for a retry.
    pub retry_of: Option<String>,
}

impl Dispatcher<'_> {
    /// Starts a job that continues `job`'s session: refused while `job` runs, when it has no
    /// Claude Code session, while another job continues the same session, or (print mode)
    /// when every slot is taken. Links both ways (`resumes`, `resumed_by`). An interactive job
    /// is created but not started: the caller runs it in its terminal.
    pub fn resume(&self, job: &Job, how: &Continuation) -> Result<Created> {
        let slots = Slots::lock(&self.cfg.queue_dir)?;
        self.resume_locked(&slots, job, how)
    }

    /// [`Dispatcher::resume`], the queue's lock held by the caller.
    pub(super) fn resume_locked(
        &self,
        slots: &Slots,
        job: &Job,
        how: &Continuation,
    ) -> Result<Created> {
        let all = scan(self.root(), Utc::now())?;
        // As it is now, under the lock: not as the caller read it a moment ago.
        let now = all.iter().find(|j| j.id == job.id).unwrap_or(job);
        let session = resume::check(now, &all)?;
        if !how.interactive {
            let running = all.iter().filter(|j| j.status.is_active()).count();
            if running >= self.cfg.agent.max_concurrent {
                return Err(SlotsTaken(self.cfg.agent.max_concurrent).into());
            }
        }
        let spec = self.resume_spec(now, session, how)?;
        let created = dispatch::create(self.root(), &spec, Utc::now())?;
        if let Err(e) = resume::link(&now.dir(), created.id.as_str()) {
            let _ = std::fs::remove_dir_all(&created.dir);
            return Err(e.into());
        }
        if !how.interactive
            && let Err(e) = self.start_created(&created, slots)
        {
            // The job is gone again: so is its link.
            let _ = resume::unlink(&now.dir(), created.id.as_str());
            return Err(e);
        }
        Ok(created)
    }

    fn resume_spec(&self, job: &Job, session: Resume, how: &Continuation) -> Result<Spec> {
        let meta = job.meta.clone().unwrap_or_default();
        if how.interactive && !crate::jobs::run::session::is_claude(&meta.agent) {
            bail!(
                "job {} ran '{}': only a Claude Code session opens in a terminal; `luzia reply {} \
                 \"...\"` continues it in the background",
                job.id,
                meta.agent,
                job.id
            );
        }
        let project = self.cfg.projects.get(meta.project.as_str());
        let project_path = match (meta.cwd.as_str(), project) {
            ("", Some(p)) => p.path.clone(),
            ("", None) => {
                return Err(Nowhere {
                    job: job.id.to_string(),
                    project: meta.project.to_string(),
                }
                .into());
            }
            (cwd, _) => PathBuf::from(cwd),
        };
        let prompt = how.prompt.clone().unwrap_or_default();
        // The prompt as it is (the session has its instructions already): the task itself for a
        // reply, which one pass of `fill` puts in without looking into it; luzia's own words,
        // which hold no placeholder, for a retry.
        let prompt_template = if prompt == how.task {
            "{task}".to_owned()
        } else {
            prompt
        };
        Ok(Spec {
            project: meta.project.to_string(),
            project_path,
            user: Some(meta.user.to_string()).filter(|u| !u.is_empty()),
            task: how.task.clone(),
            command: self.continued_command(job)?,
            prompt_template,
            retry_of: how.retry_of.clone(),
            addendum: how.addendum.clone(),
            queue_id: None,
            permissions: self.cfg.permissions(&meta.project),
            // A session goes on where it was (a worktree job's worktree too): recorded as a
            // snapshot of that tree when it is in a git repository.
            isolation: match self
                .cfg
                .projects
                .get(meta.project.as_str())
                .and_then(|p| p.isolation)
            {
                Some(Isolation::Worktree) => None,
                other => other,
            },
            claude_dirs: self.claude_dirs(&meta.project, Some(&meta.user)),
            // A session goes on in a tree already set up: its checks run again, not its setup.
            steps: Steps {
                checks: self.cfg.steps(&meta.project).checks,
                ..Steps::default()
            },
            session: SessionPlan {
                resume: Some(session),
                interactive: how.interactive,
                prompt_arg: how.prompt.clone().filter(|_| how.interactive),
            },
        })
    }

    /// The command line that continues `job`'s session: Claude Code's as configured (it is
    /// given the session by flags), an ACP agent's as the job ran it (its session is loaded by
    /// the supervisor).
    fn continued_command(&self, job: &Job) -> Result<Vec<String>> {
        let agent = job
            .meta
            .as_ref()
            .map(|m| m.agent.to_string())
            .unwrap_or_default();
        if crate::jobs::run::session::is_claude(&agent) {
            return Ok(self.cfg.named_agent_command("claude")?);
        }
        let argv = resume::argv(&job.dir()).filter(|a| speaks_acp(a));
        argv.ok_or_else(|| {
            anyhow::anyhow!(
                "job {} names no ACP command line in its meta.json (`argv`): its session cannot \
                 be continued; `luzia retry {}` starts the task over",
                job.id,
                job.id
            )
        })
    }

    /// `luzia run --fg`: a job for Claude Code run interactively in the operator's terminal,
    /// the task as its first prompt. Created, not started: the caller runs it
    /// ([`foreground::run`](crate::jobs::run::foreground::run)). A person drives it, so it takes
    /// no slot from the queue's count and never waits in the queue.
    pub fn foreground(&self, req: &Request) -> Result<Created> {
        let mut spec = self.spec(req)?;
        let program = spec.command.first().cloned().unwrap_or_default();
        if !crate::jobs::run::session::is_claude(&program) {
            bail!(
                "--fg runs Claude Code interactively, and the agent command is '{program}': set                  [agent] command to a claude command line, or run the task without --fg"
            );
        }
        spec.prompt_template = "{task}".into();
        spec.session = SessionPlan {
            resume: None,
            interactive: true,
            prompt_arg: Some(req.task.clone()),
        };
        Ok(dispatch::create(self.root(), &spec, Utc::now())?)
    }

    /// `luzia retry` and the cockpit's retry: a Claude job whose session was saved continues
    /// it (with [`continue_prompt`] and the answer it stopped for); any other starts over (or is
    /// queued). Returns what was done and a note for the operator: which session was continued,
    /// or why a Claude job started over.
    pub fn retry(&self, job: &Job, answer: Option<&str>) -> Result<(Dispatched, Option<String>)> {
        let req = retry_request(job, answer)?;
        let all = scan(self.root(), Utc::now())?;
        let why_over = match resume::check(job, &all) {
            Ok(session) => match self.transcript_saved(job, &session.session_id) {
                Some(false) => Some(format!(
                    "the session of job {} was never saved (the agent ended before its first \
                     turn): started over",
                    job.id
                )),
                _ => None,
            },
            Err(e @ (ResumeError::Active { .. } | ResumeError::Busy { .. })) => {
                return Err(e.into());
            }
            Err(_) => return self.dispatch(&req).map(|d| (d, None)),
        };
        if why_over.is_some() {
            return self.dispatch(&req).map(|d| (d, why_over));
        }
        let how = Continuation {
            task: req.task.clone(),
            prompt: Some(continue_prompt(job.status)),
            interactive: false,
            addendum: req.addendum.clone(),
            retry_of: req.retry_of.clone(),
        };
        let created = self.resume(job, &how)?;
        let note = format!("{} continues the session of job {}", created.id, job.id);
        Ok((Dispatched::Started(created), Some(note)))
    }

    /// Whether the agent's HOME (the job's user's, else luzia's or the config's) holds the
    /// session's transcript; `None` when it cannot be told.
    pub(super) fn transcript_saved(&self, job: &Job, session_id: &str) -> Option<bool> {
        let meta = job.meta.as_ref()?;
        // Only Claude Code's transcripts are known where they are kept.
        if !crate::jobs::run::session::is_claude(&meta.agent) {
            return None;
        }
        let dirs = self.claude_dirs(&meta.project, Some(&meta.user));
        resume::transcript_saved(&dirs.home?, dirs.config_dir.as_deref(), session_id)
    }

    /// Starts the supervisor of a job just created, with its entry in `.running/` (which it
    /// holds for its life); a supervisor that cannot be started leaves no job and no entry
    /// behind.
    pub(super) fn start_created(&self, created: &Created, slots: &Slots) -> Result<()> {
        let entry = match Entry::take(created.id.as_str(), slots) {
            Ok(entry) => entry,
            Err(source) => {
                let _ = std::fs::remove_dir_all(&created.dir);
                return Err(DispatchError::Io {
                    path: slots.queue().join(RUNNING_DIR),
                    source,
                }
                .into());
            }
        };
        if let Err(e) = dispatch::start_supervisor(
            &self.exe,
            &created.dir,
            self.cfg.file.as_deref(),
            self.root(),
            Some(entry.fd()),
        ) {
            entry.remove();
            let _ = std::fs::remove_dir_all(&created.dir);
            return Err(e.into());
        }
        // The supervisor holds the entry's lock now; this process lets go of it.
        drop(entry);
        Ok(())
    }
}

/// `luzia attach`'s continuation: the session opened in a terminal, with no prompt.
pub fn attach(job: &Job) -> Continuation {
    Continuation {
        task: format!("interactive session, continuing job {}", job.id),
        prompt: None,
        interactive: true,
        addendum: None,
        retry_of: None,
    }
}

/// `luzia reply`'s continuation: the text is both the task shown and the prompt.
pub fn reply(text: &str) -> Continuation {
    Continuation {
        task: text.to_owned(),
        prompt: Some(text.to_owned()),
        interactive: false,
        addendum: None,
        retry_of: None,
    }
}
