//! The demo's Claude-style agent: what `claude -p --output-format stream-json --verbose` prints,
//! line for line in the shapes Claude Code 2.1 uses (`system/init`, one `assistant` line per
//! content block, `user` tool results, a closing `result` with the usage and the cost), at a
//! human pace, without the real CLI. One call asks for a permission the way luzia's permission
//! bridge turns a request into an approval gate (`Bash: rm -rf build`, the tool input as
//! context), and waits for a person's decision; a denial reaches the "model" word for word as an
//! error tool result, as it would reach Claude.

use std::io::Write;
use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};

use crate::jobs::hitl::agent::{self, GateResult, GateSpec};
use crate::jobs::hitl::published::new_token;
use crate::jobs::model::session::Usage;

/// The model the demo's session claims to run on.
pub const MODEL: &str = "claude-sonnet-4-5";
/// What one million tokens of each kind cost on that model, in US dollars: input, output,
/// cache read, cache write.
const PRICES: [f64; 4] = [3.0, 15.0, 0.30, 3.75];

/// A permission request as an approval gate of the job in `dir`, waited on until a person
/// decides it (in the inbox, or with `luzia approve/deny`).
pub fn gate_in(dir: &Path) -> impl FnMut(&GateSpec) -> Result<Option<String>> + '_ {
    move |spec| {
        Ok(match agent::gate(dir, spec)? {
            GateResult::Decided(d) | GateResult::AutoApproved(d) if d.approved => None,
            GateResult::Decided(d) | GateResult::AutoApproved(d) => Some(d.reason),
        })
    }
}

/// Tokens the session has used so far, by kind (as `PRICES`).
#[derive(Default)]
struct Tokens([u64; 4]);

impl Tokens {
    fn cost(&self) -> f64 {
        self.0
            .iter()
            .zip(PRICES)
            .map(|(n, per_million)| *n as f64 * per_million / 1e6)
            .sum()
    }
}

/// One session's stream, written line by line to `out`; `decide` decides its permission
/// requests (`None` allows, `Some(reason)` denies).
pub struct Stream<W: Write, D: FnMut(&GateSpec) -> Result<Option<String>>> {
    out: W,
    /// How long the pauses last: 1.0 is a person's pace, 0.0 none at all (tests).
    pace: f64,
    session_id: String,
    cwd: String,
    decide: D,
    turns: u64,
    calls: u64,
    tokens: Tokens,
    denials: Vec<Value>,
    started: Instant,
}

/// A random session id in the form Claude Code uses (a version 4 UUID).
pub fn session_id() -> String {
    let hex = new_token();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

impl<W: Write, D: FnMut(&GateSpec) -> Result<Option<String>>> Stream<W, D> {
    pub fn new(out: W, pace: f64, session_id: String, cwd: String, decide: D) -> Self {
        Stream {
            out,
            pace,
            session_id,
            cwd,
            decide,
            turns: 0,
            calls: 0,
            tokens: Tokens::default(),
            denials: Vec::new(),
            started: Instant::now(),
        }
    }

    fn pause(&self, ms: u64) {
        if self.pace > 0.0 {
            sleep(Duration::from_millis((ms as f64 * self.pace) as u64));
        }
    }

    fn line(&mut self, v: Value) -> Result<()> {
        writeln!(self.out, "{v}")?;
        self.out.flush()?;
        Ok(())
    }

    fn uuid(&self) -> String {
        session_id()
    }

    fn init(&mut self) -> Result<()> {
        let v = json!({
            "type": "system", "subtype": "init", "cwd": self.cwd, "session_id": self.session_id,
            "tools": ["Task", "Bash", "Edit", "Glob", "Grep", "Read", "WebFetch", "Write"],
            "mcp_servers": [], "model": MODEL, "permissionMode": "acceptEdits",
            "slash_commands": [], "apiKeySource": "ANTHROPIC_API_KEY",
            "claude_code_version": "2.1.197", "output_style": "default", "agents": [],
            "skills": [], "plugins": [], "uuid": self.uuid(),
        });
        self.line(v)
    }

    /// One answer of the model: its text, then the tool it calls, each a line of its own under
    /// one message id; returns the call's id.
    fn reply(&mut self, text: Option<&str>, tool: Option<(&str, Value)>) -> Result<Option<String>> {
        self.pause(2000);
        self.turns += 1;
        let usage = [
            1_500 + 900 * self.turns,
            40 + text.map_or(0, |t| t.len() as u64 / 3) + tool.as_ref().map_or(0, |_| 60),
            12_000 * (self.turns - 1),
            if self.turns == 1 { 3_000 } else { 600 },
        ];
        for (sum, n) in self.tokens.0.iter_mut().zip(usage) {
            *sum += n;
        }
        let message_id = format!("msg_{}", &new_token()[..24]);
        let mut blocks = Vec::new();
        if let Some(t) = text {
            blocks.push(json!({"type": "text", "text": t}));
        }
        let mut id = None;
        if let Some((name, input)) = tool {
            self.calls += 1;
            let call = format!("toolu_{:024}", self.calls);
            blocks.push(json!({"type": "tool_use", "id": call, "name": name, "input": input}));
            id = Some(call);
        }
        for block in blocks {
            let v = json!({
                "type": "assistant",
                "message": {
                    "id": message_id, "type": "message", "role": "assistant", "model": MODEL,
                    "content": [block], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                              "cache_read_input_tokens": usage[2],
                              "cache_creation_input_tokens": usage[3]},
                },
                "parent_tool_use_id": null, "session_id": self.session_id, "uuid": self.uuid(),
            });
            self.line(v)?;
        }
        Ok(id)
    }

    /// What the tool gave back: `content` for the model, `result` as Claude Code records it.
    /// `is_error` is left out where Claude Code leaves it out (a Read's or an Edit's success).
    fn tool_result(
        &mut self,
        id: &str,
        content: &str,
        is_error: Option<bool>,
        result: Value,
    ) -> Result<()> {
        let mut block = json!({"tool_use_id": id, "type": "tool_result", "content": content});
        if let Some(e) = is_error {
            block["is_error"] = json!(e);
        }
        let v = json!({
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": null, "session_id": self.session_id, "uuid": self.uuid(),
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "tool_use_result": result,
        });
        self.line(v)
    }

    /// A Bash call that ran for `ms` and printed `output` (failing with `code` when not 0).
    fn bash(&mut self, id: &str, ms: u64, output: &str, code: i32) -> Result<()> {
        self.pause(ms);
        if code == 0 {
            let result = json!({"stdout": output, "stderr": "", "interrupted": false,
                                "isImage": false, "noOutputExpected": output.is_empty()});
            self.tool_result(id, output, Some(false), result)
        } else {
            let content = format!("Exit code {code}\n{output}");
            self.tool_result(id, &content, Some(true), json!(format!("Error: {content}")))
        }
    }

    /// The permission request for a call, as the bridge makes it: allowed, or denied with the
    /// operator's reason given to the model as the call's error result.
    fn permission(&mut self, id: &str, tool: &str, what: &str, input: &Value) -> Result<bool> {
        let spec = GateSpec {
            gate: format!("{tool}: {what}"),
            description: input["description"]
                .as_str()
                .map_or_else(|| format!("Claude wants to use {tool}"), str::to_owned),
            context: serde_json::to_string_pretty(input)?,
            auto_approve_after: None,
            allow_session: None,
        };
        let Some(reason) = (self.decide)(&spec)? else {
            return Ok(true);
        };
        self.denials
            .push(json!({"tool_name": tool, "tool_use_id": id, "tool_input": input}));
        self.tool_result(id, &reason, Some(true), json!(format!("Error: {reason}")))?;
        Ok(false)
    }

    /// The figures of the session so far, as meta.json's `usage` records them.
    pub fn usage(&self) -> Usage {
        let [input, output, cache_read, cache_write] = self.tokens.0;
        Usage {
            model: MODEL.into(),
            turns: Some(self.turns),
            duration_ms: Some(self.started.elapsed().as_millis() as u64),
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_read_tokens: Some(cache_read),
            cache_creation_tokens: Some(cache_write),
            cost_usd: Some(self.tokens.cost()),
            outcome: "success".into(),
            error: String::new(),
            resets_at: None,
        }
    }

    /// The stream written so far (for a test, or a finished job's record).
    pub fn into_output(self) -> W {
        self.out
    }

    fn result(&mut self, text: &str) -> Result<()> {
        let [input, output, cache_read, cache_write] = self.tokens.0;
        let cost = self.tokens.cost();
        let duration_ms = self.started.elapsed().as_millis() as u64;
        let v = json!({
            "type": "result", "subtype": "success", "is_error": false, "api_error_status": null,
            "duration_ms": duration_ms, "duration_api_ms": duration_ms / 3,
            "num_turns": self.turns, "result": text, "stop_reason": "end_turn",
            "session_id": self.session_id, "total_cost_usd": cost,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read, "output_tokens": output,
                      "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                      "service_tier": "standard"},
            "modelUsage": {MODEL: {"inputTokens": input, "outputTokens": output,
                                   "cacheReadInputTokens": cache_read,
                                   "cacheCreationInputTokens": cache_write,
                                   "webSearchRequests": 0, "costUSD": cost,
                                   "contextWindow": 200_000, "maxOutputTokens": 64_000}},
            "permission_denials": self.denials, "terminal_reason": "completed",
            "uuid": self.uuid(),
        });
        self.line(v)
    }
}

const TESTS_FAIL: &str = "\n> musica@2.3.0 test\n> jest\n\nFAIL src/playlist.test.js\n  \
    ● shuffle › keeps every track\n\n    expect(received).toHaveLength(expected)\n\n    \
    Expected length: 12\n    Received length: 11\n\nTests:       1 failed, 41 passed, 42 total";
const TESTS_PASS: &str = "\n> musica@2.3.0 test\n> jest\n\nPASS src/playlist.test.js\n\
    PASS src/library.test.js\n\nTests:       42 passed, 42 total\nTime:        6.1 s";
/// The file the session reads, and how the Read tool numbers its lines for the model.
const SOURCE: &str = "export function shuffle(tracks) {\n  const out = tracks.slice(0, \
    tracks.length - 1);\n  for (let i = out.length - 1; i > 0; i--) {\n    \
    const j = Math.floor(Math.random() * (i + 1));\n    [out[i], out[j]] = [out[j], \
    out[i]];\n  }\n  return out;\n}\n";

fn numbered(text: &str) -> String {
    let lines: Vec<String> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| format!("{}\t{l}", i + 1))
        .collect();
    lines.join("\n")
}

/// The whole session: a failing test found, read, fixed, a stale build removed (if the operator
/// allows it), the tests run again, and the summary. Returns the agent's exit code.
pub fn session<W: Write, D>(s: &mut Stream<W, D>) -> Result<u8>
where
    D: FnMut(&GateSpec) -> Result<Option<String>>,
{
    s.init()?;
    let npm = |description: &str| json!({"command": "npm test", "description": description});
    let text = "I'll run the test suite first to see what fails.";
    if let Some(id) = s.reply(Some(text), Some(("Bash", npm("Run the test suite"))))? {
        s.bash(&id, 7000, TESTS_FAIL, 1)?;
    }
    let file = format!("{}/src/playlist.js", s.cwd);
    let text = "One test fails: `shuffle` loses a track. Let me read it.";
    if let Some(id) = s.reply(Some(text), Some(("Read", json!({"file_path": file}))))? {
        s.pause(600);
        let lines = SOURCE.split('\n').count();
        let record = json!({"type": "text", "file": {"filePath": file, "content": SOURCE,
                            "numLines": lines, "startLine": 1, "totalLines": lines}});
        s.tool_result(&id, &numbered(SOURCE), None, record)?;
    }
    let (old, new) = ("tracks.slice(0, tracks.length - 1)", "tracks.slice()");
    let edit =
        json!({"file_path": file, "old_string": old, "new_string": new, "replace_all": false});
    let text = "The copy drops the last track before shuffling. Fixing the slice.";
    if let Some(id) = s.reply(Some(text), Some(("Edit", edit)))? {
        s.pause(500);
        let said = format!(
            "The file {file} has been updated successfully. (file state is current in your \
             context — no need to Read it back)"
        );
        let patch = json!([{"oldStart": 2, "oldLines": 1, "newStart": 2, "newLines": 1,
            "lines": [format!("-  const out = {old};"), format!("+  const out = {new};")]}]);
        let record = json!({"filePath": file, "oldString": old, "newString": new,
                            "originalFile": SOURCE, "structuredPatch": patch,
                            "userModified": false, "replaceAll": false});
        s.tool_result(&id, &said, None, record)?;
    }
    let rm = json!({"command": "rm -rf build", "description": "Remove the stale build directory"});
    let text =
        "A stale build/ could hide the fix from the integration tests; I'll remove it first.";
    if let Some(id) = s.reply(Some(text), Some(("Bash", rm.clone())))? {
        if s.permission(&id, "Bash", "rm -rf build", &rm)? {
            s.bash(&id, 300, "", 0)?;
        } else {
            s.reply(
                Some("Understood: I'll leave build/ alone and test as it is."),
                None,
            )?;
        }
    }
    if let Some(id) = s.reply(None, Some(("Bash", npm("Run the test suite again"))))? {
        s.bash(&id, 6000, TESTS_PASS, 0)?;
    }
    let summary = "Fixed: `shuffle` copied all but the last track (`slice(0, length - 1)`), so \
                   every shuffle lost one. It now copies the whole list; all 42 tests pass.";
    s.reply(Some(summary), None)?;
    s.result(summary)?;
    Ok(0)
}

/// `luzia demo-agent` with the Claude scenario: the session on stdout, its permission request
/// a gate of the job in `dir`.
pub fn run(dir: &Path, session_id: String) -> Result<u8> {
    let cwd = std::env::current_dir().map_or_else(|_| ".".into(), |d| d.display().to_string());
    let mut stream = Stream::new(std::io::stdout(), 1.0, session_id, cwd, gate_in(dir));
    session(&mut stream)
}

#[cfg(test)]
mod tests;
