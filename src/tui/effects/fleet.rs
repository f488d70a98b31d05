//! The fleet worker: effects on another host's jobs, performed by that host's own `luzia` over
//! ssh (`crate::fleet::run`, on the connection the host's link already holds). Exactly-once is
//! the remote luzia's to keep: an answer here is `luzia answer ID --question QN` there, which
//! refuses, saying who answered, once the question is no longer pending.
//!
//! Each host has two lanes of one thread each: writes (answers, decisions, dispatch, retry,
//! reply, kill, merge, discard) in the order asked, and reads (a diff, a preview). A slow or
//! unreachable host holds only its own lanes; every other host and the local workers go on.
//! Results come back as the events the local workers send, naming the key the app holds
//! (`"<id>@<host>"`).

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Output};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::remote_text;
use super::worker::Worker;
use crate::config::HostConfig;
use crate::fleet::RemoteError;
use crate::fleet::args::{self, Relayed};
use crate::jobs::JobId;
use crate::jobs::hitl::operator::{self, Verdict};
use crate::tui::effect::Effect;
use crate::tui::event::Event;

/// Runs `luzia ARGS` on a host (`--jobs-dir` and the remote binary come from its config): what
/// the remote command printed and its status, or why it could not be run at all.
pub type Runner = Arc<dyn Fn(&str, &HostConfig, &[String]) -> Result<Output, String> + Send + Sync>;

/// The runner of the cockpit: the system's ssh, sharing the host's connection. A remote luzia
/// that ran and refused comes back as its output, so that its refusal is said as a local one
/// is ("already answered by ..."); ssh failing, or no luzia there, is said as `fleet` says it.
pub fn ssh_runner() -> Runner {
    Arc::new(
        |name, host, args| match crate::fleet::run(name, host, args) {
            Ok(out) => Ok(out),
            Err(RemoteError::Failed { code, stderr, .. }) => Ok(Output {
                status: ExitStatus::from_raw((code & 0xff) << 8),
                stdout: Vec::new(),
                stderr: stderr.into_bytes(),
            }),
            Err(e) => Err(e.to_string()),
        },
    )
}

/// One host's lanes.
struct Lanes {
    writes: Worker<Remote>,
    reads: Worker<Remote>,
}

pub struct Fleet {
    hosts: HashMap<String, Lanes>,
    tx: UnboundedSender<Event>,
}

impl Fleet {
    /// Starts two threads per host (`luzia-fleet`, ...); nothing is run until asked.
    pub fn start(
        hosts: &[(String, HostConfig)],
        run: &Runner,
        tx: &UnboundedSender<Event>,
    ) -> std::io::Result<Fleet> {
        let mut lanes = HashMap::new();
        for (name, config) in hosts {
            let remote = Remote {
                name: name.clone(),
                config: config.clone(),
                tx: tx.clone(),
                run: run.clone(),
            };
            let (w, r) = (remote.clone(), remote);
            let writes = Worker::start("luzia-fleet", 1, move || w.clone())?;
            let reads = Worker::start("luzia-fleet", 1, move || r.clone())?;
            lanes.insert(name.clone(), Lanes { writes, reads });
        }
        Ok(Fleet {
            hosts: lanes,
            tx: tx.clone(),
        })
    }

    /// Hands an effect on `host`'s job to that host's lane; returns at once.
    pub fn perform(&self, host: &str, effect: Effect) {
        let Some(lanes) = self.hosts.get(host) else {
            // A key of a host this cockpit does not show: nothing can have sent it but a bug.
            tracing::warn!("no link to host {host}: not performed: {effect:?}");
            let _ = self.tx.send(Event::Notice(format!(
                "host {host} is not one this cockpit shows: nothing was done"
            )));
            return;
        };
        let lane = match effect {
            Effect::LoadChange(_) | Effect::PreviewReview { .. } => &lanes.reads,
            _ => &lanes.writes,
        };
        lane.run(move |r| r.perform(effect));
    }
}

/// A lane's state: the host and how to reach it.
#[derive(Clone)]
struct Remote {
    name: String,
    config: HostConfig,
    tx: UnboundedSender<Event>,
    run: Runner,
}

impl Remote {
    fn send(&self, ev: Event) {
        // The loop has gone: the cockpit is shutting down, nothing to report to.
        let _ = self.tx.send(ev);
    }

    /// `luzia ARGS` there: its stdout when it succeeded, else what it (or ssh) said was wrong.
    fn luzia(&self, args: &[String]) -> Result<String, String> {
        let out = self.run(args)?;
        remote_text::outcome(&self.name, &out)
    }

    /// `luzia ARGS` there: what it printed and its status, or why it could not be run.
    fn run(&self, args: &[String]) -> Result<Output, String> {
        tracing::info!(host = %self.name, ?args, "remote command");
        (self.run)(&self.name, &self.config, args)
    }

    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Answer {
                job,
                question_id,
                answer,
            } => {
                let id = job.local_id();
                self.answered(job, |relay| args::answer(&id, &question_id, &answer, relay));
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
                let id = job.local_id();
                self.answered(job, |relay| args::decide(&id, &gate_id, verdict, relay));
            }
            Effect::Dispatch {
                project,
                task,
                retry_of,
                agent,
                ..
            } => self.dispatch(&project, &task, retry_of, agent.as_deref()),
            Effect::Retry(job) => {
                let result = self
                    .luzia(&remote_text::args(&["retry", job.local_id().as_str()]))
                    .map(|out| remote_text::started(&self.name, &out, None));
                self.send(Event::Dispatched(result));
            }
            Effect::Reply { job, text } => self.reply(job, &text),
            Effect::Kill(job) => self.kill(&job),
            Effect::LoadChange(id) => {
                let args = remote_text::args(&["diff", id.local_id().as_str(), "--json"]);
                let change = self.luzia(&args).and_then(|out| remote_text::change(&out));
                self.send(Event::ChangeLoaded { id, change });
            }
            Effect::PreviewReview { job, op } => {
                let preview = Ok(remote_text::no_preview(&self.name, &job, op));
                self.send(Event::ReviewPreviewed { job, op, preview });
            }
            Effect::Review { job, op } => {
                let result = self
                    .luzia(&remote_text::args(&[op.verb(), job.local_id().as_str()]))
                    .map(|out| format!("{} (on {})", out.trim_end(), self.name));
                self.send(Event::Reviewed { job, op, result });
            }
            other => tracing::warn!("not performed on host {}: {other:?}", self.name),
        }
    }

    /// A new job continuing the job's session with `text`, there.
    fn reply(&self, job: JobId, text: &str) {
        let args = remote_text::args(&["reply", job.local_id().as_str(), "--", text]);
        let result = self.luzia(&args).map(|out| {
            let new = remote_text::new_job(&self.name, &out);
            let said = match &new {
                Some(id) => format!("{id} continues the session of {job}"),
                None => format!("{job}: {}", remote_text::first_line(&out)),
            };
            (new, said)
        });
        self.send(Event::Dispatched(result));
    }

    /// SIGTERM, then SIGKILL after the grace period, there: the link reports the job's end.
    fn kill(&self, job: &JobId) {
        let said = match self.luzia(&remote_text::args(&["kill", job.local_id().as_str()])) {
            Ok(out) => format!("{} (on {})", remote_text::first_line(&out), self.name),
            Err(e) => e,
        };
        self.send(Event::Notice(said));
    }

    /// An answer or a decision, recorded there as given in the cockpit by this operator (a
    /// luzia there older than that records it as its own ssh user's, [`args::relayed`]): whether
    /// it stands, and what to tell the operator.
    fn answered(&self, job: JobId, build: impl Fn(Option<Relayed<'_>>) -> Vec<String>) {
        let by = operator::operator();
        let relay = Relayed {
            source: operator::IN_COCKPIT,
            by: &by,
        };
        let refused = |r: &Result<Output, String>| matches!(r, Ok(out) if args::relay_refused(out.status.code(), &out.stderr));
        let ran = args::relayed(relay, build, |a| self.run(a), refused);
        let outcome = ran.and_then(|out| remote_text::outcome(&self.name, &out));
        self.send(Event::Answered {
            job,
            ok: outcome.is_ok(),
            message: match outcome {
                Ok(out) => format!("{} (on {})", remote_text::first_line(&out), self.name),
                Err(e) => e,
            },
        });
    }

    fn dispatch(&self, project: &str, task: &str, retry_of: Option<JobId>, agent: Option<&str>) {
        let result = match retry_of {
            // The app retries with `Retry`; a dispatch naming what it retries cannot say so
            // to `luzia run` there, and is not run rather than run without it.
            Some(of) => Err(format!(
                "a retry of {of} is started with the retry key, not as a new task on {}",
                self.name
            )),
            None => {
                let mut args = vec!["run"];
                if let Some(agent) = agent {
                    args.extend(["--agent", agent]);
                }
                args.extend([project, "--", task]);
                self.luzia(&remote_text::args(&args))
                    .map(|out| remote_text::started(&self.name, &out, Some(project)))
            }
        };
        self.send(Event::Dispatched(result));
    }
}
