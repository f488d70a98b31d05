//! Starting work, with the rules that depend on configuration: which projects exist, the agent
//! command, how many agents may run at once, and the queue for the rest. `luzia run`, the
//! supervisor (which starts queued tasks as it finishes) and the cockpit's input bar all
//! dispatch through here.

pub mod limits;
mod sessions;
pub mod waiter;

pub use sessions::{Continuation, attach, continue_prompt, reply};

use crate::jobs::fs::names::QUESTION_FILE;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::Utc;

use crate::config::Config;
use crate::jobs::Job;
use crate::jobs::run::claude::servers::ClaudeDirs;
use crate::jobs::run::dispatch::{self, Created, DispatchError, Spec};
use crate::jobs::run::queue::{self, Priority, Queued, Slots, Unrecorded};
use crate::jobs::run::slots;

#[derive(Clone, Debug)]
pub struct Request {
    pub project: String,
    pub task: String,
    pub priority: Priority,
    /// Queue even if a slot is free.
    pub queue: bool,
    pub retry_of: Option<String>,
    pub addendum: Option<String>,
    /// The project's directory when the config does not name the project: the repository the
    /// task was given in, or the one a job of it ran in. Ignored for a configured project.
    pub path: Option<PathBuf>,
    /// The agent chosen by name (`luzia run --agent`), over the project's and `[agent] kind`.
    pub agent: Option<String>,
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
            path: None,
            agent: None,
        }
    }

    /// A task for the project `here` stands in (configured or not).
    pub fn here(here: &crate::config::here::Here, task: &str) -> Request {
        Request {
            path: Some(here.path.clone()),
            ..Request::new(&here.name, task)
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

    /// Jobs whose agent is alive (running or waiting for a person): luzia's own by their
    /// entries in `.running/`, the others by what [`slots::others`] keeps of them. Neither
    /// reads the whole root at every count.
    pub fn running(&self, lock: &Slots) -> Result<usize> {
        let root = self.root();
        let live = slots::live(lock).with_context(|| {
            format!(
                "cannot count the running jobs in {}",
                lock.queue().join(slots::RUNNING_DIR).display()
            )
        })?;
        let others = slots::others::count(root, lock.queue(), &live, Utc::now())?;
        Ok(live.len() + others)
    }

    fn spec(&self, req: &Request) -> Result<Spec> {
        let Some(project) = self.cfg.projects.get(&req.project) else {
            if let Some(path) = &req.path {
                return self.unconfigured_spec(req, path);
            }
            let known: Vec<&str> = self.cfg.projects.keys().map(String::as_str).collect();
            let where_ = self.cfg.file_to_edit();
            if known.is_empty() {
                bail!(
                    "unknown project '{}': no projects are configured in {where_}; run the task \
                     inside a git repository (`luzia run \"task\"`, or `luzia run -C DIR \"task\"`), \
                     or add [projects.NAME] path = \"...\" there",
                    req.project.escape_debug()
                );
            }
            bail!(
                "unknown project '{}' (known: {}): check the name (projects are configured in \
                 {where_}), or quote the task to run it in the git repository you stand in \
                 (`luzia run \"task\"`)",
                req.project.escape_debug(),
                known.join(", ")
            );
        };
        let mut spec = self.unconfigured_spec(req, &project.path)?;
        spec.user = project.user.clone();
        spec.isolation = project.isolation;
        spec.claude_dirs = self.claude_dirs(&req.project, spec.user.as_deref());
        Ok(spec)
    }

    /// A project the config does not name: its directory, and every setting at its default
    /// (`[agent]`'s permissions; snapshot isolation in a git repository).
    fn unconfigured_spec(&self, req: &Request, path: &Path) -> Result<Spec> {
        Ok(Spec {
            project: req.project.clone(),
            project_path: path.to_owned(),
            user: None,
            task: req.task.clone(),
            command: self.cfg.agent_command(&req.project, req.agent.as_deref())?,
            prompt_template: self.cfg.agent.prompt_template.clone(),
            retry_of: req.retry_of.clone(),
            addendum: req.addendum.clone(),
            queue_id: None,
            session: Default::default(),
            permissions: self.cfg.permissions(&req.project),
            isolation: None,
            claude_dirs: self.claude_dirs(&req.project, None),
            steps: self.cfg.steps(&req.project),
        })
    }

    /// Where the Claude Code of a job of `project` run as `user` keeps its own configuration:
    /// the HOME and `CLAUDE_CONFIG_DIR` its environment will have (`account::agent_env`): the
    /// config's `env` first, then the user's HOME (when luzia runs as root and switches to
    /// it), then luzia's own, which a Claude Code agent always receives.
    pub fn claude_dirs(&self, project: &str, user: Option<&str>) -> ClaudeDirs {
        let env = self.cfg.agent_env(project);
        let set = |name: &str| env.set.get(name).map(PathBuf::from);
        let switched = user
            .filter(|u| !u.is_empty() && rustix::process::geteuid().is_root())
            .and_then(crate::jobs::run::account::Account::lookup)
            .map(|a| a.home);
        let own = |name: &str| std::env::var_os(name).map(PathBuf::from);
        ClaudeDirs {
            home: set("HOME").or(switched).or_else(|| own("HOME")),
            config_dir: set("CLAUDE_CONFIG_DIR")
                .or_else(|| own("CLAUDE_CONFIG_DIR"))
                .filter(|d| !d.as_os_str().is_empty()),
        }
    }

    /// Starts the task now, or queues it when asked to or when every slot is taken.
    pub fn dispatch(&self, req: &Request) -> Result<Dispatched> {
        self.dispatch_noting(req).map(|(d, _)| d)
    }

    /// [`Dispatcher::dispatch`], with what went wrong starting the tasks queued earlier (each
    /// also recorded in the queue, where `luzia queue` and the cockpit show it).
    pub fn dispatch_noting(&self, req: &Request) -> Result<(Dispatched, Vec<String>)> {
        let spec = self.spec(req)?;
        if req.task.trim().is_empty() {
            bail!("the task is empty: say what the agent should do");
        }
        let slots = Slots::lock(&self.cfg.queue_dir)?;
        // Tasks queued earlier go first: a free slot is theirs.
        let round = self.start_queued_locked(&slots)?;
        let notes = round.notes();
        // Only the limit of the account this task's agent runs on holds it.
        let held = self
            .hold_for(&req.project, req.agent.as_deref(), Utc::now())
            .is_some();
        let dispatched =
            if req.queue || held || self.running(&slots)? >= self.cfg.agent.max_concurrent {
                let by = crate::jobs::hitl::operator::operator();
                // A project the config file does not name keeps its directory in the queue's
                // file: whoever starts the task may know only the file.
                let path = match self.cfg.projects.get(&req.project) {
                    Some(p) if p.unconfigured => Some(p.path.as_path()),
                    Some(_) => None,
                    None => req.path.as_deref(),
                };
                // Refused now rather than when a slot frees, when nobody may be there to read why.
                dispatch::check_servers(&spec)
                    .map_err(anyhow::Error::from)
                    .and_then(|()| {
                        queue::enqueue_at(
                            &self.cfg.queue_dir,
                            &req.project,
                            path,
                            &req.task,
                            req.priority,
                            (&by, req.agent.as_deref()),
                        )
                        .map_err(anyhow::Error::from)
                    })
                    .map(Dispatched::Queued)
            } else {
                self.start(&spec, &slots).map(Dispatched::Started)
            };
        match dispatched {
            Ok(d) => Ok((d, notes)),
            // The same fault often stops both: say what became of the earlier tasks too.
            Err(e) if !notes.is_empty() => bail!("{e:#}\n{}", notes.join("\n")),
            Err(e) => Err(e),
        }
    }

    /// Creates the job and starts its supervisor. A supervisor that cannot be started leaves
    /// no job behind: the directory, which nothing runs in, is removed.
    fn start(&self, spec: &Spec, slots: &Slots) -> Result<Created> {
        let before = slots::others::stamp(self.root());
        let created = dispatch::create(self.root(), spec, Utc::now())?;
        self.start_created(&created, slots)?;
        slots::others::record_own_change(self.root(), slots.queue(), before);
        Ok(created)
    }

    /// Starts queued tasks while slots are free: high before normal, then oldest first. A task
    /// that cannot start is recorded as failed in the queue with the reason (or, when not even
    /// that can be written, stays queued), and the error says which and why.
    pub fn start_queued(&self) -> Result<Vec<Created>> {
        if queue::list(&self.cfg.queue_dir)?.is_empty() && !self.resumes_pending() {
            self.clear_lapsed(Utc::now());
            return Ok(Vec::new());
        }
        let slots = Slots::lock(&self.cfg.queue_dir)?;
        let round = self.start_queued_locked(&slots)?;
        match round.notes().as_slice() {
            [] => Ok(round.started),
            notes => bail!("{}", notes.join("; ")),
        }
    }

    fn start_queued_locked(&self, slots: &Slots) -> Result<Round> {
        // A starter that died holding a claim: its task has a job, or it waits again.
        slots.recover(self.root())?;
        let mut round = Round::default();
        // Jobs the usage limit stopped go on first, as it resets: they are older than any task
        // queued meanwhile.
        let now = Utc::now();
        let resumed = self.resume_due(slots, now);
        round.held_notes = resumed.notes;
        // Lapsed holds go now, tasks or not: the look at a reset leaves nothing of it behind.
        self.clear_lapsed(now);
        if !slots.has_pending()? {
            return Ok(round);
        }
        // A standing limit holds its account's tasks only: the others start, and the held
        // ones keep their places for the reset.
        let holds = self.holds(now);
        let may_start = |q: &Queued| {
            holds.is_empty()
                || holds
                    .of(
                        &limits::account_of(self.cfg, &q.project, q.agent.as_deref()),
                        now,
                    )
                    .is_none()
        };
        let mut running = self.running(slots)?;
        while running < self.cfg.agent.max_concurrent {
            let Some(claim) = slots.claim_next_where(&may_start)? else {
                break;
            };
            match self.start_claimed(claim.entry(), slots) {
                Ok(created) => {
                    claim.started();
                    round.started.push(created);
                    running += 1;
                }
                Err(failure) => {
                    let id = claim.entry().id.clone();
                    let reason = format!("{:#}", failure.error);
                    let recorded = claim.fail(&reason);
                    round.failed.push((id, reason, recorded.err()));
                    // The machine is at fault (a full disk, an unwritable root): the next
                    // task would fail the same way, and is better left waiting.
                    if failure.system {
                        break;
                    }
                }
            }
        }
        Ok(round)
    }

    /// Starts a claimed task as a job that names it (`queue_id` in meta.json), so that a
    /// starter dying before it settles the claim never leads to a second job.
    fn start_claimed(&self, q: &Queued, slots: &Slots) -> Result<Created, StartFailure> {
        let req = Request {
            path: q.project_path.clone(),
            agent: q.agent.clone(),
            ..Request::new(&q.project, &q.task)
        };
        let mut spec = self.spec(&req).map_err(|error| StartFailure {
            error,
            system: false,
        })?;
        spec.queue_id = Some(q.id.clone());
        self.start(&spec, slots).map_err(|error| {
            let system = matches!(
                error.downcast_ref::<DispatchError>(),
                Some(
                    DispatchError::Io { .. }
                        | DispatchError::Write { .. }
                        | DispatchError::Spawn(..)
                )
            );
            StartFailure { error, system }
        })
    }
}

/// Why a queued task could not start; `system` when the machine is at fault rather than the
/// task or its project.
struct StartFailure {
    error: anyhow::Error,
    system: bool,
}

/// What one pass over the queue did.
#[derive(Default)]
struct Round {
    started: Vec<Created>,
    /// Queue id, reason, and why the failure could not be recorded (when it could not).
    failed: Vec<(String, String, Option<Unrecorded>)>,
    /// Why a job due to be continued after the usage limit could not be.
    held_notes: Vec<String>,
}

impl Round {
    /// One sentence for each task that could not start.
    fn notes(&self) -> Vec<String> {
        self.held_notes
            .iter()
            .cloned()
            .chain(self.failed.iter()
            .map(|(id, reason, unrecorded)| match unrecorded {
                None => format!(
                    "queued task {id} could not start: {reason} (`luzia queue` lists it with the reason; `luzia queue retry {id}` tries again)"
                ),
                Some(u) => format!("queued task {id} could not start: {reason}; {u}"),
            }))
            .collect()
    }
}

/// The directory a job's project was in, from its meta.json: where its agent ran, or for a
/// worktree job the repository its worktree was made from. A retry of a project the config
/// does not name runs there again.
fn project_dir(job: &Job) -> Option<PathBuf> {
    let more = job.meta.as_ref()?.more.as_ref()?;
    match more.review.as_deref() {
        Some(r) if !r.worktree.is_empty() && !r.repo.is_empty() => Some(PathBuf::from(&r.repo)),
        _ => Some(PathBuf::from(more.cwd.as_str())).filter(|p| p.is_absolute()),
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
    req.path = project_dir(job);
    // The question stays on disk after it is answered (the agent that would archive it has
    // stopped): read it there, with whatever answer stands.
    let question = job.question.clone().or_else(|| {
        let bytes = crate::jobs::fs::files::read_small(&job.file(QUESTION_FILE)).ok()??;
        crate::jobs::Question::parse(&bytes, None)
            .ok()
            .map(Box::new)
    });
    if let Some(q) = question {
        let answered = crate::jobs::hitl::operator::settled(&job.dir(), Some(&q.id));
        if let Some(a) = answer.map(str::to_owned).or(answered.map(|r| r.answer)) {
            req.addendum = Some(format!(
                "This task was tried before and stopped to ask:\n  {}\nThe answer is:\n  {}",
                q.question, a
            ));
        }
    }
    Ok(req)
}

#[cfg(test)]
mod tests;
