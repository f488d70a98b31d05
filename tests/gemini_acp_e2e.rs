//! Gemini CLI through the Agent Client Protocol, end to end: the real luzia and the real CLI
//! (`gemini --acp`, chosen with `[agent] kind = "gemini"`), against a scripted Gemini API on
//! 127.0.0.1 and a fresh HOME set up as a user would for an API key. The job shows its output
//! while it runs; a shell command needing permission becomes a gate; approving runs it,
//! denying blocks it; tokens are recorded; `luzia reply` continues the same session; `luzia
//! kill` stops it and leaves no gate pending; the gate is in the cockpit's inbox.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::gemini::{
    ANSWER_TOKENS, FakeGemini, PROMPT_TOKENS, Reply, function_responses, gemini_or_skip,
};
use serde_json::Value;

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(90);

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    jobs: PathBuf,
    home: PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        // An agent left waiting by a failed assertion must not outlive the test.
        common::kill_processes_mentioning(&self.base);
    }
}

impl World {
    fn new(gemini: &Path, api: &FakeGemini, jobs: Option<&Path>) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_owned();
        let jobs = jobs.map_or_else(|| base.join("jobs"), Path::to_owned);
        for d in ["jobs", "queue", "xdg", "proj"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let home = api.home(&base);
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\nkind = \"gemini\"\n\
             env = {}\n\n[agents.gemini]\ncommand = [{}, \"--acp\"]\n\n[projects.p]\npath = {}\n",
            q(&jobs),
            q(&base.join("notes.log")),
            q(&base.join("queue")),
            api.agent_env_toml(&home),
            q(gemini),
            q(&base.join("proj")),
        );
        fs::write(base.join("config.toml"), config).unwrap();
        World {
            _tmp: tmp,
            base,
            jobs,
            home,
        }
    }

    fn luzia(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("NO_COLOR", "1")
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            common::stderr_of(&out)
        );
        common::stdout_of(&out)
    }

    /// `luzia run p TASK`: the new job's id.
    fn run(&self, task: &str) -> String {
        self.ok(&["run", "p", task]).trim().to_owned()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.dir(id).join("output.log")).unwrap_or_default()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    /// Waits for the job's pending gate (`questions --json`); returns it.
    fn wait_gate(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        let pending = common::claude::wait_pending(
            luzia,
            || self.log(id),
            id,
            "gate",
            WAIT,
            |q| q.get("approval").is_some_and(|a| !a.is_null()),
        );
        pending["approval"].clone()
    }

    fn wait_finished(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        common::claude::wait_finished(luzia, || self.log(id), id, WAIT)
    }

    /// Gemini CLI 0.61 names a session's file by the minute it began, and a session loaded
    /// again within that minute overwrites its own file. The file is renamed as if the
    /// minute had passed, so that a reply a second later finds its session.
    fn age_sessions(&self) {
        let chats = self.home.join(".gemini/tmp/proj/chats");
        for f in fs::read_dir(&chats).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix("session-").and_then(|r| r.get(16..)) {
                fs::rename(
                    f.path(),
                    chats.join(format!("session-2000-01-01T00-00{rest}")),
                )
                .unwrap();
            }
        }
    }
}

/// Waits until `probe` holds; fails saying `what` after the deadline.
fn wait_until(what: &str, probe: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !probe() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_approved_command_runs_its_tokens_are_recorded_and_a_reply_continues_the_session() {
    let Some(gemini) = gemini_or_skip("an_approved_command_runs") else {
        return;
    };
    let api = FakeGemini::start(vec![
        Reply::shell("I will write the marker.", "echo approved > marker.txt"),
        Reply::text("The marker is written."),
    ]);
    let w = World::new(&gemini, &api, None);
    let id = w.run("Write the marker.");
    let gate = w.wait_gate(&id);
    assert_eq!(
        gate["gate"], "execute: echo approved > marker.txt",
        "{gate}"
    );
    assert!(
        gate["context"]
            .as_str()
            .unwrap()
            .contains("the reason cannot reach the model"),
        "{gate}"
    );
    // Live: while the job waits at its gate, its log already tells what it is doing.
    let log = w.log(&id);
    assert!(log.contains("── Gemini CLI session "), "{log}");
    assert!(
        log.contains("I will write the marker.\n▶ execute  echo approved > marker.txt"),
        "{log}"
    );
    assert!(!log.contains("exit:"), "{log}");
    assert!(
        !w.base.join("proj/marker.txt").exists(),
        "nothing runs before it is approved"
    );
    w.ok(&["approve", &id]);
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert_eq!(
        fs::read_to_string(w.base.join("proj/marker.txt")).unwrap(),
        "approved\n"
    );
    let log = w.log(&id);
    assert!(log.contains("  ✓ approved by "), "{log}");
    assert!(
        log.contains("The marker is written.\n── success · "),
        "{log}"
    );
    let meta = w.meta(&id);
    let session = meta["session_id"].as_str().unwrap().to_owned();
    assert_eq!(session.len(), 36, "{meta}");
    assert_eq!(meta["agent"], gemini.to_str().unwrap());
    assert_eq!(meta["usage"]["input_tokens"], 2 * PROMPT_TOKENS, "{meta}");
    assert_eq!(meta["usage"]["output_tokens"], 2 * ANSWER_TOKENS, "{meta}");
    assert_eq!(
        job["usage"]["total_tokens"],
        2 * (PROMPT_TOKENS + ANSWER_TOKENS),
        "{job}"
    );

    api.push(vec![Reply::text("Still the same session.")]);
    w.age_sessions();
    let said = w.luzia(&["reply", &id, "Is the marker there?"]);
    assert_eq!(said.status.code(), Some(0), "{}", common::stderr_of(&said));
    let next = common::stdout_of(&said).trim().to_owned();
    let job = w.wait_finished(&next);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&next));
    let meta = w.meta(&next);
    assert_eq!(
        (meta["session_id"].as_str(), meta["resumes"].as_str()),
        (Some(session.as_str()), Some(id.as_str()))
    );
    let log = w.log(&next);
    assert!(
        log.contains(&format!("── Gemini CLI session {session} (continued)")),
        "{log}"
    );
    assert!(log.contains("Still the same session."), "{log}");
    assert!(
        !log.contains("The marker is written.") && !log.contains("▶"),
        "the replayed history is kept out: {log}"
    );
    // The model was given the old turns with the new one.
    let last = api.requests().pop().unwrap().to_string();
    assert!(
        last.contains("echo approved > marker.txt") && last.contains("Is the marker there?"),
        "{last}"
    );
}

#[test]
fn a_denied_command_does_not_run() {
    let Some(gemini) = gemini_or_skip("a_denied_command_does_not_run") else {
        return;
    };
    let api = FakeGemini::start(vec![
        Reply::shell("Removing it.", "echo denied > marker.txt"),
        Reply::text("Understood."),
    ]);
    let w = World::new(&gemini, &api, None);
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    let said = w.ok(&["deny", &id, "--reason", "not today"]);
    assert!(said.contains("denied"), "{said}");
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert!(
        !w.base.join("proj/marker.txt").exists(),
        "denied: nothing ran"
    );
    let log = w.log(&id);
    assert!(
        log.contains(": not today (the agent is told only that it was rejected)"),
        "{log}"
    );
    let turns = api.wait_for_requests(2, WAIT);
    let told = function_responses(&turns[1]).join("\n");
    assert!(!told.is_empty() && !told.contains("not today"), "{told}");
}

#[test]
fn a_kill_cancels_the_turn_and_leaves_no_gate_pending() {
    let Some(gemini) = gemini_or_skip("a_kill_cancels_the_turn") else {
        return;
    };
    let api = FakeGemini::start(vec![Reply::shell("Working.", "echo killed > marker.txt")]);
    let w = World::new(&gemini, &api, None);
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    let supervisor: u32 = fs::read_to_string(w.dir(&id).join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    w.ok(&["kill", &id]);
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "killed", "{job}\n{}", w.log(&id));
    assert!(job["waiting"].is_null(), "{job}");
    assert!(!w.dir(&id).join("approval.json").exists());
    let questions = w.ok(&["questions", "--json"]);
    assert!(!questions.contains(&id), "{questions}");
    let history = fs::read_to_string(w.dir(&id).join("history.jsonl")).unwrap();
    assert!(
        history.contains("\"withdrawn\":\"the job was stopped\""),
        "{history}"
    );
    assert!(!w.base.join("proj/marker.txt").exists());
    wait_until("the supervisor to end", || !common::pid_alive(supervisor));
    assert!(
        common::processes_mentioning(&w.base).is_empty(),
        "nothing of the job is left running"
    );
}

#[test]
fn a_gemini_gate_is_in_the_cockpit_inbox() {
    require_tmux!();
    let Some(gemini) = gemini_or_skip("a_gemini_gate_is_in_the_cockpit_inbox") else {
        return;
    };
    let api = FakeGemini::start(vec![
        Reply::shell("Writing it.", "echo cockpit > marker.txt"),
        Reply::text("Written."),
    ]);
    let sb = tmux::Sandbox::new();
    let w = World::new(&gemini, &api, Some(&sb.root));
    let ck = tmux::Cockpit::start(&sb, tmux::Opts::default());
    ck.wait_ready();
    let id = w.run("Write the marker.");
    w.wait_gate(&id);
    let deadline = Instant::now() + WAIT;
    loop {
        let screen = ck.screen();
        if screen.contains(" approval gate · ")
            && screen.contains("execute: echo cockpit > marker.txt")
        {
            break;
        }
        if !screen.contains(" approval gate · ") {
            ck.key("i");
        }
        assert!(
            Instant::now() < deadline,
            "the inbox never showed the gate:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    ck.wait_text("Gemini CLI asks permission");
    ck.key("a");
    let job = w.wait_finished(&id);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    assert_eq!(
        fs::read_to_string(w.base.join("proj/marker.txt")).unwrap(),
        "cockpit\n"
    );
}
