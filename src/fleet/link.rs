//! A live link to one host: `ssh … luzia watch --json` on a thread of its own, its lines turned
//! into [`LinkEvent`]s, reconnecting with backoff when the connection drops or goes silent.
//! Nothing here runs on the caller's thread: `on` is called from the link's thread, and
//! dropping the [`Link`] kills its ssh and ends the thread at once.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::HostConfig;
use crate::jobs::JobId;
use crate::jobs::wire::{self, Change, Hello, Line, Record, Settlement};

use super::run::{VERSION, classify, last_line};
use super::ssh;

/// What a link reports, in order, from its own thread.
#[derive(Debug)]
pub enum LinkEvent {
    /// Connecting (first time or again).
    Connecting,
    /// The host's luzia said who it is: the stream is up.
    Hello(Hello),
    Job {
        change: Change,
        job: Box<Record>,
        /// What went away with this change, and how it was settled there.
        settled: Vec<Settlement>,
    },
    Gone(JobId),
    /// The host's whole state has been sent since `Hello`.
    Synced,
    Heartbeat,
    /// Unreachable, dropped, or silent past its heartbeat: the ssh is killed; a reconnect
    /// follows after the backoff.
    Down {
        error: String,
    },
    /// The host's luzia cannot talk to this one (or is missing): what to install. Retried
    /// only slowly.
    Incompatible {
        message: String,
    },
}

/// How long the link waits between attempts and for the host.
#[derive(Clone, Debug)]
pub struct Timing {
    /// The wait after the first failure; doubled after each further one.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// How long a new connection may take to say hello (ssh's own connect timeout is 10 s).
    pub hello_within: Duration,
    /// The wait after an incompatible or missing luzia.
    pub incompatible_retry: Duration,
    /// Heartbeats missed in a row before the link is declared down.
    pub heartbeat_misses: u32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            hello_within: Duration::from_secs(30),
            incompatible_retry: Duration::from_secs(300),
            heartbeat_misses: 3,
        }
    }
}

/// A running link; dropping it ends it.
pub struct Link {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

/// What the link's thread waits for: a line of the current connection (by its number), that
/// connection's end, or the order to stop.
enum Msg {
    Line(u64, String),
    Closed(u64),
    Stop,
}

/// Why a connection ended.
enum Outcome {
    Stopped,
    Down { error: String, was_up: bool },
    Incompatible { message: String },
}

type OnEvent = Box<dyn Fn(LinkEvent) + Send>;
type MakeCommand = Box<dyn Fn() -> Command + Send>;

impl Link {
    /// Links to host `name`, reporting to `on`.
    pub fn start(name: String, host: HostConfig, on: OnEvent) -> Link {
        Link::start_with(name, host, on, Timing::default())
    }

    /// The same, with other waits (tests).
    pub fn start_with(name: String, host: HostConfig, on: OnEvent, timing: Timing) -> Link {
        let make_host = host.clone();
        let make: MakeCommand =
            Box::new(move || ssh::command(&make_host, &["watch".into(), "--json".into()]));
        Link::spawn(Session {
            name,
            host,
            on,
            timing,
            make,
        })
    }

    fn spawn(session: Session) -> Link {
        let (tx, rx) = mpsc::channel();
        let thread_tx = tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("luzia-link-{}", session.name))
            .spawn(move || session.run(&rx, &thread_tx));
        match thread {
            Ok(thread) => Link {
                tx,
                thread: Some(thread),
            },
            Err(e) => {
                tracing::error!("cannot start a thread for a host link: {e}");
                Link { tx, thread: None }
            }
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Session {
    name: String,
    host: HostConfig,
    on: OnEvent,
    timing: Timing,
    make: MakeCommand,
}

impl Session {
    fn run(self, rx: &Receiver<Msg>, tx: &Sender<Msg>) {
        let mut backoff = self.timing.first_backoff;
        let mut generation = 0;
        loop {
            generation += 1;
            (self.on)(LinkEvent::Connecting);
            let wait = match self.connect(rx, tx, generation) {
                Outcome::Stopped => return,
                Outcome::Down { error, was_up } => {
                    (self.on)(LinkEvent::Down { error });
                    if was_up {
                        backoff = self.timing.first_backoff;
                    }
                    let wait = backoff;
                    backoff = (backoff * 2).min(self.timing.max_backoff);
                    wait
                }
                Outcome::Incompatible { message } => {
                    (self.on)(LinkEvent::Incompatible { message });
                    self.timing.incompatible_retry
                }
            };
            if stopped_within(rx, wait) {
                return;
            }
        }
    }

    /// One connection, from spawning ssh to its end.
    fn connect(&self, rx: &Receiver<Msg>, tx: &Sender<Msg>, generation: u64) -> Outcome {
        let spawned = (self.make)()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(error) => {
                let error = super::RemoteError::Spawn {
                    host: self.name.clone(),
                    error,
                };
                return Outcome::Down {
                    error: error.to_string(),
                    was_up: false,
                };
            }
        };
        let stderr = collect_stderr(&mut child);
        read_lines(&mut child, tx.clone(), generation);
        let mut conn = Connection {
            child,
            stderr,
            up: false,
            silence: self.timing.hello_within,
        };
        let outcome = self.follow(&mut conn, rx, generation);
        conn.kill();
        outcome
    }

    fn follow(&self, conn: &mut Connection, rx: &Receiver<Msg>, generation: u64) -> Outcome {
        let mut deadline = Instant::now() + conn.silence;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return Outcome::Stopped,
                Ok(Msg::Line(g, text)) if g == generation => {
                    if let Some(outcome) = self.line(conn, &text) {
                        return outcome;
                    }
                    deadline = Instant::now() + conn.silence;
                }
                Ok(Msg::Closed(g)) if g == generation => {
                    return match conn.exit(rx) {
                        Some(status) => self.ended(conn, status),
                        None => Outcome::Stopped,
                    };
                }
                // A line or end of an earlier connection, already dealt with.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return self.silent(conn),
            }
        }
    }

    /// Handles one line; `Some` ends the connection.
    fn line(&self, conn: &mut Connection, text: &str) -> Option<Outcome> {
        let line = match wire::decode(text) {
            Ok(line) => line,
            Err(e) => {
                // A login script printing to stdout, say: not ours, and not fatal.
                tracing::debug!(host = %self.name, "skipped a line: {e}");
                return None;
            }
        };
        let event = match line {
            Line::Hello(hello) => {
                if hello.protocol != wire::PROTOCOL {
                    return Some(Outcome::Incompatible {
                        message: format!(
                            "host {} runs luzia {}, which speaks watch protocol {}; this luzia {VERSION} speaks protocol {}: install luzia {VERSION} on {}",
                            self.name,
                            hello.luzia,
                            hello.protocol,
                            wire::PROTOCOL,
                            self.name
                        ),
                    });
                }
                conn.up = true;
                conn.silence = Duration::from_secs(hello.heartbeat_secs.max(1))
                    * self.timing.heartbeat_misses.max(1);
                LinkEvent::Hello(hello)
            }
            Line::Job {
                change,
                job,
                settled,
            } => LinkEvent::Job {
                change,
                job,
                settled,
            },
            Line::Synced { .. } => LinkEvent::Synced,
            Line::Gone { id } => LinkEvent::Gone(id),
            Line::Heartbeat { .. } => LinkEvent::Heartbeat,
            Line::Error { message } => {
                tracing::warn!(host = %self.name, "the host's watch reports: {message}");
                return None;
            }
            Line::Unknown => return None,
        };
        (self.on)(event);
        None
    }

    /// ssh ended: why.
    fn ended(&self, conn: &mut Connection, status: std::io::Result<ExitStatus>) -> Outcome {
        let stderr = conn.stderr_text();
        let error = match &status {
            Ok(status) => classify(&self.name, &self.host, "watch", *status, &stderr),
            Err(e) => Some(super::RemoteError::Spawn {
                host: self.name.clone(),
                error: std::io::Error::new(e.kind(), e.to_string()),
            }),
        };
        match error {
            Some(e) if e.needs_install() => Outcome::Incompatible {
                message: e.to_string(),
            },
            Some(_) if conn.up => Outcome::Down {
                error: format!(
                    "host {}: the connection dropped ({}); reconnecting",
                    self.name,
                    last_line(&stderr).unwrap_or_else(|| match &status {
                        Ok(s) => format!("ssh ended: {s}"),
                        Err(e) => e.to_string(),
                    })
                ),
                was_up: true,
            },
            Some(e) => Outcome::Down {
                error: e.to_string(),
                was_up: false,
            },
            None => Outcome::Down {
                error: format!("host {}: its luzia watch ended", self.name),
                was_up: conn.up,
            },
        }
    }

    /// Nothing came for too long: the connection is dead even if ssh has not noticed.
    fn silent(&self, conn: &mut Connection) -> Outcome {
        conn.kill();
        // A shared connection that stopped answering would hold the next attempt too.
        if let Ok(mut exit) = ssh::control(&self.host, "exit")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            let _ = std::thread::Builder::new()
                .name("luzia-ssh-exit".into())
                .spawn(move || exit.wait());
        }
        let secs = conn.silence.as_secs();
        let error = if conn.up {
            format!(
                "host {}: nothing heard for {secs} s (no heartbeat): the connection is dead",
                self.name
            )
        } else {
            format!(
                "host {}: no answer within {secs} s: is `luzia watch --json` starting there? (check that `ssh {}` works)",
                self.name, self.host.ssh
            )
        };
        Outcome::Down {
            error,
            was_up: conn.up,
        }
    }
}

/// One ssh process and what is known of it.
struct Connection {
    child: Child,
    stderr: Receiver<Vec<u8>>,
    up: bool,
    /// How long the host may stay silent.
    silence: Duration,
}

impl Connection {
    /// ssh's exit status once its output has closed: it ends right after, unless something
    /// holds it, and then it is killed. `None` when told to stop meanwhile.
    fn exit(&mut self, rx: &Receiver<Msg>) -> Option<std::io::Result<ExitStatus>> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(Ok(status)),
                Ok(None) if Instant::now() < deadline => {}
                Ok(None) => {
                    self.kill();
                    return Some(self.child.wait());
                }
                Err(e) => return Some(Err(e)),
            }
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return None,
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// ssh's stderr once it is closed (briefly waited for: a process ssh left behind could
    /// hold it open).
    fn stderr_text(&self) -> Vec<u8> {
        self.stderr
            .recv_timeout(Duration::from_secs(2))
            .unwrap_or_default()
    }
}

/// Reads stdout on a thread of its own, each line sent as it comes, then its end.
fn read_lines(child: &mut Child, tx: Sender<Msg>, generation: u64) {
    let Some(stdout) = child.stdout.take() else {
        let _ = tx.send(Msg::Closed(generation));
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("luzia-link-read".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Msg::Line(generation, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Msg::Closed(generation));
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start a thread to read a host link: {e}");
    }
}

/// Keeps the last 8 KiB of stderr, sent when it closes.
fn collect_stderr(child: &mut Child) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = std::thread::Builder::new()
            .name("luzia-link-stderr".into())
            .spawn(move || {
                const KEEP: usize = 8 * 1024;
                let mut kept = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > KEEP {
                        kept.drain(..kept.len() - KEEP);
                    }
                }
                let _ = tx.send(kept);
            });
    }
    rx
}

/// Waits `wait`, unless told to stop first (then `true`).
fn stopped_within(rx: &Receiver<Msg>, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return true,
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => return false,
        }
    }
}

#[cfg(test)]
mod tests;
