//! The HTTP side every fake LLM API shares (Claude's Messages, OpenAI's Responses and Chat
//! Completions): a listener on 127.0.0.1, one thread a connection, one request a connection
//! (every answer closes it, which any HTTP client accepts), and the answer's bytes.

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
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || serve_one(stream, &*answer));
        }
    });
    addr
}

fn serve_one(stream: TcpStream, answer: &Answer) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut out = stream;
    let Some((line, body)) = read_request(&mut reader) else {
        return;
    };
    let bytes = answer(&line, &body);
    let _ = out.write_all(&bytes);
    let _ = out.flush();
}

/// The request line and the body (by its Content-Length) of one request.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.trim_end().to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((line, body))
}

/// A whole response with its body, closing the connection.
pub fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         request-id: req_fake\r\nconnection: close\r\n\r\n",
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
