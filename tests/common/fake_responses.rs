//! OpenAI's Responses API, scripted: what Codex speaks to a model provider with
//! `wire_api = "responses"`. `POST .../responses` takes the next scripted reply (text, a function
//! call such as Codex's `exec_command`, an API error) and answers it as the server-sent events
//! of a streamed response; every request body is kept so a test can read what the model was
//! told (a command's output, the prompt). Told the one key it accepts
//! ([`FakeResponses::accept_only`]), it refuses any other as OpenAI's API does (401,
//! `invalid_api_key`: [`super::fake_chat::key_refusal`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{KeyGate, Reply, Turns, response, serve_gated, sse};

/// The model a test names; the fake answers to any.
pub const MODEL: &str = "fake-model";
/// The variable the key is read from (Codex's `env_key`), and the key.
pub const KEY_VAR: &str = "FAKE_API_KEY";
pub const KEY: &str = "sk-fake-test-key";
/// The usage every response reports.
pub const INPUT_TOKENS: u64 = 900;
pub const OUTPUT_TOKENS: u64 = 40;
pub const CACHED_TOKENS: u64 = 100;

/// A Responses API on 127.0.0.1 serving a script.
pub struct FakeResponses {
    addr: std::net::SocketAddr,
    turns: Arc<Turns>,
    gate: Arc<KeyGate>,
}

impl FakeResponses {
    pub fn start(script: Vec<Reply>) -> FakeResponses {
        let turns = Turns::new(script);
        let shared = Arc::clone(&turns);
        let gate = KeyGate::new(super::fake_chat::key_refusal);
        let answer = Arc::new(move |line: &str, body: &[u8]| {
            shared.saw(line);
            answer(line, body, &shared)
        });
        let addr = serve_gated(answer, Some(Arc::clone(&gate)));
        FakeResponses { addr, turns, gate }
    }

    /// From now on only `key` is accepted: any other is refused as OpenAI refuses it.
    pub fn accept_only(&self, key: &str) {
        self.gate.accept_only(key);
    }

    /// The keys refused so far, in order: which key the agent really sent.
    pub fn refused_keys(&self) -> Vec<String> {
        self.gate.refused()
    }

    /// The base URL a provider is given (`.../v1`; the agent adds `/responses`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Codex's `-c` overrides that make this API its model provider `fake`, as a user would
    /// write them in `config.toml` (see [`FakeResponses::codex_config`]): the key is read from
    /// [`KEY_VAR`].
    pub fn codex_args(&self) -> Vec<String> {
        vec![
            "-c".into(),
            "model_provider=\"fake\"".into(),
            "-c".into(),
            format!(
                "model_providers.fake={{name=\"fake\", base_url=\"{}\", env_key=\"{KEY_VAR}\", \
                 wire_api=\"responses\"}}",
                self.base_url()
            ),
            "-m".into(),
            MODEL.into(),
        ]
    }

    /// The same as `$CODEX_HOME/config.toml`.
    pub fn codex_config(&self) -> String {
        format!(
            "model = \"{MODEL}\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\n\
             name = \"fake\"\nbase_url = \"{}\"\nenv_key = \"{KEY_VAR}\"\nwire_api = \"responses\"\n",
            self.base_url()
        )
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

/// The outputs of the function calls a request carries back: (call id, output).
pub fn call_outputs(request: &Value) -> Vec<(String, String)> {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            let output = match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (i["call_id"].as_str().unwrap_or_default().to_owned(), output)
        })
        .collect()
}

fn answer(line: &str, body: &[u8], turns: &Turns) -> Vec<u8> {
    let path = line.split_whitespace().nth(1).unwrap_or_default();
    if !line.starts_with("POST ") || !path.ends_with("/responses") {
        let list = json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]});
        return response(200, "application/json", list.to_string().as_bytes());
    }
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let n = turns.requests().len();
    match turns.take(&request) {
        Reply::Error {
            status,
            kind,
            message,
        } => {
            let body = json!({"error": {"type": kind, "code": kind, "message": message}});
            response(status, "application/json", body.to_string().as_bytes())
        }
        Reply::Limit { resets_at } => super::fake_chat::usage_limit(resets_at),
        Reply::Text(text) => streamed(n, &[message_item(n, &text)]),
        Reply::Tool { text, name, input } => {
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(message_item(n, &text));
            }
            items.push(json!({"type": "function_call", "id": format!("fc_{n}"),
                "call_id": format!("call_{n}"), "name": name, "arguments": input.to_string(),
                "status": "completed"}));
            streamed(n, &items)
        }
    }
}

fn message_item(n: usize, text: &str) -> Value {
    json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// A whole response as its events: created, each item added (a message's text as a delta
/// too, as a live model streams it) and done, then completed with the usage.
fn streamed(n: usize, items: &[Value]) -> Vec<u8> {
    let id = format!("resp_{n}");
    let mut events =
        vec![json!({"type": "response.created", "response": {"id": id, "status": "in_progress"}})];
    for (index, item) in items.iter().enumerate() {
        let mut added = item.clone();
        if item["type"] == "message" {
            added["content"] = json!([]);
            added["status"] = json!("in_progress");
        }
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        if let Some(text) = item["content"][0]["text"].as_str() {
            events.push(
                json!({"type": "response.output_text.delta", "output_index": index,
                "item_id": item["id"], "content_index": 0, "delta": text}),
            );
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": {"id": id,
        "status": "completed", "output": items, "usage": {
            "input_tokens": INPUT_TOKENS,
            "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}}));
    response(200, "text/event-stream", &sse(&events, true))
}
