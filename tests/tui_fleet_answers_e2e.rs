//! End-to-end: a question of another host answered in the cockpit is recorded there as the
//! cockpit's answer, by the person at the cockpit, as the cockpit records its own: host `b` is a
//! real `sshd` on 127.0.0.1 (tests/fleet_hosts), its job asks with `luzia ask`, the cockpit (a
//! fresh HOME, its user `ana`) answers, and b's `history.jsonl` is read. A luzia on b older than
//! the relay flags still gets the answer, recorded as its ssh user's.
//!
//! Without tmux or sshd these tests print a loud SKIPPED message and pass, unless CI asks for
//! them (`LUZIA_REQUIRE_TMUX=1`, `LUZIA_REQUIRE_SSHD=1`), where a missing one fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
mod fleet_hosts;
#[macro_use]
mod tmux;

use std::fs;
use std::path::Path;

use common::sshd::older_luzia;
use fleet_hosts::{CONNECT, Host, answer_staging, cockpit_config, opts, row};
use tmux::{Cockpit, Opts, Sandbox};

/// The cockpit's user: not the ssh user on b (the user running the tests), so that whose name
/// b records tells who answered.
const COCKPIT_USER: &str = "ana";

/// The cockpit, as `ana`, showing `host` (whose luzia is `luzia`); waits for the job waiting.
fn cockpit_as_ana<'a>(sb: &'a Sandbox, host: &Host, luzia: &Path, id: &str) -> Cockpit<'a> {
    let config = cockpit_config(sb, &[host.sshd.host_toml(luzia)]);
    let opts: Opts = opts(sb, &config)
        .env("USER", COCKPIT_USER)
        .env("LOGNAME", COCKPIT_USER);
    let ck = Cockpit::start(sb, opts);
    ck.wait_for_up_to(CONNECT, "b's job waiting", |s| {
        row(s, id, "b").is_some_and(|r| r.contains("waiting"))
    });
    ck
}

/// This machine's name as the kernel gives it: the cockpit's operator is `user@` it.
fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_question_of_host_b_answered_in_the_cockpit_is_recorded_there_as_the_cockpits() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some(b) = Host::start(&sb, "b") else {
        return;
    };
    let (id, answer) = b.asking(&sb);
    let ck = cockpit_as_ana(&sb, &b, Path::new(tmux::BIN), &id);
    answer_staging(&ck, &answer);

    // As the cockpit records an answer to a job of its own machine: "tui", `user@host`.
    let response = b.recorded_response(&id);
    assert_eq!(response["source"], "tui", "{response}");
    let ana = format!("{COCKPIT_USER}@{}", hostname());
    assert_eq!(response["answered_by"], ana.as_str(), "{response}");
    assert_ne!(
        COCKPIT_USER,
        b.sshd.user(),
        "the names must tell the two apart"
    );
}

#[test]
fn a_luzia_on_b_older_than_the_relay_flags_still_gets_the_answer_given_in_the_cockpit() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some(b) = Host::start(&sb, "b") else {
        return;
    };
    let (id, answer) = b.asking(&sb);
    let record = b.dir.join("commands");
    let older = older_luzia(&b.dir, Path::new(tmux::BIN), &record);
    let ck = cockpit_as_ana(&sb, &b, &older, &id);
    answer_staging(&ck, &answer);

    // Refused with the relay, given without it: once, as b's own user at its command line.
    let commands = fs::read_to_string(&record).unwrap();
    let answers: Vec<&str> = commands
        .lines()
        .filter(|l| l.starts_with("answer "))
        .collect();
    assert_eq!(answers.len(), 2, "{commands}");
    assert!(answers[0].contains("--source=tui"), "{commands}");
    assert!(!answers[1].contains("--source") && !answers[1].contains("--by"));
    let response = b.recorded_response(&id);
    assert_eq!(response["source"], "cli", "{response}");
    let there = format!("{}@{}", b.sshd.user(), hostname());
    assert_eq!(response["answered_by"], there.as_str(), "{response}");
    assert!(
        !ck.screen().contains("unexpected argument"),
        "the refused option is not shown as a refused answer"
    );
}
