//! `luzia notify`: the `[notify] command` run for each new event, with no cockpit open. The
//! events and the ledger of what was sent are the domain's ([`crate::jobs::insight::notify`]);
//! this is the config around them, the look at the jobs (once, or watching), and the command.

pub mod command;
pub mod telegram;
mod watch;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

use crate::config::{Config, NotifyConfig};
use crate::jobs::Job;
use crate::jobs::insight::alarms::AlarmRules;
use crate::jobs::insight::notify::ledger::{Claimed, Ledger, LedgerError, Limits};
use crate::jobs::insight::notify::{Event, Kind, events_of, last_output, this_host};
use command::{Delivery, deliver};

pub use watch::watch;

/// Lines of output a failure's body ends with.
const FAILURE_LINES: usize = 5;

pub struct Notifier {
    root: PathBuf,
    /// The root as the ledger knows it (its real path, when it has one).
    root_key: String,
    /// `None` when only the Telegram bridge is configured: no command is run then.
    settings: Option<NotifyConfig>,
    rules: AlarmRules,
    ledger: Ledger,
    host: String,
    /// The config the queue's starter runs with, to continue the jobs the usage limit stopped
    /// at its reset and start the tasks it held; `None` for a read-only config.
    starter: Option<Box<Config>>,
}

/// `$XDG_STATE_HOME/luzia`, else `~/.local/state/luzia`: where the ledger lives.
pub fn state_dir() -> Result<PathBuf> {
    crate::xdg::state_home(&crate::xdg::process_env)
        .map(|d| d.join("luzia"))
        .context(
            "neither XDG_STATE_HOME nor HOME is set: cannot place the file that remembers which \
             notifications were sent (set XDG_STATE_HOME)",
        )
}

impl Notifier {
    pub fn new(
        cfg: &Config,
        settings: Option<&NotifyConfig>,
        root: &Path,
        state: &Path,
    ) -> Notifier {
        // Its real path: the events' `job_dir` must mean the same from the command's directory,
        // and the ledger must know the root by one name however it was given.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
        Notifier {
            root_key: root.display().to_string(),
            root,
            settings: settings.cloned(),
            rules: cfg.alarms.clone(),
            ledger: Ledger::new(state),
            host: this_host(),
            starter: (!cfg.read_only).then(|| Box::new(cfg.clone())),
        }
    }

    /// At a tick: what the usage limit left to do at its reset (a job to continue, tasks
    /// held), done by the queue's starter.
    pub fn start_after_limits(&self) {
        let Some(cfg) = self.starter.as_deref() else {
            return;
        };
        if let Ok(d) = crate::dispatcher::Dispatcher::new(cfg)
            && d.limits_due(chrono::Utc::now())
            && let Err(e) = d.start_queued()
        {
            crate::say!("luzia: {e:#}");
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn ledger_path(&self) -> PathBuf {
        self.ledger.path()
    }

    /// The events of `jobs` not sent before, claimed. `full`: `jobs` is every job there is, so
    /// keys of events that no longer stand may be forgotten. Without `always`, jobs that give
    /// no event leave the ledger alone (a streaming agent's every write brings a look).
    pub fn look(
        &self,
        jobs: &[Job],
        full: bool,
        always: bool,
        now: DateTime<Utc>,
    ) -> Result<Claimed, LedgerError> {
        let Some(settings) = &self.settings else {
            return Ok(Claimed::default());
        };
        let derived: Vec<Event> = jobs
            .iter()
            .flat_map(|j| events_of(j, &self.rules, now, &self.host))
            .collect();
        let standing: Option<HashSet<String>> =
            full.then(|| derived.iter().map(|e| e.key.clone()).collect());
        let mut wanted: Vec<Event> = derived
            .into_iter()
            .filter(|e| settings.filter.wants(e))
            .collect();
        if wanted.is_empty() && !full && !always {
            return Ok(Claimed::default());
        }
        wanted.sort_by(|a, b| a.at.cmp(&b.at));
        let limits = Limits {
            max_per_minute: settings.max_per_minute,
        };
        self.ledger.claim(
            &self.root_key,
            wanted,
            standing.as_ref(),
            limits,
            now,
            &self.host,
        )
    }

    /// Runs the command for `event` and says on `out` what came of it, one line.
    pub fn send(&self, mut event: Event, out: &mut dyn Write) -> Delivery {
        if event.kind == Kind::Failed && !event.job_dir.is_empty() {
            let lines = last_output(Path::new(&event.job_dir), FAILURE_LINES);
            if !lines.is_empty() {
                event.body = format!("{}\nLast output:\n{}", event.body, lines.join("\n"));
            }
        }
        let (command, timeout) = match &self.settings {
            Some(s) => (s.command.as_slice(), s.timeout),
            None => (&[][..], std::time::Duration::ZERO),
        };
        let delivery = deliver(command, timeout, &event);
        let program = command.first().map_or("", String::as_str);
        let _ = writeln!(
            out,
            "{} {} {}: {}",
            Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            event.kind,
            if event.key.is_empty() {
                "-"
            } else {
                &event.key
            },
            delivery.describe(program)
        );
        let _ = out.flush();
        delivery
    }

    /// Sends a sample event, whatever the ledger says: to check a recipe.
    pub fn test(&self, out: &mut dyn Write) -> u8 {
        let d = self.send(Event::sample(Utc::now(), &self.host), out);
        u8::from(!d.is_sent())
    }
}

/// One look at every job: sends what is new and returns 0, or 1 when a command failed.
pub fn once(n: &Notifier, out: &mut dyn Write) -> Result<u8> {
    let now = Utc::now();
    let jobs = crate::jobs::scan(n.root(), now)?;
    let claimed = n.look(&jobs, true, true, now)?;
    let mut failed = 0;
    for event in claimed.send {
        failed += usize::from(!n.send(event, out).is_sent());
    }
    if claimed.held > 0 {
        writeln!(
            out,
            "{} events held back by the rate limit (max_per_minute): they come in one summary at \
             the next run",
            claimed.held
        )?;
    }
    Ok(u8::from(failed > 0))
}
