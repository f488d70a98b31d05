//! The bridge's one thread that decides: it is told of jobs read (by the watcher, here, and by
//! each host's link) and of Telegram's updates (by the poller), posts each question or gate
//! standing that was never posted, closes the posts whose instance stands no more (editing the
//! message to say how, its buttons gone), and hands presses and replies to `handle`. Everything
//! it changes in the state is saved (fsynced) before it tells anyone, so a restart repeats
//! nothing; what the API could not take now is tried again a little later.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::answer::{Target, job_key};
use super::api::Api;
use super::countdown;
use super::format::{
    closed_text, gate_keyboard, gate_text, question_keyboard, question_text, settlement_words,
};
use super::state::{Closed, Posted, State, Store, What};
use crate::fleet::LinkEvent;
use crate::jobs::insight::alarms::AlarmRules;
use crate::jobs::insight::notify::{Kind, events_of};
use crate::jobs::wire::{Pending, Settlement};
use crate::jobs::{Job, JobId};

/// How soon a post or an edit the API did not take is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// What the worker is told.
pub enum Msg {
    /// Jobs read on this machine (`host: None`) or another; `asked` are the keys that were
    /// looked for (a key asked and not among `jobs` is gone); `full`: every job of that host.
    Jobs {
        host: Option<String>,
        jobs: Vec<Job>,
        asked: Vec<JobId>,
        full: bool,
    },
    /// Updates from Telegram, in order; the offset past the last handled goes back on `ack`.
    Updates {
        updates: Vec<Value>,
        ack: Sender<i64>,
    },
    /// What a host's link reports.
    Link { host: String, event: LinkEvent },
}

pub struct Worker {
    pub(super) api: Api,
    pub(super) chat: String,
    pub(super) allowed: BTreeSet<i64>,
    pub(super) target: Target,
    pub(super) rules: AlarmRules,
    pub(super) this_host: String,
    pub(super) store: Store,
    pub(super) state: State,
    /// Posts recorded but not known to have reached Telegram when the bridge started.
    pub(super) interrupted: HashSet<String>,
    /// How many posts are open: the watcher sends jobs only while some are, or some ask.
    pub(super) open: Arc<AtomicUsize>,
    /// The last error said, so a failure that repeats is not said again each time.
    pub(super) last_error: Option<String>,
}

impl Worker {
    pub fn run(mut self, rx: Receiver<Msg>) {
        self.catch_up();
        loop {
            let msg = match self.wake_in() {
                Some(wait) => match rx.recv_timeout(wait) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                // Nothing owed and no countdown to keep: asleep until told something.
                None => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
            };
            match msg {
                Some(Msg::Jobs {
                    host,
                    jobs,
                    asked,
                    full,
                }) => self.on_jobs(host.as_deref(), &jobs, &asked, full, &[]),
                Some(Msg::Updates { updates, ack }) => {
                    for u in &updates {
                        self.on_update(u);
                    }
                    let _ = ack.send(self.state.offset);
                }
                Some(Msg::Link { host, event }) => self.on_link(&host, event),
                None => {}
            }
            self.catch_up();
        }
    }

    /// How long to sleep at most: until a post or an edit owed is tried again, or the next
    /// countdown edit falls due; none when neither is.
    fn wake_in(&self) -> Option<Duration> {
        let now = Utc::now();
        let countdown = countdown::next_due(&self.state.posted, now)
            .map(|t| (t - now).to_std().unwrap_or(Duration::ZERO));
        let retry = self.owes().then_some(RETRY);
        match (retry, countdown) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a post or an edit waits for the API.
    fn owes(&self) -> bool {
        self.state.posted.values().any(|p| match &p.closed {
            None => p.message_id.is_none(),
            Some(c) => !c.edited && p.message_id.is_some(),
        })
    }

    fn on_link(&mut self, host: &str, event: LinkEvent) {
        match event {
            LinkEvent::Job { job, settled, .. } => {
                let key = JobId::on_host(host, &job.id);
                let job = job.into_job(key.clone(), PathBuf::new());
                self.on_jobs(Some(host), &[job], &[key], false, &settled);
            }
            LinkEvent::Gone(id) => {
                let key = JobId::on_host(host, &id);
                self.on_jobs(Some(host), &[], &[key], false, &[]);
            }
            LinkEvent::Down { error } | LinkEvent::Incompatible { message: error } => {
                self.error(format!("telegram: host {host}: {error}"));
            }
            LinkEvent::Connecting
            | LinkEvent::Hello(_)
            | LinkEvent::Synced
            | LinkEvent::Heartbeat => {}
        }
    }

    /// `settled`: how what went away on another host was settled there, as its luzia said.
    fn on_jobs(
        &mut self,
        host: Option<&str>,
        jobs: &[Job],
        asked: &[JobId],
        full: bool,
        settled: &[Settlement],
    ) {
        let now = Utc::now();
        let mut standing: HashMap<String, (&Job, What)> = HashMap::new();
        for job in jobs {
            for e in events_of(job, &self.rules, now, &self.this_host) {
                let what = match e.kind {
                    Kind::Question => What::Question,
                    Kind::Gate => What::Gate,
                    _ => continue,
                };
                standing.insert(e.key, (job, what));
            }
        }
        let mut new: Vec<(&String, &(&Job, What))> = standing
            .iter()
            .filter(|(k, _)| !self.state.posted.contains_key(*k))
            .collect();
        new.sort_by(|a, b| a.0.cmp(b.0));
        for (key, (job, what)) in new {
            self.post(key, job, *what, now);
        }
        let read: HashSet<&str> = jobs
            .iter()
            .map(|j| j.id.as_str())
            .chain(asked.iter().map(JobId::as_str))
            .collect();
        let by_id: HashMap<&str, &Job> = jobs.iter().map(|j| (j.id.as_str(), j)).collect();
        let ended: Vec<(String, String)> = self
            .state
            .posted
            .iter()
            .filter(|(k, p)| {
                p.closed.is_none()
                    && !standing.contains_key(*k)
                    && job_key(&p.job).is_some_and(|(_, h)| h == host)
                    && (full || read.contains(p.job.as_str()))
            })
            .map(|(k, p)| {
                let outcome = match host {
                    None => self.target.fate(p, by_id.get(p.job.as_str()).copied()),
                    Some(h) => remote_fate(h, p, settled),
                };
                (k.clone(), outcome)
            })
            .collect();
        for (key, outcome) in ended {
            self.close(&key, outcome);
        }
        self.count_open();
    }

    /// Records the post, then sends it.
    fn post(&mut self, key: &str, job: &Job, what: What, now: DateTime<Utc>) {
        let serial = self.state.next_serial;
        let ((text, countdown), markup, instance, options, session) =
            match (what, &job.question, &job.gate) {
                (What::Question, Some(q), _) => (
                    question_text(job, q, now),
                    question_keyboard(serial, q),
                    q.id.clone(),
                    q.options.clone(),
                    false,
                ),
                (What::Gate, _, Some(g)) => (
                    gate_text(job, g, now),
                    Some(gate_keyboard(serial, g.allow_session.is_some())),
                    g.id.clone(),
                    Vec::new(),
                    g.allow_session.is_some(),
                ),
                _ => return,
            };
        self.state.next_serial += 1;
        self.state.posted.insert(
            key.to_owned(),
            Posted {
                serial,
                job: job.id.to_string(),
                what,
                instance,
                options,
                session,
                text,
                markup,
                message_id: None,
                prompts: Vec::new(),
                closed: None,
                countdown,
            },
        );
        if self.save() {
            self.send_post(key);
        }
    }

    fn send_post(&mut self, key: &str) {
        let Some(p) = self.state.posted.get_mut(key) else {
            return;
        };
        // Sent later than recorded (the API was away): its countdown as of now.
        if let Some((text, countdown)) = countdown::retimed(p, Some(Utc::now())) {
            p.text = text;
            p.countdown = Some(countdown);
        }
        let p = &*p;
        let mut text = p.text.clone();
        if self.interrupted.contains(key) {
            text.push_str(
                "\n\n(Posted again: luzia was stopped while posting it, so an earlier copy may \
                 exist; either one's buttons answer it once.)",
            );
        }
        let extra = p
            .markup
            .clone()
            .map_or_else(|| json!({}), |m| json!({"reply_markup": m}));
        match self.api.send_message(&self.chat, &text, extra) {
            Ok(id) => {
                if let Some(p) = self.state.posted.get_mut(key) {
                    p.message_id = Some(id);
                }
                self.interrupted.remove(key);
                self.save();
                self.last_error = None;
                log(&format!("{key}: posted"));
            }
            Err(e) => self.error(format!("telegram: cannot post {key}: {e}")),
        }
    }

    /// Closes the post `key` with `outcome`, then edits its message to say so.
    pub(super) fn close(&mut self, key: &str, outcome: String) {
        let Some(p) = self.state.posted.get_mut(key) else {
            return;
        };
        if p.closed.is_some() {
            return;
        }
        log(&format!("{key}: {outcome}"));
        p.closed = Some(Closed {
            outcome,
            at: Utc::now(),
            edited: p.message_id.is_none(),
        });
        if self.save() {
            self.edit(key);
        }
        self.count_open();
    }

    fn edit(&mut self, key: &str) {
        let Some(p) = self.state.posted.get(key) else {
            return;
        };
        let (Some(id), Some(c)) = (p.message_id, &p.closed) else {
            return;
        };
        // Settled, the lines that tell time say the times alone: no countdown left standing.
        let posted = countdown::retimed(p, None).map_or_else(|| p.text.clone(), |(t, _)| t);
        let text = closed_text(&posted, &c.outcome);
        match self.api.edit_message(&self.chat, id, &text, None) {
            Ok(()) => {
                if let Some(c) = self
                    .state
                    .posted
                    .get_mut(key)
                    .and_then(|p| p.closed.as_mut())
                {
                    c.edited = true;
                }
                self.save();
            }
            Err(e) => self.error(format!("telegram: cannot edit the message of {key}: {e}")),
        }
    }

    /// Posts and edits that wait for the API, tried again; old closed posts forgotten.
    fn catch_up(&mut self) {
        let keys: Vec<(String, bool)> = self
            .state
            .posted
            .iter()
            .filter_map(|(k, p)| match &p.closed {
                None if p.message_id.is_none() => Some((k.clone(), true)),
                Some(c) if !c.edited && p.message_id.is_some() => Some((k.clone(), false)),
                _ => None,
            })
            .collect();
        for (key, unposted) in keys {
            if unposted {
                self.send_post(&key);
            } else {
                self.edit(&key);
            }
        }
        let before = self.state.posted.len();
        self.state.prune(Utc::now());
        if self.state.posted.len() != before {
            self.save();
        }
        self.retime();
    }

    /// The countdown edits due now, made. One that fails is said and tried again later: the
    /// post, its buttons and its answers are untouched by it.
    fn retime(&mut self) {
        let now = Utc::now();
        for edit in countdown::due(&self.state.posted, now) {
            let Some(p) = self.state.posted.get(&edit.key) else {
                continue;
            };
            let (Some(id), markup) = (p.message_id, p.markup.clone()) else {
                continue;
            };
            let sent = self.api.edit_message(&self.chat, id, &edit.text, markup);
            let Some(p) = self.state.posted.get_mut(&edit.key) else {
                continue;
            };
            match sent {
                Ok(()) => {
                    p.text = edit.text;
                    p.countdown = Some(edit.countdown);
                }
                Err(e) => {
                    if let Some(c) = p.countdown.as_mut() {
                        c.edited = Some(now);
                    }
                    let key = edit.key;
                    self.error(format!(
                        "telegram: cannot edit the countdown of {key}'s message: {e}"
                    ));
                }
            }
            self.save();
        }
    }

    fn count_open(&self) {
        let n = self
            .state
            .posted
            .values()
            .filter(|p| p.closed.is_none())
            .count();
        self.open.store(n, Ordering::Relaxed);
    }

    /// Saves the state; `false` (said) when it cannot be: nothing is sent that is not saved.
    pub(super) fn save(&mut self) -> bool {
        match self.store.save(&self.state) {
            Ok(()) => true,
            Err(e) => {
                self.error(format!("telegram: {e}"));
                false
            }
        }
    }

    /// Says `message` on stderr unless it was the last thing said.
    pub(super) fn error(&mut self, message: String) {
        if self.last_error.as_ref() != Some(&message) {
            crate::say!("luzia: {message}");
            self.last_error = Some(message);
        }
    }
}

/// What became of `posted`'s instance on `host`: in the words used for this machine's when
/// that host's luzia said how it was settled, else where to look.
fn remote_fate(host: &str, posted: &Posted, settled: &[Settlement]) -> String {
    let kind = match posted.what {
        What::Question => Pending::Question,
        What::Gate => Pending::Gate,
    };
    settled
        .iter()
        .find(|s| s.kind == kind && s.id == posted.instance)
        .and_then(settlement_words)
        .map_or_else(
            || {
                format!(
                    "settled on {host} (`luzia jobs {}` there says how)",
                    job_key(&posted.job).map_or(String::new(), |(id, _)| id.to_string())
                )
            },
            |words| format!("{words} (on {host})"),
        )
}

/// One line on stdout, as the notifier says what it sent.
pub(super) fn log(what: &str) {
    use std::io::Write;
    let line = format!(
        "{} telegram {what}\n",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}
