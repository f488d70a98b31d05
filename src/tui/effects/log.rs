//! The log worker: the output pane's follower. One thread, so opening a log, polling it and
//! closing it happen in the order asked; every result names its job, and the app drops those
//! for a job no longer selected. What the follower reads is also handed to the known-issue
//! scanner, which then does not read the log on screen a second time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc::UnboundedSender;

use super::insight::IssueWorker;
use super::remote_log::RemoteLog;
use crate::config::HostConfig;
use crate::jobs::JobId;
use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::follow::Reset;
use crate::jobs::fs::follow::{Follower, Handoff};
use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::fs::tail::{RawLine, last_lines_within};
use crate::tui::event::Event;

/// Lines read from the end of a log when it is first shown.
pub const INITIAL_LINES: usize = 2000;
/// Bytes read at most for them (a log of huge lines costs this, not 2000 of them), and at most
/// per poll of the follower, so that what one poll turns into lines stays small.
const INITIAL_BYTES: u64 = 1024 * 1024;
/// A log more than this far ahead of the pane is not read up to its end: the pane jumps to its
/// last [`INITIAL_BYTES`], as when it is first shown (a gigabyte written at once, a log growing
/// faster than it can be shown). The known-issue scanner reads what the pane skips itself.
const SKIP_BEHIND: u64 = 2 * 1024 * 1024;
/// Polls of the follower per `PollLog`: a log growing faster than it is read must not hold the
/// worker forever.
const POLLS_PER_ASK: usize = 4;

pub struct LogPane {
    root: PathBuf,
    tx: UnboundedSender<Event>,
    issues: IssueWorker,
    follower: Option<(JobId, Follower)>,
    /// The hosts whose jobs' logs are followed over ssh.
    hosts: Arc<OnceLock<HashMap<String, HostConfig>>>,
    /// Another host's log being followed: it sends its lines itself, unasked.
    remote: Option<RemoteLog>,
}

impl LogPane {
    pub fn new(
        root: PathBuf,
        tx: UnboundedSender<Event>,
        issues: IssueWorker,
        hosts: Arc<OnceLock<HashMap<String, HostConfig>>>,
    ) -> LogPane {
        LogPane {
            root,
            tx,
            issues,
            follower: None,
            hosts,
            remote: None,
        }
    }

    pub fn open(&mut self, id: JobId) {
        self.close();
        if let Some(host) = id.host() {
            return self.open_remote(host.to_owned(), id);
        }
        let path = self.root.join(id.as_str()).join(LOG_FILE);
        let cannot = |e: std::io::Error| Some(format!("cannot read {}: {e}", path.display()));
        let (lines, error, follower) = match open_nofollow(&path) {
            Ok(Some(file)) => match initial_tail(&path, file) {
                Ok((lines, follower)) => (lines, None, Some(follower)),
                Err(e) => (vec![], cannot(e), None),
            },
            // Nothing yet: the pane says so until the first line arrives.
            Ok(None) => (
                vec![],
                None,
                Some(Follower::from_start(&path).read_at_most(INITIAL_BYTES)),
            ),
            Err(e) => (vec![], cannot(e), None),
        };
        if let Some(f) = &follower {
            // From here on the scanner takes what the pane reads; what came before, it reads.
            let here = Handoff::at(f.position());
            self.issues.take(id.clone(), path.clone(), here);
        }
        let partial = follower.as_ref().and_then(Follower::partial_line);
        self.follower = follower.map(|f| (id.clone(), f));
        let _ = self.tx.send(Event::LogLoaded {
            id: id.clone(),
            lines,
            error,
        });
        if let Some(line) = partial {
            let _ = self.tx.send(Event::LogPartial { id, line });
        }
    }

    pub fn poll(&mut self, id: &JobId) {
        let Some((fid, follower)) = self.follower.as_mut().filter(|(fid, _)| fid == id) else {
            return;
        };
        for _ in 0..POLLS_PER_ASK {
            let skipped = match follower.skip_to_end(SKIP_BEHIND, INITIAL_BYTES) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!("following {}: {e}", fid);
                    return;
                }
            };
            let before = follower.partial_line();
            let chunk = match follower.poll() {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::warn!("following {}: {e}", fid);
                    return;
                }
            };
            if chunk.read > 0 || chunk.reset.is_some() {
                let handed = follower.handoff(&chunk);
                self.issues
                    .take(fid.clone(), follower.path().to_owned(), handed);
            }
            let reset = chunk
                .reset
                .or((skipped > 0).then_some(Reset::Skipped(skipped)));
            let appended = reset.is_some() || !chunk.lines.is_empty();
            if appended {
                let _ = self.tx.send(Event::LogAppended {
                    id: fid.clone(),
                    reset,
                    lines: chunk.lines,
                });
            }
            // The line still being written: shown after the others, replaced as it grows.
            let partial = follower.partial_line();
            if let Some(line) = partial.filter(|p| appended || before.as_ref() != Some(p)) {
                let _ = self.tx.send(Event::LogPartial {
                    id: fid.clone(),
                    line,
                });
            }
            if !chunk.more {
                return;
            }
        }
    }

    /// `luzia logs -f` on the job's host, as many lines first as a local log shows.
    fn open_remote(&mut self, host: String, id: JobId) {
        let Some(config) = self.hosts.get().and_then(|h| h.get(&host)) else {
            let _ = self.tx.send(Event::LogLoaded {
                id,
                lines: vec![],
                error: Some(format!("host {host} is not one this cockpit shows")),
            });
            return;
        };
        let args = [
            "logs".to_owned(),
            "-f".to_owned(),
            format!("--lines={INITIAL_LINES}"),
            id.local_id().to_string(),
        ];
        let cmd = super::remote_log::until_stdin_closes(&crate::fleet::ssh::command(config, &args));
        self.remote = RemoteLog::open(id, cmd, self.tx.clone());
    }

    /// Stops following: the scanner reads that log itself again; another host's ssh is killed.
    pub fn close(&mut self) {
        self.remote = None;
        if let Some((id, _)) = self.follower.take() {
            self.issues.unfollow(id);
        }
    }
}

/// The last lines of the log, and a follower that carries on from its end (completing the
/// last line if it is still being written).
fn initial_tail(path: &Path, file: std::fs::File) -> std::io::Result<(Vec<RawLine>, Follower)> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut lines = last_lines_within(&file, len, INITIAL_LINES, INITIAL_BYTES)?;
    let mut partial = None;
    let mut last = [0u8];
    if len > 0 && file.read_exact_at(&mut last, len - 1).is_ok() && last[0] != b'\n' {
        // The last line is still being written: the follower completes it.
        partial = lines.pop();
    }
    let cut = partial.as_ref().is_some_and(|p| p.cut);
    let bytes = partial.map(|p| p.bytes).unwrap_or_default();
    let follower = Follower::resume(path, file, len, bytes)?
        .partial_was_cut(cut)
        .read_at_most(INITIAL_BYTES);
    Ok((lines, follower))
}
