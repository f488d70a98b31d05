//! Sessions with the real Claude Code CLI against the fake Messages API: `luzia reply` continues
//! the same session (the model is sent the earlier conversation with the reply), and a job killed
//! mid-run is continued by `luzia retry` (its session resumed, not started over). luzia runs the
//! CLI as its config says, through its own dispatcher and supervisor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::claude::{FakeApi, MODEL, Reply, Served, all_text, clis_or_skip};
use serde_json::{Value, json};
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(90);

struct World {
    base: PathBuf,
    config: PathBuf,
    _tmp: TempDir,
}

impl World {
    fn new(claude: &Path, api: &FakeApi) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-claude-sessions-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "proj", "xdg", "home", "queue"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let mut env = api.agent_env(&base.join("home"));
        // Bypass mode as root needs it; the permission bridge is not what these tests are about.
        env.push(("IS_SANDBOX".into(), "1".into()));
        // Every request on the model the fake API serves, side calls included: its price is the
        // one the cost test computes with, whatever model a version defaults to.
        for var in [
            "ANTHROPIC_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        ] {
            env.push((var.into(), MODEL.into()));
        }
        let env: Vec<String> = env
            .into_iter()
            .map(|(k, v)| format!("{k} = {}", Value::from(v)))
            .collect();
        let config = base.join("config.toml");
        fs::write(
            &config,
            format!(
                "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
                 command = [{}, \"--dangerously-skip-permissions\", \"-p\", \"--output-format\", \"stream-json\", \"--verbose\"]\n\
                 prompt_template = \"{{task}}\"\nenv = {{ {} }}\n\n[projects.p]\npath = {}\n",
                q(&base.join("jobs")),
                q(&base.join("notes.log")),
                q(&base.join("queue")),
                q(claude),
                env.join(", "),
                q(&base.join("proj")),
            ),
        )
        .unwrap();
        World {
            base,
            config,
            _tmp: tmp,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("HOME", self.base.join("home"))
            .arg("--config")
            .arg(&self.config)
            .args(args);
        assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn started(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            common::stderr_of(&out)
        );
        common::stdout_of(&out).trim().to_owned()
    }

    fn meta(&self, id: &str) -> Value {
        let path = self.base.join("jobs").join(id).join("meta.json");
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.base.join("jobs").join(id).join("output.log")).unwrap_or_default()
    }

    fn wait_done(&self, id: &str) -> Value {
        let deadline = Instant::now() + GUARD;
        while self.meta(id).get("exit_code").is_none() {
            assert!(
                Instant::now() < deadline,
                "{id} did not finish; its log:\n{}",
                self.log(id)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = self.run(&["jobs", id, "--json"]);
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.base);
    }
}

#[test]
fn reply_continues_the_same_session() {
    for claude in clis_or_skip("reply_continues_the_same_session") {
        let api = FakeApi::start(vec![Reply::text("The answer is forty-two.")]);
        let w = World::new(&claude, &api);
        let first = w.started(&["run", "p", "What is the answer? Remember the word PELICAN."]);
        let job = w.wait_done(&first);
        assert_eq!(job["status"], "completed", "{}", w.log(&first));
        let session = w.meta(&first)["session_id"].as_str().unwrap().to_owned();

        api.push(vec![Reply::text("You said PELICAN.")]);
        let second = w.started(&["reply", &first, "Which word did I ask you to remember?"]);
        let job = w.wait_done(&second);
        assert_eq!(job["status"], "completed", "{}", w.log(&second));
        let turns = api.wait_for_requests(2, GUARD);
        let seen = all_text(&turns[1]);
        for earlier in [
            "Remember the word PELICAN",
            "The answer is forty-two.",
            "Which word did I ask you to remember?",
        ] {
            assert!(
                seen.contains(earlier),
                "{earlier:?} not sent with the reply: {seen}"
            );
        }
        assert_eq!(w.meta(&second)["session_id"], session.as_str());
        assert_eq!(w.meta(&second)["resumes"], first.as_str());
        assert_eq!(w.meta(&first)["resumed_by"], json!([second]));
        assert!(
            w.log(&second).contains("You said PELICAN."),
            "{}",
            w.log(&second)
        );
    }
}

#[test]
fn a_killed_job_is_resumed_by_retry() {
    for claude in clis_or_skip("a_killed_job_is_resumed_by_retry") {
        let api = FakeApi::start(vec![Reply::tool(
            "Bash",
            // Not `sleep 60`: Claude Code 2.1.3xx blocks a leading sleep ("use Monitor").
            json!({"command": "tail -f build.log", "description": "Follow the build"}),
        )]);
        let w = World::new(&claude, &api);
        fs::write(w.base.join("proj/build.log"), "building\n").unwrap();
        let first = w.started(&["run", "p", "Build the project ALBATROSS."]);
        api.wait_for_requests(1, GUARD);
        // The tool call is in flight once `tail -f build.log` runs under the agent.
        let deadline = Instant::now() + GUARD;
        while !common::all_pids().into_iter().any(|p| {
            fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"tail\x00-f\x00build.log"))
        }) {
            assert!(
                Instant::now() < deadline,
                "the Bash call never ran: {}",
                w.log(&first)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = w.run(&["kill", &first, "--grace", "5s"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        assert_eq!(w.wait_done(&first)["status"], "killed");

        api.push(vec![Reply::text("Picking up where I stopped.")]);
        let out = w.run(&["retry", &first]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let again = common::stdout_of(&out).trim().to_owned();
        assert!(
            common::stderr_of(&out).contains("continues the session"),
            "{}",
            common::stderr_of(&out)
        );
        assert_eq!(
            w.wait_done(&again)["status"],
            "completed",
            "{}",
            w.log(&again)
        );
        let turns = api.wait_for_requests(2, GUARD);
        let seen = all_text(turns.last().unwrap());
        // Claude Code drops the tool call the kill interrupted; the conversation before it is there.
        for earlier in [
            "Build the project ALBATROSS.",
            "ended before it was done (killed)",
        ] {
            assert!(
                seen.contains(earlier),
                "{earlier:?} not sent on resume: {seen}"
            );
        }
        assert_eq!(w.meta(&again)["session_id"], w.meta(&first)["session_id"]);
        assert_eq!(w.meta(&again)["resumes"], first.as_str());
    }
}

/// What Claude Code charges for one message of the API's log, at the list price of the model
/// every request is pinned to (Claude Sonnet 4.5: $3 input, $15 output, $0.30 cache read and
/// $3.75 cache write per million tokens).
fn price(s: &Served) -> f64 {
    assert_eq!(
        s.model, MODEL,
        "a request on a model the test does not price"
    );
    (s.input_tokens as f64 * 3.0
        + s.output_tokens as f64 * 15.0
        + s.cache_read_tokens as f64 * 0.30
        + s.cache_creation_tokens as f64 * 3.75)
        / 1e6
}

#[test]
fn a_reply_chain_of_three_jobs_costs_what_the_api_served_each_run() {
    for claude in clis_or_skip("a_reply_chain_of_three_jobs_costs_what_the_api_served") {
        let api = FakeApi::start(Vec::new());
        let w = World::new(&claude, &api);
        let mut ids: Vec<String> = Vec::new();
        // Where each run's messages begin and end in the API's log: the jobs run one by one.
        let mut marks = vec![0];
        for (say, reply) in [
            ("Name a bird.", "Pelican."),
            ("Another.", "Albatross."),
            ("One more.", "Heron."),
        ] {
            api.push(vec![Reply::text(reply)]);
            let id = match ids.last() {
                None => w.started(&["run", "p", say]),
                Some(previous) => w.started(&["reply", previous, say]),
            };
            assert_eq!(w.wait_done(&id)["status"], "completed", "{}", w.log(&id));
            marks.push(api.served().len());
            ids.push(id);
        }
        let served = api.served();
        let runs: Vec<&[Served]> = marks.windows(2).map(|m| &served[m[0]..m[1]]).collect();
        let cost = |run: &[Served]| run.iter().map(price).sum::<f64>();
        let input = |run: &[Served]| run.iter().map(|s| s.input_tokens).sum::<u64>();
        let output = |run: &[Served]| run.iter().map(|s| s.output_tokens).sum::<u64>();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        for (id, run) in ids.iter().zip(&runs) {
            let usage = &w.meta(id)["usage"];
            let recorded = usage["cost_usd"].as_f64().unwrap_or(-1.0);
            assert!(
                close(recorded, cost(run)),
                "job {id} records ${recorded}, its run was served ${} ({} messages): {usage}",
                cost(run),
                run.len()
            );
            assert_eq!(usage["input_tokens"], input(run), "{id}: {usage}");
            assert_eq!(usage["output_tokens"], output(run), "{id}: {usage}");
        }
        let chain: Vec<Served> = runs.concat();
        let report = w.base.join("status.json");
        let out = w.run(&[
            "status",
            "--export",
            "json",
            "--output",
            report.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let usage =
            serde_json::from_slice::<Value>(&fs::read(&report).unwrap()).unwrap()["usage"].clone();
        for (what, total) in [
            ("all", &usage),
            ("the project", &usage["by_project"][0]),
            ("the day", &usage["by_day"][0]),
        ] {
            let recorded = total["cost_usd"].as_f64().unwrap_or(-1.0);
            assert!(
                close(recorded, cost(&chain)),
                "{what}: ${recorded} recorded, ${} served (runs: {:?}): {total}",
                cost(&chain),
                runs.iter().map(|r| cost(r)).collect::<Vec<_>>()
            );
            assert_eq!(total["jobs"], 3, "{what}: {total}");
            assert_eq!(total["input_tokens"], input(&chain), "{what}: {total}");
            assert_eq!(total["output_tokens"], output(&chain), "{what}: {total}");
        }
    }
}
