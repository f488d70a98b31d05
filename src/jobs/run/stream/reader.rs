//! The agent's stdout, read through a pipe. Its first line says what it speaks: Claude Code's
//! stream-json (a JSON object whose `type` is one the CLI prints) is rendered line by line, the
//! raw lines kept; anything else is copied to output.log byte for byte, as soon as it comes.
//!
//! Memory is bounded whatever the agent writes: a line is held only up to [`LINE_CAP`]; past
//! that its bytes go straight to stream.jsonl and the line is shown as cut.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::oneshot;

use crate::jobs::run::stream::render::{Event, Renderer};

/// The most of one line held in memory.
pub const LINE_CAP: usize = 1024 * 1024;
/// Once the agent's process group has ended, what is still in the pipe is read for at most
/// this long (a process that left the group may hold the pipe open for ever).
pub const DRAIN_FOR: Duration = Duration::from_secs(2);
/// ... and reading stops sooner when the pipe stays quiet this long.
const DRAIN_QUIET: Duration = Duration::from_millis(200);

/// The `type`s of Claude Code's stream-json lines: a first line of one of these is the sign.
/// Logged in to a subscription, Claude Code may begin with how its quota stands
/// (`rate_limit_event`), before its `system/init`.
const STREAM_TYPES: &[&str] = &[
    "system",
    "assistant",
    "user",
    "result",
    "stream_event",
    "rate_limit_event",
];

/// Where the reader's output goes: output.log, stream.jsonl and what the events mean.
pub trait Sink {
    /// Text for output.log.
    fn log(&mut self, bytes: &[u8]);
    /// Raw stream-json bytes for stream.jsonl.
    fn raw(&mut self, bytes: &[u8]);
    fn event(&mut self, event: Event);
    /// The stream has ended (the agent's stdout closed, or reading stopped).
    fn end(&mut self);
}

enum Mode {
    /// Not known yet: the first line is being read.
    Sniffing,
    Pass,
    Stream(Renderer),
}

/// The state of the reading: what the stream is, and the line being assembled.
pub struct Feed<S: Sink> {
    sink: S,
    mode: Mode,
    line: Vec<u8>,
    /// The current line passed [`LINE_CAP`]: its head went to stream.jsonl (when kept) and the
    /// rest follows it there until its newline.
    cut: Option<Cut>,
}

struct Cut {
    keep: bool,
    /// What the line's head says about it (a tool result's call id), to end the call.
    ended: Option<String>,
}

impl<S: Sink> Feed<S> {
    pub fn new(sink: S) -> Feed<S> {
        Feed {
            sink,
            mode: Mode::Sniffing,
            line: Vec::new(),
            cut: None,
        }
    }

    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Takes the next bytes of the agent's stdout.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if let Mode::Pass = self.mode {
                self.sink.log(bytes);
                return;
            }
            if let Mode::Sniffing = self.mode
                && self.line.is_empty()
                && let Some(&first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
                && first != b'{'
            {
                // Not JSON: no need to wait for the line's end to know.
                self.mode = Mode::Pass;
                continue;
            }
            let (part, rest, complete) = match memchr::memchr(b'\n', bytes) {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            self.take(part);
            if complete {
                self.line_done();
            }
            bytes = rest;
        }
    }

    /// Adds part of a line, holding at most [`LINE_CAP`] of it.
    fn take(&mut self, part: &[u8]) {
        if let Some(cut) = &self.cut {
            if cut.keep {
                self.sink.raw(part);
            }
            return;
        }
        if self.line.len() + part.len() <= LINE_CAP {
            self.line.extend_from_slice(part);
            return;
        }
        if let Mode::Sniffing = self.mode {
            // A first line this long is no stream-json line.
            self.mode = Mode::Pass;
            let held = std::mem::take(&mut self.line);
            self.sink.log(&held);
            self.sink.log(part);
            return;
        }
        let room = LINE_CAP - self.line.len();
        self.line.extend_from_slice(&part[..room]);
        let keep = !self.line.starts_with(br#"{"type":"stream_event""#);
        if keep {
            self.sink.raw(&self.line);
            self.sink.raw(&part[room..]);
        }
        let ended = tool_use_id(&self.line).filter(|_| self.line.starts_with(br#"{"type":"user""#));
        self.line = Vec::new();
        self.cut = Some(Cut { keep, ended });
    }

    fn line_done(&mut self) {
        if let Some(cut) = self.cut.take() {
            if cut.keep {
                self.sink.raw(b"\n");
            }
            self.sink.log(
                format!(
                    "luzia: a stream-json line longer than {} MiB was cut here; it is whole in stream.jsonl\n",
                    LINE_CAP / (1024 * 1024)
                )
                .as_bytes(),
            );
            if let Some(id) = cut.ended {
                self.sink.event(Event::ToolEnded { id });
            }
            return;
        }
        if let Mode::Pass = self.mode {
            // The end of a first line too long to be stream-json, passed on as it came.
            self.sink.log(b"\n");
            return;
        }
        let line = std::mem::take(&mut self.line);
        if let Mode::Sniffing = self.mode {
            self.mode = if is_stream_json(&line) {
                Mode::Stream(Renderer::new())
            } else {
                Mode::Pass
            };
            if let Mode::Pass = self.mode {
                self.sink.log(&line);
                self.sink.log(b"\n");
                return;
            }
        }
        self.render(&line, true);
    }

    fn render(&mut self, line: &[u8], newline: bool) {
        let Mode::Stream(renderer) = &mut self.mode else {
            return;
        };
        let rendered = renderer.line(line);
        if rendered.keep {
            self.sink.raw(line);
            if newline {
                self.sink.raw(b"\n");
            }
        }
        // What the line means is recorded before it is shown: whoever sees a call in output.log
        // finds it in activity.json.
        for e in rendered.events {
            self.sink.event(e);
        }
        if !rendered.text.is_empty() {
            self.sink.log(rendered.text.as_bytes());
        }
    }

    /// The end of the stream: a last line without its newline is taken as it is.
    pub fn end(mut self) -> S {
        if self.cut.is_some() {
            self.line_done();
        } else if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            match self.mode {
                Mode::Sniffing if is_stream_json(&line) => {
                    self.mode = Mode::Stream(Renderer::new());
                    self.render(&line, false);
                }
                Mode::Stream(_) => self.render(&line, false),
                _ => self.sink.log(&line),
            }
        }
        self.sink.end();
        self.sink
    }
}

/// Whether `line` is a line of Claude Code's stream-json.
pub fn is_stream_json(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| {
        v["type"]
            .as_str()
            .is_some_and(|t| STREAM_TYPES.contains(&t))
    })
}

/// The first `"tool_use_id":"..."` in the head of a line too long to parse.
fn tool_use_id(head: &[u8]) -> Option<String> {
    const KEY: &[u8] = br#""tool_use_id":""#;
    let at = memchr::memmem::find(head, KEY)? + KEY.len();
    let len = memchr::memchr(b'"', &head[at..])?;
    String::from_utf8(head[at..at + len].to_vec()).ok()
}

/// Reading the agent's stdout in the background, until it closes or [`Pump::finish`].
pub struct Pump<S: Sink + Send + 'static> {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<S>,
}

impl<S: Sink + Send + 'static> Pump<S> {
    /// Starts reading `from` into `sink`. Needs a tokio runtime.
    pub fn start<R>(from: R, sink: S) -> Pump<S>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
    {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(pump(from, Feed::new(sink), stopped));
        Pump { stop, task }
    }

    /// Called once the agent's process group has ended: reads what is left in the pipe (for at
    /// most [`DRAIN_FOR`]), ends the stream, and gives the sink back. `None` if the reading
    /// task failed.
    pub async fn finish(self) -> Option<S> {
        let _ = self.stop.send(());
        self.task.await.ok()
    }
}

async fn pump<R, S>(mut from: R, mut feed: Feed<S>, mut stop: oneshot::Receiver<()>) -> S
where
    R: tokio::io::AsyncRead + Unpin,
    S: Sink,
{
    let mut buf = vec![0u8; 64 * 1024];
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        let read = match drain_until {
            None => tokio::select! {
                r = from.read(&mut buf) => r,
                _ = &mut stop => {
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_FOR);
                    continue;
                }
            },
            Some(until) => {
                let by = until.min(tokio::time::Instant::now() + DRAIN_QUIET);
                match tokio::time::timeout_at(by, from.read(&mut buf)).await {
                    Ok(r) => r,
                    Err(_) => break,
                }
            }
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => feed.feed(&buf[..n]),
        }
    }
    feed.end()
}
