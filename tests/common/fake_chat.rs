//! OpenAI's Chat Completions API, scripted: what opencode speaks through
//! `@ai-sdk/openai-compatible`, Qwen Code with an OpenAI base URL and Aider with
//! `OPENAI_API_BASE`. `POST .../chat/completions` takes the next scripted reply (text, a tool
//! call such as opencode's `bash`, an API error) and answers it streamed (server-sent chunks)
//! or whole, as the request asks; every turn's body is kept so a test can read what the model
//! was told.
//!
//! Which requests are the agent's turns: an agent with tools offers them on every turn of its
//! own, and makes side calls without them (opencode's title of the session), which get a short
//! text and are not part of the script ([`FakeChat::start`]). Aider offers no tools at all:
//! every request is a turn ([`FakeChat::every_request`]).
//!
//! Told the one key it accepts ([`FakeChat::accept_only`]), it refuses any other as OpenAI's
//! API does: 401, `invalid_api_key` ([`key_refusal`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{KeyGate, Reply, Turns, response, serve_gated, sse};

/// The model a test names; the fake answers to any.
pub const MODEL: &str = "fake-model";
pub const KEY: &str = "sk-fake-test-key";
/// The usage every answer reports (under 1000, so that Aider prints it exactly).
pub const INPUT_TOKENS: u64 = 900;
pub const OUTPUT_TOKENS: u64 = 40;

/// A Chat Completions API on 127.0.0.1 serving a script.
pub struct FakeChat {
    addr: std::net::SocketAddr,
    turns: Arc<Turns>,
    gate: Arc<KeyGate>,
}

impl FakeChat {
    /// Requests that offer tools are the agent's turns; the others are side calls.
    pub fn start(script: Vec<Reply>) -> FakeChat {
        FakeChat::serving(script, false)
    }

    /// Every request is one of the agent's turns.
    pub fn every_request(script: Vec<Reply>) -> FakeChat {
        FakeChat::serving(script, true)
    }

    fn serving(script: Vec<Reply>, every: bool) -> FakeChat {
        let turns = Turns::new(script);
        let shared = Arc::clone(&turns);
        let gate = KeyGate::new(key_refusal);
        let answer = Arc::new(move |line: &str, body: &[u8]| {
            shared.saw(line);
            answer(line, body, &shared, every)
        });
        let addr = serve_gated(answer, Some(Arc::clone(&gate)));
        FakeChat { addr, turns, gate }
    }

    /// From now on only `key` is accepted: any other is refused as OpenAI refuses it.
    pub fn accept_only(&self, key: &str) {
        self.gate.accept_only(key);
    }

    /// The keys refused so far.
    pub fn refused_keys(&self) -> Vec<String> {
        self.gate.refused()
    }

    /// The base URL an OpenAI-compatible client is given (`.../v1`; it adds
    /// `/chat/completions`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// opencode's `opencode.json` (in `$XDG_CONFIG_HOME/opencode/`, or the project's): this API
    /// as the provider `fake` through `@ai-sdk/openai-compatible`, its model the default.
    pub fn opencode_config(&self) -> Value {
        json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": self.base_url(), "apiKey": KEY},
                "models": {MODEL: {"name": "Fake model"}}
            }},
            "model": format!("fake/{MODEL}")
        })
    }

    /// Qwen Code's settings in the HOME `home`, as a user writes them once: the kind of login
    /// (`openai`: the key, endpoint and model from `OPENAI_*`, see [`FakeChat::qwen_env`]; without
    /// it a headless Qwen Code says "No auth type is selected"), and the approval mode under
    /// which it asks before a shell command runs (`default`: it asks before anything that
    /// changes something).
    pub fn qwen_home(&self, home: &std::path::Path) {
        std::fs::create_dir_all(home.join(".qwen")).unwrap();
        let settings = json!({"security": {"auth": {"selectedType": "openai"}},
            "tools": {"approvalMode": "default"}});
        std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    }

    /// What Qwen Code is given in its environment to reach this API: the key, the endpoint and
    /// the model.
    pub fn qwen_env(&self) -> Vec<(String, String)> {
        vec![
            ("OPENAI_API_KEY".into(), KEY.into()),
            ("OPENAI_BASE_URL".into(), self.base_url()),
            ("OPENAI_MODEL".into(), MODEL.into()),
        ]
    }

    pub fn push(&self, replies: Vec<Reply>) {
        self.turns.push(replies);
    }

    /// The agent's turns so far.
    pub fn requests(&self) -> Vec<Value> {
        self.turns.requests()
    }

    pub fn wait_for_requests(&self, n: usize, within: Duration) -> Vec<Value> {
        self.turns.wait_for(n, within)
    }
}

/// The results of tool calls the messages of a request carry back: (call id, content).
pub fn tool_results(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            (id, content)
        })
        .collect()
}

fn answer(line: &str, body: &[u8], turns: &Turns, every: bool) -> Vec<u8> {
    let path = line.split_whitespace().nth(1).unwrap_or_default();
    if !line.starts_with("POST ") || !path.ends_with("/chat/completions") {
        let list = json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]});
        return response(200, "application/json", list.to_string().as_bytes());
    }
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let offers_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let n = turns.requests().len();
    let reply = if every || offers_tools {
        turns.take(&request)
    } else {
        Reply::text("ok")
    };
    let streaming = request["stream"].as_bool().unwrap_or(false);
    match reply {
        Reply::Error {
            status,
            kind,
            message,
        } => {
            let body = json!({"error": {"type": kind, "code": kind, "message": message}});
            response(status, "application/json", body.to_string().as_bytes())
        }
        Reply::Limit { resets_at } => usage_limit(resets_at),
        Reply::Text(text) => completion(&text, None, streaming),
        Reply::Tool { text, name, input } => {
            let call = json!({"id": format!("call_{n}"), "type": "function",
                "function": {"name": name, "arguments": input.to_string()}});
            completion(&text, Some(call), streaming)
        }
    }
}

/// An OpenAI-style refusal for the account's usage limit, with its reset (Unix seconds), in
/// the shape Codex reads (`usage_limit_reached`, `resets_at`).
pub fn usage_limit(resets_at: i64) -> Vec<u8> {
    let body = json!({"error": {"type": "usage_limit_reached", "code": "usage_limit_reached",
        "message": "The usage limit has been reached", "resets_at": resets_at}});
    response(429, "application/json", body.to_string().as_bytes())
}

/// OpenAI's refusal of a key it does not know (an API key revoked, rotated or mistyped), as its
/// API gives it on every endpoint: 401, `invalid_api_key`, the key named masked as OpenAI masks
/// a long one (its first 3 and last 4 characters).
pub fn key_refusal(key: &str) -> Vec<u8> {
    let chars: Vec<char> = key.chars().collect();
    let shown = if chars.len() <= 8 {
        key.to_owned()
    } else {
        let (head, tail) = (&chars[..3], &chars[chars.len() - 4..]);
        let stars = "*".repeat(chars.len() - 7);
        format!(
            "{}{stars}{}",
            String::from_iter(head),
            String::from_iter(tail)
        )
    };
    let body = json!({"error": {
        "message": format!(
            "Incorrect API key provided: {shown}. You can find your API key at \
             https://platform.openai.com/account/api-keys."
        ),
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
    response(401, "application/json", body.to_string().as_bytes())
}

fn usage() -> Value {
    json!({"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS})
}

/// One answer: its text, and the tool it calls if any; whole, or as the chunks of a stream
/// (the role, the text, the call, then the finish with the usage, then `[DONE]`).
fn completion(text: &str, call: Option<Value>, streaming: bool) -> Vec<u8> {
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    if !streaming {
        let mut message = json!({"role": "assistant", "content": text});
        if let Some(call) = &call {
            message["tool_calls"] = json!([call]);
        }
        let body = json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 1,
            "model": MODEL, "choices": [{"index": 0, "message": message,
            "finish_reason": finish}], "usage": usage()});
        return response(200, "application/json", body.to_string().as_bytes());
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1,
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if !text.is_empty() {
        chunks.push(chunk(json!({"content": text}), None));
    }
    if let Some(mut call) = call {
        call["index"] = json!(0);
        chunks.push(chunk(json!({"tool_calls": [call]}), None));
    }
    let mut last = chunk(json!({}), Some(finish));
    last["usage"] = usage();
    chunks.push(last);
    let mut body = sse(&chunks, false);
    body.extend_from_slice(b"data: [DONE]\n\n");
    response(200, "text/event-stream", &body)
}
