//! JSON-RPC 2.0 as MCP's stdio transport carries it (and the Agent Client Protocol's, the same):
//! one message a line, UTF-8, no batches. A line that is not a message gets an error response
//! naming what is wrong (with the request's id when one can be read, else `null`), and the
//! server reads on.

use serde_json::{Map, Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// One message from the client.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Expects a response with the same `id` (a string or a number).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request of ours (the MCP server sends none, and passes it over): its
    /// `result`, or its `error` object.
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
}

/// A line that is no message: the error response it gets.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl RpcError {
    fn new(id: Value, code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            id,
            code,
            message: message.into(),
        }
    }

    /// The error response, as a line (without its newline).
    pub fn line(&self) -> String {
        error_line(&self.id, self.code, &self.message)
    }
}

/// The message on `line`; `None` for a blank line (nothing to answer).
pub fn parse_line(line: &[u8]) -> Result<Option<Message>, RpcError> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Err(RpcError::new(
            Value::Null,
            PARSE_ERROR,
            "the line is not UTF-8",
        ));
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| RpcError::new(Value::Null, PARSE_ERROR, format!("not JSON: {e}")))?;
    let Value::Object(m) = value else {
        return Err(RpcError::new(
            Value::Null,
            INVALID_REQUEST,
            "a message is one JSON object a line (batches are not taken)",
        ));
    };
    message(m).map(Some)
}

fn message(mut m: Map<String, Value>) -> Result<Message, RpcError> {
    let id = match m.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            return Err(RpcError::new(
                Value::Null,
                INVALID_REQUEST,
                "the id must be a string or a number",
            ));
        }
    };
    let echoed = id.clone().unwrap_or(Value::Null);
    let invalid = |message: &str| RpcError::new(echoed.clone(), INVALID_REQUEST, message);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("\"jsonrpc\" must be \"2.0\""));
    }
    let params = match m.remove("params") {
        None => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return Err(invalid("params must be an object or an array")),
    };
    match (m.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), _) => Err(invalid("the method must be a string")),
        (None, Some(id)) if m.contains_key("result") || m.contains_key("error") => {
            let outcome = match m.remove("error") {
                Some(e) => Err(e),
                None => Ok(m.remove("result").unwrap_or(Value::Null)),
            };
            Ok(Message::Response { id, outcome })
        }
        (None, _) => Err(invalid("a request needs a method")),
    }
}

/// A success response, as a line.
pub fn result_line(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response, as a line.
pub fn error_line(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// A request of ours, as a line.
pub fn request_line(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification of ours, as a line.
pub fn notification_line(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}
