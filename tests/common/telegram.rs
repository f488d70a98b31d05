//! A Bot API server of the tests' own, on 127.0.0.1 and plain HTTP, for the Telegram bridge
//! (`api` in `[telegram]` pointed at it): a real HTTP/1.1 server that keeps connections alive,
//! records every call (method, token, JSON body, when), keeps the messages sent and edited as
//! Telegram would, answers `getUpdates` from the updates a test pushes (holding a long poll
//! until one comes, as Telegram does), and fails calls a test scripts (a 429 with its
//! `retry_after`).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The chat the tests' config names.
pub const CHAT: i64 = 4242;
/// The token the tests give the bridge.
pub const TOKEN: &str = "123456:AAtestSECRETtoken_xyz";

/// One call the server received.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub token: String,
    pub body: Value,
    pub at: Instant,
}

/// A message as the chat shows it now.
#[derive(Clone, Debug)]
pub struct Message {
    pub id: i64,
    pub text: String,
    pub markup: Option<Value>,
    pub reply_to: Option<i64>,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    messages: Vec<Message>,
    updates: Vec<Value>,
    next_update: i64,
    /// Replies for the next calls of a method, in order: (method, status, body).
    scripted: VecDeque<(String, u16, Value)>,
}

pub struct FakeBot {
    port: u16,
    inner: Arc<(Mutex<Inner>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl FakeBot {
    pub fn start() -> FakeBot {
        FakeBot::on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind"))
    }

    /// A server on `port` (one a test kept free until now).
    pub fn start_on(port: u16) -> FakeBot {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
                Ok(l) => return FakeBot::on(l),
                Err(e) if Instant::now() > deadline => panic!("bind {port}: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn on(listener: TcpListener) -> FakeBot {
        let port = listener.local_addr().unwrap().port();
        let inner = Arc::new((
            Mutex::new(Inner {
                next_update: 1000,
                ..Inner::default()
            }),
            Condvar::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let (i, s) = (Arc::clone(&inner), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (i, s) = (Arc::clone(&i), Arc::clone(&s));
                std::thread::spawn(move || serve(conn, &i, &s));
            }
        });
        FakeBot { port, inner, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.0.lock().unwrap()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    pub fn messages(&self) -> Vec<Message> {
        self.lock().messages.clone()
    }

    /// The next `n` calls of `method` fail with `status` and `body`.
    pub fn script(&self, method: &str, status: u16, body: Value) {
        self.lock()
            .scripted
            .push_back((method.to_owned(), status, body));
    }

    /// Adds an update (its `update_id` given here); a held long poll returns it at once.
    pub fn push(&self, mut update: Value) -> i64 {
        let (lock, cv) = &*self.inner;
        let mut inner = lock.lock().unwrap();
        let id = inner.next_update;
        inner.next_update += 1;
        update["update_id"] = json!(id);
        inner.updates.push(update);
        cv.notify_all();
        id
    }

    /// A press of button `data` on message `message_id` by `user`.
    pub fn press(&self, user: (i64, &str), message_id: i64, data: &str) -> i64 {
        self.push(press_update(user, message_id, data))
    }

    pub fn reply(&self, user: (i64, &str), to: i64, text: &str) -> i64 {
        let id = self.lock().next_update;
        self.push(json!({"message": {"message_id": 900_000 + id, "date": 0,
            "from": user_json(user), "chat": {"id": CHAT, "type": "private"},
            "reply_to_message": {"message_id": to}, "text": text}}))
    }

    /// Waits (with a deadline) for a message whose text holds `needle`.
    pub fn wait_message(&self, needle: &str) -> Message {
        super::wait_for(
            &format!("a Telegram message holding {needle:?}"),
            Duration::from_secs(30),
            || {
                self.messages()
                    .into_iter()
                    .find(|m| m.text.contains(needle))
            },
        )
    }

    /// Waits for message `id` to hold `needle`.
    pub fn wait_edit(&self, id: i64, needle: &str) -> Message {
        super::wait_for(
            &format!("message {id} edited to hold {needle:?}"),
            Duration::from_secs(30),
            || {
                self.messages()
                    .into_iter()
                    .find(|m| m.id == id && m.text.contains(needle))
            },
        )
    }

    /// Waits for an answer to press `query` (the update's id) and returns its text.
    pub fn wait_notice(&self, update_id: i64) -> String {
        let query = format!("cq{update_id}");
        super::wait_for(
            &format!("the answer to press {query}"),
            Duration::from_secs(30),
            || {
                self.calls_of("answerCallbackQuery")
                    .into_iter()
                    .find(|c| c.body["callback_query_id"] == query.as_str())
                    .map(|c| c.body["text"].as_str().unwrap_or("").to_owned())
            },
        )
    }

    /// The buttons' data of message `id`, in order.
    pub fn buttons(&self, id: i64) -> Vec<(String, String)> {
        let m = self.messages().into_iter().find(|m| m.id == id).unwrap();
        let mut out = Vec::new();
        for row in m
            .markup
            .as_ref()
            .and_then(|k| k["inline_keyboard"].as_array())
            .into_iter()
            .flatten()
        {
            for b in row.as_array().into_iter().flatten() {
                out.push((
                    b["text"].as_str().unwrap().to_owned(),
                    b["callback_data"].as_str().unwrap().to_owned(),
                ));
            }
        }
        out
    }
}

impl Drop for FakeBot {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.inner.1.notify_all();
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

pub fn user_json((id, username): (i64, &str)) -> Value {
    json!({"id": id, "is_bot": false, "first_name": username.to_uppercase(), "username": username})
}

pub fn press_update(user: (i64, &str), message_id: i64, data: &str) -> Value {
    json!({"callback_query": {"id": "PLACEHOLDER", "from": user_json(user),
        "message": {"message_id": message_id, "chat": {"id": CHAT, "type": "private"}},
        "chat_instance": "1", "data": data}})
}

fn serve(conn: TcpStream, inner: &(Mutex<Inner>, Condvar), stop: &AtomicBool) {
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, reply) = answer(&path, body, inner, stop);
        let text = reply.to_string();
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            text.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(text.as_bytes()).is_err()
        {
            return;
        }
    }
}

fn answer(
    path: &str,
    body: Value,
    inner: &(Mutex<Inner>, Condvar),
    stop: &AtomicBool,
) -> (u16, Value) {
    let rest = path.strip_prefix("/bot").unwrap_or("");
    let (token, method) = rest.rsplit_once('/').unwrap_or(("", ""));
    let (lock, cv) = inner;
    let mut s = lock.lock().unwrap();
    s.calls.push(Call {
        method: method.to_owned(),
        token: token.to_owned(),
        body: body.clone(),
        at: Instant::now(),
    });
    if token != TOKEN {
        return (
            401,
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        );
    }
    if let Some(pos) = s.scripted.iter().position(|(m, _, _)| m == method) {
        let (_, status, reply) = s.scripted.remove(pos).unwrap();
        return (status, reply);
    }
    let ok = |result: Value| (200, json!({"ok": true, "result": result}));
    match method {
        "getUpdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(50));
            let until = Instant::now() + wait;
            loop {
                let ready: Vec<Value> = s
                    .updates
                    .iter()
                    .filter(|u| u["update_id"].as_i64().unwrap_or(0) >= offset)
                    .cloned()
                    .map(|mut u| {
                        // A press's query id names its update, for the tests to find its answer.
                        if u.get("callback_query").is_some() {
                            u["callback_query"]["id"] = json!(format!("cq{}", u["update_id"]));
                        }
                        u
                    })
                    .collect();
                let left = until.saturating_duration_since(Instant::now());
                if !ready.is_empty() || left.is_zero() || stop.load(Ordering::SeqCst) {
                    return ok(json!(ready));
                }
                s = cv.wait_timeout(s, left).unwrap().0;
            }
        }
        "sendMessage" => {
            let id = 100 + s.messages.len() as i64;
            s.messages.push(Message {
                id,
                text: body["text"].as_str().unwrap_or("").to_owned(),
                markup: body.get("reply_markup").cloned(),
                reply_to: body["reply_parameters"]["message_id"].as_i64(),
            });
            ok(json!({"message_id": id, "chat": {"id": CHAT}, "date": 0,
                "text": body["text"]}))
        }
        "editMessageText" => {
            let id = body["message_id"].as_i64().unwrap_or(0);
            let text = body["text"].as_str().unwrap_or("").to_owned();
            match s.messages.iter_mut().find(|m| m.id == id) {
                Some(m) if m.text == text && m.markup == body.get("reply_markup").cloned() => (
                    400,
                    json!({"ok": false, "error_code": 400, "description":
                        "Bad Request: message is not modified"}),
                ),
                Some(m) => {
                    m.text = text;
                    m.markup = body.get("reply_markup").cloned();
                    ok(json!({"message_id": id}))
                }
                None => (
                    400,
                    json!({"ok": false, "error_code": 400,
                    "description": "Bad Request: message to edit not found"}),
                ),
            }
        }
        "answerCallbackQuery" => ok(json!(true)),
        _ => (
            404,
            json!({"ok": false, "error_code": 404, "description": "Not Found"}),
        ),
    }
}
