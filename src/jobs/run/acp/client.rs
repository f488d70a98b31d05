//! The client's side of one ACP session, as a job runs it: `initialize` (no file system, no
//! terminal: the agent works in its own directory with its own tools), `session/new` in the
//! job's directory or `session/load` of the session a job continues (its replayed history kept
//! out of output.log; either asked again after logging in when refused for want of a login,
//! [`auth`](super::auth)), then one `session/prompt` with the task. Meanwhile each `session/update`
//! is rendered into output.log ([`render`](super::render)) and what it means recorded by the
//! job's sink (activity, session id, figures), and each permission request or elicitation waits
//! in the job's inbox ([`inbox`](super::inbox)) on a thread of the runtime's blocking pool, one
//! at a time, so that the loop goes on reading. A cancel (a kill) sends `session/cancel` and
//! withdraws what waits in the inbox before it is acknowledged.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::auth::{self, Login};
use super::inbox::{self, Answered};
use super::lines::{Lines, write_lines};
use super::render::{Renderer, refusal};
use super::usage;
use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::agent::AgentError;
use crate::jobs::hitl::mcp::rpc::{self, Message};
use crate::jobs::run::stream::reader::Sink;
use crate::jobs::run::stream::render::Rendered;

/// The version of ACP this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// What the session is for.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What a person calls the agent (`Gemini CLI`).
    pub name: &'static str,
    /// The job's working directory.
    pub cwd: PathBuf,
    pub prompt: String,
    /// The session to continue (`session/load`), when the job continues one.
    pub load: Option<String>,
    /// What the session had cost before this job (ACP's cost is the session's, not the
    /// turn's), when it continues one; an agent that says it while loading says it better.
    pub cost_before: Option<f64>,
    /// Where the turn's tokens come from.
    pub tokens: usage::TokensFrom,
    /// The keys set in the agent's environment that stand for its logins.
    pub logins: auth::Keys,
}

/// How the session ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// The prompt's turn ended, for this reason (`end_turn`, `cancelled`, `max_tokens`, ...).
    Turn(String),
    /// The agent's stdout closed before the turn ended.
    Gone,
    /// The agent refused a request of the session's: what it said.
    Refused(String),
}

/// A request to cancel the turn; answered once nothing waits in the inbox any more.
pub type Cancel = oneshot::Sender<()>;

/// How long an agent's replay of a loaded session must be quiet to be over, and the most it
/// is waited for.
const REPLAY_QUIET: std::time::Duration = std::time::Duration::from_millis(500);
const REPLAY_MAX: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a gate or question is withdrawn when the job is stopped.
const STOPPED: &str = "the job was stopped";

/// Runs the session on the agent's stdio to its end; gives the sink back.
pub async fn run<W, R, S>(
    stdin: W,
    stdout: R,
    sink: S,
    dir: PathBuf,
    plan: Plan,
    cancels: mpsc::Receiver<Cancel>,
) -> (Ending, S)
where
    W: AsyncWrite + Unpin + Send + 'static,
    R: AsyncRead + Unpin,
    S: Sink,
{
    let (out, lines) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(stdin, lines));
    let mut client = Client {
        out: Some(out),
        lines: Lines::new(stdout),
        sink,
        renderer: Renderer::new(),
        dir,
        name: plan.name,
        next_id: 0,
        session: String::new(),
        loading: false,
        asked: None,
        waiting: VecDeque::new(),
        requests: usage::Requests::default(),
        cost: None,
        cost_before: plan.cost_before,
        denied: false,
        cancelled: false,
        refused: None,
        login: Login::new(plan.logins.clone()),
        cancels,
    };
    let ending = match client.session(&plan).await {
        Ok(reason) => Ending::Turn(reason),
        Err(ending) => ending,
    };
    client.withdraw_all().await;
    // The agent's stdin closes: an ACP agent ends when its client has gone.
    client.out = None;
    let _ = writer.await;
    client.sink.end();
    (ending, client.sink)
}

/// A request of the agent's that waits in the inbox.
struct Asked {
    id: Value,
    method: String,
    params: Value,
}

/// The one that waits now, on a blocking thread.
struct Waiting {
    asked: Asked,
    stop: Stop,
    task: JoinHandle<Result<Answered, AgentError>>,
}

struct Client<R, S> {
    out: Option<mpsc::UnboundedSender<String>>,
    lines: Lines<R>,
    sink: S,
    renderer: Renderer,
    dir: PathBuf,
    name: &'static str,
    next_id: u64,
    session: String,
    /// `session/load` is replaying the old history: nothing of it is shown.
    loading: bool,
    asked: Option<Waiting>,
    waiting: VecDeque<Asked>,
    /// What the updates said of each request to the model (Qwen Code's tokens).
    requests: usage::Requests,
    /// The last cost in US dollars an update gave, and the session's before this job.
    cost: Option<f64>,
    cost_before: Option<f64>,
    /// The operator's last answer to a permission request rejected it.
    denied: bool,
    cancelled: bool,
    /// The error the agent answered the last refused request with.
    refused: Option<Value>,
    login: Login,
    cancels: mpsc::Receiver<Cancel>,
}

impl<R: AsyncRead + Unpin, S: Sink> Client<R, S> {
    /// The session's requests in order; the prompt's stop reason.
    async fn session(&mut self, plan: &Plan) -> Result<String, Ending> {
        let init = self
            .call(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": false, "writeTextFile": false},
                        "terminal": false
                    },
                    "clientInfo": {"name": "luzia", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        self.login.offered(&init["authMethods"]);
        let cwd = plan.cwd.display().to_string();
        let loaded = plan.load.is_some();
        if let Some(id) = &plan.load {
            if init["agentCapabilities"]["loadSession"] != true {
                return Err(Ending::Refused(format!(
                    "{} cannot load a session (it does not offer loadSession): session {id} \
                     cannot be continued",
                    self.name
                )));
            }
            self.loading = true;
            let loaded = self
                .open(
                    "session/load",
                    json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
                )
                .await;
            if loaded.is_ok() {
                self.settle().await;
            }
            self.loading = false;
            loaded?;
            self.session = id.clone();
        } else {
            let new = self
                .open("session/new", json!({"cwd": cwd, "mcpServers": []}))
                .await?;
            self.session = new["sessionId"].as_str().unwrap_or_default().to_owned();
            if self.session.is_empty() {
                return Err(Ending::Refused("session/new gave no sessionId".into()));
            }
        }
        let begin = Renderer::begin(self.name, &init["agentInfo"], &self.session, loaded);
        self.show(begin);
        let started = Instant::now();
        let since = chrono::Utc::now().timestamp();
        let prompt = json!({
            "sessionId": self.session,
            "prompt": [{"type": "text", "text": plan.prompt}]
        });
        let refused = self.call("session/prompt", prompt).await;
        let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut result = match refused {
            Ok(result) => result,
            Err(ending) => {
                // A turn refused (a usage limit, a quota): its words are the run's error, as
                // Claude Code's result gives them, and say when a limit resets.
                if let Some(error) = self.refused.take() {
                    let figures = usage::of_refusal(&error, took, chrono::Utc::now());
                    let end = self.renderer.finish(&figures);
                    self.show(end);
                }
                return Err(ending);
            }
        };
        if result["stopReason"] == "cancelled" && !self.cancelled && self.denied {
            // Codex ends its turn at a rejected request ("No, and tell Codex what to do
            // differently"): the turn ended as the operator decided, not by a cancel.
            result["stopReason"] = json!(usage::DENIED);
        }
        let cost = self
            .cost
            .map(|c| (c - self.cost_before.unwrap_or(0.0)).max(0.0));
        let mut figures = usage::of_response(&result, &self.requests, cost, took);
        if let usage::TokensFrom::CodexSessions(sessions) = &plan.tokens {
            match usage::codex_turn(sessions.as_ref(), &self.session, since).await {
                Ok(tokens) => tokens.into_usage(&mut figures),
                Err(why) => {
                    let note = self
                        .renderer
                        .note(&format!("luzia: no tokens for this turn: {why}"));
                    self.show(note);
                }
            }
        }
        let end = self.renderer.finish(&figures);
        self.show(end);
        Ok(result["stopReason"]
            .as_str()
            .unwrap_or("end_turn")
            .to_owned())
    }

    /// Sends a request and serves the agent until its response comes: its result, or how the
    /// session ended instead.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, Ending> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(rpc::request_line(id, method, params));
        loop {
            tokio::select! {
                line = self.lines.next() => {
                    let Some(line) = line else { return Err(Ending::Gone) };
                    match self.incoming(&line, id) {
                        Some(Ok(result)) => return Ok(result),
                        Some(Err(e)) => {
                            let said = refusal(method, &e);
                            self.refused = Some(e);
                            return Err(Ending::Refused(said));
                        }
                        None => {}
                    }
                }
                answered = answered(&mut self.asked) => self.answer(answered),
                Some(cancel) = self.cancels.recv() => {
                    self.cancel().await;
                    let _ = cancel.send(());
                }
            }
        }
    }

    /// A request that opens the session; refused for want of a login the agent offered for a key
    /// of its environment, asked again once logged in with it.
    async fn open(&mut self, method: &str, params: Value) -> Result<Value, Ending> {
        let refused = match self.call(method, params.clone()).await {
            Err(Ending::Refused(said)) => said,
            done => return done,
        };
        let Some(login) = self.login.after(self.refused.as_ref()) else {
            return Err(Ending::Refused(refused));
        };
        let note = self.renderer.note(&auth::note(self.name, login));
        self.show(note);
        self.call("authenticate", auth::params(login)).await?;
        self.call(method, params).await
    }

    /// Reads (and keeps out of output.log) what an agent replays after its answer to
    /// `session/load` (Gemini CLI sends the history without waiting for it to be written),
    /// until it has been quiet for [`REPLAY_QUIET`], for at most [`REPLAY_MAX`].
    async fn settle(&mut self) {
        let until = tokio::time::Instant::now() + REPLAY_MAX;
        loop {
            let by = until.min(tokio::time::Instant::now() + REPLAY_QUIET);
            match tokio::time::timeout_at(by, self.lines.next()).await {
                Ok(Some(line)) => {
                    let _ = self.incoming(&line, 0);
                }
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// One line from the agent; the outcome of request `want` when this is its response.
    fn incoming(&mut self, line: &[u8], want: u64) -> Option<Result<Value, Value>> {
        let message = match rpc::parse_line(line) {
            Ok(Some(m)) => m,
            Ok(None) => return None,
            // Not a message: what the agent printed, kept for a person to read.
            Err(_) => {
                self.sink.log(line);
                self.sink.log(b"\n");
                return None;
            }
        };
        match message {
            Message::Response { id, outcome } => {
                return (id.as_u64() == Some(want)).then_some(outcome);
            }
            Message::Notification { method, params } if method == "session/update" => {
                self.update(&params["update"]);
            }
            Message::Notification { .. } => {}
            Message::Request { id, method, params } => self.request(id, method, params),
        }
        None
    }

    fn update(&mut self, update: &Value) {
        let cost = (update["sessionUpdate"] == "usage_update")
            .then(|| usage::cost_of_update(update))
            .flatten();
        if self.loading {
            // What the session had cost when it was loaded: what this job adds is the rest.
            self.cost_before = cost.or(self.cost_before);
            return;
        }
        if cost.is_some() {
            self.cost = cost;
        }
        self.requests.update(update);
        let shown = self.renderer.update(update);
        self.show(shown);
    }

    fn request(&mut self, id: Value, method: String, params: Value) {
        match method.as_str() {
            "session/request_permission" | "elicitation/create" => {
                if method == "session/request_permission" {
                    let asked = self.renderer.asked(&params["toolCall"]);
                    self.show(asked);
                }
                if self.cancelled {
                    self.reply(&id, inbox::cancelled_response(&method));
                    return;
                }
                self.waiting.push_back(Asked { id, method, params });
                self.ask_next();
            }
            other => {
                let message = format!(
                    "luzia offers no {other}: it declared no file system or terminal, and \
                     answers permission requests and elicitations only"
                );
                self.send(rpc::error_line(&id, rpc::METHOD_NOT_FOUND, &message));
            }
        }
    }

    /// Puts the next request waiting into the inbox, when nothing is there.
    fn ask_next(&mut self) {
        if self.asked.is_some() {
            return;
        }
        let Some(asked) = self.waiting.pop_front() else {
            return;
        };
        let stop = Stop::default();
        let (dir, name, params, waiter) = (
            self.dir.clone(),
            self.name,
            asked.params.clone(),
            stop.clone(),
        );
        let permission = asked.method == "session/request_permission";
        let task = tokio::task::spawn_blocking(move || {
            if permission {
                inbox::permission(&dir, name, &params, &waiter)
            } else {
                inbox::elicitation(&dir, &params, &waiter)
            }
        });
        self.asked = Some(Waiting { asked, stop, task });
    }

    /// The operator's answer (or why there is none) goes to the agent; the next request waits.
    fn answer(&mut self, answered: Result<Answered, String>) {
        let Some(waiting) = self.asked.take() else {
            return;
        };
        let asked = waiting.asked;
        let (response, note) = match answered {
            Ok(a) => {
                self.denied = inbox::rejects(&asked.params, &a.response);
                (a.response, a.note)
            }
            // Fail closed: what nobody could see is not allowed.
            Err(e) => (
                inbox::cancelled_response(&asked.method),
                format!("  ✗ luzia could not ask the operator: {e}"),
            ),
        };
        self.reply(&asked.id, response);
        let shown = self.renderer.note(&note);
        self.show(shown);
        self.ask_next();
    }

    /// `session/cancel`, then whatever waits in the inbox withdrawn and answered `cancelled`.
    async fn cancel(&mut self) {
        if !self.cancelled && !self.session.is_empty() {
            let params = json!({"sessionId": self.session});
            self.send(rpc::notification_line("session/cancel", params));
        }
        self.cancelled = true;
        self.withdraw_all().await;
    }

    async fn withdraw_all(&mut self) {
        if let Some(waiting) = self.asked.take() {
            waiting.stop.stop_because(STOPPED.to_owned());
            // The wait ends at once, the gate withdrawn and recorded so in the history.
            let _ = waiting.task.await;
            self.reply(
                &waiting.asked.id,
                inbox::cancelled_response(&waiting.asked.method),
            );
        }
        while let Some(asked) = self.waiting.pop_front() {
            self.reply(&asked.id, inbox::cancelled_response(&asked.method));
        }
    }

    fn reply(&mut self, id: &Value, result: Value) {
        self.send(rpc::result_line(id, result));
    }

    fn send(&mut self, line: String) {
        if let Some(out) = &self.out {
            let _ = out.send(line);
        }
    }

    /// What a rendering means is recorded before it is shown, as for Claude Code's stream.
    fn show(&mut self, rendered: Rendered) {
        for e in rendered.events {
            self.sink.event(e);
        }
        if !rendered.text.is_empty() {
            self.sink.log(rendered.text.as_bytes());
        }
    }
}

/// The answer the request in the inbox came to, when one is there; never, when none is.
async fn answered(asked: &mut Option<Waiting>) -> Result<Answered, String> {
    match asked {
        Some(w) => match (&mut w.task).await {
            Ok(Ok(a)) => Ok(a),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        },
        None => std::future::pending().await,
    }
}
