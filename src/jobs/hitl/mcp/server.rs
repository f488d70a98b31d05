//! The server loop: reads messages a line at a time, answers each at once, and runs each tool
//! call on a thread of its own, so that `ping` (and everything else) is answered while a call
//! waits hours for an operator. Calls that wait for the operator take turns (one question or
//! gate is pending at a time). When the client goes away (its end of stdin closes) or the
//! server is told to stop, every waiting call is stopped: its question or gate is withdrawn, so
//! nothing is left pending for a session that is gone.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::mcp::rpc::{self, Message};
use crate::jobs::hitl::mcp::tools::{self, Called};

/// The protocol versions this server speaks (it uses nothing that changed between them): a
/// client asking for one of them gets it, any other client the newest.
const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Where responses go: one line each, written whole.
pub type Output = Arc<Mutex<dyn Write + Send>>;

/// The calls in flight and how to stop them, shared with whoever may end the server (a signal).
#[derive(Clone, Default)]
pub struct Calls(Arc<CallsInner>);

#[derive(Default)]
struct CallsInner {
    closing: AtomicBool,
    /// Each call's stop, by its request id as JSON.
    stops: Mutex<HashMap<String, Stop>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Held by a call while it asks the operator: one request pending at a time.
    turn: Mutex<()>,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Calls {
    /// Stops every call, waiting or to come: their requests are withdrawn.
    pub fn stop_all(&self) {
        self.0.closing.store(true, Ordering::SeqCst);
        for stop in lock(&self.0.stops).values() {
            stop.stop();
        }
    }

    /// Waits for every call's thread to end (each withdraws what it asked first).
    pub fn join(&self) {
        loop {
            let Some(t) = lock(&self.0.threads).pop() else {
                return;
            };
            let _ = t.join();
        }
    }

    fn cancel(&self, id: &Value) {
        if let Some(stop) = lock(&self.0.stops).get(&id.to_string()) {
            stop.stop();
        }
    }

    fn begin(&self, id: &Value) -> Stop {
        let stop = Stop::default();
        lock(&self.0.stops).insert(id.to_string(), stop.clone());
        // After the insertion: a stop_all that ran before it has set `closing`.
        if self.0.closing.load(Ordering::SeqCst) {
            stop.stop();
        }
        stop
    }

    fn end(&self, id: &Value) {
        lock(&self.0.stops).remove(&id.to_string());
    }
}

pub struct Server {
    dir: PathBuf,
    out: Output,
    calls: Calls,
}

impl Server {
    pub fn new(dir: &Path, out: Output, calls: Calls) -> Server {
        Server {
            dir: dir.to_owned(),
            out,
            calls,
        }
    }

    /// Serves `input` until it ends (or cannot be read), then stops what is still waiting and
    /// waits for it: either way the client is gone.
    pub fn run(&self, mut input: impl BufRead) -> std::io::Result<()> {
        let mut line = Vec::new();
        let ended = loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break Ok(()),
                Ok(_) => self.handle(&line),
                Err(e) => break Err(e),
            }
        };
        self.calls.stop_all();
        self.calls.join();
        ended
    }

    /// One line from the client.
    pub fn handle(&self, line: &[u8]) {
        match rpc::parse_line(line) {
            Ok(None) | Ok(Some(Message::Response { .. })) => {}
            Err(e) => self.send(&e.line()),
            Ok(Some(Message::Notification { method, params })) => {
                if method == "notifications/cancelled"
                    && let Some(id) = params.get("requestId")
                {
                    self.calls.cancel(id);
                }
            }
            Ok(Some(Message::Request { id, method, params })) => {
                self.request(id, &method, params);
            }
        }
    }

    fn request(&self, id: Value, method: &str, params: Value) {
        let result = match method {
            "initialize" => initialize(&params),
            "ping" => json!({}),
            "tools/list" => tools::list(),
            "tools/call" => return self.call(id, params),
            other => {
                let message = format!("no method {other} here: this server has tools only");
                return self.send(&rpc::error_line(&id, rpc::METHOD_NOT_FOUND, &message));
            }
        };
        self.send(&rpc::result_line(&id, result));
    }

    /// Runs a tool call on a thread of its own; its answer is sent when it is ready.
    fn call(&self, id: Value, params: Value) {
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            let message = "tools/call needs the tool's name";
            return self.send(&rpc::error_line(&id, rpc::INVALID_PARAMS, message));
        };
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let stop = self.calls.begin(&id);
        let (dir, out, calls) = (self.dir.clone(), self.out.clone(), self.calls.clone());
        let thread = std::thread::spawn(move || {
            let called = if name == tools::PERMISSION {
                let _turn = lock(&calls.0.turn);
                tools::call(&dir, &name, &args, &stop)
            } else {
                tools::call(&dir, &name, &args, &stop)
            };
            calls.end(&id);
            let line = match called {
                // A stopped call gets no answer: its client has gone, or cancelled it.
                Called::Stopped => return,
                Called::Result(result) => rpc::result_line(&id, result),
                Called::Unknown(name) => rpc::error_line(
                    &id,
                    rpc::INVALID_PARAMS,
                    &format!("no tool {name} here: the tools are permission and progress"),
                ),
            };
            send(&out, &line);
        });
        let mut threads = lock(&self.calls.0.threads);
        // A long session makes many calls: only those still running need joining.
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
    }

    fn send(&self, line: &str) {
        send(&self.out, line);
    }
}

/// Writes one line whole. A client that has gone cannot be told anything: errors are dropped.
fn send(out: &Output, line: &str) {
    let mut out = lock(out);
    let _ = out.write_all(format!("{line}\n").as_bytes());
    let _ = out.flush();
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = VERSIONS
        .iter()
        .find(|v| Some(**v) == asked)
        .unwrap_or(&VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "luzia", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Permission requests and AskUserQuestion reach the operator of this \
            luzia job; report your progress at each milestone with mcp__luzia__progress (when \
            it is listed as a deferred tool, load it with ToolSearch first)."
    })
}
