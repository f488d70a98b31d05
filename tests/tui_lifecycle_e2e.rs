//! End-to-end: the needs-input lifecycle with real processes. A job started with `luzia run`
//! writes its question and stops with exit 100; the operator answers it in the cockpit (a real
//! terminal, tmux); its row says `answered · r retries` and it leaves the Waiting tab and the
//! header's count; `r` retries it, the retry (which finds the answer in its prompt) goes on,
//! the old row says `retried → <id>` and the new one `retry of <id>`; the detail view shows the
//! question, the answer and the retry, and so does `luzia jobs ID`.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::PathBuf;

use tmux::{Cockpit, Opts, Sandbox};

/// The agent: with an answer in its prompt it goes on; without one it asks (written atomically,
/// as `luzia ask` would) and stops for the answer.
const AGENT: &str = r#"p=$(cat)
case "$p" in
*"The answer is:"*) echo "going on with the answer"; exit 0;;
esac
d="$LUZIA_JOB_DIR"
printf '%s' '{"id": "q1", "type": "choice", "question": "Which tables may I drop?", "options": ["all three", "none"]}' > "$d/.q.tmp"
mv "$d/.q.tmp" "$d/clarification.json"
echo "stopping: I need to know which tables to drop"
exit 100
"#;

fn config(sb: &Sandbox) -> PathBuf {
    let project = sb.tmp.path().join("project");
    let queue = sb.tmp.path().join("queue");
    fs::create_dir_all(&project).unwrap();
    fs::create_dir_all(&queue).unwrap();
    let agent = sb.ctl.join("agent.sh");
    fs::write(&agent, AGENT).unwrap();
    sb.config_file(
        "lifecycle.toml",
        &format!(
            "queue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n[agent]\n\
             command = [\"/bin/sh\", {agent:?}]\n\n[projects.musica]\npath = {project:?}\n",
            notes = sb.tmp.path().join("notifications.log"),
        ),
    )
}

#[test]
fn a_job_answered_in_the_cockpit_and_retried_leaves_waiting_and_links_its_retry() {
    require_tmux!();
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let first = sb.luzia(&cfg, &["run", "musica", "--", "Clean the stale tables"]);
    let first = first.trim().to_string();
    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .size(160, 40)
            .global_arg("--config")
            .global_arg(cfg.to_str().unwrap()),
    );
    ck.wait_row(&first, "needs_input", |r| r.contains("needs_input"));
    ck.wait_for("one waiting for you", |s| {
        s.header().contains("1 waiting for you")
    });

    // Answer it from the inbox: the second option.
    ck.key("i");
    ck.wait_text("Which tables may I drop?");
    ck.keys(&["Down", "Enter"]);
    let s = ck.wait_row(&first, "answered", |r| r.contains("answered · r retries"));
    assert!(s.header().contains("0 waiting for you"), "{}", s.text());
    // The Waiting tab no longer lists it.
    ck.keys(&["Right", "Right"]);
    let s = ck.wait_for("the Waiting tab, empty", |s| {
        s.table_title().contains("0/0") || s.contains("no jobs match this view")
    });
    assert!(s.job_row(&first).is_none(), "{}", s.text());
    ck.keys(&["Left", "Left"]);
    ck.wait_row(&first, "listed again", |_| true);

    // Retry it: the retry finds the answer in its prompt and completes.
    ck.key("/");
    ck.type_text(&first);
    ck.key("Enter");
    ck.wait_for("only the first job", |s| s.job_rows().len() == 1);
    ck.key("r");
    let s = ck.wait_row(&first, "retried", |r| r.contains("retried → "));
    let row = s.job_row(&first).unwrap();
    let retry = row
        .split("retried → ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    assert_ne!(retry, first);
    ck.esc();
    let s = ck.wait_row(&retry, "completed, linked back", |r| {
        r.contains("completed") && r.contains(&format!("retry of {first}"))
    });
    assert!(s.header().contains("0 waiting for you"), "{}", s.text());

    // The detail view of the first: the question, the answer, the retry.
    ck.key("/");
    ck.type_text(&first);
    ck.key("Enter");
    ck.wait_for("only the first job", |s| s.job_rows().len() == 1);
    ck.key("v");
    let s = ck.wait_text("retried as");
    for want in [
        "Which tables may I drop?",
        "[answered]",
        &format!("retried as {retry}"),
        "(tui)",
    ] {
        assert!(s.contains(want), "{want:?} not in:\n{}", s.text());
    }
    assert!(
        s.text()
            .lines()
            .any(|l| l.contains("answer") && l.contains("none")),
        "{}",
        s.text()
    );

    // `luzia jobs ID` says the same, and `--json` carries it.
    let text = sb.luzia(&cfg, &["jobs", &first]);
    assert!(
        text.contains(&format!("retried as  {retry}")) || text.contains(&retry),
        "{text}"
    );
    assert!(
        text.contains("Which tables may I drop?") && text.contains("none"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&sb.luzia(&cfg, &["jobs", &first, "--json"])).unwrap();
    assert_eq!(json["stage"], "retried");
    assert_eq!(json["exchange"]["answer"], "none");
    assert_eq!(json["retried_by"][0], retry.as_str());
    let json: serde_json::Value =
        serde_json::from_str(&sb.luzia(&cfg, &["jobs", &retry, "--json"])).unwrap();
    assert_eq!(json["retry_of"], first.as_str());
}
