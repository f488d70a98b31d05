//! What an operator (or the agent's timeout and auto-approval) publishes: `response.json` and
//! `approved.json`, written exactly once by [`operator`](crate::jobs::hitl::operator) and read
//! back by both sides. Read leniently, like every file: the older `{"choice": ...}` form, and a
//! field of the wrong type read as absent.

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
    pub approved: bool,
    pub reason: String,
    pub decided_by: String,
    pub decided_at: String,
    /// `tui`, `cli` or `auto`.
    pub source: String,
}

/// `approved.json` as it is on disk.
#[derive(Serialize, Deserialize)]
struct DecisionFile {
    #[serde(default, deserialize_with = "lenient::string")]
    gate: Option<String>,
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
}

impl From<Decision> for DecisionFile {
    fn from(d: Decision) -> DecisionFile {
        DecisionFile {
            gate: Some(d.gate),
            approved: Some(d.approved),
            reason: Some(d.reason),
            decided_by: Some(d.decided_by),
            decided_at: Some(d.decided_at),
            source: Some(d.source),
        }
    }
}

impl TryFrom<DecisionFile> for Decision {
    type Error = &'static str;

    fn try_from(f: DecisionFile) -> Result<Decision, &'static str> {
        Ok(Decision {
            approved: f.approved.ok_or("no decision")?,
            gate: f.gate.unwrap_or_default(),
            reason: f.reason.unwrap_or_default(),
            decided_by: f.decided_by.unwrap_or_default(),
            decided_at: f.decided_at.unwrap_or_default(),
            source: f.source.unwrap_or_default(),
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
    }
}
