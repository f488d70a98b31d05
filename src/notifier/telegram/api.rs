//! The Bot API client: one JSON `POST` a method, blocking (ureq; TLS by rustls with the webpki
//! roots). The token is part of every URL (`/bot<token>/<method>`), so nothing this module
//! returns or says is ever built from the URL or from the HTTP library's own words unscrubbed:
//! every error is luzia's, and any text that could hold the token has it replaced first.
//!
//! Telegram's `429 Too Many Requests` names how long to wait (`parameters.retry_after`): that
//! wait is honoured, then the call is made again. A network outage is said once, when it begins,
//! and once when the API answers again, however many attempts it takes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// The longest `retry_after` honoured as given: a larger one is waited in steps of this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// A reply larger than this is no Bot API reply.
const BODY_LIMIT: u64 = 8 * 1024 * 1024;

/// Why a call gave no result.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ApiError {
    /// No HTTP answer at all: the network, DNS, TLS, a timeout.
    #[error("cannot reach the Bot API at {api}: {why}")]
    Unreachable { api: String, why: String },
    /// The API answered and refused (`ok: false`): its error code and description.
    #[error("the Bot API refused {method}: {code} {description}")]
    Refused {
        method: String,
        code: i64,
        description: String,
    },
}

impl ApiError {
    /// Telegram says the message was edited to the text it has already: nothing to do.
    pub fn is_not_modified(&self) -> bool {
        matches!(self, ApiError::Refused { description, .. } if description.contains("not modified"))
    }
}

/// Whether the API is known to be unreachable, shared by the bridge's threads so that an
/// outage is said once, not once per thread or per attempt.
#[derive(Debug, Default)]
pub struct Health {
    down: AtomicBool,
}

/// A client for one bot.
pub struct Api {
    agent: ureq::Agent,
    /// The server, as configured (said in errors).
    server: String,
    token: String,
    health: Arc<Health>,
}

impl Api {
    /// A client whose calls give up after `timeout` (a long poll needs more than its own wait).
    pub fn new(server: &str, token: &str, timeout: Duration, health: Arc<Health>) -> Api {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .timeout_connect(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .build()
            .into();
        Api {
            agent,
            server: server.to_owned(),
            token: token.to_owned(),
            health,
        }
    }

    /// Calls `method` with `params`, waiting out Telegram's `retry_after` as often as it asks.
    pub fn call(&self, method: &str, params: &Value) -> Result<Value, ApiError> {
        loop {
            match self.once(method, params) {
                Attempt::Done(r) => {
                    if r.is_ok() && self.health.down.swap(false, Ordering::SeqCst) {
                        crate::say!("luzia: telegram: the Bot API answers again");
                    }
                    if let Err(e @ ApiError::Unreachable { .. }) = &r
                        && !self.health.down.swap(true, Ordering::SeqCst)
                    {
                        crate::say!(
                            "luzia: telegram: {e}; trying again with backoff (said once, until it \
                             answers again)"
                        );
                    }
                    return r;
                }
                Attempt::RetryAfter(wait) => {
                    crate::say!(
                        "luzia: telegram: Telegram asks to wait {}s before {method} (429 \
                         retry_after): waiting",
                        wait.as_secs()
                    );
                    std::thread::sleep(wait.min(MAX_RETRY_AFTER));
                }
            }
        }
    }

    fn once(&self, method: &str, params: &Value) -> Attempt {
        let url = format!("{}/bot{}/{method}", self.server, self.token);
        let body = serde_json::to_vec(params).unwrap_or_default();
        let sent = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&body[..]);
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(self.unreachable(&e.to_string()))),
        };
        let status = response.status().as_u16();
        let text = match response
            .body_mut()
            .with_config()
            .limit(BODY_LIMIT)
            .read_to_string()
        {
            Ok(t) => t,
            Err(e) => return Attempt::Done(Err(self.unreachable(&e.to_string()))),
        };
        let reply: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) => {
                return Attempt::Done(Err(ApiError::Refused {
                    method: method.to_owned(),
                    code: i64::from(status),
                    description: "the answer is not the Bot API's JSON (is `api` in [telegram] \
                                  a Bot API server?)"
                        .into(),
                }));
            }
        };
        if reply["ok"].as_bool() == Some(true) {
            return Attempt::Done(Ok(reply["result"].clone()));
        }
        let code = reply["error_code"].as_i64().unwrap_or(i64::from(status));
        if code == 429 {
            let secs = reply["parameters"]["retry_after"].as_u64().unwrap_or(1);
            return Attempt::RetryAfter(Duration::from_secs(secs.max(1)));
        }
        let description = reply["description"].as_str().unwrap_or("").to_owned();
        Attempt::Done(Err(ApiError::Refused {
            method: method.to_owned(),
            code,
            description: self.scrub(&description),
        }))
    }

    fn unreachable(&self, why: &str) -> ApiError {
        ApiError::Unreachable {
            api: self.server.clone(),
            why: self.scrub(why),
        }
    }

    /// `text` with the token (and its bot id alone, the part before ':') replaced.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.replace(&self.token, "<token>");
        if let Some((_, secret)) = self.token.split_once(':')
            && secret.len() >= 8
        {
            out = out.replace(secret, "<token>");
        }
        out
    }

    /// The updates from `offset` on, waiting up to `wait` for one (Telegram's long poll).
    pub fn get_updates(&self, offset: i64, wait: Duration) -> Result<Vec<Value>, ApiError> {
        let params = json!({
            "offset": offset,
            "timeout": wait.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let result = self.call("getUpdates", &params)?;
        Ok(result.as_array().cloned().unwrap_or_default())
    }

    /// Posts `text` (plain: no `parse_mode`, so an agent's words are never markup); returns the
    /// message's id.
    pub fn send_message(&self, chat: &str, text: &str, extra: Value) -> Result<i64, ApiError> {
        let mut params = json!({"chat_id": chat, "text": text});
        merge(&mut params, extra);
        let sent = self.call("sendMessage", &params)?;
        Ok(sent["message_id"].as_i64().unwrap_or(0))
    }

    /// Replaces a message's text, and its buttons with `markup` (none: the buttons go).
    pub fn edit_message(
        &self,
        chat: &str,
        message_id: i64,
        text: &str,
        markup: Option<Value>,
    ) -> Result<(), ApiError> {
        let mut params = json!({"chat_id": chat, "message_id": message_id, "text": text});
        if let Some(m) = markup {
            params["reply_markup"] = m;
        }
        match self.call("editMessageText", &params) {
            Err(e) if e.is_not_modified() => Ok(()),
            other => other.map(drop),
        }
    }

    /// Answers a button press: the small notice the presser sees.
    pub fn answer_press(&self, query_id: &str, text: &str, alert: bool) -> Result<(), ApiError> {
        let params = json!({"callback_query_id": query_id, "text": text, "show_alert": alert});
        self.call("answerCallbackQuery", &params).map(drop)
    }
}

enum Attempt {
    Done(Result<Value, ApiError>),
    RetryAfter(Duration),
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_server_is_said_without_the_token() {
        // A port nobody listens on: the library's error would name the URL.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let token = "123456:AAsecret-token-value";
        let api = Api::new(
            &format!("http://127.0.0.1:{port}"),
            token,
            Duration::from_secs(5),
            Arc::default(),
        );
        let err = api.call("getMe", &json!({})).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(matches!(err, ApiError::Unreachable { .. }), "{text}");
        assert!(!text.contains("AAsecret"), "{text}");
        assert!(!text.contains(token), "{text}");
        // A URL the library refuses to parse says it in its error: scrubbed too.
        let bad = Api::new("http://[::", token, Duration::from_secs(5), Arc::default());
        let text = bad.call("getMe", &json!({})).unwrap_err().to_string();
        assert!(!text.contains("AAsecret"), "{text}");
    }
}
