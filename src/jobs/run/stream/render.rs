//! One line of Claude Code's stream-json in, readable text out: what `tail -f output.log`, the
//! output pane and the known-issue scanner see instead of JSON. A pure function of the line and
//! a little memory (the session's model, which tool each call id is), so every shape the CLI
//! prints is a table row in the tests.
//!
//! What a person reads, in order: the session's first line; the model's text as it wrote it;
//! each tool call on one line (`▶ Bash  npm test  — Run the tests`); the first lines of its
//! result, indented, an error marked `✗`; a retry of the API; and a closing summary (outcome,
//! turns, time, tokens, cost), which begins with Claude Code's error when the run failed (a
//! longer error has its lines first), so that a person reads why and the known-issue patterns
//! match it.

use std::collections::VecDeque;
use std::fmt::Write as _;

use serde_json::Value;

use crate::jobs::model::session::Usage;
use crate::jobs::text::sanitize::ellipsize;

pub mod figures;
mod system;

use figures::summary;
#[cfg(test)]
use figures::thousands;
pub use figures::{RunFigures, usage_of};

/// Lines of a tool result shown; the rest is counted.
pub const RESULT_LINES: usize = 4;
/// Lines shown from the end of a failed tool result too: where compilers and test runners say
/// what went wrong.
pub const ERROR_TAIL_LINES: usize = 4;
/// Columns of one shown line of a result, or of a tool call's argument.
pub const SHOWN_COLUMNS: usize = 200;
/// Tool calls remembered at once: calls run a few at a time, and a result whose call was
/// forgotten is still shown, only without its tool's name.
const TOOLS_REMEMBERED: usize = 64;

/// What a line means beyond its text: the supervisor records these in the job directory.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The session began (`system/init`).
    Session { id: String },
    /// A tool call started: its id, and one line for a person (`Bash: npm test`).
    ToolStarted { id: String, what: String },
    /// A tool call's result arrived.
    ToolEnded { id: String },
    /// The model began (`true`) or finished (`false`) writing a message; only with
    /// `--include-partial-messages`.
    Writing(bool),
    /// A result, with its own figures (since the previous result), just before the
    /// [`Event::Finished`] of the same line.
    Result(Box<Usage>),
    /// A result: the run's figures so far (its results added up, see [`RunFigures`]).
    Finished(Box<Usage>),
    /// The background tasks the session waits for now (`system/background_tasks_changed`):
    /// their descriptions, none when the last has ended.
    Background(Vec<String>),
}

/// The rendering of one line.
#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    /// Text for output.log: whole lines, each ending in `\n` (empty for a line with nothing to
    /// show).
    pub text: String,
    pub events: Vec<Event>,
    /// Whether the line belongs in stream.jsonl (partial-message deltas do not: see
    /// [`Renderer::line`]).
    pub keep: bool,
}

/// The memory a rendering needs across lines.
#[derive(Debug, Default)]
pub struct Renderer {
    model: String,
    /// Call id -> tool name, oldest first, at most [`TOOLS_REMEMBERED`].
    tools: VecDeque<(String, String)>,
    /// The run's figures over its results so far.
    figures: RunFigures,
    /// When the usage limit that refused a request resets, to the second, as the stream said
    /// it before the result that ends the run on it (which says it to the minute).
    limit_reset: Option<chrono::DateTime<chrono::Utc>>,
}

impl Renderer {
    pub fn new() -> Renderer {
        Renderer::default()
    }

    /// Renders one line (without its newline). A line that is not JSON is shown as it is (the
    /// CLI printing a warning on stdout); JSON of a kind not known here shows one line naming it
    /// (never the JSON), and the kinds that say nothing to a person none (`system`).
    ///
    /// `stream_event` lines (`--include-partial-messages`) are not kept in stream.jsonl and
    /// show nothing: each is a delta of a message whose `assistant` line follows whole, so
    /// keeping them would store every word the model writes twice over, for no reader. They
    /// still say that the model is writing (its first and last event), which is activity.
    pub fn line(&mut self, line: &[u8]) -> Rendered {
        let mut out = Rendered {
            keep: true,
            ..Rendered::default()
        };
        let value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(_) => {
                out.text = String::from_utf8_lossy(line).into_owned();
                out.text.push('\n');
                return out;
            }
        };
        match value["type"].as_str().unwrap_or_default() {
            "system" => self.system(&value, &mut out),
            "assistant" => self.assistant(&value, &mut out),
            "user" => self.user(&value, &mut out),
            "result" => self.result(&value, &mut out),
            "rate_limit_event" => out.text = self.rate_limit(&value["rate_limit_info"]),
            "stream_event" => {
                out.keep = false;
                match value["event"]["type"].as_str() {
                    Some("message_start") => out.events.push(Event::Writing(true)),
                    Some("message_stop") => out.events.push(Event::Writing(false)),
                    _ => {}
                }
            }
            other => out.text = system::other_type(other),
        }
        out
    }

    fn system(&mut self, v: &Value, out: &mut Rendered) {
        match v["subtype"].as_str().unwrap_or_default() {
            "init" => {
                let id = text(&v["session_id"]);
                self.model = text(&v["model"]).to_owned();
                let mut line = format!("── Claude Code session {id}");
                for part in [&self.model, text(&v["claude_code_version"])] {
                    if !part.is_empty() {
                        let _ = write!(line, " · {part}");
                    }
                }
                out.text = line + "\n";
                if !id.is_empty() {
                    out.events.push(Event::Session { id: id.to_owned() });
                }
            }
            // A foreground command's task ends with its call, whose result says it.
            "task_notification"
                if self
                    .tools
                    .iter()
                    .any(|(id, _)| id == text(&v["tool_use_id"])) => {}
            _ => system::line(v, out),
        }
    }

    fn assistant(&mut self, v: &Value, out: &mut Rendered) {
        // Claude Code's own error, dressed as a message of a model called "<synthetic>": the
        // result line says it again, and it is shown there once. A usage limit's refusal
        // (2.1.3xx says it here rather than in a `rate_limit_event`) shows its reset.
        if v["message"]["model"] == "<synthetic>" {
            out.text = self.rate_limit(&v["api_error_params"]["rate_limit_info"]);
            return;
        }
        for block in blocks(&v["message"]["content"]) {
            match block["type"].as_str().unwrap_or_default() {
                "text" => {
                    let t = text(&block["text"]);
                    if !t.trim().is_empty() {
                        out.text.push_str(t.trim_end_matches('\n'));
                        out.text.push('\n');
                    }
                }
                "tool_use" => self.tool_use(block, out),
                _ => {}
            }
        }
    }

    fn tool_use(&mut self, block: &Value, out: &mut Rendered) {
        let name = text(&block["name"]);
        let id = text(&block["id"]);
        let input = &block["input"];
        let arg = main_argument(name, input).map(|a| ellipsize(&one_line(a), SHOWN_COLUMNS));
        let mut line = format!("▶ {name}");
        if let Some(a) = &arg {
            let _ = write!(line, "  {a}");
        }
        let description = text(&input["description"]);
        if !description.is_empty() && Some(description) != main_argument(name, input) {
            let _ = write!(
                line,
                "  — {}",
                ellipsize(&one_line(description), SHOWN_COLUMNS)
            );
        }
        out.text.push_str(&line);
        out.text.push('\n');
        if self.tools.len() >= TOOLS_REMEMBERED {
            self.tools.pop_front();
        }
        self.tools.push_back((id.to_owned(), name.to_owned()));
        let what = match arg {
            Some(a) => format!("{name}: {a}"),
            None => name.to_owned(),
        };
        out.events.push(Event::ToolStarted {
            id: id.to_owned(),
            what,
        });
    }

    fn user(&mut self, v: &Value, out: &mut Rendered) {
        for block in blocks(&v["message"]["content"]) {
            if block["type"] != "tool_result" {
                continue;
            }
            let id = text(&block["tool_use_id"]);
            let name = self
                .tools
                .iter()
                .position(|(i, _)| i == id)
                .and_then(|at| self.tools.remove(at))
                .map(|(_, name)| name);
            let failed = block["is_error"].as_bool().unwrap_or(false);
            out.text.push_str(&result_excerpt(
                &result_text(&block["content"]),
                failed,
                name,
            ));
            out.events.push(Event::ToolEnded { id: id.to_owned() });
        }
    }

    /// A subscription's limit: shown when it refuses work, its reset kept for the result.
    fn rate_limit(&mut self, info: &Value) -> String {
        if info["status"] == "rejected" {
            let at = info["resetsAt"].as_i64();
            self.limit_reset = at.and_then(|s| chrono::DateTime::from_timestamp(s, 0));
        }
        rate_limit(info)
    }

    fn result(&mut self, v: &Value, out: &mut Rendered) {
        let (mut usage, index, mut run) = self.figures.add(v, &self.model);
        // A run the limit ended: its reset to the second, which the words give to the minute.
        if let Some(at) = self.limit_reset.take()
            && !usage.error.is_empty()
        {
            usage.resets_at = usage.resets_at.or(Some(at));
            run.resets_at = run.resets_at.or(Some(at));
        }
        // An error of one line is said by the summary itself; a longer one gets its lines
        // first, and the summary its first line.
        let lines: Vec<&str> = usage
            .error
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        if lines.len() > 1 {
            for l in lines {
                let _ = writeln!(out.text, "✗ {l}");
            }
        }
        out.text
            .push_str(&summary(&usage, v["api_error_status"].as_u64(), index));
        out.events.push(Event::Result(Box::new(usage)));
        out.events.push(Event::Finished(Box::new(run)));
    }
}

/// The argument that says what a call of a known tool does; for another tool, the first of
/// the usual names its input has.
fn main_argument<'a>(tool: &str, input: &'a Value) -> Option<&'a str> {
    let keys: &[&str] = match tool {
        "Bash" => &["command"],
        "Read" | "Write" | "Edit" | "MultiEdit" => &["file_path"],
        "NotebookEdit" => &["notebook_path"],
        "Grep" | "Glob" => &["pattern"],
        "WebFetch" => &["url"],
        "WebSearch" => &["query"],
        "Task" | "Agent" => &["description"],
        "TodoWrite" => &[],
        "BashOutput" | "KillShell" | "KillBash" => &["bash_id", "shell_id"],
        _ => &[
            "command",
            "file_path",
            "path",
            "pattern",
            "url",
            "query",
            "description",
        ],
    };
    keys.iter()
        .filter_map(|k| input[*k].as_str())
        .find(|s| !s.trim().is_empty())
}

/// A subscription's limit refusing work, with the reset time the CLI's own message gives only
/// as an hour: `  ↯ five_hour limit: rejected until 2026-11-23 17:00 UTC`. Other states
/// (allowed, a warning) show nothing: the CLI says them itself when they matter.
fn rate_limit(info: &Value) -> String {
    if info["status"] != "rejected" {
        return String::new();
    }
    let kind = one_line(text(&info["rateLimitType"]));
    let until = info["resetsAt"]
        .as_i64()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or(String::new(), |at| {
            format!(" until {}", at.format("%Y-%m-%d %H:%M UTC"))
        });
    format!(
        "  ↯ {} limit: rejected{until}\n",
        ellipsize(&kind, SHOWN_COLUMNS)
    )
}

/// The lines shown of a tool result: the first few, indented; a failed one marked, with its
/// last lines too.
pub(crate) fn result_excerpt(content: &str, failed: bool, tool: Option<String>) -> String {
    let lines: Vec<&str> = content.trim_end().lines().collect();
    let mut out = String::new();
    let mark = if failed { "✗ " } else { "" };
    if lines.is_empty() || lines.iter().all(|l| l.trim().is_empty()) {
        let what = tool.map_or(String::new(), |t| format!("{t}: "));
        let _ = writeln!(out, "  {mark}{what}(no output)");
        return out;
    }
    let head = RESULT_LINES.min(lines.len());
    let tail = if failed {
        ERROR_TAIL_LINES.min(lines.len() - head)
    } else {
        0
    };
    for (i, l) in lines[..head].iter().enumerate() {
        let mark = if i == 0 { mark } else { "" };
        let _ = writeln!(out, "  {mark}{}", ellipsize(l, SHOWN_COLUMNS));
    }
    let hidden = lines.len() - head - tail;
    if hidden > 0 {
        let _ = writeln!(
            out,
            "  … {hidden} more line{}",
            if hidden == 1 { "" } else { "s" }
        );
    }
    for l in &lines[lines.len() - tail..] {
        let _ = writeln!(out, "  {}", ellipsize(l, SHOWN_COLUMNS));
    }
    out
}

/// A tool result's content: a string, or text parts (an image is named, not shown).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["type"].as_str() {
                Some("text") => text(&p["text"]).to_owned(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn blocks(content: &Value) -> impl Iterator<Item = &Value> {
    content.as_array().into_iter().flatten()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn number_or(v: &Value, default: &str) -> String {
    v.as_u64().map_or(default.to_owned(), |n| n.to_string())
}

/// The first line of `s`, with `…` when there was more.
fn one_line(s: &str) -> String {
    let s = s.trim();
    match s.split_once('\n') {
        Some((first, _)) => format!("{} …", first.trim_end()),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod limit_tests;
#[cfg(test)]
mod tests;
