//! The tools `luzia mcp` offers. `permission` is Claude Code's permission prompt tool
//! (`--permission-prompt-tool mcp__luzia__permission`): a request to use a tool becomes an
//! approval gate of the job, and AskUserQuestion becomes the job's questions, asked in turn.
//! `progress` is `luzia progress` without a shell.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::agent::{
    self, AgentError, Ask, AskResult, GateResult, GateSpec, ProgressReport,
};
use crate::jobs::model::waiting::QuestionType;

pub const PERMISSION: &str = "permission";
pub const PROGRESS: &str = "progress";

/// The longest gate name: a one-line summary; the whole input is the gate's context.
const NAME_CHARS: usize = 120;
/// The most of a tool's input kept as a gate's context: a gate file must stay well under the
/// 1 MiB every job file is read up to (a `Write` of a large file carries the file).
const CONTEXT_BYTES: usize = 64 * 1024;

/// `tools/list`'s answer.
pub fn list() -> Value {
    json!({"tools": [
        {
            "name": PERMISSION,
            "description": "Asks the operator of this luzia job whether a tool may be used \
                (Claude Code's permission prompt tool); AskUserQuestion's questions are asked \
                in the operator's inbox.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string"},
                    "input": {"type": "object"},
                    "tool_use_id": {"type": "string"}
                },
                "required": ["tool_name", "input"]
            }
        },
        {
            "name": PROGRESS,
            "description": "Reports your progress to the operator watching this job: percent \
                done, and/or the step you are on out of how many, with its name. Report at \
                each milestone.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "percent": {"type": "number", "minimum": 0, "maximum": 100},
                    "step": {"type": "integer", "minimum": 0},
                    "total_steps": {"type": "integer", "minimum": 1},
                    "step_name": {"type": "string"}
                }
            }
        }
    ]})
}

/// What a tool call came to.
#[derive(Debug, PartialEq)]
pub enum Called {
    /// The `tools/call` result.
    Result(Value),
    /// The wait was stopped (the client went away, the call was cancelled): nothing to answer.
    Stopped,
    /// No such tool.
    Unknown(String),
}

/// Runs tool `name` with `args` for the job in `dir`; a wait gives up when `stop` is stopped.
pub fn call(dir: &Path, name: &str, args: &Value, stop: &Stop) -> Called {
    match name {
        PERMISSION => match permission(dir, args, stop) {
            Err(AgentError::Stopped(_)) => Called::Stopped,
            Ok(verdict) => Called::Result(text_result(&verdict, false)),
            // Fail closed: a request nobody could see is not allowed.
            Err(e) => Called::Result(text_result(
                &deny(&format!("luzia could not ask the operator: {e}")),
                false,
            )),
        },
        PROGRESS => match progress(dir, args) {
            Ok(()) => Called::Result(text_result(&json!("progress recorded"), false)),
            Err(e) => Called::Result(text_result(&json!(e.to_string()), true)),
        },
        other => Called::Unknown(other.to_owned()),
    }
}

/// A result whose one text is `value` (a string as itself, anything else as its JSON).
fn text_result(value: &Value, is_error: bool) -> Value {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

fn allow(input: &Value) -> Value {
    json!({"behavior": "allow", "updatedInput": input})
}

fn deny(message: &str) -> Value {
    json!({"behavior": "deny", "message": message})
}

/// The verdict on a permission request: the operator's decision at a gate, or, for
/// AskUserQuestion, the input with the operator's answers.
fn permission(dir: &Path, args: &Value, stop: &Stop) -> Result<Value, AgentError> {
    let tool = args.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let empty = Value::Object(Map::new());
    let input = args.get("input").unwrap_or(&empty);
    if tool.is_empty() {
        return Err(AgentError::Invalid(
            "the permission request names no tool_name".into(),
        ));
    }
    if tool == "AskUserQuestion" {
        return ask_user(dir, input, stop);
    }
    let spec = GateSpec {
        gate: gate_name(tool, input),
        description: gate_description(tool, input, args.get("tool_use_id")),
        context: gate_context(input),
        auto_approve_after: None,
        allow_session: None,
    };
    Ok(match agent::gate_or_stop(dir, &spec, stop)? {
        GateResult::Decided(d) | GateResult::AutoApproved(d) if d.approved => allow(input),
        GateResult::Decided(d) | GateResult::AutoApproved(d) => {
            let reason = if d.reason.trim().is_empty() {
                format!("The operator ({}) denied this {tool} call.", d.who())
            } else {
                d.reason
            };
            deny(&reason)
        }
    })
}

/// `Bash: rm -rf build`: the tool and what it would act on, on one line.
pub fn gate_name(tool: &str, input: &Value) -> String {
    let key = match tool {
        "Bash" => "command",
        "Edit" | "MultiEdit" | "Write" | "Read" => "file_path",
        "NotebookEdit" => "notebook_path",
        "WebFetch" => "url",
        "WebSearch" => "query",
        "Glob" | "Grep" => "pattern",
        _ => "",
    };
    let what = input.get(key).and_then(Value::as_str).unwrap_or("");
    let one_line = what.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return tool.to_owned();
    }
    let mut name = format!("{tool}: {one_line}");
    if name.chars().count() > NAME_CHARS {
        name = name.chars().take(NAME_CHARS - 1).collect::<String>() + "…";
    }
    name
}

fn gate_description(tool: &str, input: &Value, tool_use_id: Option<&Value>) -> String {
    let said = input.get("description").and_then(Value::as_str);
    let mut text = match said {
        Some(d) if !d.trim().is_empty() => d.trim().to_owned(),
        _ => format!("Claude Code asks permission to use {tool}"),
    };
    if let Some(id) = tool_use_id.and_then(Value::as_str) {
        text.push_str(&format!(" (tool use {id})"));
    }
    text
}

/// The tool's input as the operator reads it, cut to [`CONTEXT_BYTES`].
fn gate_context(input: &Value) -> String {
    let mut text = serde_json::to_string_pretty(input).unwrap_or_default();
    if text.len() > CONTEXT_BYTES {
        let mut end = CONTEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n… (cut: the input is longer)");
    }
    text
}

/// AskUserQuestion: each question asked in turn (one answered before the next is asked); the
/// answers go back as the input plus `answers` (question -> the chosen labels, `, `-joined).
fn ask_user(dir: &Path, input: &Value, stop: &Stop) -> Result<Value, AgentError> {
    let questions = input
        .get("questions")
        .and_then(Value::as_array)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| AgentError::Invalid("AskUserQuestion gave no questions".into()))?;
    let mut answers = Map::new();
    for q in questions {
        let spec = user_question(q)?;
        let answer = match agent::ask_or_stop(dir, &spec, stop)? {
            AskResult::Answered(r) | AskResult::TimedOutDefault(r) => r.answer,
            // Without a timeout a question waits for its answer: this is a safe fallback only.
            AskResult::TimedOut => {
                return Ok(deny("The operator did not answer the question."));
            }
        };
        answers.insert(spec.question, Value::String(answer));
    }
    let mut updated = input.as_object().cloned().unwrap_or_default();
    updated.insert("answers".into(), Value::Object(answers));
    Ok(allow(&Value::Object(updated)))
}

/// One of AskUserQuestion's questions as the job's question.
fn user_question(q: &Value) -> Result<Ask, AgentError> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let question = text(q, "question");
    if question.trim().is_empty() {
        return Err(AgentError::Invalid(
            "AskUserQuestion asked a question with no text".into(),
        ));
    }
    let options = q.get("options").and_then(Value::as_array);
    let (labels, descriptions): (Vec<String>, Vec<String>) = options
        .into_iter()
        .flatten()
        .map(|o| match o {
            Value::String(s) => (s.clone(), String::new()),
            o => (text(o, "label"), text(o, "description")),
        })
        .filter(|(label, _)| !label.is_empty())
        .unzip();
    let choice = !labels.is_empty();
    let described = descriptions.iter().any(|d| !d.is_empty());
    Ok(Ask {
        question,
        kind: if choice {
            QuestionType::Choice
        } else {
            QuestionType::Text
        },
        options: labels,
        context: String::new(),
        timeout: None,
        default: None,
        header: text(q, "header"),
        descriptions: if described { descriptions } else { Vec::new() },
        multi_select: choice && q.get("multiSelect").and_then(Value::as_bool) == Some(true),
    })
}

/// The progress tool: `percent`, `step` of `total_steps`, `step_name`, checked as `luzia
/// progress` checks them.
fn progress(dir: &Path, args: &Value) -> Result<(), AgentError> {
    let number = |k: &str| args.get(k).and_then(Value::as_f64);
    let whole = |k: &str| args.get(k).and_then(Value::as_u64);
    let steps = match (whole("step"), whole("total_steps")) {
        (Some(k), Some(n)) => Some((k, n)),
        (None, None) => None,
        _ => {
            return Err(AgentError::Invalid(
                "give step and total_steps together, as whole numbers".into(),
            ));
        }
    };
    let name = args
        .get("step_name")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned);
    let report = ProgressReport::checked(number("percent"), steps, name, None)?;
    agent::report_progress(dir, &report)
}
