//! Starting work, with the rules that depend on configuration: which projects exist, the agent
//! command, how many agents may run at once, and the queue for the rest. `luzia run`, the
//! supervisor (which starts queued tasks as it finishes) and the cockpit's input bar all
//! dispatch through here.

use crate::jobs::fs::names::QUESTION_FILE;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::Utc;

use crate::config::Config;
use crate::jobs::run::dispatch::{self, Created, Spec};

use crate::jobs::run::queue::{self, Priority, Queued};
use crate::jobs::{Job, Status, scan};

#[derive(Clone, Debug)]
pub struct Request {
    pub project: String,
    pub task: String,
    pub priority: Priority,
    /// Queue even if a slot is free.
    pub queue: bool,
    pub retry_of: Option<String>,
    pub addendum: Option<String>,
}

impl Request {
    pub fn new(project: &str, task: &str) -> Request {
        Request {
            project: project.into(),
            task: task.into(),
            priority: Priority::Normal,
            queue: false,
            retry_of: None,
            addendum: None,
        }
    }
}

#[derive(Debug)]
pub enum Dispatched {
    Started(Created),
    Queued(Queued),
}

pub struct Dispatcher<'a> {
    pub cfg: &'a Config,
    /// The luzia executable that runs `supervise`.
    pub exe: PathBuf,
}

impl<'a> Dispatcher<'a> {
    pub fn new(cfg: &'a Config) -> Result<Dispatcher<'a>> {
        let exe = std::env::current_exe()
            .context("cannot find the luzia executable to start the supervisor")?;
        Ok(Dispatcher { cfg, exe })
    }

    fn root(&self) -> &Path {
        &self.cfg.jobs_dir
    }

    /// Jobs whose agent is alive (running or waiting for a person).
    pub fn running(&self) -> Result<usize> {
        let jobs = scan(self.root(), Utc::now())?;
        Ok(jobs
            .iter()
            .filter(|j| matches!(j.status, Status::Running | Status::Waiting))
            .count())
    }

    fn spec(&self, req: &Request) -> Result<Spec> {
        let Some(project) = self.cfg.projects.get(&req.project) else {
            let known: Vec<&str> = self.cfg.projects.keys().map(String::as_str).collect();
            let where_ = self
                .cfg
                .file
                .as_ref()
                .map_or("the config file".into(), |p| p.display().to_string());
            if known.is_empty() {
                bail!(
                    "unknown project '{}': no projects are configured; add [projects.NAME] path = \"...\" to {where_}",
                    req.project.escape_debug()
                );
            }
            bail!(
                "unknown project '{}' (known: {})",
                req.project.escape_debug(),
                known.join(", ")
            );
        };
        Ok(Spec {
            project: req.project.clone(),
            project_path: project.path.clone(),
            user: project.user.clone(),
            task: req.task.clone(),
            command: self.cfg.agent.command.clone(),
            prompt_template: self.cfg.agent.prompt_template.clone(),
            retry_of: req.retry_of.clone(),
            addendum: req.addendum.clone(),
        })
    }

    /// Starts the task now, or queues it when asked to or when every slot is taken.
    pub fn dispatch(&self, req: &Request) -> Result<Dispatched> {
        let spec = self.spec(req)?;
        if req.task.trim().is_empty() {
            bail!("the task is empty: say what the agent should do");
        }
        let _slots = self.lock_slots()?;
        // Tasks queued earlier go first: a free slot is theirs.
        self.start_queued_locked()?;
        if req.queue || self.running()? >= self.cfg.agent.max_concurrent {
            let by = crate::jobs::hitl::operator::operator();
            return Ok(Dispatched::Queued(queue::enqueue(
                &self.cfg.queue_dir,
                &req.project,
                &req.task,
                req.priority,
                &by,
            )?));
        }
        Ok(Dispatched::Started(self.start(&spec)?))
    }

    fn start(&self, spec: &Spec) -> Result<Created> {
        let created = dispatch::create(self.root(), spec, Utc::now())?;
        dispatch::start_supervisor(
            &self.exe,
            &created.dir,
            self.cfg.file.as_deref(),
            self.root(),
        )?;
        Ok(created)
    }

    /// Starts queued tasks while slots are free: high before normal, then oldest first.
    pub fn start_queued(&self) -> Result<Vec<Created>> {
        if queue::list(&self.cfg.queue_dir)?.is_empty() {
            return Ok(Vec::new());
        }
        let _slots = self.lock_slots()?;
        self.start_queued_locked()
    }

    fn start_queued_locked(&self) -> Result<Vec<Created>> {
        let mut started = Vec::new();
        // Counting costs a scan of the root: only when something waits.
        if queue::list(&self.cfg.queue_dir)?.is_empty() {
            return Ok(started);
        }
        let mut running = self.running()?;
        while running < self.cfg.agent.max_concurrent {
            let Some(q) = queue::take_next(&self.cfg.queue_dir)? else {
                break;
            };
            let spec = self.spec(&Request::new(&q.project, &q.task))?;
            started.push(self.start(&spec)?);
            running += 1;
        }
        Ok(started)
    }

    /// Counting the running agents and starting one must not interleave with another
    /// dispatcher doing the same, or both would fill the last slot: an exclusive `flock`,
    /// released when the guard drops (or the process dies).
    fn lock_slots(&self) -> Result<std::fs::File> {
        let dir = &self.cfg.queue_dir;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the queue directory {}", dir.display()))?;
        let path = dir.join(".slots.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .with_context(|| format!("cannot lock {}", path.display()))?;
        Ok(file)
    }
}

/// A new job with the same project and task; for a job that stopped for an answer, the question
/// and its answer go to the end of the prompt.
pub fn retry_request(job: &Job, answer: Option<&str>) -> Result<Request> {
    if job.project().is_empty() || job.task().is_empty() {
        bail!(
            "job {} has no project or task in meta.json: nothing to retry",
            job.id
        );
    }
    let mut req = Request::new(job.project(), job.task());
    req.retry_of = Some(job.id.to_string());
    // The question stays on disk after it is answered (the agent that would archive it has
    // stopped): read it there, with whatever answer stands.
    let question = job.question.clone().or_else(|| {
        let bytes = crate::jobs::fs::files::read_small(&job.dir.join(QUESTION_FILE)).ok()??;
        crate::jobs::Question::parse(&bytes, None).ok()
    });
    if let Some(q) = question {
        let answered = crate::jobs::hitl::operator::settled(&job.dir, Some(&q.id));
        if let Some(a) = answer.map(str::to_owned).or(answered.map(|r| r.answer)) {
            req.addendum = Some(format!(
                "This task was tried before and stopped to ask:\n  {}\nThe answer is:\n  {}",
                q.question, a
            ));
        }
    }
    Ok(req)
}
