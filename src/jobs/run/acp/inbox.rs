//! What an ACP agent asks a person, through the job's inbox: `session/request_permission`
//! becomes an approval gate of the job, exactly as `luzia gate` makes one (so the cockpit's
//! inbox, `luzia approve` and `luzia deny` work unchanged), and `elicitation/create` becomes
//! the job's questions, one for each field it asks for. The waiting is `hitl::agent`'s; these
//! functions block, and the client runs them off its loop.
//!
//! An approval selects the agent's `allow_once` option; a denial its `reject_once`. Where the
//! agent offers an `allow_always` option for this session, the gate offers approving for the
//! session, which selects it (the option's name, the agent's words for what it covers, goes
//! with the gate). ACP's answer is an option and nothing more: the reason of a denial cannot
//! reach the model, which the gate says in its context, so that the operator knows it when
//! denying.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::agent::{self, AgentError, Ask, AskResult, GateResult, GateSpec};
use crate::jobs::hitl::operator::{Decision, Scope};
use crate::jobs::model::waiting::QuestionType;
use crate::jobs::text::sanitize::ellipsize;

/// The longest gate name, as for Claude Code's permission requests.
const NAME_CHARS: usize = 120;
/// The most of a call's content kept as the gate's context.
const CONTEXT_BYTES: usize = 64 * 1024;

/// What the gate's context says of a denial's reason.
pub const NO_REASON_OVER_ACP: &str = "Deny sends the agent a rejection only: over the Agent \
     Client Protocol the reason cannot reach the model (it is kept in the job's history).";

/// The gate a permission request (`params` of `session/request_permission`) of the agent
/// `name` (`Gemini CLI`) becomes.
pub fn gate_spec(name: &str, params: &Value) -> GateSpec {
    let call = &params["toolCall"];
    let title = one_line(call["title"].as_str().unwrap_or_default());
    let kind = call["kind"].as_str().unwrap_or_default();
    let mut gate = match (kind, title.as_str()) {
        ("", "") => "tool call".to_owned(),
        ("", t) => t.to_owned(),
        (k, "") => k.to_owned(),
        (k, t) => format!("{k}: {t}"),
    };
    if gate.chars().count() > NAME_CHARS {
        gate = ellipsize(&gate, NAME_CHARS);
    }
    let mut context = String::new();
    let content = super::render::content_text(&call["content"]);
    if !content.trim().is_empty() {
        context.push_str(content.trim_end());
        context.push_str("\n\n");
    }
    if let Some(input) = call.get("rawInput").filter(|v| !v.is_null()) {
        context.push_str(&serde_json::to_string_pretty(input).unwrap_or_default());
        context.push_str("\n\n");
    }
    if context.len() > CONTEXT_BYTES {
        let mut end = CONTEXT_BYTES;
        while !context.is_char_boundary(end) {
            end -= 1;
        }
        context.truncate(end);
        context.push_str("\n… (cut: the call is longer)\n\n");
    }
    context.push_str(NO_REASON_OVER_ACP);
    GateSpec {
        gate,
        description: format!("{name} asks permission: {}", ellipsize(&title, 400)),
        context,
        auto_approve_after: None,
        allow_session: session_option(params)
            .map(|o| one_line(o["name"].as_str().unwrap_or_default())),
    }
}

/// The option of the first of `kinds` the agent offers (`params.options`).
fn option(params: &Value, kinds: &[&str]) -> Option<String> {
    let options = params["options"].as_array()?;
    kinds.iter().find_map(|k| {
        options
            .iter()
            .find(|o| o["kind"] == *k)
            .and_then(|o| o["optionId"].as_str())
            .map(str::to_owned)
    })
}

/// The agent's `allow_always` option that lasts for this session only. An agent may offer
/// several (Gemini CLI, with its permanent approval switched on, adds "... for all future
/// sessions", which it writes into its policy files): one whose name speaks of the future is
/// never taken, as luzia's approval ends with the job's session.
fn session_option(params: &Value) -> Option<&Value> {
    params["options"].as_array()?.iter().find(|o| {
        o["kind"] == "allow_always"
            && o["optionId"].is_string()
            && !o["name"]
                .as_str()
                .is_some_and(|n| n.to_ascii_lowercase().contains("future"))
    })
}

/// The response to a permission request: the option that says what was decided, or
/// `cancelled` when the agent offers none that does. An approval for the session selects the
/// agent's session option, else (it offers none: the gate did not offer it either, or the
/// decision was written by hand) its `allow_once`; [`approval_note`] says which. An approval
/// once takes the session's option only where the agent offers no `allow_once`.
pub fn permission_outcome(params: &Value, approved: bool, scope: Scope) -> Value {
    let session = || {
        session_option(params)?
            .get("optionId")?
            .as_str()
            .map(str::to_owned)
    };
    let once = || option(params, &["allow_once"]);
    let chosen = match (approved, scope) {
        (true, Scope::Session) => session().or_else(once),
        (true, Scope::Once) => once().or_else(session),
        (false, _) => option(params, &["reject_once", "reject_always"]),
    };
    match chosen {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => cancelled(),
    }
}

/// The line output.log says of an approval: by whom, and for how long.
fn approval_note(params: &Value, d: &Decision) -> String {
    let who = d.who();
    match (d.scope, session_option(params)) {
        (Scope::Once, _) => format!("  ✓ approved by {who}"),
        (Scope::Session, Some(o)) => format!(
            "  ✓ approved for the session by {who} (the agent's \"{}\")",
            ellipsize(&one_line(o["name"].as_str().unwrap_or_default()), 120)
        ),
        (Scope::Session, None) => format!(
            "  ✓ approved by {who}, once: the agent offers no approval for the session of this \
             request"
        ),
    }
}

/// Whether `response` to the permission request `params` selects one of its reject options.
pub fn rejects(params: &Value, response: &Value) -> bool {
    let chosen = &response["outcome"]["optionId"];
    params["options"].as_array().is_some_and(|options| {
        options.iter().any(|o| {
            o["optionId"] == *chosen && o["kind"].as_str().is_some_and(|k| k.starts_with("reject"))
        })
    })
}

/// The response to a request whose prompt was cancelled, as ACP asks.
pub fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

/// The answer to a request nobody decided: `cancelled` for a permission, `cancel` for an
/// elicitation.
pub fn cancelled_response(method: &str) -> Value {
    if method == "elicitation/create" {
        json!({"action": "cancel"})
    } else {
        cancelled()
    }
}

/// What a request came to: the response, and a line for output.log.
pub struct Answered {
    pub response: Value,
    pub note: String,
}

/// Stops at the gate a permission request becomes and waits for the decision (giving up when
/// `stop` is stopped: the gate is then withdrawn, and the error says so).
pub fn permission(
    dir: &Path,
    name: &str,
    params: &Value,
    stop: &Stop,
) -> Result<Answered, AgentError> {
    let spec = gate_spec(name, params);
    let decision = match agent::gate_or_stop(dir, &spec, stop)? {
        GateResult::Decided(d) | GateResult::AutoApproved(d) => d,
    };
    let note = if decision.approved {
        approval_note(params, &decision)
    } else {
        let reason = decision.reason.trim();
        format!(
            "  ✗ denied by {}{}{} (the agent is told only that it was rejected)",
            decision.who(),
            if reason.is_empty() { "" } else { ": " },
            ellipsize(&one_line(reason), 200)
        )
    };
    Ok(Answered {
        response: permission_outcome(params, decision.approved, decision.scope),
        note,
    })
}

/// The questions an elicitation (`params` of `elicitation/create`: a message and a form of
/// fields) becomes: one for each field, asked in turn; the answers go back as its content.
pub fn elicitation(dir: &Path, params: &Value, stop: &Stop) -> Result<Answered, AgentError> {
    let message = params["message"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let schema = &params["requestedSchema"];
    let empty = Map::new();
    let fields = schema["properties"].as_object().unwrap_or(&empty);
    let mut content = Map::new();
    let asks: Vec<(String, Ask)> = if fields.is_empty() {
        // Nothing to fill in: a yes or no on the message.
        vec![(String::new(), ask(&message, &Value::Null, true))]
    } else {
        fields
            .iter()
            .map(|(key, field)| {
                let title = field["title"].as_str().unwrap_or(key);
                let mut q = message.clone();
                if fields.len() > 1 || !field["description"].is_null() {
                    let said = field["description"].as_str().unwrap_or(title);
                    q = format!("{q}\n{}", said.trim());
                }
                (key.clone(), ask(q.trim(), field, false))
            })
            .collect()
    };
    for (key, spec) in asks {
        let answer = match agent::ask_or_stop(dir, &spec, stop)? {
            AskResult::Answered(r) | AskResult::TimedOutDefault(r) => r.answer,
            AskResult::TimedOut => {
                return Ok(Answered {
                    response: json!({"action": "cancel"}),
                    note: "  ✗ the question was not answered".into(),
                });
            }
        };
        if key.is_empty() {
            let action = if is_yes(&answer) { "accept" } else { "decline" };
            return Ok(Answered {
                response: json!({"action": action}),
                note: format!("  ✓ answered: {answer}"),
            });
        }
        content.insert(key.clone(), typed(&fields[&key], &answer));
    }
    Ok(Answered {
        response: json!({"action": "accept", "content": content}),
        note: "  ✓ answered".into(),
    })
}

/// The question one field (JSON Schema) becomes: a choice of its `enum`, yes/no for a boolean,
/// else free text.
fn ask(question: &str, field: &Value, confirm: bool) -> Ask {
    let options: Vec<String> = field["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o.as_str().map(str::to_owned))
        .collect();
    let kind = if confirm || field["type"] == "boolean" {
        QuestionType::Confirm
    } else if !options.is_empty() {
        QuestionType::Choice
    } else {
        QuestionType::Text
    };
    Ask {
        question: if question.is_empty() {
            "The agent asks a question".into()
        } else {
            question.to_owned()
        },
        kind,
        options: if kind == QuestionType::Choice {
            options
        } else {
            Vec::new()
        },
        context: String::new(),
        timeout: None,
        default: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }
}

fn is_yes(answer: &str) -> bool {
    matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "yes" | "y" | "true"
    )
}

/// An answer as the field's type wants it.
fn typed(field: &Value, answer: &str) -> Value {
    match field["type"].as_str() {
        Some("boolean") => Value::Bool(is_yes(answer)),
        Some("integer") => answer
            .trim()
            .parse::<i64>()
            .map_or(json!(answer), Value::from),
        Some("number") => answer
            .trim()
            .parse::<f64>()
            .map_or(json!(answer), Value::from),
        _ => json!(answer),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({"sessionId": "s", "options": [
            {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}],
            "toolCall": {"toolCallId": "c1", "status": "pending", "title": "echo hi >\n marker.txt",
                "kind": "execute",
                "content": [{"type": "content", "content": {"type": "text", "text": "[cwd /srv/p]"}}]}})
    }

    #[test]
    fn a_permission_request_is_a_gate_that_says_a_reason_cannot_reach_the_model() {
        let spec = gate_spec("Gemini CLI", &request());
        assert_eq!(spec.gate, "execute: echo hi > marker.txt");
        assert_eq!(
            spec.description,
            "Gemini CLI asks permission: echo hi > marker.txt"
        );
        assert!(
            spec.context.starts_with("[cwd /srv/p]\n\n"),
            "{}",
            spec.context
        );
        assert!(spec.context.ends_with(NO_REASON_OVER_ACP));
        assert_eq!(spec.auto_approve_after, None);
    }

    #[test]
    fn approval_selects_allow_once_and_denial_reject_once() {
        let r = request();
        let once = |r: &Value, approved| permission_outcome(r, approved, Scope::Once);
        assert_eq!(once(&r, true)["outcome"]["optionId"], "proceed_once");
        assert_eq!(once(&r, false)["outcome"]["optionId"], "cancel");
        let only_always = json!({"options": [{"optionId": "a", "kind": "allow_always"}]});
        assert_eq!(once(&only_always, true)["outcome"]["optionId"], "a");
        assert_eq!(once(&only_always, false), cancelled());
        assert!(rejects(&r, &once(&r, false)));
        assert!(!rejects(&r, &once(&r, true)));
        assert!(!rejects(&r, &cancelled()));
    }

    fn decision(scope: Scope) -> Decision {
        Decision {
            gate: "g".into(),
            gate_id: "g1".into(),
            approved: true,
            reason: String::new(),
            decided_by: "ana@host".into(),
            decided_at: String::new(),
            source: "cli".into(),
            token: String::new(),
            scope,
        }
    }

    #[test]
    fn a_gate_offers_the_session_where_the_agent_does_and_approving_so_selects_it() {
        let r = request();
        let spec = gate_spec("Gemini CLI", &r);
        assert_eq!(
            spec.allow_session.as_deref(),
            Some("Allow for this session")
        );
        let session = permission_outcome(&r, true, Scope::Session);
        assert_eq!(session["outcome"]["optionId"], "proceed_always");
        assert!(!rejects(&r, &session));
        assert_eq!(
            approval_note(&r, &decision(Scope::Session)),
            "  ✓ approved for the session by ana@host (cli) (the agent's \"Allow for this session\")"
        );
        // A denial is for the one request, whatever the decision says.
        assert_eq!(
            permission_outcome(&r, false, Scope::Session)["outcome"]["optionId"],
            "cancel"
        );
    }

    #[test]
    fn an_agent_without_a_session_option_gets_allow_once_and_the_note_says_so() {
        let once_only = json!({"options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"}],
            "toolCall": {"title": "ls", "kind": "execute"}});
        assert_eq!(gate_spec("Codex", &once_only).allow_session, None);
        let approved = permission_outcome(&once_only, true, Scope::Session);
        assert_eq!(approved["outcome"]["optionId"], "yes");
        assert_eq!(
            approval_note(&once_only, &decision(Scope::Session)),
            "  ✓ approved by ana@host (cli), once: the agent offers no approval for the session \
             of this request"
        );
    }

    #[test]
    fn an_approval_for_all_future_sessions_is_never_taken() {
        // Gemini CLI with `security.enablePermanentToolApproval`: the permanent option first.
        let r = json!({"options": [
            {"optionId": "proceed_always_and_save", "name": "Allow this command for all future sessions", "kind": "allow_always"},
            {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"}],
            "toolCall": {"title": "ls", "kind": "execute"}});
        assert_eq!(
            permission_outcome(&r, true, Scope::Session)["outcome"]["optionId"],
            "proceed_always"
        );
        let only_permanent = json!({"options": [
            {"optionId": "save", "name": "Allow for all future sessions", "kind": "allow_always"},
            {"optionId": "once", "name": "Allow", "kind": "allow_once"}]});
        assert_eq!(gate_spec("Gemini CLI", &only_permanent).allow_session, None);
        assert_eq!(
            permission_outcome(&only_permanent, true, Scope::Session)["outcome"]["optionId"],
            "once"
        );
    }

    #[test]
    fn fields_become_questions_of_their_type() {
        let q = ask(
            "Which?",
            &json!({"type": "string", "enum": ["a", "b"]}),
            false,
        );
        assert_eq!(
            (q.kind, q.options.clone()),
            (QuestionType::Choice, vec!["a".into(), "b".into()])
        );
        assert_eq!(
            ask("Go?", &json!({"type": "boolean"}), false).kind,
            QuestionType::Confirm
        );
        assert_eq!(
            ask("Name?", &json!({"type": "string"}), false).kind,
            QuestionType::Text
        );
        assert_eq!(typed(&json!({"type": "integer"}), " 42 "), json!(42));
        assert_eq!(typed(&json!({"type": "boolean"}), "yes"), json!(true));
        assert_eq!(typed(&json!({"type": "string"}), "x"), json!("x"));
    }

    #[test]
    fn an_elicitation_is_answered_from_the_inbox() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("j1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"id": "j1"}"#).unwrap();
        let id = crate::jobs::JobId::parse("j1").unwrap();
        let asker_dir = dir.clone();
        let params = json!({"message": "Deploy where?", "requestedSchema": {"type": "object",
            "properties": {"target": {"type": "string", "enum": ["staging", "prod"]}}}});
        let asking = std::thread::spawn(move || elicitation(&asker_dir, &params, &Stop::default()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let job = loop {
            let j = crate::jobs::read_job(root.path(), &id, chrono::Utc::now()).unwrap();
            if j.question.is_some() {
                break j;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no question was asked"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(job.question.as_ref().unwrap().question, "Deploy where?");
        crate::jobs::hitl::operator::answer(&job, "staging", "cli", "tester", chrono::Utc::now())
            .unwrap();
        let answered = asking.join().unwrap().unwrap();
        assert_eq!(
            answered.response,
            json!({"action": "accept", "content": {"target": "staging"}})
        );
    }
}
