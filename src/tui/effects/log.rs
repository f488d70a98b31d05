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
use crate::jobs::fs::follow::{Follower, Handoff, WholeLines};
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
/// A poll that brings more than this many bytes of lines brings more than anyone can read as it
/// scrolls by (a log growing by megabytes a second): only its last [`FLOOD_LINES`] become lines
/// for the pane, which says the others were skipped. The scanner is handed them all.
const FLOOD_BYTES: usize = 256 * 1024;
/// More than a screen has rows.
const FLOOD_LINES: usize = 200;
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
            let (chunk, text) = match follower.poll_whole(u64::MAX, Vec::new()) {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!("following {}: {e}", fid);
                    return;
                }
            };
            let (lines, passed) = pane_lines(&text);
            if chunk.read > 0 || chunk.reset.is_some() {
                // The bytes read go to the scanner as they are: not copied, not split.
                let handed = follower.handoff_whole(&chunk, text);
                self.issues
                    .take(fid.clone(), follower.path().to_owned(), handed);
            }
            let skipped = skipped + passed;
            let reset = chunk
                .reset
                .or((skipped > 0).then_some(Reset::Skipped(skipped)));
            let appended = reset.is_some() || !lines.is_empty();
            if appended {
                let _ = self.tx.send(Event::LogAppended {
                    id: fid.clone(),
                    reset,
                    lines,
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

/// The lines of `text` for the pane, and the bytes of those left out: all of them, or only the
/// last [`FLOOD_LINES`] of more than [`FLOOD_BYTES`].
fn pane_lines(text: &WholeLines) -> (Vec<RawLine>, u64) {
    let keep = if text.len() > FLOOD_BYTES {
        FLOOD_LINES
    } else {
        usize::MAX
    };
    let mut lines = Vec::new();
    let mut kept = 0;
    // From the end: the body's lines, then the line completed from the poll before.
    let parts = [(text.body(), text.head.is_empty()), (&text.head[..], true)];
    'parts: for (part, holds_first) in parts {
        let Some(mut rest) = part.strip_suffix(b"\n") else {
            continue;
        };
        while lines.len() < keep {
            let (line, before) = match memchr::memrchr(b'\n', rest) {
                Some(nl) => (&rest[nl + 1..], Some(&rest[..nl])),
                None => (rest, None),
            };
            let cut = before.is_none() && holds_first && text.first_cut;
            lines.push(RawLine::capped(line, cut));
            kept += line.len() + 1;
            match before {
                Some(b) => rest = b,
                None => continue 'parts,
            }
        }
        break;
    }
    lines.reverse();
    (lines, (text.len() - kept) as u64)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(lines: &[RawLine]) -> Vec<(String, bool)> {
        lines
            .iter()
            .map(|l| (String::from_utf8_lossy(&l.bytes).into_owned(), l.cut))
            .collect()
    }

    #[test]
    fn a_poll_of_a_few_lines_shows_them_all_and_a_flood_its_last_ones() {
        let text = WholeLines::from_text(b"one\n\ntwo\n".to_vec(), true);
        let (lines, passed) = pane_lines(&text);
        let want = [("one", true), ("", false), ("two", false)];
        assert_eq!(shown(&lines), want.map(|(s, c)| (s.to_string(), c)));
        assert_eq!(passed, 0);
        assert_eq!(pane_lines(&WholeLines::default()), (vec![], 0));

        let mut flood = Vec::new();
        let mut n = 0;
        while flood.len() <= FLOOD_BYTES {
            flood.extend_from_slice(format!("line {n}\n").as_bytes());
            n += 1;
        }
        let total = flood.len() as u64;
        let (lines, passed) = pane_lines(&WholeLines::from_text(flood, false));
        assert_eq!(lines.len(), FLOOD_LINES);
        assert_eq!(
            lines.last().unwrap().bytes,
            format!("line {}", n - 1).as_bytes()
        );
        assert_eq!(
            lines[0].bytes,
            format!("line {}", n - FLOOD_LINES).as_bytes()
        );
        let kept: u64 = lines.iter().map(|l| l.bytes.len() as u64 + 1).sum();
        assert_eq!(passed, total - kept);
    }
}
