//! The alarms of an ACP agent's job, as of a Claude Code job: the real luzia and the real
//! Gemini CLI (`gemini --acp`) with `[alarms] stall_after`, `question_after` and the project's
//! `budget` set to seconds. A job whose model answers nothing is stalled (no output, nothing in
//! flight: activity.json says so) and over its budget; a job waiting at a gate is not stalled
//! but its approval is called out, and its budget still counts; a command running after its
//! approval is in flight (activity.json), which is not silence, however long it runs.
//!
//! Runs as root with the real CLI (CI pins and installs it; without it the test says SKIPPED
//! loudly, or fails where `LUZIA_REQUIRE_AGENTS=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use common::acp::{Agent, WAIT, World};
use common::agents::{GEMINI, agent_or_skip};
use common::gemini::{FakeGemini, Reply};

/// The rules, short enough for a test and long enough for the agent to start on a loaded
/// machine (a budget shorter than the start would be crossed before anything is seen).
const RULES: &str = "budget = \"8s\"\n\n[alarms]\nstall_after = \"3s\"\nquestion_after = \"3s\"\n";

/// A world whose config adds [`RULES`] (`budget` lands in `[projects.p]`, its last table), its
/// agent Gemini CLI pointed at `base_url` (the fake's own when `None`).
fn world(gemini: &Path, script: Vec<Reply>, base_url: Option<String>) -> World<FakeGemini> {
    let w = World::new(FakeGemini::start(script), None, |base, api| {
        let mut env = api.agent_env();
        if let Some(url) = base_url {
            env.retain(|(k, _)| k != "GOOGLE_GEMINI_BASE_URL");
            env.push(("GOOGLE_GEMINI_BASE_URL".into(), url));
        }
        Agent {
            kind: "gemini",
            command: vec![gemini.to_str().unwrap().to_owned(), "--acp".into()],
            home: api.home(base),
            env,
        }
    });
    let mut config = fs::OpenOptions::new()
        .append(true)
        .open(w.base.join("config.toml"))
        .unwrap();
    config.write_all(RULES.as_bytes()).unwrap();
    w
}

/// `luzia jobs ID` once it says each of `want`; panics with what it said at the deadline.
fn jobs_until(w: &World<FakeGemini>, id: &str, want: &[&str]) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let shown = w.ok(&["jobs", id]);
        if want.iter().all(|s| shown.contains(s)) {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "{want:?} not all in `luzia jobs {id}` within {WAIT:?}:\n{shown}\n{}",
            w.log(id)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_acp_job_whose_model_answers_nothing_is_stalled_and_over_budget() {
    let Some(gemini) = agent_or_skip("an_acp_job_whose_model_answers_nothing", &GEMINI) else {
        return;
    };
    // A model API that takes every request and never answers (the connections are kept open
    // until the test ends).
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().flatten().collect();
        drop(held);
    });
    let w = world(&gemini, Vec::new(), Some(url));
    let id = w.run("Say hello.");
    let shown = jobs_until(
        &w,
        &id,
        &[
            "alarm:     stalled: no output or progress for ",
            "alarm:     over budget: ",
        ],
    );
    assert!(shown.contains("status:    running"), "{shown}");
    assert!(
        !w.dir(&id).join("activity.json").exists(),
        "nothing is in flight while the model is silent:\n{shown}"
    );
    assert!(
        w.log(&id).contains("── Gemini CLI session "),
        "{}",
        w.log(&id)
    );
    // The same alarms in `luzia status`, which the cockpit's header and notifications share.
    let status = w.ok(&["status"]);
    assert!(status.contains("stalled"), "{status}");
    w.ok(&["kill", &id]);
    w.wait_finished(&id);
}

#[test]
fn an_acp_job_at_a_gate_is_not_stalled_and_a_running_command_is_in_flight() {
    let Some(gemini) = agent_or_skip("an_acp_job_at_a_gate_is_not_stalled", &GEMINI) else {
        return;
    };
    // Longer than the stall rule and the budget: the command is what the job is doing.
    let command = "sleep 6 && echo slept > marker.txt";
    let script = vec![
        Reply::shell("I will sleep.", command),
        Reply::text("Slept."),
    ];
    let w = world(&gemini, script, None);
    let id = w.run("Sleep, then write the marker.");
    w.wait_gate(&id);
    // At the gate past `question_after` and `stall_after`: the approval is called out, the
    // job is not stalled.
    let shown = jobs_until(&w, &id, &["alarm:     question waiting: "]);
    assert!(shown.contains("status:    waiting"), "{shown}");
    assert!(!shown.contains("stalled"), "{shown}");
    w.ok(&["approve", &id]);
    // The command runs longer than `stall_after` with nothing written: activity.json says
    // what is in flight, and the job is never stalled meanwhile.
    let activity = w.dir(&id).join("activity.json");
    let deadline = Instant::now() + WAIT;
    while !activity.exists() {
        assert!(
            Instant::now() < deadline && w.meta(&id)["exit_code"].is_null(),
            "no activity.json while the command runs:\n{}",
            w.log(&id)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let in_flight = fs::read_to_string(&activity).unwrap_or_default();
    let mut over_budget = false;
    while w.dir(&id).join("activity.json").exists() {
        let shown = w.ok(&["jobs", &id]);
        assert!(
            !shown.contains("alarm:     stalled"),
            "{in_flight}\n{shown}"
        );
        over_budget |= shown.contains("alarm:     over budget: ");
        std::thread::sleep(Duration::from_millis(300));
    }
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert!(in_flight.contains("sleep 6"), "{in_flight}");
    assert!(over_budget, "the budget counts while a command runs");
}
