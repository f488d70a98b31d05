//! The cockpit, in a real terminal (a private tmux server at 160x45), on a Claude Code job that
//! could not log in: its output is the real stream of Claude Code 2.1.332 run with no
//! credential, as the supervisor renders it. The table's alert column names
//! `claude-not-logged-in`, the output pane's last line says why, and the detail view gives the
//! fix, which points to `luzia doctor`.
//!
//! Without tmux this test prints a loud SKIPPED message and passes, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::time::Duration;

use chrono::Utc;
use luzia::jobs::run::stream::render::Renderer;

use tmux::{Cockpit, Opts, Sandbox};

const SLOW: Duration = Duration::from_secs(90);

#[test]
fn a_job_that_could_not_log_in_says_why_and_how_to_fix_it() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "200030-nokey";
    let fmt = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let finished = Utc::now() - chrono::Duration::minutes(2);
    sb.write(
        id,
        "meta.json",
        serde_json::json!({"id": id, "project": "musica", "task": "Say hi",
            "agent": "claude", "started": fmt(finished), "finished": fmt(finished)})
        .to_string(),
    );
    let mut r = Renderer::new();
    let log: String = include_str!("golden/claude/not-logged-in-2.1.332.jsonl")
        .lines()
        .map(|l| r.line(l.as_bytes()).text)
        .collect();
    sb.write(id, "output.log", format!("{log}\nexit:1\n"));

    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_for_up_to(SLOW, "claude-not-logged-in in the alert column", |s| {
        s.cell(id, "alert")
            .is_some_and(|a| a.contains("claude-not-logged-in"))
    });
    ck.wait_for("the reason in the output pane", |s| {
        s.output_title().contains(id) && s.contains("── failed: Not logged in · Please run /login")
    });
    ck.key("v");
    let s = ck.wait_for("the detail view with the issue and its fix", |s| {
        s.contains(&format!("{id} · detail"))
            && s.contains("claude-not-logged-in")
            && s.contains("Give Claude Code a credential")
    });
    let text = s.text().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("ANTHROPIC_API_KEY"), "{}", s.text());
    assert!(text.contains("luzia doctor"), "{}", s.text());
}
