//! Aider. It reaches providers through LiteLLM, each with its own key (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, ...; `OPENAI_API_BASE` for an OpenAI-compatible endpoint), and reads
//! its own options from `AIDER_*`. It keeps no login of its own.

use super::{Needs, Profile, Var};
use crate::jobs::model::session::Usage;
use crate::jobs::text::sanitize::sanitize_line;

pub const PROFILE: Profile = Profile {
    short: "aider",
    name: "Aider",
    programs: &["aider"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("AIDER_*"),
            Var::always("OPENAI_API_KEY"),
            Var::always("OPENAI_API_BASE"),
            Var::always("OPENAI_BASE_URL"),
            Var::always("ANTHROPIC_API_KEY"),
            Var::always("GEMINI_API_KEY"),
            Var::always("OPENROUTER_API_KEY"),
            Var::always("DEEPSEEK_API_KEY"),
        ],
        credentials: &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
        ],
    },
    install: "install Aider (python -m pip install aider-chat), or name its full path in [agent] command",
    login_help: "export the key of the provider it uses (OPENAI_API_KEY with OPENAI_API_BASE, ANTHROPIC_API_KEY, ...) in the shell that starts luzia; then `luzia doctor` again",
    login_file: super::no_login_file,
    acp: None,
};

/// Aider's figures, read from what it prints: after each message to the model, one report,
///
/// ```text
/// Tokens: 2.4k sent, 1.0k cache write, 3k cache hit, 87 received. Cost: $0.0060 message, $0.0120 session.
/// ```
///
/// the cache figures only when there are some, the cost only when Aider knows the model's
/// price (on the next line when both cache figures are there), and the whole cut at the
/// terminal's width. A report counts what was sent and received for one message, so the
/// run's tokens add them up; its cost is the session's so far, so the last one is the run's.
/// Aider rounds counts from a thousand up (`2.4k`, `12k`): so are they here.
#[derive(Debug, Default)]
pub struct Reports {
    usage: Usage,
    reports: u64,
    /// A report whose end may be on the next line, and how many lines it has taken so far.
    open: Option<(String, u8)>,
}

/// How many lines a report is read over at most (the terminal cuts a long one in two; the
/// cost may come on a line of its own).
const REPORT_LINES: u8 = 3;

impl Reports {
    /// Takes the next line of the agent's output (without its newline).
    pub fn line(&mut self, line: &[u8]) {
        let text = sanitize_line(line).plain();
        let text = text.trim();
        if let Some((open, lines)) = self.open.take() {
            let ended = open.ends_with("session.")
                || (open.ends_with("received.") && !text.starts_with("Cost:"))
                || lines >= REPORT_LINES;
            if !ended {
                self.open = Some((format!("{open} {text}"), lines + 1));
                return;
            }
            self.read(&open);
        }
        if text.starts_with("Tokens: ") {
            self.open = Some((text.to_owned(), 1));
        } else if self.usage.model.is_empty()
            && let Some(model) = text
                .strip_prefix("Main model: ")
                .or_else(|| text.strip_prefix("Model: "))
        {
            // `Main model: openai/gpt-4o with diff edit format, ...`
            self.usage.model = model.split(" with ").next().unwrap_or_default().to_owned();
        }
    }

    /// The run's figures, once its output has ended; `None` when Aider printed no report.
    pub fn finish(mut self) -> Option<Usage> {
        if let Some((open, _)) = self.open.take() {
            self.read(&open);
        }
        (self.reports > 0).then_some(Usage {
            turns: Some(self.reports),
            ..self.usage
        })
    }

    fn read(&mut self, report: &str) {
        let Some(tokens) = report
            .strip_prefix("Tokens: ")
            .and_then(|r| r.find(" received.").map(|at| &r[..at + " received".len()]))
        else {
            return;
        };
        let u = &mut self.usage;
        for part in tokens.split(',') {
            let part = part.trim();
            let (count, what) = part.split_once(' ').unwrap_or((part, ""));
            let Some(n) = count_of(count) else {
                continue;
            };
            let field = match what.trim() {
                "sent" => &mut u.input_tokens,
                "received" => &mut u.output_tokens,
                "cache write" => &mut u.cache_creation_tokens,
                "cache hit" => &mut u.cache_read_tokens,
                _ => continue,
            };
            *field = Some(field.unwrap_or(0) + n);
        }
        if let Some(session) = report
            .split_once("Cost: ")
            .and_then(|(_, cost)| cost.split_once("message,"))
            .and_then(|(_, session)| session.trim().strip_prefix('$'))
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse::<f64>().ok())
        {
            u.cost_usd = Some(session);
        }
        self.reports += 1;
    }
}

/// `87`, `2.4k`, `12k` as a count.
fn count_of(text: &str) -> Option<u64> {
    match text.strip_suffix('k') {
        Some(thousands) => {
            let n: f64 = thousands.parse().ok()?;
            (n.is_finite() && n >= 0.0).then(|| (n * 1000.0).round() as u64)
        }
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests;
