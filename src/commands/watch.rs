//! `luzia watch --json`: the jobs root as JSON lines ([`crate::jobs::wire`]): a `hello`, one
//! `added` line per job, `synced`, then a line per change as the cockpit's own watcher sees it,
//! and a heartbeat every few seconds. Another machine's cockpit runs it over ssh, so it ends
//! (exit 0) as soon as its reader is gone: stdout closed (noticed while idle too, not only when
//! a write fails) or stdin at its end (ssh closes it when the client goes).

mod stream;

use std::io::{self, BufWriter};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::{SubsecRound, Utc};

use crate::cli::WatchArgs;
use crate::config::Config;
use crate::jobs::model::scan::list_ids;
use crate::jobs::wire::{Hello, Line, PROTOCOL};
use crate::watch::{JobWatcher, POLL_EVERY, QueueWatcher, Signal};
use stream::Stream;

/// How often the jobs that should be alive are checked to be: an agent's end changes no file
/// when it dies without its exit line (the cockpit's own check is as often).
const TICK: Duration = Duration::from_secs(1);

/// What the main thread waits for.
enum Msg {
    Jobs(Signal),
    Queue,
    /// The reader is gone (stdin ended, or stdout was closed).
    End,
}

pub fn run(cfg: &Config, args: &WatchArgs) -> Result<u8> {
    if !args.json {
        bail!(
            "`luzia watch` writes JSON lines only, for now: run `luzia watch --json` \
             (`luzia help watch` says what it writes)"
        );
    }
    // The watcher reports absolute paths, which a relative root would not match.
    let root = std::path::absolute(&cfg.jobs_dir).unwrap_or_else(|_| cfg.jobs_dir.clone());
    // Said before anything is written: a reader gets an error, not an empty stream.
    list_ids(&root)?;
    let (tx, rx) = mpsc::channel();
    let jobs = tx.clone();
    let watcher = JobWatcher::start(&root, move |s| {
        let _ = jobs.send(Msg::Jobs(s));
    });
    let queue = std::path::absolute(&cfg.queue_dir).unwrap_or_else(|_| cfg.queue_dir.clone());
    let queued = tx.clone();
    // `None` where the queue cannot be watched (not there yet, a remote file system): it is then
    // listed at every tick.
    let queue_watcher = QueueWatcher::start(&queue, move || {
        let _ = queued.send(Msg::Queue);
    });
    watch_stdin(tx.clone()).context("cannot start the thread that reads stdin")?;
    watch_stdout(tx).context("cannot start the thread that watches stdout")?;
    let mut stream = Stream::new(
        root.clone(),
        watcher,
        queue,
        BufWriter::new(super::stdout::stdout()),
    );
    let heartbeat = Duration::from_secs(args.heartbeat);
    let hello = hello(cfg, &root, args.heartbeat);
    let ticks = Ticks {
        heartbeat,
        list_queue: queue_watcher.is_none(),
    };
    match serve(&mut stream, &rx, hello, ticks) {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(e.into()),
    }
}

fn hello(cfg: &Config, root: &std::path::Path, heartbeat_secs: u64) -> Line {
    Line::Hello(Hello {
        protocol: PROTOCOL,
        luzia: env!("CARGO_PKG_VERSION").to_owned(),
        host: rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned(),
        root: root.to_string_lossy().into_owned(),
        projects: cfg.projects.keys().cloned().collect(),
        heartbeat_secs,
    })
}

/// What is done on a timer.
struct Ticks {
    heartbeat: Duration,
    /// The queue is not watched: list it at every tick.
    list_queue: bool,
}

/// Writes the stream until the reader is gone (`Ok`) or stdout fails (`Err`).
fn serve<W: io::Write>(
    stream: &mut Stream<W>,
    rx: &mpsc::Receiver<Msg>,
    hello: Line,
    ticks: Ticks,
) -> io::Result<()> {
    let heartbeat = ticks.heartbeat;
    stream.emit(&hello)?;
    stream.full(true)?;
    stream.flush()?;
    let mut next_beat = Instant::now() + heartbeat;
    let mut next_tick = Instant::now() + TICK;
    let mut last_full = Instant::now();
    loop {
        let now = Instant::now();
        let wake = [Some(next_beat), Some(next_tick), stream.next_due(now)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(next_beat);
        match rx.recv_timeout(wake.saturating_duration_since(now)) {
            Ok(first) => {
                for msg in std::iter::once(first).chain(rx.try_iter()) {
                    match msg {
                        Msg::Jobs(signal) => stream.signal(signal)?,
                        Msg::Queue => stream.queue_changed(),
                        Msg::End => return Ok(()),
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
        let now = Instant::now();
        if now >= next_tick {
            next_tick = now + TICK;
            if ticks.list_queue {
                stream.queue_changed();
            }
            if stream.is_polling() && now >= last_full + POLL_EVERY {
                stream.rescan();
            } else {
                stream.check_alive();
            }
        }
        if stream.catch_up(now)? {
            last_full = now;
        }
        if now >= next_beat {
            next_beat = now + heartbeat;
            stream.emit(&Line::Heartbeat {
                at: Utc::now().trunc_subsecs(0),
            })?;
        }
        stream.flush()?;
    }
}

/// Sends [`Msg::End`] when stdin reaches its end (or cannot be read); what it holds is ignored.
fn watch_stdin(tx: Sender<Msg>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("watch-stdin".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            let mut stdin = io::stdin().lock();
            loop {
                match io::Read::read(&mut stdin, &mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Msg::End);
        })
        .map(drop)
}

/// Sends [`Msg::End`] when stdout's reader has gone: a pipe whose other end is closed reports
/// an error to `poll` even when nothing is written, so an idle stream ends at once too.
fn watch_stdout(tx: Sender<Msg>) -> io::Result<()> {
    use rustix::event::{PollFd, PollFlags, poll};
    std::thread::Builder::new()
        .name("watch-stdout".into())
        .spawn(move || {
            let stdout = io::stdout();
            let gone = PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL;
            loop {
                // No events asked for: only an error or a hang-up wakes it (a file or a
                // terminal that stays open never does).
                let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
                match poll(&mut fds, None) {
                    Ok(_) if fds[0].revents().intersects(gone) => break,
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
            let _ = tx.send(Msg::End);
        })
        .map(drop)
}
