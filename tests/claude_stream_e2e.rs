//! The real Claude Code CLI run by `luzia run` with a stream-json command line, against a fake
//! Messages API the test starts itself: readable output in output.log while the job runs (seen
//! before the exit line), the raw stream in stream.jsonl, the session and the figures in
//! meta.json at the end, no false `stalled` while a long tool call is in flight, and Claude
//! Code's own failure named as a known issue.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::claude::{FakeApi, Reply, clis_or_skip};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long the CLI may take to do anything (it starts slowly on a loaded machine).
const GUARD: Duration = Duration::from_secs(90);
/// `stall_after` in the config: short, so that a long call would be stalled without activity.
const STALL_AFTER_SECS: u64 = 2;

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// A jobs root, a project, a throwaway HOME for the CLI, and a config whose agent is the real
/// `claude` with stream-json output, talking to `api`.
struct World {
    tmp: TempDir,
    jobs: PathBuf,
    config: PathBuf,
}

impl World {
    fn new(claude: &Path, api: &FakeApi) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-claude-")
            .tempdir()
            .unwrap();
        let base = tmp.path();
        let (jobs, proj, home) = (base.join("jobs"), base.join("proj"), base.join("home"));
        for d in [&jobs, &proj, &home, &base.join("xdg")] {
            fs::create_dir_all(d).unwrap();
        }
        let q = |p: &Path| Value::from(p.to_str().unwrap()).to_string();
        // An explicit stream-json command line (not the default one): reads, `sleep` and
        // `echo` are allowed by rule, so no permission is asked for in -p mode.
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n\
             [agent]\ncommand = [{}, \"-p\", \"--output-format\", \"stream-json\", \"--verbose\", \
             \"--allowedTools\", \"Bash(sleep:*)\", \"Bash(echo:*)\"]\nprompt_template = \"{{task}}\"\nenv = {}\n\n\
             [alarms]\nstall_after = \"{STALL_AFTER_SECS}s\"\n\n[projects.p]\npath = {}\n",
            q(&jobs),
            q(&base.join("notifications.log")),
            q(&base.join("queue")),
            q(claude),
            api.agent_env_toml(&home),
            q(&proj),
        );
        let config = base.join("config.toml");
        fs::write(&config, text).unwrap();
        World { tmp, jobs, config }
    }

    fn luzia(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.tmp.path().join("xdg"))
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn run(&self, task: &str) -> String {
        let out = self.luzia(&["run", "p", "--", task]);
        assert!(out.status.success(), "{}", common::stderr_of(&out));
        common::stdout_of(&out).trim().to_owned()
    }

    fn file(&self, id: &str, name: &str) -> PathBuf {
        self.jobs.join(id).join(name)
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.file(id, "output.log")).unwrap_or_default()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.file(id, "meta.json")).unwrap()).unwrap()
    }

    /// The log once the job has ended: its exit line written, and then meta.json's `exit_code`.
    fn wait_done(&self, id: &str) -> String {
        wait_for(&format!("the end of {id}"), || {
            let log = self.log(id);
            let ended = log
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("exit:"));
            (ended && self.meta(id).get("exit_code").is_some()).then_some(log)
        })
    }

    /// What `luzia status --alerts` says about the alarms (its exit code also counts system
    /// alerts of this machine, so the text is what is checked).
    fn alerts(&self) -> String {
        common::stdout_of(&self.luzia(&["status", "--alerts"]))
    }
}

fn seconds_since_written(path: &Path) -> f64 {
    let modified = fs::metadata(path).unwrap().modified().unwrap();
    SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default()
        .as_secs_f64()
}

#[test]
fn a_claude_job_reads_as_prose_while_it_runs_and_a_long_call_is_not_stalled() {
    for claude in clis_or_skip("a_claude_job_reads_as_prose_while_it_runs") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "sleep 10", "description": "Wait for the build"}),
            ),
            Reply::text("The build is done."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Wait for the build, then say so.");

        // Readable output before the job has ended.
        let call = "▶ Bash  sleep 10  — Wait for the build\n";
        let log = wait_for("the tool call in output.log", || {
            Some(w.log(&id)).filter(|l| l.contains(call))
        });
        assert!(
            log.starts_with("── Claude Code session "),
            "the session's first line: {log}"
        );
        assert!(!log.contains("exit:"), "seen before the exit line: {log}");
        let activity: Value =
            serde_json::from_slice(&fs::read(w.file(&id, "activity.json")).unwrap()).unwrap();
        assert_eq!(activity["what"], "Bash: sleep 10");

        // Silent for longer than stall_after, but a call is in flight: not stalled.
        let log_path = w.file(&id, "output.log");
        wait_for("the log to be older than stall_after", || {
            (seconds_since_written(&log_path) > STALL_AFTER_SECS as f64 + 0.5).then_some(())
        });
        let alerts = w.alerts();
        assert!(!alerts.contains("stalled"), "{alerts}");
        // The same silence without the activity is a stall: the check above can fail.
        fs::remove_file(w.file(&id, "activity.json")).unwrap();
        let alerts = w.alerts();
        assert!(
            alerts.contains(&id) && alerts.contains("stalled"),
            "{alerts}"
        );
        assert!(
            w.log(&id).ends_with(call),
            "the call was still running when checked: {}",
            w.log(&id)
        );

        // The end: the result, the summary, the exit line last.
        let log = w.wait_done(&id);
        assert!(
        log.contains(&format!(
            "{call}  (Bash completed with no output)\nThe build is done.\n── success · 2 turns · "
        )),
        "{log}"
    );
        assert!(log.ends_with("\nexit:0\n"), "{log}");
        assert!(!w.file(&id, "activity.json").exists());

        // The raw stream, one JSON object a line.
        let raw = fs::read_to_string(w.file(&id, "stream.jsonl")).unwrap();
        let lines: Vec<Value> = raw
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines[0]["subtype"], "init", "{raw}");
        let last = lines.last().unwrap();
        assert_eq!(last["type"], "result", "{raw}");
        assert!(
            lines
                .iter()
                .any(|l| l["message"]["content"][0]["type"] == "tool_use")
        );

        // The session and the figures.
        let meta = w.meta(&id);
        assert_eq!(meta["session_id"], lines[0]["session_id"]);
        let usage = &meta["usage"];
        assert_eq!(usage["turns"], 2, "{meta}");
        assert_eq!(usage["outcome"], "success");
        assert_eq!(usage["model"], lines[0]["model"]);
        assert_eq!(usage["input_tokens"], last["usage"]["input_tokens"]);
        assert!(usage["cost_usd"].as_f64().unwrap() > 0.0, "{meta}");
        assert!(usage.get("error").is_none(), "{meta}");
        assert_eq!(meta["exit_code"], 0);

        // What any tool reads: `luzia jobs --json` carries the session and the figures.
        let out = w.luzia(&["jobs", "--json"]);
        let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let job = listed.iter().find(|j| j["id"] == id.as_str()).unwrap();
        assert_eq!(job["session_id"], lines[0]["session_id"], "{job}");
        assert_eq!(job["usage"]["cost_usd"], last["total_cost_usd"], "{job}");
        assert_eq!(job["usage"]["turns"], 2, "{job}");
    }
}

#[test]
fn a_run_that_answers_again_after_its_background_task_adds_up_its_results() {
    for claude in clis_or_skip("a_run_that_answers_again_after_its_background_task") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "echo indexed", "description": "Index the docs",
                       "run_in_background": true}),
            ),
            Reply::text("Indexing in the background."),
            Reply::text("The index is ready."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Index the docs in the background.");
        let log = w.wait_done(&id);
        // Each result in the pane, the later one saying which it is.
        let first = log.find("── success · 2 turns · ");
        let second = log.find("── success · result 2 · 1 turn · ");
        assert!(
            first.is_some() && second > first && log.contains("The index is ready."),
            "{log}"
        );
        assert!(
            log.contains("  ⧗ Background command \"Index the docs\" completed"),
            "{log}"
        );
        let raw = fs::read_to_string(w.file(&id, "stream.jsonl")).unwrap();
        if raw.contains("background_tasks_changed") {
            assert!(
                log.contains("  ⧗ waiting for 1 background task: Index the docs\n"),
                "{log}"
            );
        }
        let results: Vec<Value> = raw
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["type"] == "result")
            .collect();
        assert_eq!(results.len(), 2, "{raw}");
        // Turns and tokens add up; the cost is the run's (a new session: its last total).
        let meta = w.meta(&id);
        let usage = &meta["usage"];
        assert_eq!(usage["turns"], 3, "{meta}");
        let tokens = |k: &str| {
            results
                .iter()
                .map(|r| r["usage"][k].as_u64().unwrap())
                .sum::<u64>()
        };
        assert_eq!(usage["input_tokens"], tokens("input_tokens"), "{meta}");
        assert_eq!(usage["output_tokens"], tokens("output_tokens"), "{meta}");
        assert_eq!(
            usage["input_tokens"],
            api.requests().len() as u64 * common::claude::INPUT_TOKENS,
            "{meta}"
        );
        let cost = usage["cost_usd"].as_f64().unwrap();
        let last_total = results[1]["total_cost_usd"].as_f64().unwrap();
        assert!((cost - last_total).abs() < 1e-9, "{cost} {last_total}");
        assert_eq!(usage["outcome"], "success");
        assert_eq!(meta["exit_code"], 0);
        // Each result in the job's timeline too, with its own figures, before its end.
        let detail = common::stdout_of(&w.luzia(&["jobs", &id]));
        let at = |s: &str| detail.find(s);
        let (one, two) = (
            at("result    result 1 of 2: success · 2 turns · "),
            at("result    result 2 of 2: success · 1 turn · "),
        );
        assert!(
            one.is_some() && two > one && at("finished: completed") > two,
            "{detail}"
        );
    }
}

#[test]
fn claude_codes_own_failure_is_named_with_its_fix() {
    for claude in clis_or_skip("claude_codes_own_failure_is_named_with_its_fix") {
        let api = FakeApi::start(vec![Reply::error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & \
         Billing to upgrade or purchase credits.",
        )]);
        let w = World::new(&claude, &api);
        let id = w.run("Say hi.");
        let log = w.wait_done(&id);
        assert!(
            log.contains("── failed (API error 400): Credit balance is too low · 1 turn"),
            "{log}"
        );
        let meta = w.meta(&id);
        assert_eq!(
            meta["usage"]["error"], "Credit balance is too low",
            "{meta}"
        );
        assert_eq!(meta["exit_code"], 1);
        let detail = common::stdout_of(&w.luzia(&["jobs", &id]));
        assert!(
            detail.contains("claude-credit-balance") && detail.contains("Plans & Billing"),
            "{detail}"
        );
    }
}
