//! Remote hosts in the state: how each host's link stands, and its jobs coming in, already keyed
//! `"<id>@<host>"` (see `JobId::on_host`). A host that drops keeps its jobs, marked stale from
//! then, until it is up and has sent its whole state again.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use super::App;
use crate::jobs::{Job, JobId};
use crate::tui::effect::Effect;
use crate::tui::event::HostNews;

/// The name this machine goes by among the hosts (the config reserves it).
pub const LOCAL: &str = "local";

/// How a host's link stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// Not up yet (first time): nothing is known of it.
    Connecting,
    /// `hello` arrived: the remote luzia's version and its configured projects.
    Up {
        luzia: String,
        projects: Vec<String>,
    },
    /// Unreachable or dropped, since `since` (the first failure in a row: retries keep it).
    Down { error: String, since: DateTime<Utc> },
    /// Its luzia cannot talk to this one, since `since`: `message` says what to install.
    Incompatible {
        message: String,
        since: DateTime<Utc>,
    },
}

/// One remote host as the cockpit knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub link: Link,
    /// Down or incompatible, and trying again now.
    pub retrying: bool,
    /// The last sign of life: hello, a job, a heartbeat.
    pub heartbeat: Option<DateTime<Utc>>,
    /// Its jobs were kept when the link dropped, at this time: those not sent again since are
    /// stale until the host has sent its whole state.
    pub stale_since: Option<DateTime<Utc>>,
    /// The jobs sent since the last `Up`.
    sent: HashSet<JobId>,
}

impl Host {
    pub fn new(name: String) -> Host {
        Host {
            name,
            link: Link::Connecting,
            retrying: false,
            heartbeat: None,
            stale_since: None,
            sent: HashSet::new(),
        }
    }

    pub fn is_up(&self) -> bool {
        matches!(self.link, Link::Up { .. })
    }

    /// Why the host cannot be used now, if it cannot: shown as its row in the table.
    pub fn trouble(&self) -> Option<&str> {
        match &self.link {
            Link::Down { error, .. } => Some(error),
            Link::Incompatible { message, .. } => Some(message),
            Link::Connecting | Link::Up { .. } => None,
        }
    }

    /// When the host's trouble began (see `trouble`).
    pub fn trouble_since(&self) -> Option<DateTime<Utc>> {
        match &self.link {
            Link::Down { since, .. } | Link::Incompatible { since, .. } => Some(*since),
            Link::Connecting | Link::Up { .. } => None,
        }
    }

    /// When the job `key` of this host went stale, if it is.
    fn stale(&self, key: &JobId) -> Option<DateTime<Utc>> {
        self.stale_since.filter(|_| !self.sent.contains(key))
    }
}

impl App {
    /// The remote host `name`, if it is shown.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// When this remote job went stale (its host dropped and has not sent it again), if it is.
    pub fn stale_since(&self, key: &JobId) -> Option<DateTime<Utc>> {
        key.host()
            .and_then(|name| self.host(name))
            .and_then(|h| h.stale(key))
    }

    /// The hosts that cannot be used now, in order: each is a row of the table.
    pub fn troubled_hosts(&self) -> impl Iterator<Item = &Host> {
        let needle = self.table.filter.to_lowercase();
        self.hosts
            .iter()
            .filter(move |h| h.trouble().is_some() && h.name.to_lowercase().contains(&needle))
    }

    /// Some host is in trouble or has stale jobs: the screen says for how long.
    pub fn hosts_aging(&self) -> bool {
        self.hosts
            .iter()
            .any(|h| h.trouble().is_some() || h.stale_since.is_some())
    }

    /// The rows of troubled hosts the table shows above its jobs: each one while they take at
    /// most half its rows, else as many as do (the last saying how many more there are).
    pub fn host_rows(&self) -> usize {
        let troubled = self.troubled_hosts().count();
        if troubled == 0 {
            return 0;
        }
        let rows = self.areas().table_rows();
        troubled.min((rows / 2).max(1)).min(rows)
    }

    /// The rows of jobs the table shows.
    pub fn job_rows(&self) -> usize {
        self.areas().table_rows().saturating_sub(self.host_rows())
    }

    fn host_mut(&mut self, name: &str) -> &mut Host {
        let at = match self.hosts.iter().position(|h| h.name == name) {
            Some(at) => at,
            None => {
                // Not among those the cockpit started with: shown after them.
                self.hosts.push(Host::new(name.to_string()));
                self.hosts.len() - 1
            }
        };
        &mut self.hosts[at]
    }

    pub(super) fn on_host(&mut self, name: String, news: HostNews) -> Vec<Effect> {
        let now = self.now;
        let host = self.host_mut(&name);
        match news {
            HostNews::Connecting => {
                if host.trouble().is_some() {
                    host.retrying = true;
                } else {
                    host.link = Link::Connecting;
                }
                vec![]
            }
            HostNews::Up { luzia, projects } => {
                host.link = Link::Up { luzia, projects };
                host.retrying = false;
                host.heartbeat = Some(now);
                host.sent.clear();
                // The rows of troubled hosts are part of the table.
                self.changes += 1;
                self.refresh_view()
            }
            HostNews::Heartbeat => {
                host.heartbeat = Some(now);
                self.dirty = false;
                vec![]
            }
            HostNews::Jobs(jobs) => self.on_host_jobs(&name, jobs),
            HostNews::Gone(ids) => {
                let ids: Vec<JobId> = ids
                    .into_iter()
                    .filter(|id| id.host() == Some(name.as_str()))
                    .collect();
                host.heartbeat = Some(now);
                for id in &ids {
                    host.sent.remove(id);
                }
                self.on_jobs_read(ids.into_iter().map(|id| (id, None)).collect())
            }
            HostNews::Synced => self.host_synced(&name),
            HostNews::Down { error } => {
                let since = host.trouble_since().unwrap_or(now);
                host.link = Link::Down { error, since };
                self.host_dropped(&name)
            }
            HostNews::Incompatible { message } => {
                let since = host.trouble_since().unwrap_or(now);
                host.link = Link::Incompatible { message, since };
                self.host_dropped(&name)
            }
        }
    }

    /// The host has sent its whole state since it came up: its jobs it did not send are gone,
    /// and none is stale any more.
    fn host_synced(&mut self, name: &str) -> Vec<Effect> {
        let now = self.now;
        let host = self.host_mut(name);
        host.heartbeat = Some(now);
        let was_stale = host.stale_since.take().is_some();
        let sent = std::mem::take(&mut host.sent);
        let gone: Vec<(JobId, Option<Job>)> = self
            .jobs
            .keys()
            .filter(|k| k.host() == Some(name) && !sent.contains(*k))
            .map(|k| (k.clone(), None))
            .collect();
        self.host_mut(name).sent = sent;
        let effects = self.on_jobs_read(gone);
        self.dirty |= was_stale;
        effects
    }

    /// The host's jobs stay, stale from now (or from when it first dropped).
    fn host_dropped(&mut self, name: &str) -> Vec<Effect> {
        let now = self.now;
        let host = self.host_mut(name);
        host.retrying = false;
        host.sent.clear();
        host.stale_since.get_or_insert(now);
        self.changes += 1;
        self.refresh_view()
    }

    fn on_host_jobs(&mut self, name: &str, jobs: Vec<Job>) -> Vec<Effect> {
        let now = self.now;
        let host = self.host_mut(name);
        host.heartbeat = Some(now);
        // A job under another host's key is not this host's to report.
        let jobs: Vec<Job> = jobs
            .into_iter()
            .filter(|j| j.id.host() == Some(name))
            .collect();
        let freshened =
            host.stale_since.is_some() && jobs.iter().any(|j| !host.sent.contains(&j.id));
        host.sent.extend(jobs.iter().map(|j| j.id.clone()));
        let effects =
            self.on_jobs_read(jobs.into_iter().map(|j| (j.id.clone(), Some(j))).collect());
        // A stale row sent again loses its mark, even when nothing else of it changed.
        self.dirty |= freshened;
        effects
    }
}

/// What reads this machine's files (a job's directory, its log, its process) is never asked of
/// another host's job: its key names no directory here. What must reach the host (its output,
/// answers, decisions, its change) goes by other effects, which the executor routes there.
pub(super) fn local_reads_only(effects: Vec<Effect>) -> Vec<Effect> {
    let local = |id: &JobId| id.host().is_none();
    effects
        .into_iter()
        .filter_map(|effect| match effect {
            Effect::ReadJobs(mut ids) => {
                ids.retain(local);
                (!ids.is_empty()).then_some(Effect::ReadJobs(ids))
            }
            Effect::ScanIssues(mut logs) => {
                logs.retain(|l| local(&l.id));
                (!logs.is_empty()).then_some(Effect::ScanIssues(logs))
            }
            Effect::ForgetIssues(mut ids) => {
                ids.retain(local);
                (!ids.is_empty()).then_some(Effect::ForgetIssues(ids))
            }
            Effect::LoadFeed(mut ids) => {
                ids.retain(local);
                Some(Effect::LoadFeed(ids))
            }
            Effect::Sync { mut skip } => {
                skip.retain(local);
                Some(Effect::Sync { skip })
            }
            Effect::LoadPrompt(id) | Effect::LoadHistory(id) | Effect::PollLog(id)
                if !local(&id) =>
            {
                None
            }
            other => Some(other),
        })
        .collect()
}
