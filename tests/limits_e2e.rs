//! The account's usage limit through the real binary, with a fake `claude` that speaks Claude
//! Code's stream-json: on its first run it ends on the limit with the result Claude Code 1.x
//! gave (`Claude AI usage limit reached|<epoch>`, the epoch read from a file the test writes, a
//! few seconds ahead); resumed with `--resume SESSION` it succeeds. The job is `limited` with its
//! reset, a task dispatched meanwhile is held, and at the reset `luzia notify --watch` (several
//! at once) continues the job exactly once and starts the held task; a kill before the reset
//! cancels the resume. Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(150);

/// What the fake Claude Code (`common::limited_claude`) prints of the limit: the words Claude
/// Code 1.x printed, with the reset as Unix seconds.
const LIMIT_LINES: &str = r#"printf '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|%s","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}\n' "$reset" "$sid"
"#;

struct World {
    base: PathBuf,
    jobs: PathBuf,
    config: PathBuf,
    _tmp: TempDir,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-limits-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "proj", "xdg", "home", "bin", "queue", "state"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let claude = base.join("bin/claude");
        fs::write(&claude, common::limited_claude::script(LIMIT_LINES)).unwrap();
        let notifier = base.join("bin/notify.sh");
        fs::write(
            &notifier,
            format!(
                "#!/bin/sh\ncat >> '{}'\n",
                base.join("events.jsonl").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        for f in [&claude, &notifier] {
            fs::set_permissions(f, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let config = base.join("config.toml");
        fs::write(
            &config,
            format!(
                "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
                 command = [{}, \"-p\", \"--output-format\", \"stream-json\", \"--verbose\"]\n\
                 max_concurrent = 4\nprompt_template = \"{{task}}\"\n\
                 [agent.env]\nRESET_FILE = {}\n\n[projects.p]\npath = {}\n\n\
                 [notify]\ncommand = [{}]\n",
                q(&base.join("jobs")),
                q(&base.join("notes.log")),
                q(&base.join("queue")),
                q(&claude),
                q(&base.join("reset")),
                q(&base.join("proj")),
                q(&notifier),
            ),
        )
        .unwrap();
        World {
            jobs: base.join("jobs"),
            config,
            base,
            _tmp: tmp,
        }
    }

    /// The limit the fake prints resets `secs` from now.
    fn reset_in(&self, secs: i64) -> i64 {
        let at = chrono::Utc::now().timestamp() + secs;
        fs::write(self.base.join("reset"), at.to_string()).unwrap();
        at
    }

    fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("HOME", self.base.join("home"))
            .env("NO_COLOR", "1")
            .arg("--config")
            .arg(&self.config);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.luzia();
        cmd.args(args);
        assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            common::stderr_of(&out)
        );
        common::stdout_of(&out).trim().to_owned()
    }

    fn job(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["jobs", id, "--json"])).unwrap()
    }

    fn all(&self) -> Vec<Value> {
        serde_json::from_str(&self.ok(&["jobs", "--json"])).unwrap()
    }

    fn meta(&self, id: &str) -> Value {
        fs::read_to_string(self.jobs.join(id).join("meta.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + GUARD;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the job is `status` and its supervisor, which starts the queue's tasks after
    /// the exit line, has ended.
    fn wait_status(&self, id: &str, status: &str) -> Value {
        self.wait_for(&format!("{id} to be {status}"), || {
            self.meta(id).get("exit_code").is_some() && self.job(id)["status"] == status
        });
        let record = fs::read_to_string(self.jobs.join(id).join(".luzia/process.json")).unwrap();
        let record: Value = serde_json::from_str(&record).unwrap();
        let pid = record["supervisor"]["pid"].as_u64().unwrap();
        self.wait_for(&format!("{id}'s supervisor to end"), || {
            !Path::new(&format!("/proc/{pid}")).exists()
                || fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                })
        });
        self.job(id)
    }

    /// `luzia notify --watch`, running until the world is dropped.
    fn watcher(&self) -> common::ChildGuard {
        let mut cmd = self.luzia();
        cmd.args(["notify", "--watch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        common::ChildGuard::new(cmd.spawn().unwrap())
    }

    /// The jobs (other than `id`) whose `retry_of` names `id`.
    fn continuations(&self, id: &str) -> Vec<String> {
        self.all()
            .iter()
            .filter(|j| j["retry_of"] == id)
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.base);
    }
}

#[test]
fn a_limited_job_holds_the_queue_and_is_resumed_once_at_the_reset() {
    let w = World::new();
    let at = w.reset_in(8);
    let first = w.ok(&["run", "p", "write the docs"]);
    let job = w.wait_status(&first, "limited");
    // To the second, as the agent gave it (the words luzia renders it in keep the minute).
    let want = chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(job["resets_at"], want.as_str(), "{job}");
    let detail = w.ok(&["jobs", &first]);
    assert!(
        detail.contains("limited (usage limit · resets "),
        "{detail}"
    );

    // Dispatched while the limit stands: held, not started.
    let held = w.ok(&["run", "p", "PLAIN second task"]);
    assert!(
        held.starts_with("queued ") && held.contains("held: claude limit until "),
        "{held}"
    );
    assert_eq!(w.all().len(), 1, "nothing started while the limit stands");

    // Three watchers look at once; at the reset the job is continued once, then the held task.
    let _watchers: Vec<_> = (0..3).map(|_| w.watcher()).collect();
    w.wait_for("the continuation and the held task", || w.all().len() == 3);
    let continued = w.continuations(&first);
    assert_eq!(continued.len(), 1, "{continued:?}");
    let next = &continued[0];
    assert_eq!(w.wait_status(next, "completed")["resumes"], first.as_str());
    let started = fs::metadata(w.jobs.join(next)).unwrap().modified().unwrap();
    let reset = std::time::UNIX_EPOCH + Duration::from_secs(at as u64);
    let late = started
        .duration_since(reset)
        .expect("not continued before the reset");
    assert!(late >= Duration::from_secs(5), "the margin: {late:?}");
    // A watcher looks every 5 seconds: the reset, its margin and one look at most.
    assert!(
        late < Duration::from_secs(15),
        "continued {late:?} after the reset"
    );
    eprintln!("continued {:.1}s after the reset", late.as_secs_f64());
    let stdin = fs::read_to_string(w.jobs.join(next).join("stdin.txt")).unwrap();
    assert!(
        stdin.contains("usage limit that stopped you has reset"),
        "{stdin}"
    );
    assert_eq!(w.meta(&first)["resumed_by"], serde_json::json!([next]));
    let claim = fs::read_to_string(w.jobs.join(&first).join("limit-resume.json")).unwrap();
    assert!(claim.contains("resumed after the usage limit"), "{claim}");
    let second = w
        .all()
        .into_iter()
        .find(|j| j["task"] == "PLAIN second task")
        .unwrap();
    w.wait_status(second["id"].as_str().unwrap(), "completed");
    assert_eq!(
        w.ok(&["jobs", &first, "--json"])
            .matches(next.as_str())
            .count(),
        1
    );

    // The watchers told the stop once, with its reset, and the resume once.
    let events = || -> Vec<Value> {
        fs::read_to_string(w.base.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    w.wait_for("the resumed event", || {
        events().iter().any(|e| e["kind"] == "resumed")
    });
    let told: Vec<(String, String)> = events()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["job_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let of = |kind: &str| told.iter().filter(|(k, _)| k == kind).count();
    assert_eq!((of("limited"), of("resumed")), (1, 1), "{told:?}");
    let limited = events()
        .into_iter()
        .find(|e| e["kind"] == "limited")
        .unwrap();
    assert_eq!(limited["job_id"], first.as_str());
    assert_eq!(limited["resets_at"], want.as_str(), "{limited}");
    let resumed = events()
        .into_iter()
        .find(|e| e["kind"] == "resumed")
        .unwrap();
    assert!(
        resumed["title"].as_str().unwrap().contains(next.as_str()),
        "{resumed}"
    );
}

#[test]
fn a_kill_before_the_reset_cancels_the_resume() {
    let w = World::new();
    w.reset_in(5);
    let first = w.ok(&["run", "p", "write the docs"]);
    w.wait_status(&first, "limited");
    let out = w.ok(&["kill", &first]);
    assert!(out.starts_with(&format!("killed {first}")), "{out}");
    assert_eq!(w.job(&first)["status"], "killed");
    // A task held meanwhile starts at the reset: the starter has looked after the reset.
    let held = w.ok(&["run", "p", "PLAIN second task"]);
    assert!(held.contains("held: claude limit"), "{held}");
    let listed = w.ok(&["queue"]);
    assert!(
        listed.contains("PLAIN second task") && listed.contains("held: claude limit until "),
        "{listed}"
    );
    let _watcher = w.watcher();
    w.wait_for("the held task to start", || w.all().len() == 2);
    let second = w
        .all()
        .into_iter()
        .find(|j| j["id"] != first.as_str())
        .unwrap();
    assert_eq!(second["task"], "PLAIN second task");
    w.wait_status(second["id"].as_str().unwrap(), "completed");
    assert!(w.continuations(&first).is_empty());
    assert!(w.meta(&first).get("resumed_by").is_none());
}
