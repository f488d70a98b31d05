//! Claude Code's `system` lines other than `init`, and the line types luzia does not know.
//!
//! Each subtype is either shown in one line a person reads, or deliberately not shown (it says
//! nothing to a person, or another line says it); docs/claude.md has the table. A subtype or a
//! type not listed here, which a newer Claude Code may print, is named in one line, never
//! shown as JSON: the line is whole in stream.jsonl.

use std::fmt::Write as _;

use serde_json::Value;

use super::{Event, Rendered, SHOWN_COLUMNS, number_or, one_line, text};
use crate::jobs::text::sanitize::ellipsize;

/// Subtypes shown nowhere: internal state, or what another line already says.
const QUIET_SUBTYPES: &[&str] = &[
    // A task's start, update and progress: `background_tasks_changed` and the task's
    // notification say what a person needs.
    "task_started",
    "task_updated",
    "task_progress",
    "task_summary",
    // The tool result says the denial, with its reason.
    "permission_denied",
    // Internal state of the session and its terminal interface.
    "status",
    "session_state_changed",
    "session_title_changed",
    "session_metadata",
    "hook_started",
    "hook_progress",
    "hook_response",
    "stop_hook_summary",
    "post_turn_summary",
    "turn_duration",
    "thinking_tokens",
    "files_persisted",
    "elicitation_complete",
];

/// Line types shown nowhere: the conversation with the SDK host, and keep-alives.
const QUIET_TYPES: &[&str] = &[
    "keep_alive",
    "control_request",
    "control_response",
    "control_cancel_request",
    "tool_progress",
    "auth_status",
    "prompt_suggestion",
];

/// A `system` line other than `init`.
pub fn line(v: &Value, out: &mut Rendered) {
    let subtype = text(&v["subtype"]);
    match subtype {
        "api_retry" => {
            let _ = writeln!(
                out.text,
                "  ↻ API error {} ({}); retry {} of {} in {:.1}s",
                number_or(&v["error_status"], "?"),
                one_line(text(&v["error"])),
                number_or(&v["attempt"], "?"),
                number_or(&v["max_retries"], "?"),
                v["retry_delay_ms"].as_f64().unwrap_or(0.0).max(0.0) / 1000.0,
            );
        }
        "compact_boundary" => out.text = "── the conversation was compacted\n".into(),
        "background_tasks_changed" => {
            let tasks: Vec<String> = v["tasks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| one_line(text(&t["description"])))
                .map(|d| if d.is_empty() { "a task".into() } else { d })
                .collect();
            out.text = if tasks.is_empty() {
                "  ⧗ no background task left\n".into()
            } else {
                format!(
                    "  ⧗ waiting for {} background task{}: {}\n",
                    tasks.len(),
                    if tasks.len() == 1 { "" } else { "s" },
                    ellipsize(&tasks.join(", "), SHOWN_COLUMNS)
                )
            };
            out.events.push(Event::Background(tasks));
        }
        "task_notification" => {
            let said = one_line(text(&v["summary"]));
            let said = if said.is_empty() {
                format!("a background task {}", one_line(text(&v["status"])))
            } else {
                said
            };
            out.text = format!("  ⧗ {}\n", ellipsize(&said, SHOWN_COLUMNS));
        }
        "informational" | "notification" => {
            let said = [&v["content"], &v["text"]]
                .into_iter()
                .map(|t| one_line(text(t)))
                .find(|t| !t.is_empty())
                .unwrap_or_default();
            let mark = match text(&v["level"]) {
                "warning" | "error" => "⚠",
                _ => "ℹ",
            };
            if !said.is_empty() {
                out.text = format!("  {mark} {}\n", ellipsize(&said, SHOWN_COLUMNS));
            }
        }
        s if s.starts_with("model_") && s.contains("fallback") => {
            let said = one_line(text(&v["content"]));
            let said = if said.is_empty() {
                format!(
                    "model {} fell back to {}",
                    text(&v["originalModel"]),
                    text(&v["fallbackModel"])
                )
            } else {
                said
            };
            out.text = format!("  ↪ {}\n", ellipsize(&said, SHOWN_COLUMNS));
        }
        s if QUIET_SUBTYPES.contains(&s) => {}
        other => out.text = unknown(&format!("system/{other}")),
    }
}

/// A line whose `type` this renderer does not show: nothing for the quiet ones, else its name.
pub fn other_type(kind: &str) -> String {
    if QUIET_TYPES.contains(&kind) {
        return String::new();
    }
    unknown(if kind.is_empty() { "(no type)" } else { kind })
}

/// One line naming an event luzia does not know; its name cut and cleaned like any text.
fn unknown(name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(SHOWN_COLUMNS / 2)
        .collect();
    format!("  · Claude Code event {name} (not shown by luzia; whole in stream.jsonl)\n")
}

#[cfg(test)]
mod tests;
