//! The writes worker: answers, decisions, dispatch, retry, kill, and the queue. A pool of a few
//! threads: a dispatch waiting for the slot lock another `luzia run` holds, or a kill waiting
//! out its grace period, holds one thread while answers go on on another. Whether a question
//! or gate is still the one pending is decided in `jobs::hitl::operator`; this only says what
//! came of it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::dispatcher::limits;
use crate::dispatcher::{Dispatched, Dispatcher, Request, reply as reply_with};
use crate::jobs::hitl::operator::{self, Answerer, Outcome, Verdict};
use crate::jobs::model::stop::StopSource;
use crate::jobs::run::kill;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, JobId, read_job};
use crate::tui::effect::Effect;
use crate::tui::event::Event;
use crate::watch::QueueWatcher;

/// Threads of the writes worker.
pub const WRITERS: usize = 4;

#[derive(Clone)]
pub struct Writes {
    root: PathBuf,
    tx: UnboundedSender<Event>,
    /// What dispatch needs (projects, agent command, queue); `None` when unknown.
    config: Option<Arc<Config>>,
    read_only: bool,
    queue: Arc<Mutex<QueueSync>>,
    /// Lists the queue whenever it changes; `None` until its root can be watched.
    queue_watcher: Arc<Mutex<Option<QueueWatcher>>>,
    /// Held while the queue is listed and its rows sent.
    listing: Arc<Mutex<()>>,
}

/// At most one listing of the queue at a time: it takes the slot lock when tasks wait, and a
/// lock held elsewhere must not take every writer with it. One asked for meanwhile runs once
/// the current one is done.
#[derive(Default)]
struct QueueSync {
    running: bool,
    again: bool,
}

impl Writes {
    pub fn new(
        root: PathBuf,
        tx: UnboundedSender<Event>,
        config: Option<Config>,
        read_only: bool,
    ) -> Writes {
        Writes {
            root,
            tx,
            config: config.map(Arc::new),
            read_only,
            queue: Arc::default(),
            queue_watcher: Arc::default(),
            listing: Arc::default(),
        }
    }

    fn send(&self, ev: Event) {
        // The loop has gone: the cockpit is shutting down, nothing to report to.
        let _ = self.tx.send(ev);
    }

    /// Performs one of the effects that change files or processes (a read-only cockpit has
    /// refused them before they got here).
    pub fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Answer {
                job,
                question_id,
                answer,
            } => {
                let outcome = self.answer(&job, &question_id, &answer);
                self.answered(job, outcome);
            }
            Effect::Decide {
                job,
                gate_id,
                approved,
                scope,
                reason,
            } => {
                let verdict = Verdict {
                    approved,
                    scope,
                    reason: &reason,
                };
                let outcome = self.decide(&job, &gate_id, verdict);
                self.answered(job, outcome);
            }
            // A remote host's dispatch is routed to that host before it comes here.
            Effect::Dispatch {
                host: _,
                project,
                task,
                retry_of,
                agent,
            } => {
                let mut req = Request::new(&project, &task);
                req.retry_of = retry_of.map(|r| r.to_string());
                req.agent = agent;
                let result = self.dispatch(&req);
                self.send(Event::Dispatched(result));
            }
            Effect::Retry(id) => {
                let result = match read_job(&self.root, &id, chrono::Utc::now()) {
                    None => Err(format!("job {id} is gone")),
                    Some(job) => self.retry(&job),
                };
                self.send(Event::Dispatched(result));
            }
            Effect::Reply { job, text } => {
                let result = match read_job(&self.root, &job, chrono::Utc::now()) {
                    None => Err(format!("job {job} is gone")),
                    Some(old) => self.reply(&old, &text),
                };
                self.send(Event::Dispatched(result));
            }
            Effect::Kill(id) => self.kill(id),
            other => tracing::warn!("not a write, not performed here: {other:?}"),
        }
    }

    fn answered(&self, job: JobId, outcome: Result<String, String>) {
        self.send(Event::Answered {
            job,
            ok: outcome.is_ok(),
            message: outcome.unwrap_or_else(|e| e),
        });
    }

    /// Answers the question the popup showed, if it is still the one pending. Returns what to
    /// tell the operator.
    fn answer(&self, id: &JobId, question_id: &str, text: &str) -> Result<String, String> {
        let by = operator::operator();
        let who = Answerer {
            source: operator::IN_COCKPIT,
            by: &by,
        };
        let now = chrono::Utc::now();
        match operator::answer_if_pending(&self.root, id, question_id, text, who, now) {
            Ok(Outcome::Done(r)) => Ok(format!("answered {id}: {}", plain_text(&r.answer))),
            Ok(Outcome::Already(r)) => Err(format!(
                "already answered by {}: '{}'",
                r.who(),
                plain_text(&r.answer)
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Approves or denies the gate instance the popup showed, if it is still the one pending.
    fn decide(&self, id: &JobId, gate_id: &str, verdict: Verdict<'_>) -> Result<String, String> {
        let by = operator::operator();
        let who = Answerer {
            source: operator::IN_COCKPIT,
            by: &by,
        };
        let now = chrono::Utc::now();
        match operator::decide_if_pending(&self.root, id, gate_id, verdict, who, now) {
            Ok(Outcome::Done(d)) => Ok(format!("{} {id} at '{}'", d.verb(), plain_text(&d.gate))),
            Ok(Outcome::Already(d)) => Err(format!("already {} by {}", d.verb(), d.who())),
            Err(e) => Err(e.to_string()),
        }
    }

    fn dispatcher(&self) -> Result<Dispatcher<'_>, String> {
        let cfg = self
            .config
            .as_deref()
            .ok_or("this cockpit has no configuration to dispatch with")?;
        Dispatcher::new(cfg).map_err(|e| format!("{e:#}"))
    }

    fn dispatch(&self, req: &Request) -> Result<(Option<JobId>, String), String> {
        let dispatched = self
            .dispatcher()?
            .dispatch(req)
            .map_err(|e| format!("{e:#}"))?;
        Ok(said(dispatched, &req.project, None))
    }

    /// A retry: a Claude job continues its session, any other starts over.
    fn retry(&self, job: &Job) -> Result<(Option<JobId>, String), String> {
        let (dispatched, note) = self
            .dispatcher()?
            .retry(job, None)
            .map_err(|e| format!("{e:#}"))?;
        Ok(said(dispatched, job.project(), note))
    }

    /// A reply: a new job continues the job's session with the text.
    fn reply(&self, job: &Job, text: &str) -> Result<(Option<JobId>, String), String> {
        let created = self
            .dispatcher()?
            .resume(job, &reply_with(text))
            .map_err(|e| format!("{e:#}"))?;
        let message = format!("{} continues the session of {}", created.id, job.id);
        Ok((Some(created.id), message))
    }

    /// SIGTERM, then SIGKILL after the grace period.
    fn kill(&self, id: JobId) {
        let message = match read_job(&self.root, &id, chrono::Utc::now()) {
            None => format!("job {id} is gone"),
            Some(job) => match kill::kill(&job, kill::DEFAULT_GRACE, StopSource::Tui) {
                Ok(code) => format!("killed {id} (exit:{code})"),
                Err(e) => e.to_string(),
            },
        };
        self.send(Event::Notice(message));
        self.send(Event::JobsChanged(vec![id]));
    }

    /// Shows the queue as jobs, and starts queued tasks while slots are free.
    pub fn sync_queue(&mut self) {
        {
            let Ok(mut q) = self.queue.lock() else { return };
            if q.running {
                q.again = true;
                return;
            }
            q.running = true;
        }
        loop {
            self.list_queue();
            let Ok(mut q) = self.queue.lock() else { return };
            if !std::mem::take(&mut q.again) {
                q.running = false;
                return;
            }
        }
    }

    fn list_queue(&self) {
        let Some(cfg) = self.config.as_deref() else {
            return;
        };
        // Watching first, listing after: a task queued between the two is then either in the
        // listing or brings an event (listed first, it could fall between them and be missed
        // until something else changes, for ever on an idle wall display).
        self.watch_queue(cfg);
        if !self.read_only
            && let Ok(d) = Dispatcher::new(cfg)
            && let Err(e) = d.start_queued()
        {
            self.send(Event::Notice(format!("cannot start queued tasks: {e:#}")));
        }
        send_listing(&self.tx, &self.listing, cfg);
    }

    /// Lists the queue whenever it changes, from the watcher's thread. Tried again at every
    /// listing while the queue root is not there to watch (a wall display does not create it).
    fn watch_queue(&self, cfg: &Config) {
        let Ok(mut watcher) = self.queue_watcher.lock() else {
            return;
        };
        if watcher.is_none() {
            if !self.read_only {
                // As `luzia run` makes it, so that there is something to watch.
                let _ = std::fs::create_dir_all(&cfg.queue_dir);
            }
            let (tx, listing) = (self.tx.clone(), self.listing.clone());
            let Some(shared) = self.config.clone() else {
                return;
            };
            // The hold (`limits/` in the queue root) is watched with the queue: a job stopped
            // by the limit writes it, and the listing says it at once.
            *watcher = QueueWatcher::start(&cfg.queue_dir, move || {
                send_listing(&tx, &listing, &shared);
            });
        }
    }
}

/// Lists the queue and sends its rows, with the usage limit that holds it. One listing at a
/// time, from the writes worker and from the queue watcher's thread alike, so an older listing
/// is never sent after a newer one.
fn send_listing(tx: &UnboundedSender<Event>, listing: &Mutex<()>, cfg: &Config) {
    let Ok(_one_at_a_time) = listing.lock() else {
        return;
    };
    let rows = limits::listed_rows(cfg);
    let holds = limits::standing_holds(&cfg.queue_dir, chrono::Utc::now());
    // The loop has gone: the cockpit is shutting down, nothing to report to.
    let _ = tx.send(Event::QueueListed(rows, holds));
}

/// What the message line says of a start: the new job, or the queue; and the note, if any.
fn said(dispatched: Dispatched, project: &str, note: Option<String>) -> (Option<JobId>, String) {
    let (id, message) = match dispatched {
        Dispatched::Started(c) => (Some(c.id.clone()), format!("started {} on {project}", c.id)),
        Dispatched::Queued(q) => (None, format!("queued {}: every slot is taken", q.id)),
    };
    match note {
        Some(n) => (id, n),
        None => (id, message),
    }
}
