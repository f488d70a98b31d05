//! End-to-end, in a real terminal (tmux): what a Claude Code run recorded is on screen. The
//! detail view of a job whose meta.json has `usage` shows its model, turns, tokens, cost and
//! session; the table shows the cost in its COST column, and what a running agent is doing now
//! (`activity.json`) where the progress would be, following the file as it changes.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use tmux::{Cockpit, DemoRun, Opts, Sandbox};

/// How long a demo agent may take to reach its gate (it works at a person's pace, on a machine
/// that may be loaded).
const SLOW: Duration = Duration::from_secs(90);
/// The demo's Claude-style task and its finished Claude session (see `src/demo.rs`).
const DEMO_CLAUDE: &str = "Claude Code: fix the failing playlist test (asks before rm -rf build)";
const DEMO_FINISHED_CLAUDE: &str = "091500-clde";

const DONE: &str = "100000-clde";
const BUSY: &str = "110000-busy";
const SESSION: &str = "5f0c6a1e-9d7b-4c1a-8f3e-2b6d0a9c7e41";

/// A finished Claude job with the figures of its run, and a running agent with a call in flight
/// since `secs_ago`.
fn claude_jobs(sb: &Sandbox, secs_ago: i64) {
    let meta = serde_json::json!({
        "id": DONE, "project": "musica", "task": "Fix the playlist shuffle",
        "started": "2026-01-09T10:00:00Z", "finished": "2026-01-09T10:04:12Z",
        "session_id": SESSION,
        "usage": {"model": "claude-sonnet-4-5", "turns": 7, "duration_ms": 252000,
                  "input_tokens": 1234, "output_tokens": 5678, "cache_read_tokens": 90000,
                  "cache_creation_tokens": 2000, "cost_usd": 0.4213, "outcome": "success"},
    });
    sb.write(DONE, "meta.json", meta.to_string());
    sb.write(DONE, "output.log", "Fixed.\n\nexit:0\n");
    sb.running_job(BUSY, "librec", "Run the importer tests", None);
    sb.write(BUSY, "output.log", "working\n");
    activity(sb, "Bash: npm test", secs_ago);
}

fn activity(sb: &Sandbox, what: &str, secs_ago: i64) {
    let since = chrono::Utc::now() - chrono::Duration::seconds(secs_ago);
    let body = serde_json::json!({"what": what, "since": since.to_rfc3339()});
    sb.write(BUSY, "activity.json", body.to_string());
}

#[test]
fn the_detail_view_shows_the_figures_and_the_table_the_cost_and_the_activity() {
    require_tmux!();
    let sb = Sandbox::new();
    claude_jobs(&sb, 190);
    let ck = Cockpit::start(&sb, Opts::default());
    let s = ck.wait_for("the activity and the cost in the table", |s| {
        s.job_row(BUSY)
            .is_some_and(|r| r.contains("Bash: npm test 3m"))
            && s.job_row(DONE).is_some_and(|r| r.contains("$0.42"))
    });
    assert!(
        s.table_box()
            .is_some_and(|b| s.inner(b)[0].contains("COST")),
        "{}",
        s.text()
    );

    // The running job is first (by status): move to the finished one, then open its detail.
    ck.key("Down");
    ck.wait_for("the finished job selected", |s| {
        s.output_title().contains(DONE)
    });
    ck.key("Enter");
    let s = ck.wait_for("the detail view with the figures", |s| {
        s.contains(&format!("{DONE} · detail")) && s.contains("cost       $0.42")
    });
    for fact in [
        format!("session    {SESSION}"),
        "model      claude-sonnet-4-5".into(),
        "turns      7 in 4m12s".into(),
        "tokens     1.2k in · 5.7k out · 90.0k cache read · 2.0k cache write".into(),
    ] {
        assert!(s.contains(&fact), "no {fact:?} in:\n{}", s.text());
    }
    ck.esc();
    ck.wait_for("back to the table", |s| s.table_box().is_some());

    // What the agent does now follows activity.json: a new call, then nothing in flight.
    activity(&sb, "Read: src/importer.py", 5);
    ck.wait_row(BUSY, "the new call", |r| {
        r.contains("Read: src/importer.py")
    });
    fs::remove_file(sb.job_dir(BUSY).join("activity.json")).unwrap();
    ck.wait_row(BUSY, "no call in flight", |r| {
        !r.contains("Read:") && !r.contains("Bash:")
    });
}

/// At 80 columns there is no room for the cost: the task keeps its column, and the activity is
/// cut to the progress column with its time kept.
#[test]
fn at_80_columns_the_task_keeps_its_column() {
    require_tmux!();
    let sb = Sandbox::new();
    claude_jobs(&sb, 190);
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let s = ck.wait_for("the activity, cut", |s| {
        s.job_row(BUSY).is_some_and(|r| r.contains("Bash: n… 3m"))
    });
    let head = s.inner(s.table_box().unwrap())[0].clone();
    assert!(
        head.contains("TASK") && !head.contains("COST"),
        "{}",
        s.text()
    );
    assert!(
        s.job_row(DONE).is_some_and(|r| r.contains("Fix the")),
        "{}",
        s.text()
    );
}

/// The stream-json tool results in the job's stream (`stream.jsonl` when the supervisor keeps
/// one, else output.log): `(content, is_error)`.
fn tool_results(dir: &Path) -> Vec<(String, bool)> {
    let stream = dir.join("stream.jsonl");
    let file = if stream.exists() {
        stream
    } else {
        dir.join("output.log")
    };
    let text = fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "user")
        .flat_map(|v| {
            v["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = b["content"].as_str().unwrap_or_default().to_string();
            (content, b["is_error"].as_bool().unwrap_or(false))
        })
        .collect()
}

/// Filters the table to the jobs whose text holds `words`.
fn filter(ck: &Cockpit, words: &str) {
    ck.key("/");
    ck.wait_for("the filter prompt", |s| s.footer().contains("filter jobs:"));
    ck.type_text(words);
    ck.key("Enter");
}

/// In `luzia tui --demo`: the finished Claude session shows its cost; the live Claude-style job
/// asks permission for `rm -rf build` through an approval gate that names the call and shows its
/// input, and a denial from the inbox reaches the agent's stream word for word.
#[test]
fn the_demo_s_claude_job_asks_permission_and_hears_the_reason() {
    require_tmux!();
    let sb = Sandbox::new();
    let demo = DemoRun::new(&sb);
    let ck = Cockpit::start(&sb, demo.opts());
    ck.wait_ready();
    filter(&ck, "skip empty rows");
    ck.wait_for("the finished Claude session alone, with its cost", |s| {
        s.job_rows().len() == 1
            && s.job_row(DEMO_FINISHED_CLAUDE)
                .is_some_and(|r| r.contains("completed") && r.contains('$'))
    });
    ck.esc();
    ck.wait_for("the filter cleared", |s| s.job_rows().len() > 1);
    let id = demo.job_with_task(DEMO_CLAUDE);
    filter(&ck, "playlist test");
    ck.wait_for_up_to(SLOW, "the Claude job at its gate", |s| {
        s.job_rows().len() == 1 && s.job_row(&id).is_some_and(|r| r.contains("needs approval"))
    });
    ck.key("Enter"); // on the waiting row: opens the inbox on its gate
    // The popup's title too: the table's activity cell can show the command before it opens.
    let s = ck.wait_for("the gate in the inbox", |s| {
        s.contains(" approval gate · ") && s.contains("Bash: rm -rf build")
    });
    assert!(
        s.contains("Remove the stale build directory"),
        "{}",
        s.text()
    );
    ck.key("d");
    ck.wait_text("reason for the denial");
    let reason = "Not now: build/ holds the release candidate";
    ck.type_text(reason);
    ck.key("Enter");

    let dir = demo.jobs_dir().unwrap().join(&id);
    let start = Instant::now();
    while !tool_results(&dir).contains(&(reason.to_string(), true)) {
        assert!(
            start.elapsed() < SLOW,
            "the denial never reached the stream: {:?}",
            tool_results(&dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
