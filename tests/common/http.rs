//! The HTTP side every fake LLM API shares (Claude's Messages, OpenAI's Responses and Chat
//! Completions): a listener on 127.0.0.1, one thread a connection, one request a connection
//! (every answer closes it, which any HTTP client accepts), and the answer's bytes; and the key
//! each request carries, which a fake may accept only one of ([`KeyGate`]), refusing the others
//! the way its provider does.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Answers one request: its request line (`POST /v1/responses HTTP/1.1`) and body, to the
/// bytes of the whole response.
pub type Answer = dyn Fn(&str, &[u8]) -> Vec<u8> + Send + Sync;

/// Starts serving `answer` on a free port of 127.0.0.1 and returns its address. The listening
/// thread ends with the test process; each connection has its own thread, so a request the
/// agent leaves open never blocks the next.
pub fn serve(answer: Arc<Answer>) -> SocketAddr {
    serve_gated(answer, None)
}

/// [`serve`], each request first passing `gate` (when there is one): one carrying a key the
/// gate does not accept gets the gate's refusal and never reaches `answer`.
pub fn serve_gated(answer: Arc<Answer>, gate: Option<Arc<KeyGate>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            let gate = gate.clone();
            std::thread::spawn(move || serve_one(stream, &*answer, gate.as_deref()));
        }
    });
    addr
}

fn serve_one(stream: TcpStream, answer: &Answer, gate: Option<&KeyGate>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut out = stream;
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let bytes = match gate.and_then(|g| g.refuse(&request)) {
        Some(refusal) => refusal,
        None => answer(&request.line, &request.body),
    };
    let _ = out.write_all(&bytes);
    let _ = out.flush();
}

/// One request, as much of it as a fake reads.
pub struct Request {
    /// `POST /v1/responses HTTP/1.1`
    pub line: String,
    /// The key it carries, as each provider's clients send it: `Authorization: Bearer KEY`
    /// (OpenAI's), `x-api-key` (Anthropic's), `x-goog-api-key` or `?key=` (Google's).
    pub key: Option<String>,
    pub body: Vec<u8>,
}

/// The request line, the key and the body (by its Content-Length) of one request.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.trim_end().to_owned();
    let mut key = query_key(&line);
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let (name, value) = (name.to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "authorization" => {
                key = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_owned());
            }
            "x-api-key" | "x-goog-api-key" => key = Some(value.to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { line, key, body })
}

/// Google's `?key=KEY` in the request line's path.
fn query_key(line: &str) -> Option<String> {
    let path = line.split_whitespace().nth(1)?;
    let (_, query) = path.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("key="))
        .map(str::to_owned)
}

/// The one key a fake API accepts, if it was told one: a request carrying any other key (or
/// none) is refused with the provider's own refusal, and the key it carried is kept, so a test
/// can say which key the agent really sent. Told none, every key is accepted.
pub struct KeyGate {
    accepted: Mutex<Option<String>>,
    refused: Mutex<Vec<String>>,
    refusal: fn(&str) -> Vec<u8>,
}

impl KeyGate {
    /// A gate that accepts any key until told one; `refusal` makes the whole response refusing
    /// the key it is given (empty for none).
    pub fn new(refusal: fn(&str) -> Vec<u8>) -> Arc<KeyGate> {
        Arc::new(KeyGate {
            accepted: Mutex::new(None),
            refused: Mutex::new(Vec::new()),
            refusal,
        })
    }

    /// From now on only `key` is accepted.
    pub fn accept_only(&self, key: &str) {
        *self.accepted.lock().unwrap() = Some(key.to_owned());
    }

    /// The keys refused so far, in order (empty for a request that carried none).
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }

    /// The refusal of `request`, when it does not carry the accepted key.
    pub fn refuse(&self, request: &Request) -> Option<Vec<u8>> {
        let accepted = self.accepted.lock().unwrap();
        let key = request.key.as_deref().unwrap_or_default();
        if accepted.as_deref().is_none_or(|a| a == key) {
            return None;
        }
        self.refused.lock().unwrap().push(key.to_owned());
        Some((self.refusal)(key))
    }
}

/// A whole response with its body, closing the connection.
pub fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    response_with(status, content_type, &[], body)
}

/// A whole response with more headers (a refusal's rate-limit headers, say).
pub fn response_with(
    status: u16,
    content_type: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         request-id: req_fake\r\n{extra}connection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Server-sent events, each `data:` one JSON object; with `named`, each also has an `event:`
/// line naming its `type` (as OpenAI's Responses and Anthropic's Messages stream do; Chat
/// Completions has none).
pub fn sse(events: &[Value], named: bool) -> Vec<u8> {
    let mut text = String::new();
    for e in events {
        if named {
            text.push_str(&format!(
                "event: {}\n",
                e["type"].as_str().unwrap_or_default()
            ));
        }
        text.push_str(&format!("data: {e}\n\n"));
    }
    text.into_bytes()
}

/// One scripted answer of a fake model, whatever API carries it.
pub use super::claude::Reply;

/// A fake model's script and what it was asked, shared by the fakes of OpenAI's APIs: each
/// of the agent's turns takes the next reply (`Done.` once the script is spent) and is kept,
/// so a test can read what the model was told (a tool's output, the prompt).
pub struct Turns {
    state: Mutex<TurnsState>,
    cond: Condvar,
}

struct TurnsState {
    script: VecDeque<Reply>,
    /// Bodies of the requests that were the agent's turns, in order.
    requests: Vec<Value>,
    /// Every request line seen, side calls included, for diagnosis.
    seen: Vec<String>,
}

impl Turns {
    pub fn new(script: Vec<Reply>) -> Arc<Turns> {
        Arc::new(Turns {
            state: Mutex::new(TurnsState {
                script: script.into(),
                requests: Vec::new(),
                seen: Vec::new(),
            }),
            cond: Condvar::new(),
        })
    }

    /// Notes a request line.
    pub fn saw(&self, line: &str) {
        self.state.lock().unwrap().seen.push(line.to_owned());
        self.cond.notify_all();
    }

    /// Keeps `request` as the agent's next turn and gives the reply to it.
    pub fn take(&self, request: &Value) -> Reply {
        let mut s = self.state.lock().unwrap();
        s.requests.push(request.clone());
        let reply = s.script.pop_front().unwrap_or_else(|| Reply::text("Done."));
        self.cond.notify_all();
        reply
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: Vec<Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// The agent's turns so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Waits until at least `n` of the agent's turns have arrived; panics with every request
    /// line seen if they do not within `within`.
    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut s = self.state.lock().unwrap();
        while s.requests.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the fake API got {} of {n} agent turns within {within:?}; requests seen: {:?}",
                s.requests.len(),
                s.seen
            );
            s = self.cond.wait_timeout(s, left).unwrap().0;
        }
        s.requests.clone()
    }
}
