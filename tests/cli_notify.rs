//! `luzia notify` through the real binary, with real processes on every side: agents started by
//! `luzia run` that ask a question (answered with `luzia answer`) and fail, two `luzia notify
//! --watch` at once sharing one state directory, and a `[notify] command` that is a shell script
//! appending its stdin to a file. Each event must arrive exactly once; a later `--once` sends
//! nothing; a command that hangs is killed, with what it started, at its timeout. Every wait has
//! a deadline; nothing sleeps for a fixed time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(40);

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// A temporary directory with a jobs root, a project, a config home, a state home, and a
/// config whose agent is a shell script and whose `[notify] command` is another. Dropping it
/// kills every process that mentions it.
struct World {
    base: PathBuf,
    jobs: PathBuf,
    config: PathBuf,
    state: PathBuf,
    received: PathBuf,
    _tmp: TempDir,
}

/// The agent: task `ask` asks a question and then fails with exit 3; any other task fails with
/// exit 5 at once.
const AGENT: &str = r#"read task
if [ "$task" = ask ]; then
  answer=$("$LUZIA_BIN" ask "Which database?" --option production --option staging) || exit 9
  echo "told: $answer"
  exit 3
fi
echo "giving up on $task"
exit 5
"#;

impl World {
    fn new(notify: &str) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-notify-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let w = World {
            jobs: base.join("jobs"),
            config: base.join("config.toml"),
            state: base.join("state"),
            received: base.join("received.jsonl"),
            base,
            _tmp: tmp,
        };
        for d in ["jobs", "proj", "xdg", "state"] {
            fs::create_dir(w.base.join(d)).unwrap();
        }
        let agent = w.base.join("agent.sh");
        fs::write(&agent, AGENT.replace("$LUZIA_BIN", LUZIA)).unwrap();
        let notifier = w.base.join("notify.sh");
        fs::write(
            &notifier,
            format!("#!/bin/sh\ncat >> '{}'\n", w.received.display()),
        )
        .unwrap();
        chmod_x(&notifier);
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
             command = [\"sh\", {}]\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n\n\
             [notify]\n{}\n",
            q(&w.jobs),
            q(&w.base.join("notifications.log")),
            q(&w.base.join("queue")),
            q(&agent),
            q(&w.base.join("proj")),
            notify.replace("NOTIFIER", &q(&notifier)),
        );
        fs::write(&w.config, text).unwrap();
        w
    }

    fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("XDG_STATE_HOME", &self.state)
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .arg("--config")
            .arg(&self.config);
        cmd
    }

    /// Runs luzia to the end; its exit code, stdout and stderr.
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut cmd = self.luzia();
        cmd.args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        (out.status.code(), stdout_of(&out), stderr_of(&out))
    }

    /// `luzia notify --watch`, its stdout in `name`.
    fn watcher(&self, name: &str) -> (ChildGuard, PathBuf) {
        let log = self.base.join(name);
        let child = self
            .luzia()
            .args(["notify", "--watch"])
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).unwrap())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let guard = ChildGuard::new(child);
        wait_for(&format!("{name} to say it watches"), || {
            fs::read_to_string(&log)
                .ok()
                .filter(|t| t.contains("luzia notify: watching"))
        });
        (guard, log)
    }

    /// What the notifier script received: one JSON event a line.
    fn received(&self) -> Vec<Value> {
        fs::read_to_string(&self.received)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn received_keys(&self) -> Vec<String> {
        self.received()
            .iter()
            .map(|e| e["key"].as_str().unwrap().to_owned())
            .collect()
    }

    fn wait_received(&self, key: &str) -> Value {
        wait_for(&format!("the event {key}"), || {
            self.received().into_iter().find(|e| e["key"] == key)
        })
    }

    fn start(&self, task: &str) -> String {
        let (code, out, err) = self.run(&["run", "p", "--", task]);
        assert_eq!(code, Some(0), "luzia run: {err}");
        out.trim().to_owned()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn chmod_x(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn two_watchers_send_each_question_and_failure_exactly_once() {
    let w = World::new("command = [NOTIFIER]");
    let (mut first, first_log) = w.watcher("watch-1.out");
    let (mut second, second_log) = w.watcher("watch-2.out");

    let asking = w.start("ask");
    let question = w.wait_received(&format!("{asking}:question:q1"));
    assert_eq!(question["kind"], "question");
    assert_eq!(question["job_id"], asking.as_str());
    assert_eq!(question["project"], "p");
    assert_eq!(question["task"], "ask");
    assert_eq!(question["question"], "Which database?");
    assert_eq!(
        question["options"],
        serde_json::json!(["production", "staging"])
    );
    assert_eq!(question["instance_id"], "q1");
    assert_eq!(
        Path::new(question["job_dir"].as_str().unwrap()),
        fs::canonicalize(w.jobs.join(&asking)).unwrap()
    );
    assert!(!question["host"].as_str().unwrap().is_empty());
    assert!(question["at"].as_str().unwrap().ends_with('Z'));

    let (code, _, err) = w.run(&["answer", &asking, "--question", "q1", "staging"]);
    assert_eq!(code, Some(0), "luzia answer: {err}");
    let failed = w.wait_received(&format!("{asking}:failed"));
    assert_eq!(failed["exit_code"], 3);
    assert!(
        failed["body"].as_str().unwrap().contains("told: staging"),
        "the failure's last output: {failed}"
    );

    // A second job fails after the first: once its event is in, both watchers have looked
    // since the first job's events, and had every chance to send them again.
    let quick = w.start("quick");
    w.wait_received(&format!("{quick}:failed"));
    // A watcher says it sent an event once its command has ended, which is after the command
    // wrote what it received: wait for the three lines before stopping the watchers.
    let sent_lines = || {
        [&first_log, &second_log]
            .iter()
            .map(|l| fs::read_to_string(l).unwrap_or_default())
            .map(|t| t.lines().filter(|l| l.contains(": sent in")).count())
            .sum::<usize>()
    };
    wait_for("the watchers' three `sent in` lines", || {
        (sent_lines() >= 3).then_some(())
    });
    first.kill_and_reap();
    second.kill_and_reap();

    let want = [
        format!("{asking}:question:q1"),
        format!("{asking}:failed"),
        format!("{quick}:failed"),
    ];
    assert_eq!(w.received_keys(), want, "each event once, in order");
    let sent_lines = sent_lines();
    assert_eq!(sent_lines, 3, "the two watchers shared the work");

    // A later look, as cron would run it, finds nothing new.
    let (code, out, err) = w.run(&["notify", "--once"]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert_eq!(w.received_keys(), want);
}

#[test]
fn once_sends_what_stands_filters_by_kind_and_a_rerun_sends_nothing() {
    let w = World::new("command = [NOTIFIER]\nevents = [\"failed\"]");
    let asking = w.start("ask");
    wait_for("the question to be asked", || {
        w.jobs
            .join(&asking)
            .join("clarification.json")
            .exists()
            .then_some(())
    });
    let quick = w.start("quick");
    wait_for("the quick job to end", || {
        fs::read_to_string(w.jobs.join(&quick).join("output.log"))
            .ok()
            .filter(|t| t.contains("exit:5"))
    });
    let (code, out, err) = w.run(&["notify", "--once"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(w.received_keys(), [format!("{quick}:failed")]);
    let (code, out, _) = w.run(&["notify", "--once"]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert_eq!(w.received().len(), 1);
    let state = w.state.join("luzia/notify-sent.json");
    assert!(state.is_file(), "the ledger is in the state directory");
}

#[test]
fn a_hung_command_is_killed_with_what_it_started_and_the_next_event_still_goes() {
    let w = World::new(
        "command = [\"sh\", \"-c\", \"sleep 300 & echo $! >> \\\"$0\\\"; wait\", \"PIDS\"]\ntimeout_seconds = 1",
    );
    let pids = w.base.join("pids");
    let config = fs::read_to_string(&w.config)
        .unwrap()
        .replace("PIDS", pids.to_str().unwrap());
    fs::write(&w.config, config).unwrap();
    for task in ["one", "two"] {
        let id = w.start(task);
        wait_for("the job to end", || {
            fs::read_to_string(w.jobs.join(&id).join("output.log"))
                .ok()
                .filter(|t| t.contains("exit:5"))
        });
    }
    let started = Instant::now();
    let (code, out, _) = w.run(&["notify", "--once"]);
    assert!(started.elapsed() < GUARD);
    assert_eq!(code, Some(1), "a command that failed is exit 1: {out}");
    assert_eq!(out.matches("was killed").count(), 2, "{out}");
    let sleepers: Vec<u32> = fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(sleepers.len(), 2);
    for pid in sleepers {
        wait_for(&format!("the notifier's sleep {pid} to be gone"), || {
            (!pid_alive(pid) || proc_comm(pid).is_none_or(|c| c != "sleep")).then_some(())
        });
    }
    // Killed is not sent again: at most once.
    let (code, out, _) = w.run(&["notify", "--once"]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
}

#[test]
fn test_sends_a_sample_and_a_missing_table_says_what_to_add() {
    let w = World::new("command = [NOTIFIER, \"{kind}\"]");
    let (code, out, err) = w.run(&["notify", "--test"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("test") && out.contains("sent in"), "{out}");
    let got = w.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["kind"], "test");
    assert_eq!(
        got[0]["options"],
        serde_json::json!(["production", "staging"])
    );

    let bare = World::new("command = [NOTIFIER]");
    let text = fs::read_to_string(&bare.config).unwrap();
    let cut = text.find("[notify]").unwrap();
    fs::write(&bare.config, &text[..cut]).unwrap();
    let (code, _, err) = bare.run(&["notify", "--once"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("no [notify] table") && err.contains(bare.config.to_str().unwrap()),
        "{err}"
    );
    let (code, _, err) = bare.run(&["notify"]);
    assert_eq!(
        code,
        Some(2),
        "one of --watch, --once, --test is required: {err}"
    );
}

#[test]
fn a_stall_no_file_announces_is_found_by_the_tick_and_each_stall_sent_once() {
    let w = World::new(
        "command = [NOTIFIER]\nevents = [\"stalled\"]\n\n[alarms]\nstall_after = \"1s\"",
    );
    let (_watcher, _) = w.watcher("watch.out");
    // A job whose agent is a live process of the test, writing nothing after its first line.
    let agent = sleeper();
    let id = "140000-5a11";
    let dir = w.jobs.join(id);
    fs::create_dir(&dir).unwrap();
    record_process(&dir, agent.id());
    fs::write(dir.join("pid"), format!("{}\n", agent.id())).unwrap();
    let meta = serde_json::json!({"id": id, "project": "p", "task": "quiet",
        "started": now_rfc3339(), "pid": agent.id()});
    fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    fs::write(dir.join("output.log"), "working\n").unwrap();
    let stalled = |w: &World| -> Vec<String> {
        w.received_keys()
            .into_iter()
            .filter(|k| k.starts_with(&format!("{id}:stalled:")))
            .collect()
    };
    let first = wait_for("the first stall", || stalled(&w).first().cloned());
    // New output ends that stall; silence again is another stall, with another key.
    fs::write(dir.join("output.log"), "working\nstill working\n").unwrap();
    wait_for("a second stall", || (stalled(&w).len() >= 2).then_some(()));
    let all = stalled(&w);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0], first);
    assert_ne!(all[0], all[1]);
}

#[test]
fn a_stopped_watcher_takes_its_hung_command_with_it() {
    let w = World::new(
        "command = [\"sh\", \"-c\", \"sleep 300 & echo $! >> \\\"$0\\\"; wait\", \"PIDS\"]\ntimeout_seconds = 600",
    );
    let pids = w.base.join("pids");
    let config = fs::read_to_string(&w.config)
        .unwrap()
        .replace("PIDS", pids.to_str().unwrap());
    fs::write(&w.config, config).unwrap();
    let (mut watcher, _) = w.watcher("watch.out");
    let dir = w.jobs.join("150000-dead");
    fs::create_dir(&dir).unwrap();
    let meta = serde_json::json!({"id": "150000-dead", "project": "p", "task": "t",
        "started": now_rfc3339()});
    fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    fs::write(dir.join("output.log"), "no\n\nexit:1\n").unwrap();
    let sleeper: u32 = wait_for("the command to start", || {
        fs::read_to_string(&pids).ok()?.trim().parse().ok()
    });
    assert!(pid_alive(sleeper));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(watcher.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = watcher.wait_within(GUARD, "the watcher after SIGTERM");
    assert_eq!(status.code(), Some(143));
    wait_for("the hung command's sleep to be gone", || {
        (!pid_alive(sleeper) || proc_comm(sleeper).is_none_or(|c| c != "sleep")).then_some(())
    });
}
