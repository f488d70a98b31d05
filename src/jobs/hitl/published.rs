//! What an operator (or the agent's timeout and auto-approval) publishes: `response.json` and
//! `approved.json`, written exactly once by [`once`](crate::jobs::hitl::once) and read back by
//! both sides. Read leniently, like every file: the older `{"choice": ...}` form, and a field of
//! the wrong type read as absent.
//!
//! Each names the instance it settles (`question_id`, `gate_id`) and carries a `token` drawn at
//! random by its publisher: whether a publisher won is told by the token that stands, never by
//! the value (two operators may well send the same answer in the same second).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::model::format::{from_object, lenient};
use crate::jobs::text::sanitize::plain_text;

/// A published answer (`response.json`). Read leniently: the older `{"choice": ...}` form (no
/// id) answers question `q1`, and a field that is not a string reads as empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ResponseFile", try_from = "ResponseFile")]
pub struct Response {
    pub question_id: String,
    pub answer: String,
    pub answered_by: String,
    pub answered_at: String,
    /// `tui`, `cli` or `timeout`.
    pub source: String,
    /// Its publisher's random token (empty in files written before tokens).
    pub token: String,
}

/// `response.json` as it is on disk: `choice` repeats `answer` for agents written against the
/// older form.
#[derive(Serialize, Deserialize)]
struct ResponseFile {
    #[serde(default, deserialize_with = "lenient::string")]
    question_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    answer: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    choice: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    answered_by: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    answered_at: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    source: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    token: Option<String>,
}

impl From<Response> for ResponseFile {
    fn from(r: Response) -> ResponseFile {
        ResponseFile {
            question_id: Some(r.question_id),
            choice: Some(r.answer.clone()),
            answer: Some(r.answer),
            answered_by: Some(r.answered_by),
            answered_at: Some(r.answered_at),
            source: Some(r.source),
            token: Some(r.token),
        }
    }
}

impl TryFrom<ResponseFile> for Response {
    type Error = &'static str;

    fn try_from(f: ResponseFile) -> Result<Response, &'static str> {
        Ok(Response {
            question_id: f.question_id.unwrap_or_else(|| "q1".into()),
            answer: f.answer.or(f.choice).ok_or("no answer")?,
            answered_by: f.answered_by.unwrap_or_default(),
            answered_at: f.answered_at.unwrap_or_default(),
            source: f.source.unwrap_or_default(),
            token: f.token.unwrap_or_default(),
        })
    }
}

impl Response {
    pub fn parse(bytes: &[u8]) -> Option<Response> {
        from_object(bytes).ok()
    }

    /// "bruno@host at 2026-01-11T14:31:02Z (tui)"
    pub fn who(&self) -> String {
        who(&self.answered_by, &self.answered_at, &self.source)
    }
}

/// A published decision at a gate (`approved.json`). Read leniently like an answer; without a
/// boolean `approved` there is no decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "DecisionFile", try_from = "DecisionFile")]
pub struct Decision {
    pub gate: String,
    /// The gate instance decided (`approval.json`'s `id`); empty in the older form, which
    /// decides whatever gate of that name is pending.
    pub gate_id: String,
    pub approved: bool,
    pub reason: String,
    pub decided_by: String,
    pub decided_at: String,
    /// `tui`, `cli` or `auto`.
    pub source: String,
    /// Its publisher's random token (empty in files written before tokens).
    pub token: String,
    /// What an approval covers: this request, or (where the gate offered it) every request
    /// like it for the rest of the agent's session.
    pub scope: Scope,
}

/// What an approval covers. On disk `"scope": "session"`, written only for the session: a
/// decision without it (every older one, every denial) is for the one request, and an older
/// reader takes a session's approval for a plain one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    #[default]
    Once,
    Session,
}

impl Scope {
    /// The word `approved.json` says, `None` for `Once` (not written).
    fn word(self) -> Option<String> {
        match self {
            Scope::Once => None,
            Scope::Session => Some("session".into()),
        }
    }

    /// Read leniently: anything but `session` is once.
    fn read(word: Option<&str>) -> Scope {
        match word {
            Some("session") => Scope::Session,
            _ => Scope::Once,
        }
    }
}

/// `approved.json` as it is on disk.
#[derive(Serialize, Deserialize)]
struct DecisionFile {
    #[serde(default, deserialize_with = "lenient::string")]
    gate: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    gate_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::boolean")]
    approved: Option<bool>,
    #[serde(default, deserialize_with = "lenient::string")]
    reason: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    decided_by: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    decided_at: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    source: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    token: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    scope: Option<String>,
}

impl From<Decision> for DecisionFile {
    fn from(d: Decision) -> DecisionFile {
        DecisionFile {
            gate: Some(d.gate),
            gate_id: Some(d.gate_id),
            approved: Some(d.approved),
            reason: Some(d.reason),
            decided_by: Some(d.decided_by),
            decided_at: Some(d.decided_at),
            source: Some(d.source),
            token: Some(d.token),
            scope: d.scope.word(),
        }
    }
}

impl TryFrom<DecisionFile> for Decision {
    type Error = &'static str;

    fn try_from(f: DecisionFile) -> Result<Decision, &'static str> {
        Ok(Decision {
            approved: f.approved.ok_or("no decision")?,
            gate: f.gate.unwrap_or_default(),
            gate_id: f.gate_id.unwrap_or_default(),
            reason: f.reason.unwrap_or_default(),
            decided_by: f.decided_by.unwrap_or_default(),
            decided_at: f.decided_at.unwrap_or_default(),
            source: f.source.unwrap_or_default(),
            token: f.token.unwrap_or_default(),
            // Only an approval covers more than itself.
            scope: match f.approved {
                Some(true) => Scope::read(f.scope.as_deref()),
                _ => Scope::Once,
            },
        })
    }
}

impl Decision {
    pub fn parse(bytes: &[u8]) -> Option<Decision> {
        from_object(bytes).ok()
    }

    pub fn who(&self) -> String {
        who(&self.decided_by, &self.decided_at, &self.source)
    }

    /// Whether this decides gate instance `id` named `name`: by its id, or, in the older form
    /// that names no instance, by the gate's name (or none at all).
    pub fn decides(&self, id: &str, name: &str) -> bool {
        crate::jobs::model::waiting::decides(&self.gate_id, &self.gate, id, name)
    }

    /// "approved", "approved for the session" or "denied".
    pub fn verb(&self) -> &'static str {
        decision_verb(self.approved, self.scope)
    }
}

/// How a decision is said: "approved", "approved for the session" or "denied" (wherever it was
/// taken: read from approved.json, or given to another host's luzia).
pub fn decision_verb(approved: bool, scope: Scope) -> &'static str {
    match (approved, scope) {
        (true, Scope::Once) => "approved",
        (true, Scope::Session) => "approved for the session",
        (false, _) => "denied",
    }
}

/// A time as the files record it: RFC 3339 in UTC, to the second.
pub fn timestamp(now: DateTime<Utc>) -> String {
    now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A new publisher's token: 128 random bits from the kernel, as 32 hex digits.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    if read_urandom(&mut bytes).is_err() {
        // No /dev/urandom (a bare chroot): what only this publisher can have at this instant
        // (its pid, the time to the nanosecond, a per-process counter) still tells it apart.
        fallback_entropy(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_urandom(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

fn fallback_entropy(buf: &mut [u8; 16]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = u64::from(std::process::id());
    buf[..8].copy_from_slice(&nanos.to_le_bytes());
    buf[8..].copy_from_slice(&((pid << 32) ^ n).to_le_bytes());
}

fn who(by: &str, at: &str, source: &str) -> String {
    let by = if by.is_empty() { "someone" } else { by };
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    };
    let source = if source.is_empty() {
        String::new()
    } else {
        format!(" ({source})")
    };
    plain_text(&format!("{by}{at}{source}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent() {
        let r = Response::parse(br#"{"answer": 5, "choice": "y", "answered_by": 7, "x": 1}"#);
        let r = r.expect("the choice answers");
        assert_eq!((r.answer.as_str(), r.answered_by.as_str()), ("y", ""));
        assert_eq!(r.question_id, "q1");
        assert_eq!(Response::parse(br#"{"answer": null}"#), None);
        assert_eq!(
            Response::parse(br#"["q1", "x"]"#),
            None,
            "an array is no answer"
        );
        assert_eq!(
            Decision::parse(br#"{"gate": "g", "approved": "yes"}"#),
            None,
            "a decision is a boolean"
        );
        let d = Decision::parse(br#"{"approved": true, "reason": 3}"#).unwrap();
        assert!(d.approved && d.gate.is_empty() && d.reason.is_empty());
        assert!(d.gate_id.is_empty() && d.token.is_empty());
    }

    #[test]
    fn a_decision_names_its_instance_or_in_the_older_form_its_gate() {
        let d = |json: &str| Decision::parse(json.as_bytes()).unwrap();
        let new = d(r#"{"gate": "deploy", "gate_id": "g2", "approved": true}"#);
        assert!(new.decides("g2", "deploy"));
        assert!(
            !new.decides("g3", "deploy"),
            "the next gate of the same name"
        );
        let old = d(r#"{"gate": "deploy", "approved": true}"#);
        assert!(old.decides("g3", "deploy") && !old.decides("g3", "migrate"));
        assert!(d(r#"{"approved": false}"#).decides("g-1f", "anything"));
    }

    #[test]
    fn a_session_approval_is_written_only_when_given_and_read_back_leniently() {
        let d = |json: &str| Decision::parse(json.as_bytes()).unwrap();
        let session = d(r#"{"gate": "g", "approved": true, "scope": "session"}"#);
        assert_eq!(session.scope, Scope::Session);
        assert_eq!(session.verb(), "approved for the session");
        for other in [r#""once""#, r#""forever""#, "7", "null"] {
            let json = format!(r#"{{"approved": true, "scope": {other}}}"#);
            assert_eq!(d(&json).scope, Scope::Once, "{json}");
        }
        let denied = d(r#"{"approved": false, "reason": "no", "scope": "session"}"#);
        assert_eq!(denied.scope, Scope::Once, "a denial is for the one request");
        let once = serde_json::to_value(d(r#"{"approved": true}"#)).unwrap();
        assert!(once.get("scope").is_none(), "{once}");
        let written = serde_json::to_value(&session).unwrap();
        assert_eq!(written["scope"], "session");
    }

    proptest::proptest! {
        /// Whatever a decision holds, it reads back as itself from what it writes.
        #[test]
        fn a_decision_reads_back_as_written(
            approved: bool,
            session: bool,
            gate in "\\PC{0,12}",
            reason in "\\PC{0,12}",
            token in "[0-9a-f]{0,32}",
        ) {
            let d = Decision {
                gate,
                gate_id: "g1".into(),
                approved,
                reason,
                decided_by: "ana@host".into(),
                decided_at: "2026-01-01T00:00:00Z".into(),
                source: "tui".into(),
                token,
                scope: if approved && session { Scope::Session } else { Scope::Once },
            };
            let bytes = serde_json::to_vec(&d).unwrap();
            proptest::prop_assert_eq!(Decision::parse(&bytes), Some(d));
        }
    }

    #[test]
    fn tokens_are_long_random_and_distinct() {
        let tokens: std::collections::HashSet<String> = (0..1000).map(|_| new_token()).collect();
        assert_eq!(tokens.len(), 1000);
        assert!(
            tokens
                .iter()
                .all(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        );
        let mut a = [0u8; 16];
        let mut b = [0u8; 16];
        fallback_entropy(&mut a);
        fallback_entropy(&mut b);
        assert_ne!(a, b, "the fallback differs from one call to the next");
    }
}
