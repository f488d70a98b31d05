//! The real Claude Code CLI against a scripted Messages API that the test starts itself: the
//! network is faked, the CLI is not. `FakeApi` answers Claude Code's streaming
//! `POST /v1/messages` with the next scripted reply (text, a tool call, an API error) and keeps
//! every request body so a test can read what the model was told (a tool result, a denial's
//! reason, an answer). Requests without tools (Claude Code's side calls) get a short text and are
//! not part of the script.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{response as http, serve, sse};

/// The model name the fake API reports.
pub const MODEL: &str = "claude-sonnet-4-5-20250929";

/// The real `claude`, or `None` after saying loudly why the test is skipped. With
/// `LUZIA_REQUIRE_CLAUDE=1` (CI) a missing CLI fails the test instead.
pub fn claude_or_skip(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("LUZIA_TEST_CLAUDE")
        .map(PathBuf::from)
        .or_else(|| find_on_path("claude"));
    let why = "the Claude Code CLI (`claude`, npm package @anthropic-ai/claude-code) is not on \
               PATH (or LUZIA_TEST_CLAUDE)";
    candidate.filter(|c| version_of(c).is_some()).or_else(|| {
        missing(test, why);
        None
    })
}

/// Every Claude Code CLI a test runs against, oldest first: the one on PATH (or
/// `LUZIA_TEST_CLAUDE`), and the one `LUZIA_TEST_CLAUDE_NEWEST` names when it is set (CI sets
/// it: `.ci/run` installs the oldest version luzia supports and the newest checked). A missing
/// one is skipped loudly, or fails the test with `LUZIA_REQUIRE_CLAUDE=1`. Each is announced on
/// stderr, so that a failure says which version it was.
pub fn clis_or_skip(test: &str) -> impl Iterator<Item = PathBuf> {
    let mut all: Vec<PathBuf> = claude_or_skip(test).into_iter().collect();
    if let Some(newest) = std::env::var_os("LUZIA_TEST_CLAUDE_NEWEST").map(PathBuf::from) {
        if version_of(&newest).is_some() {
            all.push(newest);
        } else {
            let why = format!(
                "LUZIA_TEST_CLAUDE_NEWEST names {}, which does not run `--version`",
                newest.display()
            );
            missing(test, &why);
        }
    }
    let test = test.to_owned();
    all.into_iter().inspect(move |c| {
        eprintln!(
            "{test}: with Claude Code {} ({})",
            version_of(c).unwrap_or_default(),
            c.display()
        );
    })
}

/// `claude --version`'s first word (`2.1.332`), if it runs.
pub fn version_of(claude: &Path) -> Option<String> {
    let out = Command::new(claude).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    out.status.success().then(|| {
        text.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    })
}

fn missing(test: &str, why: &str) {
    if std::env::var_os("LUZIA_REQUIRE_CLAUDE").is_some_and(|v| v == "1") {
        panic!("{test}: {why}, and LUZIA_REQUIRE_CLAUDE=1 says it must be");
    }
    eprintln!("SKIPPED {test}: {why}; install it with `npm install -g @anthropic-ai/claude-code`");
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// One scripted answer of the model.
#[derive(Clone, Debug)]
pub enum Reply {
    /// The model says this and ends its turn.
    Text(String),
    /// The model says `text` (if any) then calls `name` with `input`.
    Tool {
        text: String,
        name: String,
        input: Value,
    },
    /// The API fails with this HTTP status and error type (`overloaded_error`, ...).
    Error {
        status: u16,
        kind: String,
        message: String,
    },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_owned())
    }

    pub fn tool(name: &str, input: Value) -> Reply {
        Reply::Tool {
            text: String::new(),
            name: name.to_owned(),
            input,
        }
    }

    pub fn error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::Error {
            status,
            kind: kind.to_owned(),
            message: message.to_owned(),
        }
    }
}

struct State {
    script: VecDeque<Reply>,
    /// Bodies of the requests that offered tools (the agent's own turns), in order.
    requests: Vec<Value>,
    /// Every request line seen (`POST /v1/messages?beta=true`, `HEAD /`), for diagnosis.
    seen: Vec<String>,
    /// Every message answered, side calls included: what the API billed.
    served: Vec<Served>,
    /// The deferred tools loaded with a `ToolSearch` step before a scripted call of them.
    searched: Vec<String>,
    tool_ids: u64,
}

/// One message the API answered, with the usage it reported: the API's own log, from which a
/// test computes what a run cost without reading luzia's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Served {
    /// The model the request asked for (what Claude Code prices it as).
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
}

/// The usage every message reports: a request's input, its answer's output, cached input.
pub const INPUT_TOKENS: u64 = 1200;
pub const OUTPUT_TOKENS: u64 = 40;
pub const CACHE_READ_TOKENS: u64 = 300;

/// A Messages API on 127.0.0.1 serving a script; it stops when dropped.
pub struct FakeApi {
    addr: std::net::SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl FakeApi {
    pub fn start(script: Vec<Reply>) -> FakeApi {
        let state = Arc::new((
            Mutex::new(State {
                script: script.into(),
                requests: Vec::new(),
                seen: Vec::new(),
                served: Vec::new(),
                searched: Vec::new(),
                tool_ids: 0,
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        let addr = serve(Arc::new(move |line: &str, body: &[u8]| {
            let (lock, cond) = &*shared;
            let mut s = lock.lock().unwrap();
            s.seen.push(line.to_owned());
            let answer = answer_for(line, body, &mut s);
            cond.notify_all();
            answer
        }));
        FakeApi { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds replies to the end of the script (for a reply or a resume after the first run).
    pub fn push(&self, replies: Vec<Reply>) {
        let mut s = self.state.0.lock().unwrap();
        s.script.extend(replies);
    }

    /// What an agent needs in its environment to use this API offline, with `home` as its HOME.
    pub fn agent_env(&self, home: &Path) -> Vec<(String, String)> {
        [
            ("ANTHROPIC_BASE_URL", self.base_url()),
            ("ANTHROPIC_API_KEY", "sk-ant-test-key".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("DISABLE_AUTOUPDATER", "1".to_owned()),
            ("HOME", home.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// The same as a TOML inline table, for a config's `[agent] env = ...`.
    pub fn agent_env_toml(&self, home: &Path) -> String {
        let pairs: Vec<String> = self
            .agent_env(home)
            .into_iter()
            .map(|(k, v)| format!("{k} = {}", Value::from(v)))
            .collect();
        format!("{{ {} }}", pairs.join(", "))
    }

    /// The agent's turns so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state.0.lock().unwrap().requests.clone()
    }

    /// Every message answered so far, side calls included.
    pub fn served(&self) -> Vec<Served> {
        self.state.0.lock().unwrap().served.clone()
    }

    /// The deferred tools the fake model loaded with `ToolSearch` before calling them.
    pub fn searched(&self) -> Vec<String> {
        self.state.0.lock().unwrap().searched.clone()
    }

    /// Waits until at least `n` of the agent's turns have arrived; panics with what was seen if
    /// they do not within `within`.
    pub fn wait_for_requests(&self, n: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let (lock, cond) = &*self.state;
        let mut s = lock.lock().unwrap();
        while s.requests.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the fake API got {} of {n} agent turns within {within:?}; requests seen: {:?}",
                s.requests.len(),
                s.seen
            );
            s = cond.wait_timeout(s, left).unwrap().0;
        }
        s.requests.clone()
    }
}

/// The tool results the last user message of a request carries: (text, is_error).
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return Vec::new();
    };
    let Some(blocks) = last["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            (text, b["is_error"].as_bool().unwrap_or(false))
        })
        .collect()
}

/// Whether a request offers tool `name` to the model: among its tools, or (Claude Code
/// 2.1.2xx and later) named on a line of the deferred tools `ToolSearch` loads.
pub fn offers(body: &Value, name: &str) -> bool {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let line = format!("\\n{name}\\n");
    tools.contains(&name)
        || (tools.contains(&"ToolSearch")
            && (body["system"].to_string().contains(&line)
                || body["messages"].to_string().contains(&line)))
}

/// Every text of every message of a request, for "did the model see X" checks.
pub fn all_text(body: &Value) -> String {
    body["messages"].to_string()
}

fn answer_for(line: &str, body: &[u8], s: &mut State) -> Vec<u8> {
    if !line.starts_with("POST /v1/messages") || line.contains("count_tokens") {
        return http(200, "application/json", b"{}");
    }
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let offers_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let reply = if offers_tools {
        s.requests.push(request.clone());
        let next = s.script.pop_front().unwrap_or_else(|| Reply::text("Done."));
        match deferred(&next, &request) {
            // As a real model does: the tool is only named, so its schema is loaded first.
            Some(name) => {
                s.script.push_front(next);
                s.searched.push(name.clone());
                Reply::tool("ToolSearch", json!({"query": format!("select:{name}")}))
            }
            None => next,
        }
    } else {
        Reply::text("ok")
    };
    if !matches!(reply, Reply::Error { .. }) {
        s.served.push(Served {
            model: request["model"].as_str().unwrap_or_default().to_owned(),
            input_tokens: INPUT_TOKENS,
            output_tokens: OUTPUT_TOKENS,
            cache_read_tokens: CACHE_READ_TOKENS,
            cache_creation_tokens: 0,
        });
    }
    let streaming = request["stream"].as_bool().unwrap_or(false);
    match reply {
        Reply::Error {
            status,
            kind,
            message,
        } => {
            let body = json!({"type": "error", "error": {"type": kind, "message": message}});
            http(status, "application/json", body.to_string().as_bytes())
        }
        Reply::Text(text) => message(&[block_text(&text)], "end_turn", streaming),
        Reply::Tool { text, name, input } => {
            s.tool_ids += 1;
            let id = format!("toolu_{:024}", s.tool_ids);
            let mut blocks = Vec::new();
            if !text.is_empty() {
                blocks.push(block_text(&text));
            }
            blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            message(&blocks, "tool_use", streaming)
        }
    }
}

/// The tool a scripted call names when the request does not offer it but names it among the
/// deferred tools `ToolSearch` loads (Claude Code 2.1.2xx and later defer MCP tools): the model
/// must select it before it can call it.
fn deferred(reply: &Reply, request: &Value) -> Option<String> {
    let Reply::Tool { name, .. } = reply else {
        return None;
    };
    let offered: Vec<&str> = request["tools"]
        .as_array()?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let named = request["system"].to_string().contains(name.as_str())
        || request["messages"].to_string().contains(name.as_str());
    (!offered.contains(&name.as_str()) && offered.contains(&"ToolSearch") && named)
        .then(|| name.clone())
}

fn block_text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn usage(output_tokens: u64) -> Value {
    json!({"input_tokens": INPUT_TOKENS, "output_tokens": output_tokens,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": CACHE_READ_TOKENS})
}

/// A whole message, as JSON or as the server-sent events of a streaming response.
fn message(blocks: &[Value], stop_reason: &str, streaming: bool) -> Vec<u8> {
    let id = "msg_fake";
    if !streaming {
        let body = json!({"id": id, "type": "message", "role": "assistant", "model": MODEL,
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": usage(OUTPUT_TOKENS)});
        return http(200, "application/json", body.to_string().as_bytes());
    }
    let mut events = vec![json!({"type": "message_start", "message": {"id": id,
        "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage(1)}})];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": OUTPUT_TOKENS}}));
    events.push(json!({"type": "message_stop"}));
    http(200, "text/event-stream", &sse(&events, true))
}

/// Polls `luzia questions --json` (run by `luzia`) until job `id` has a pending request that
/// satisfies `want`; panics with the job and its log (`log`) after `within`, or as soon as the
/// job has ended without one.
pub fn wait_pending(
    luzia: impl Fn(&[&str]) -> std::process::Output,
    log: impl Fn() -> String,
    id: &str,
    what: &str,
    within: Duration,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let out = luzia(&["questions", "--json"]);
        let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(found) = list.into_iter().find(|q| q["job_id"] == id && want(q)) {
            return found;
        }
        let job: Value =
            serde_json::from_slice(&luzia(&["jobs", id, "--json"]).stdout).unwrap_or_default();
        assert!(
            job["exit_code"].is_null() && Instant::now() < deadline,
            "no {what} for job {id} within {within:?}: {job}\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `luzia jobs ID --json` until the job has its exit code; returns that JSON.
pub fn wait_finished(
    luzia: impl Fn(&[&str]) -> std::process::Output,
    log: impl Fn() -> String,
    id: &str,
    within: Duration,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let job: Value =
            serde_json::from_slice(&luzia(&["jobs", id, "--json"]).stdout).unwrap_or_default();
        if !job["exit_code"].is_null() {
            return job;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} still runs: {job}\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
