//! The output pane of another host's job: `luzia logs -f -n N ID` run there over ssh, its
//! lines sent as the local follower sends them (`LogLoaded` with what came first, then
//! `LogAppended`), each line capped as the local follower caps it. Closing the pane (or opening
//! another log) kills the ssh.

use std::ffi::OsString;
use std::io::Read;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use tokio::sync::mpsc::UnboundedSender;

use crate::jobs::JobId;
use crate::jobs::fs::tail::{LINE_CAP, RawLine};
use crate::tui::event::Event;

/// How long a burst may pause before what it brought is shown: the first lines come as one
/// `LogLoaded`, later ones in as few `LogAppended` as keep up.
const GAP: Duration = Duration::from_millis(30);
/// A log with nothing to print yet: the pane says so after this long.
const FIRST_WAIT: Duration = Duration::from_millis(1500);
/// The most lines sent in one event.
const BATCH_LINES: usize = 2000;
/// The most bytes kept of what ssh and the remote luzia said on stderr (its end).
const STDERR_KEEP: usize = 4096;

/// A remote log being followed. Dropping it closes the ssh's stdin (which ends the follower
/// there) and kills the ssh; its reader then ends, and sends nothing more.
pub struct RemoteLog {
    child: Child,
    stdin: Option<ChildStdin>,
    live: Arc<AtomicBool>,
}

/// `ssh … LINE` made into `ssh … sh -c SCRIPT` where the script runs LINE until it ends or the
/// session's stdin closes. A follower of a quiet log would otherwise outlive the pane there,
/// noticing only at its next line that nobody reads it: killing the ssh here closes the
/// session's stdin there, and the script then stops the follower.
pub fn until_stdin_closes(cmd: &Command) -> Command {
    let mut args: Vec<OsString> = cmd.get_args().map(ToOwned::to_owned).collect();
    let mut wrapped = Command::new(cmd.get_program());
    let Some(line) = args.pop() else {
        return wrapped;
    };
    let script = format!(
        "exec 3<&0; {} </dev/null & p=$!; {{ cat <&3; kill $p; }} >/dev/null 2>&1 & wait $p 2>/dev/null",
        line.to_string_lossy()
    );
    args.push(format!("sh -c {}", crate::fleet::ssh::quote(&script)).into());
    wrapped.args(args);
    wrapped
}

impl RemoteLog {
    /// Starts following; `None` (the pane told why) when ssh cannot be started at all.
    pub fn open(id: JobId, mut cmd: Command, tx: UnboundedSender<Event>) -> Option<RemoteLog> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.send(Event::LogLoaded {
                    id,
                    lines: vec![],
                    error: Some(format!("cannot start ssh to follow the log: {e}")),
                });
                return None;
            }
        };
        let stdin = child.stdin.take();
        let live = Arc::new(AtomicBool::new(true));
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        if let (Some(stdout), Some(stderr)) = (stdout, stderr) {
            let reader = Reader {
                id: id.clone(),
                tx,
                live: live.clone(),
                loaded: false,
            };
            let spawned = std::thread::Builder::new()
                .name("luzia-log-remote".into())
                .spawn(move || reader.run(stdout, stderr));
            if let Err(e) = spawned {
                tracing::warn!("cannot follow the log of {id}: {e}");
            }
        }
        Some(RemoteLog { child, stdin, live })
    }
}

impl Drop for RemoteLog {
    fn drop(&mut self) {
        self.live.store(false, Ordering::SeqCst);
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reader {
    id: JobId,
    tx: UnboundedSender<Event>,
    live: Arc<AtomicBool>,
    loaded: bool,
}

impl Reader {
    fn run(mut self, mut stdout: ChildStdout, stderr: ChildStderr) {
        let said = Arc::new(Mutex::new(Vec::new()));
        let keeper = {
            let said = said.clone();
            std::thread::Builder::new()
                .name("luzia-log-stderr".into())
                .spawn(move || keep_end(stderr, &said))
                .ok()
        };
        let mut lines = Lines::default();
        let mut pending: Vec<RawLine> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let wait = match (self.loaded, pending.is_empty()) {
                (false, true) => Some(FIRST_WAIT),
                (_, false) => Some(GAP),
                (true, true) => None,
            };
            if !readable(&stdout, wait) {
                self.flush(&mut pending);
                continue;
            }
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => lines.push(&buf[..n], &mut pending),
            }
            if pending.len() >= BATCH_LINES {
                self.flush(&mut pending);
            }
        }
        self.flush(&mut pending);
        if let Some(k) = keeper {
            let _ = k.join();
        }
        let said = said.lock().map(|s| last_line(&s)).unwrap_or_default();
        if !said.is_empty() && self.live.load(Ordering::SeqCst) {
            let _ = self
                .tx
                .send(Event::Notice(format!("output of {}: {said}", self.id)));
        }
    }

    /// Sends what has come (the first time as the loaded log, even when nothing has).
    fn flush(&mut self, pending: &mut Vec<RawLine>) {
        if !self.live.load(Ordering::SeqCst) || (self.loaded && pending.is_empty()) {
            return;
        }
        let lines = std::mem::take(pending);
        let id = self.id.clone();
        let ev = match std::mem::replace(&mut self.loaded, true) {
            false => Event::LogLoaded {
                id,
                lines,
                error: None,
            },
            true => Event::LogAppended {
                id,
                reset: None,
                lines,
            },
        };
        let _ = self.tx.send(ev);
    }
}

/// Whether there is something to read (or the end) within `wait` (`None`: however long).
fn readable(stdout: &ChildStdout, wait: Option<Duration>) -> bool {
    let timeout = wait.map(|d| Timespec {
        tv_sec: d.as_secs() as _,
        tv_nsec: d.subsec_nanos() as _,
    });
    loop {
        let mut fds = [PollFd::new(stdout, PollFlags::IN)];
        match poll(&mut fds, timeout.as_ref()) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) => continue,
            // Cannot wait: read, which blocks or says what is wrong.
            Err(_) => return true,
        }
    }
}

/// Keeps the last `STDERR_KEEP` bytes of stderr until it closes.
fn keep_end(mut stderr: ChildStderr, said: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            return;
        }
        let Ok(mut said) = said.lock() else { return };
        said.extend_from_slice(&buf[..n]);
        let over = said.len().saturating_sub(STDERR_KEEP);
        said.drain(..over);
    }
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    crate::jobs::text::sanitize::plain_text(line.unwrap_or(""))
}

/// Splits a stream into lines, keeping at most the end of a long line (as [`RawLine::capped`]
/// does), so that a line that never ends costs a bounded amount of memory.
#[derive(Default)]
pub struct Lines {
    partial: Vec<u8>,
    cut: bool,
}

impl Lines {
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<RawLine>) {
        while let Some(nl) = chunk.iter().position(|&b| b == b'\n') {
            self.partial.extend_from_slice(&chunk[..nl]);
            out.push(RawLine::capped(
                &self.partial,
                std::mem::take(&mut self.cut),
            ));
            self.partial.clear();
            chunk = &chunk[nl + 1..];
        }
        self.partial.extend_from_slice(chunk);
        if self.partial.len() > 2 * LINE_CAP {
            let drop = self.partial.len() - LINE_CAP;
            self.partial.drain(..drop);
            self.cut = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_across_chunks_and_a_long_one_keeps_only_its_end() {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        lines.push(b"one\ntw", &mut out);
        lines.push(b"o\n", &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].bytes, b"two");
        out.clear();
        for _ in 0..100 {
            lines.push(&[b'x'; 1000], &mut out);
            assert!(
                lines.partial.len() <= 2 * LINE_CAP,
                "bounded while it grows"
            );
        }
        lines.push(b"end\nnext\n", &mut out);
        assert_eq!(out.len(), 2);
        assert!(out[0].cut);
        assert!(out[0].bytes.len() <= LINE_CAP);
        assert!(out[0].bytes.ends_with(b"xxend"));
        assert!(!out[1].cut);
        assert_eq!(out[1].bytes, b"next");
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    fn recv(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> Event {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(ev) = rx.try_recv() {
                return ev;
            }
            assert!(std::time::Instant::now() < deadline, "no event came");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_first_burst_is_loaded_and_what_follows_appended() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let id = JobId::parse("120000-ab").unwrap();
        let script = "printf 'a\\nb\\n'; sleep 0.3; printf 'c\\n'";
        let log = RemoteLog::open(id.clone(), sh(script), tx).unwrap();
        match recv(&mut rx) {
            Event::LogLoaded {
                id: got,
                lines,
                error,
            } => {
                assert_eq!(got, id);
                assert_eq!(lines.len(), 2);
                assert_eq!(error, None);
            }
            other => panic!("{other:?}"),
        }
        match recv(&mut rx) {
            Event::LogAppended { lines, .. } => assert_eq!(lines[0].bytes, b"c"),
            other => panic!("{other:?}"),
        }
        drop(log);
    }

    /// The wrapped line, run by a local `sh -c` in place of ssh's remote shell.
    fn wrapped(line: &str) -> Command {
        let mut plain = Command::new("sh");
        plain.arg("-c").arg(line);
        until_stdin_closes(&plain)
    }

    #[test]
    fn the_remote_follower_ends_with_the_sessions_stdin_or_by_itself() {
        // Ends by itself: the session ends too, although its stdin is still open.
        let mut child = wrapped("echo done")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "done\n");
        assert!(child.wait().unwrap().success());
        // Never ends by itself: closing stdin stops it.
        let mut child = wrapped("echo started; exec sleep 1000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 8];
        stdout.read_exact(&mut first).unwrap();
        drop(child.stdin.take());
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn closing_kills_the_follower_and_nothing_more_is_sent() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let id = JobId::parse("120000-ab").unwrap();
        let log = RemoteLog::open(id, sh("echo $$; exec sleep 60"), tx).unwrap();
        let pid = match recv(&mut rx) {
            Event::LogLoaded { lines, .. } => String::from_utf8(lines[0].bytes.clone()).unwrap(),
            other => panic!("{other:?}"),
        };
        drop(log);
        let alive = std::path::Path::new("/proc").join(pid.trim()).join("stat");
        let state = std::fs::read_to_string(&alive).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z"), "{state}");
        assert!(rx.try_recv().is_err(), "a closed follower sends nothing");
    }
}
