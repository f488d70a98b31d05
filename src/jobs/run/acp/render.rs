//! One `session/update` in, readable text out, as Claude Code's stream is rendered
//! ([`stream::render`](crate::jobs::run::stream::render)): the model's message as it writes it,
//! each tool call on one line (`▶ execute  npm test`) and how it ended (`  ✓ npm test`, or
//! `  ✗ npm test: failed` with the last lines of its output), the agent's plan, and the same
//! [`Event`]s, so that activity.json and meta.json are kept by the one sink. A pure function of
//! the update and a little memory (the title of each call in flight).

use std::collections::VecDeque;
use std::fmt::Write as _;

use serde_json::Value;

use crate::jobs::model::session::Usage;
use crate::jobs::run::stream::render::figures::summary;
use crate::jobs::run::stream::render::{Event, Rendered, SHOWN_COLUMNS, result_excerpt};
use crate::jobs::text::sanitize::ellipsize;

/// Calls remembered at once (they run a few at a time).
const CALLS_REMEMBERED: usize = 64;

#[derive(Debug, Default)]
pub struct Renderer {
    /// Call id -> its title, oldest first.
    calls: VecDeque<(String, String)>,
    /// The last text written ends mid-line (a message arrives in pieces).
    mid_line: bool,
    writing: bool,
}

impl Renderer {
    pub fn new() -> Renderer {
        Renderer::default()
    }

    /// The first line of the session: `── Gemini CLI session <id> · gemini-cli 0.61.0`, or
    /// `continued` for a session loaded again.
    pub fn begin(name: &str, agent_info: &Value, session: &str, loaded: bool) -> Rendered {
        let mut line = format!(
            "── {name} session {session}{}",
            if loaded { " (continued)" } else { "" }
        );
        let version = [text(&agent_info["name"]), text(&agent_info["version"])]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if !version.is_empty() {
            let _ = write!(line, " · {}", one_line(&version));
        }
        line.push('\n');
        Rendered {
            text: line,
            events: vec![Event::Session {
                id: session.to_owned(),
            }],
            keep: false,
        }
    }

    /// The text and meaning of one update (`params.update` of a `session/update`).
    pub fn update(&mut self, update: &Value) -> Rendered {
        let mut out = Rendered::default();
        match text(&update["sessionUpdate"]) {
            "agent_message_chunk" => self.chunk(&update["content"], &mut out),
            "tool_call" => self.call(update, &mut out),
            "tool_call_update" => self.call_update(update, &mut out),
            "plan" => self.plan(&update["entries"], &mut out),
            // Thoughts, the user's own words (replayed), commands, modes, usage: nothing to read.
            _ => {}
        }
        out
    }

    /// A tool call the agent asks permission for: shown as it would be by `tool_call`, when it
    /// is not known yet (an agent may send it only inside the request).
    pub fn asked(&mut self, tool_call: &Value) -> Rendered {
        let mut out = Rendered::default();
        let id = text(&tool_call["toolCallId"]);
        if !self.calls.iter().any(|(i, _)| i == id) {
            self.call(tool_call, &mut out);
        }
        out
    }

    /// A line of luzia's own (a decision at a gate), on a line of its own.
    pub fn note(&mut self, line: &str) -> Rendered {
        let mut out = Rendered::default();
        self.end_line(&mut out);
        let _ = writeln!(out.text, "{line}");
        out
    }

    /// The end of the prompt's turn: the run's figures (`── success · 1.2s · 10 in / 5 out
    /// tokens`), said as Claude Code's are.
    pub fn finish(&mut self, usage: &Usage) -> Rendered {
        let mut out = Rendered::default();
        self.end_line(&mut out);
        self.stop_writing(&mut out);
        out.text.push_str(&summary(usage, None, 1));
        out.events.push(Event::Result(Box::new(usage.clone())));
        out.events.push(Event::Finished(Box::new(usage.clone())));
        out
    }

    fn chunk(&mut self, content: &Value, out: &mut Rendered) {
        let t = match text(&content["type"]) {
            "text" => text(&content["text"]).to_owned(),
            "" => return,
            other => format!("[{other}]"),
        };
        if t.is_empty() {
            return;
        }
        if !self.writing {
            self.writing = true;
            out.events.push(Event::Writing(true));
        }
        self.mid_line = !t.ends_with('\n');
        out.text.push_str(&t);
    }

    fn call(&mut self, call: &Value, out: &mut Rendered) {
        self.end_line(out);
        self.stop_writing(out);
        let id = text(&call["toolCallId"]).to_owned();
        let title = title(call);
        let kind = text(&call["kind"]);
        let mut line = String::from("▶");
        if !kind.is_empty() && kind != "other" {
            let _ = write!(line, " {}", one_line(kind));
        }
        let _ = writeln!(line, "  {title}");
        out.text.push_str(&line);
        if self.calls.len() >= CALLS_REMEMBERED {
            self.calls.pop_front();
        }
        self.calls.push_back((id.clone(), title.clone()));
        out.events.push(Event::ToolStarted { id, what: title });
        // An agent may give a call already ended.
        if matches!(text(&call["status"]), "completed" | "failed") {
            self.call_update(call, out);
        }
    }

    fn call_update(&mut self, update: &Value, out: &mut Rendered) {
        let id = text(&update["toolCallId"]);
        let status = text(&update["status"]);
        if !matches!(status, "completed" | "failed") {
            return;
        }
        let known = self
            .calls
            .iter()
            .position(|(i, _)| i == id)
            .and_then(|at| self.calls.remove(at))
            .map(|(_, t)| t);
        let title = match (known, title(update)) {
            (Some(t), _) => t,
            (None, t) => t,
        };
        self.end_line(out);
        let failed = status == "failed";
        let (mark, said) = if failed {
            ("✗", ": failed")
        } else {
            ("✓", "")
        };
        let _ = writeln!(out.text, "  {mark} {title}{said}");
        let content = content_text(&update["content"]);
        if !content.trim().is_empty() {
            out.text
                .push_str(&indent(&result_excerpt(&content, failed, None)));
        }
        out.events.push(Event::ToolEnded { id: id.to_owned() });
    }

    fn plan(&mut self, entries: &Value, out: &mut Rendered) {
        let entries = entries.as_array().map(Vec::as_slice).unwrap_or_default();
        if entries.is_empty() {
            return;
        }
        self.end_line(out);
        out.text.push_str("☰ plan\n");
        for e in entries {
            let mark = match text(&e["status"]) {
                "completed" => "☑",
                "in_progress" => "◐",
                _ => "☐",
            };
            let _ = writeln!(
                out.text,
                "  {mark} {}",
                ellipsize(&one_line(text(&e["content"])), SHOWN_COLUMNS)
            );
        }
    }

    /// Ends a message's last line before anything else is shown.
    fn end_line(&mut self, out: &mut Rendered) {
        if self.mid_line {
            out.text.push('\n');
            self.mid_line = false;
        }
    }

    fn stop_writing(&mut self, out: &mut Rendered) {
        if self.writing {
            self.writing = false;
            out.events.push(Event::Writing(false));
        }
    }
}

/// A call's title on one line, cut; its kind when it has none.
fn title(call: &Value) -> String {
    let t = one_line(text(&call["title"]));
    let t = if t.is_empty() {
        one_line(text(&call["kind"]))
    } else {
        t
    };
    ellipsize(&t, SHOWN_COLUMNS)
}

/// What a call's content says in text: its text blocks, a diff as the file it changes.
pub fn content_text(content: &Value) -> String {
    let mut out = Vec::new();
    for c in content.as_array().into_iter().flatten() {
        match text(&c["type"]) {
            "content" if c["content"]["type"] == "text" => {
                out.push(text(&c["content"]["text"]).to_owned());
            }
            "diff" => out.push(format!("edits {}", text(&c["path"]))),
            _ => {}
        }
    }
    out.join("\n")
}

/// Each line two spaces further in: a call's output under its line.
fn indent(lines: &str) -> String {
    lines.lines().map(|l| format!("  {l}\n")).collect()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The first line of `s`, with `…` when there was more.
fn one_line(s: &str) -> String {
    let s = s.trim();
    match s.split_once('\n') {
        Some((first, _)) => format!("{} …", first.trim_end()),
        None => s.to_owned(),
    }
}

/// A request's error, in words: `session/new: Authentication required (-32000)`.
pub fn refusal(method: &str, error: &Value) -> String {
    let message = error["message"].as_str().unwrap_or("an error");
    let mut said = format!("{method}: {message}");
    if let Some(code) = error["code"].as_i64() {
        said.push_str(&format!(" ({code})"));
    }
    if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
        let data = match data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        said.push_str(&format!(": {}", ellipsize(&data, 400)));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(updates: &[Value]) -> (String, Vec<Event>) {
        let mut r = Renderer::new();
        let mut text = String::new();
        let mut events = Vec::new();
        for u in updates {
            let out = r.update(u);
            text.push_str(&out.text);
            events.extend(out.events);
        }
        (text, events)
    }

    #[test]
    fn a_message_in_pieces_then_a_call_and_its_end_read_as_lines() {
        let (text, events) = render(&[
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "I will "}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "run it."}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "npm test", "kind": "execute", "status": "pending"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "ok 1\nok 2"}}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "rm -rf /\nand more", "kind": "execute"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "failed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "denied"}}]}),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "read", "status": "completed", "priority": "high"},
                {"content": "fix", "status": "in_progress", "priority": "high"},
                {"content": "test", "status": "pending", "priority": "low"}]}),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "x"}}),
        ]);
        assert_eq!(
            text,
            "I will run it.\n▶ execute  npm test\n  ✓ npm test\n    ok 1\n    ok 2\n\
             ▶ execute  rm -rf / …\n  ✗ rm -rf / …: failed\n    ✗ denied\n\
             ☰ plan\n  ☑ read\n  ◐ fix\n  ☐ test\n[image]"
        );
        assert_eq!(
            events,
            vec![
                Event::Writing(true),
                Event::Writing(false),
                Event::ToolStarted {
                    id: "c1".into(),
                    what: "npm test".into()
                },
                Event::ToolEnded { id: "c1".into() },
                Event::ToolStarted {
                    id: "c2".into(),
                    what: "rm -rf / …".into()
                },
                Event::ToolEnded { id: "c2".into() },
                Event::Writing(true),
            ]
        );
    }

    #[test]
    fn a_call_asked_about_is_shown_once_and_the_summary_closes_the_turn() {
        let mut r = Renderer::new();
        let call =
            json!({"toolCallId": "c1", "title": "echo hi", "kind": "execute", "status": "pending"});
        assert_eq!(r.asked(&call).text, "▶ execute  echo hi\n");
        let again = r.update(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}));
        assert_eq!(again.text, "  ✓ echo hi\n");
        let known = json!({"toolCallId": "c2", "title": "ls"});
        r.update(&json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "ls"}));
        assert_eq!(r.asked(&known).text, "", "already shown");
        let usage = Usage {
            outcome: "success".into(),
            input_tokens: Some(1200),
            output_tokens: Some(5),
            ..Usage::default()
        };
        r.update(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}));
        let end = r.finish(&usage);
        assert_eq!(end.text, "\n── success · 1,200 in / 5 out tokens\n");
        let begin = Renderer::begin(
            "Gemini CLI",
            &json!({"name": "gemini-cli", "version": "0.61.0"}),
            "s-1",
            true,
        );
        assert_eq!(
            begin.text,
            "── Gemini CLI session s-1 (continued) · gemini-cli 0.61.0\n"
        );
        assert_eq!(begin.events, vec![Event::Session { id: "s-1".into() }]);
    }
}
