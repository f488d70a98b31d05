//! Sessions through the real binary, with a fake `claude` (a shell script named `claude`, so
//! luzia treats it as Claude Code): the session id fixed at dispatch, `luzia reply` continuing
//! it (linked both ways, refused while the job runs, for another agent, and for the second of
//! two replies at once), `luzia retry` of a killed Claude job resuming its session, and of a
//! session never saved starting over. The fake records its arguments and its stdin in the job
//! directory, and saves a transcript under `$HOME/.claude/projects/` as Claude Code does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(30);

/// The fake Claude Code: `HOLD` in the prompt waits for `$RELEASE`, `NOSAVE` saves no transcript
/// and fails at once.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
d="$LUZIA_JOB_DIR"
printf '%s\n' "$@" > "$d/argv.txt"
env > "$d/env.txt"
cat > "$d/stdin.txt"
sid=""; prev=""
for a in "$@"; do
  case "$prev" in --session-id|--resume) sid="$a";; esac
  prev="$a"
done
if grep -q NOSAVE "$d/stdin.txt"; then echo "no session saved"; exit 3; fi
mkdir -p "$HOME/.claude/projects/-proj"
printf '{"prompt": "x"}\n' >> "$HOME/.claude/projects/-proj/$sid.jsonl"
echo "fake claude in session $sid"
touch "$d/started"
if grep -q HOLD "$d/stdin.txt"; then
  while [ ! -e "$RELEASE" ]; do sleep 0.05; done
fi
exit 0
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
            .prefix("luzia-sessions-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "proj", "xdg", "home", "bin", "queue"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let claude = base.join("bin/claude");
        fs::write(&claude, FAKE_CLAUDE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let config = base.join("config.toml");
        fs::write(
            &config,
            format!(
                "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
                 command = [{}, \"-p\"]\nmax_concurrent = 4\nprompt_template = \"{{task}}\"\n\
                 [agent.env]\nRELEASE = {}\n\n[projects.p]\npath = {}\n",
                q(&base.join("jobs")),
                q(&base.join("notes.log")),
                q(&base.join("queue")),
                q(&claude),
                q(&base.join("release")),
                q(&base.join("proj")),
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

    fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
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

    /// Runs a command that must print one new job id.
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

    fn file(&self, id: &str, name: &str) -> String {
        fs::read_to_string(self.jobs.join(id).join(name))
            .unwrap_or_else(|e| panic!("{id}/{name}: {e}"))
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_str(&self.file(id, "meta.json")).unwrap()
    }

    fn argv(&self, id: &str) -> Vec<String> {
        self.file(id, "argv.txt")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + GUARD;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the job has ended and its supervisor has recorded the finish.
    fn wait_done(&self, id: &str) -> Value {
        self.wait_for(&format!("{id} to finish"), || {
            self.meta(id).get("exit_code").is_some()
        });
        let out = self.run(&["jobs", id, "--json"]);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn release(&self) {
        fs::write(self.base.join("release"), "").unwrap();
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = fs::write(self.base.join("release"), "");
        common::kill_processes_mentioning(&self.base);
    }
}

#[test]
fn reply_continues_the_session_linked_both_ways() {
    let w = World::new();
    let first = w.started(&["run", "p", "first task"]);
    assert_eq!(w.wait_done(&first)["status"], "completed");
    let session = w.meta(&first)["session_id"].as_str().unwrap().to_owned();
    // The session first; the permission bridge after everything the command says.
    assert_eq!(
        w.argv(&first)[..3],
        ["--session-id", session.as_str(), "-p"]
    );
    assert!(w.argv(&first).ends_with(&[
        "--permission-prompt-tool".to_owned(),
        "mcp__luzia__permission".to_owned()
    ]));
    // An agent that asks through a shell finds this luzia first, and may wait for an answer.
    let env = w.file(&first, "env.txt");
    let luzia_dir = Path::new(LUZIA).parent().unwrap().to_str().unwrap();
    assert!(
        env.lines()
            .any(|l| l.starts_with(&format!("PATH={luzia_dir}:"))),
        "{env}"
    );
    for var in ["BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS"] {
        assert!(
            env.lines().any(|l| l == format!("{var}=2073600000")),
            "{env}"
        );
    }

    let out = w.run(&["reply", &first, "now", "the", "docs"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    let second = common::stdout_of(&out).trim().to_owned();
    assert!(
        common::stderr_of(&out).contains(&format!("{second} continues the session of {first}")),
        "{}",
        common::stderr_of(&out)
    );
    assert_eq!(w.wait_done(&second)["status"], "completed");
    assert_eq!(w.argv(&second)[..3], ["--resume", session.as_str(), "-p"]);
    assert_eq!(w.file(&second, "stdin.txt"), "now the docs");
    let meta = w.meta(&second);
    assert_eq!(meta["resumes"], first.as_str());
    assert_eq!(meta["session_id"], session.as_str());
    assert_eq!(meta["task"], "now the docs");
    assert_eq!(meta["cwd"], w.base.join("proj").to_str().unwrap());
    assert_eq!(w.meta(&first)["resumed_by"], serde_json::json!([second]));
    // The old job's own fields survived the link.
    assert_eq!(w.meta(&first)["exit_code"], 0);
}

#[test]
fn reply_is_refused_while_the_job_runs_and_for_a_job_without_a_claude_session() {
    let w = World::new();
    let held = w.started(&["run", "p", "HOLD on"]);
    w.wait_for("the agent to start", || {
        w.jobs.join(&held).join("started").exists()
    });
    let out = w.run(&["reply", &held, "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let said = common::stderr_of(&out);
    assert!(
        said.contains(&format!("job {held} is still running")),
        "{said}"
    );
    assert!(w.meta(&held).get("resumed_by").is_none());
    w.release();
    w.wait_done(&held);

    // A job of another agent, and one from before session ids, written as the orchestrator does.
    for (id, meta, why) in [
        (
            "100000-aaaa",
            r#"{"id": "100000-aaaa", "project": "p", "task": "t", "agent": "aider", "session_id": "s"}"#,
            "ran 'aider', which keeps no session luzia can continue",
        ),
        (
            "100000-cccc",
            r#"{"id": "100000-cccc", "project": "p", "task": "t", "agent": "codex", "session_id": "s"}"#,
            "names no ACP command line in its meta.json",
        ),
        (
            "100000-bbbb",
            r#"{"id": "100000-bbbb", "project": "p", "task": "t", "agent": "claude"}"#,
            "has no session id in meta.json",
        ),
    ] {
        let dir = w.jobs.join(id);
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("meta.json"), meta).unwrap();
        fs::write(dir.join("output.log"), "done\n\nexit:0\n").unwrap();
        let out = w.run(&["reply", id, "hello"]);
        assert_eq!(out.status.code(), Some(1));
        let said = common::stderr_of(&out);
        assert!(said.contains(why), "{said}");
        assert!(said.contains(&format!("luzia retry {id}")), "{said}");
    }
}

#[test]
fn of_two_replies_at_once_one_continues_the_session_and_the_other_is_told_which() {
    let w = World::new();
    let first = w.started(&["run", "p", "first"]);
    w.wait_done(&first);
    let spawn = |text: &str| {
        let mut cmd = w.luzia();
        cmd.args(["reply", &first, text]);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    let (a, b) = (spawn("HOLD one"), spawn("HOLD two"));
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let won: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
    let lost: Vec<&Output> = outs.iter().filter(|o| !o.status.success()).collect();
    assert_eq!((won.len(), lost.len()), (1, 1), "{outs:?}");
    let winner = common::stdout_of(won[0]).trim().to_owned();
    let said = common::stderr_of(lost[0]);
    assert!(
        said.contains(&format!("is being continued by job {winner} (running)")),
        "{said}"
    );
    assert_eq!(w.meta(&first)["resumed_by"], serde_json::json!([winner]));
    w.release();
    w.wait_done(&winner);
    // Once it has ended, the session can be continued again: from either job.
    let third = w.started(&["reply", &winner, "and then"]);
    w.wait_done(&third);
    assert_eq!(w.meta(&third)["resumes"], winner.as_str());
}

#[test]
fn retry_of_a_killed_claude_job_resumes_its_session() {
    let w = World::new();
    let held = w.started(&["run", "p", "HOLD the long task"]);
    w.wait_for("the agent to start", || {
        w.jobs.join(&held).join("started").exists()
    });
    let out = w.run(&["kill", &held, "--grace", "5s"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    assert_eq!(w.wait_done(&held)["status"], "killed");
    let session = w.meta(&held)["session_id"].as_str().unwrap().to_owned();

    let out = w.run(&["retry", &held]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    let again = common::stdout_of(&out).trim().to_owned();
    assert!(
        common::stderr_of(&out).contains(&format!("{again} continues the session of job {held}")),
        "{}",
        common::stderr_of(&out)
    );
    w.release();
    assert_eq!(w.wait_done(&again)["status"], "completed");
    assert_eq!(w.argv(&again)[..3], ["--resume", session.as_str(), "-p"]);
    let prompt = w.file(&again, "stdin.txt");
    assert!(
        prompt.contains("ended before it was done (killed)"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("HOLD"),
        "the task is in the transcript: {prompt}"
    );
    let meta = w.meta(&again);
    assert_eq!(
        meta["task"], "HOLD the long task",
        "the table shows the task"
    );
    assert_eq!(
        (meta["retry_of"].as_str(), meta["resumes"].as_str()),
        (Some(held.as_str()), Some(held.as_str()))
    );
}

#[test]
fn retry_of_a_claude_job_whose_session_was_never_saved_starts_over() {
    let w = World::new();
    let failed = w.started(&["run", "p", "NOSAVE this"]);
    assert_eq!(w.wait_done(&failed)["status"], "failed");
    let out = w.run(&["retry", &failed]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    let said = common::stderr_of(&out);
    assert!(said.contains("was never saved"), "{said}");
    let again = common::stdout_of(&out).trim().to_owned();
    w.wait_done(&again);
    let argv = w.argv(&again);
    assert_eq!(argv[0], "--session-id");
    assert_ne!(argv[1], w.meta(&failed)["session_id"].as_str().unwrap());
    assert_eq!(w.file(&again, "stdin.txt"), "NOSAVE this");
    assert!(w.meta(&again).get("resumes").is_none());
}
