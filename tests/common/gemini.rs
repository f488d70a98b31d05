//! The real Gemini CLI against a scripted Gemini API that the test starts itself: the network is
//! faked, the CLI is not. `FakeGemini` answers the CLI's streaming
//! `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` with the next scripted reply (a
//! text, or a call of its shell tool) and keeps every request body; its side calls
//! (`:generateContent`: the model router's classifier) get a fixed short answer and are not part
//! of the script. What a user sets is all the CLI gets: `GEMINI_API_KEY`,
//! `GOOGLE_GEMINI_BASE_URL`, and `security.auth.selectedType = "gemini-api-key"` in the
//! settings of a fresh HOME. Told the one key it accepts ([`FakeGemini::accept_only`]), it
//! refuses any other as the Gemini API does: 400 `INVALID_ARGUMENT`, reason `API_KEY_INVALID`
//! ([`key_refusal`]).

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{KeyGate, read_request, response as http};

/// The tokens every streamed answer reports.
pub const PROMPT_TOKENS: u64 = 100;
pub const ANSWER_TOKENS: u64 = 7;

/// One scripted answer of the model.
#[derive(Clone, Debug)]
pub enum Reply {
    /// The model says this and ends its turn.
    Text(String),
    /// The model says `text`, then runs `command` with its shell tool.
    Shell { text: String, command: String },
    /// The API refuses the turn for the quota: HTTP 429 `RESOURCE_EXHAUSTED`, as the Gemini API
    /// answers a key past its quota (the words, a `QuotaFailure` naming the quota `quota_id`,
    /// and a `RetryInfo` with `retry_delay`, such as `41s`).
    Limit {
        quota_id: String,
        retry_delay: String,
    },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_owned())
    }

    /// The quota's refusal: see [`Reply::Limit`].
    pub fn limit(quota_id: &str, retry_delay: &str) -> Reply {
        Reply::Limit {
            quota_id: quota_id.to_owned(),
            retry_delay: retry_delay.to_owned(),
        }
    }

    pub fn shell(text: &str, command: &str) -> Reply {
        Reply::Shell {
            text: text.to_owned(),
            command: command.to_owned(),
        }
    }
}

struct State {
    script: VecDeque<Reply>,
    /// Bodies of the streamed requests (the agent's turns), in order.
    requests: Vec<Value>,
    /// Every request line seen, for diagnosis.
    seen: Vec<String>,
}

/// A Gemini API on 127.0.0.1 serving a script; its thread ends with the test's process.
pub struct FakeGemini {
    addr: std::net::SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    gate: Arc<KeyGate>,
}

impl FakeGemini {
    pub fn start(script: Vec<Reply>) -> FakeGemini {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                script: script.into(),
                requests: Vec::new(),
                seen: Vec::new(),
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        let gate = KeyGate::new(key_refusal);
        let gated = Arc::clone(&gate);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                let gate = Arc::clone(&gated);
                std::thread::spawn(move || serve(stream, &state, &gate));
            }
        });
        FakeGemini { addr, state, gate }
    }

    /// From now on only `key` is accepted: any other is refused as the Gemini API refuses it.
    pub fn accept_only(&self, key: &str) {
        self.gate.accept_only(key);
    }

    /// The keys refused so far.
    pub fn refused_keys(&self) -> Vec<String> {
        self.gate.refused()
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: Vec<Reply>) {
        self.state.0.lock().unwrap().script.extend(replies);
    }

    /// A fresh HOME as a user would set it up for an API key: the settings file that selects
    /// the key as the way to log in.
    pub fn home(&self, base: &Path) -> PathBuf {
        let home = base.join("gemini-home");
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(
            home.join(".gemini/settings.json"),
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
        )
        .unwrap();
        home
    }

    /// What the agent needs in its environment besides its HOME: the key and this API.
    pub fn agent_env(&self) -> Vec<(String, String)> {
        vec![
            ("GEMINI_API_KEY".into(), "fake".into()),
            ("GOOGLE_GEMINI_BASE_URL".into(), self.base_url()),
        ]
    }

    /// The agent's turns so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state.0.lock().unwrap().requests.clone()
    }

    /// Waits until at least `n` turns have arrived; panics with what was seen if they do not.
    pub fn wait_for_requests(&self, n: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let (lock, cond) = &*self.state;
        let mut s = lock.lock().unwrap();
        while s.requests.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the fake Gemini API got {} of {n} turns within {within:?}; seen: {:?}",
                s.requests.len(),
                s.seen
            );
            s = cond.wait_timeout(s, left).unwrap().0;
        }
        s.requests.clone()
    }
}

/// The function responses a turn's request carries (what the CLI tells the model of its
/// tools' runs), as JSON text.
pub fn function_responses(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for content in request["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(r) = part.get("functionResponse") {
                out.push(r.to_string());
            }
        }
    }
    out
}

fn serve(stream: TcpStream, state: &(Mutex<State>, Condvar), gate: &KeyGate) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut out = stream;
    // One request a connection is enough: the answer closes it.
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let answer = {
        let (lock, cond) = state;
        let mut s = lock.lock().unwrap();
        s.seen.push(request.line.clone());
        let answer = gate
            .refuse(&request)
            .unwrap_or_else(|| answer_for(&request.line, &request.body, &mut s));
        cond.notify_all();
        answer
    };
    let _ = out.write_all(&answer);
    let _ = out.flush();
}

fn answer_for(line: &str, body: &[u8], s: &mut State) -> Vec<u8> {
    if line.contains(":streamGenerateContent") {
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        s.requests.push(request);
        let parts = match s.script.pop_front().unwrap_or_else(|| Reply::text("Done.")) {
            Reply::Text(t) => vec![json!({"text": t})],
            Reply::Limit {
                quota_id,
                retry_delay,
            } => return quota_refusal(&quota_id, &retry_delay),
            Reply::Shell { text, command } => vec![
                json!({"text": text}),
                json!({"functionCall": {"name": "run_shell_command",
                    "args": {"command": command, "description": "as scripted"}}}),
            ],
        };
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": parts},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": PROMPT_TOKENS,
                "candidatesTokenCount": ANSWER_TOKENS,
                "totalTokenCount": PROMPT_TOKENS + ANSWER_TOKENS},
            "modelVersion": "gemini-fake"
        });
        return http(
            200,
            "text/event-stream",
            format!("data: {chunk}\r\n\r\n").as_bytes(),
        );
    }
    if line.contains(":generateContent") {
        // The router's classifier: a simple task.
        let verdict = json!({"complexity_reasoning": "a scripted task", "complexity_score": 1});
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": verdict.to_string()}]},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
        });
        return http(200, "application/json", body.to_string().as_bytes());
    }
    http(404, "application/json", b"{}")
}

/// The Gemini API's answer to a key past its quota, as it gives it (the free tier's words, the
/// quota's metric and id, and when to try again).
fn quota_refusal(quota_id: &str, retry_delay: &str) -> Vec<u8> {
    let seconds = retry_delay.trim_end_matches('s');
    let body = json!({"error": {
        "code": 429,
        "message": format!(
            "You exceeded your current quota, please check your plan and billing details. For \
             more information on this error, head to: \
             https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: \
             generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 250, \
             model: gemini-2.5-pro\nPlease retry in {seconds}s."
        ),
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                "quotaValue": "250"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        ]
    }});
    http(429, "application/json", body.to_string().as_bytes())
}

/// The Gemini API's answer to a key it does not accept (revoked, rotated or mistyped), as it
/// gives it on every endpoint: 400 `INVALID_ARGUMENT` with the reason `API_KEY_INVALID`.
fn key_refusal(_key: &str) -> Vec<u8> {
    let message = "API key not valid. Please pass a valid API key.";
    let body = json!({"error": {
        "code": 400,
        "message": message,
        "status": "INVALID_ARGUMENT",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
             "domain": "googleapis.com",
             "metadata": {"service": "generativelanguage.googleapis.com"}},
            {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
             "message": message}
        ]
    }});
    http(400, "application/json", body.to_string().as_bytes())
}
