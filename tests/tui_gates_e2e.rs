//! A gate approved for the session from the real cockpit at 160x45: a real agent process stops
//! at `luzia gate --allow-session`, the inbox offers its key and says what it covers, and the key
//! approves it for the session, which the agent is told and the history records. A gate that
//! does not offer it shows no such key.
//!
//! Without tmux the tests print a loud SKIPPED message and pass, unless `LUZIA_REQUIRE_TMUX=1`
//! (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::time::{Duration, Instant};

use tmux::{Cockpit, Opts, Sandbox, now_rfc3339, sh_quote, wait_file};

#[test]
fn a_gate_offering_the_session_is_approved_for_it_with_its_key() {
    require_tmux!();
    let sb = Sandbox::new();
    let id = "100040-gate";
    sb.write_meta(id, "musica", "Deploy twice", Some(&now_rfc3339()));
    let dir = sb.job_dir(id);
    let ctl = sb.ctl.display().to_string();
    let bin = sh_quote(tmux::BIN);
    // First a gate that may be approved once only, then one that offers the session.
    let script = format!(
        "echo $$ > pid; export LUZIA_JOB_DIR=\"$PWD\"; \
         {bin} gate migrate 'Run the migrations' > {ctl}/g1.out; echo $? > {ctl}/g1.rc; \
         {bin} gate deploy 'Deploy to staging' --allow-session 'every deploy of this job' \
           > {ctl}/g2.out; echo $? > {ctl}/g2.rc; sleep 1000"
    );
    sb.spawn_script(&dir, &script);
    let ck = Cockpit::start(&sb, Opts::default().size(160, 45));
    ck.wait_row(id, "waiting", |r| r.contains("waiting"));

    ck.key("Enter"); // on the waiting row: the inbox, on its gate
    let screen = ck.wait_text("Run the migrations");
    assert!(
        !screen.contains("for the session"),
        "a gate that does not offer it shows no key for it:\n{}",
        screen.text()
    );
    ck.key("A");
    ck.wait_text("cannot be approved for the session");
    assert!(!dir.join("approved.json").exists(), "nothing was decided");
    ck.key("a");
    wait_file(&sb.ctl.join("g1.rc"), "0");

    // The second gate: the inbox goes on to it, or is opened again once the cockpit reads it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = ck.wait_for("the second gate, or the closed inbox", |s| {
            s.contains("Deploy to staging") || !s.contains("approval gate")
        });
        if screen.contains("Deploy to staging") {
            break;
        }
        assert!(Instant::now() < deadline, "the second gate never showed");
        ck.wait_row(id, "waiting again", |r| r.contains("waiting"));
        ck.key("i");
        ck.wait_for("the inbox, or nothing waiting", |s| {
            s.contains("Deploy to staging") || s.contains("nothing is waiting")
        });
    }
    let screen = ck.wait_text("A approve for the session");
    assert!(
        screen.contains("approving for it takes the agent's \"every deploy of this job\""),
        "{}",
        screen.text()
    );
    ck.key("A");
    wait_file(&sb.ctl.join("g2.rc"), "0");
    wait_file(&sb.ctl.join("g2.out"), "session");
    assert_eq!(fs::read_to_string(sb.ctl.join("g1.out")).unwrap(), "");

    let history = fs::read_to_string(dir.join("history.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{history}");
    assert!(records[0]["decision"].get("scope").is_none(), "{history}");
    assert_eq!(records[1]["decision"]["scope"], "session", "{history}");
    assert_eq!(records[1]["decision"]["source"], "tui", "{history}");
    ck.key("q");
}
