//! End-to-end in a real terminal (tmux), with a fake `claude` (a shell script of that name): the
//! cockpit's `R` replies to a finished job's session from the input bar, and its `a` opens the
//! session in the terminal, the cockpit stepping aside while the session reads the keyboard and
//! coming back after; `luzia run --fg` runs a task interactively and records it as a job.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;
use tmux::{Cockpit, Opts, POLL, Sandbox, TIMEOUT};

/// Print mode (`-p`): records its arguments and stdin and ends. Interactive: shows the session
/// and records the line typed at it.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
d="$LUZIA_JOB_DIR"
printf '%s\n' "$@" > "$d/argv.txt"
sid=""; prev=""; print=""
for a in "$@"; do
  case "$prev" in --session-id|--resume) sid="$a";; esac
  [ "$a" = "-p" ] && print=1
  prev="$a"
done
mkdir -p "$HOME/.claude/projects/-proj"
printf '{}\n' >> "$HOME/.claude/projects/-proj/$sid.jsonl"
if [ -n "$print" ]; then
  cat > "$d/stdin.txt"
  echo "answered in session $sid"
  exit 0
fi
echo "FAKE SESSION $sid: say something"
read line
echo "$line" > "$d/typed.txt"
exit 0
"#;

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(POLL);
    }
}

struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.0);
    }
}

/// A config whose agent is the fake claude, in print mode.
fn config(sb: &Sandbox) -> PathBuf {
    let base = sb.tmp.path();
    let project = base.join("proj");
    fs::create_dir_all(&project).unwrap();
    let claude = base.join("bin/claude");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, FAKE_CLAUDE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
    let text = format!(
        "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
         command = [{}, \"-p\"]\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n",
        q(&sb.root),
        q(&base.join("notifications.log")),
        q(&base.join("queue")),
        q(&claude),
        q(&project),
    );
    let config = base.join("sessions.toml");
    fs::write(&config, text).unwrap();
    config
}

fn meta(sb: &Sandbox, id: &str) -> Value {
    fs::read(sb.job_dir(id).join("meta.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// A finished Claude job, started through `luzia run` as the operator would.
fn finished_job(sb: &Sandbox, config: &Path) -> String {
    let out = Command::new(tmux::BIN)
        .env("HOME", &sb.home)
        .env("XDG_CONFIG_HOME", &sb.config)
        .env_remove("LUZIA_JOBS_DIR")
        .arg("--config")
        .arg(config)
        .args(["run", "p", "write the report"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr_of(&out));
    let id = common::stdout_of(&out).trim().to_owned();
    wait_until("the first job to finish", || {
        meta(sb, &id).get("exit_code").is_some()
    });
    id
}

/// The job that continues `first`, once it exists.
fn continuation(sb: &Sandbox, first: &str) -> String {
    let mut found = String::new();
    wait_until("a job continuing the session", || {
        common::job_ids(&sb.root).into_iter().any(|id| {
            let yes = meta(sb, &id)["resumes"] == first;
            if yes {
                found = id;
            }
            yes
        })
    });
    found
}

fn cockpit<'a>(sb: &'a Sandbox, config: &Path) -> Cockpit<'a> {
    let opts = Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .env("USER", "tester");
    let ck = Cockpit::start(sb, opts);
    ck.wait_ready();
    ck
}

#[test]
fn reply_key_continues_the_selected_job_s_session() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let config = config(&sb);
    let first = finished_job(&sb, &config);
    let ck = cockpit(&sb, &config);
    ck.wait_row(&first, "completed", |r| r.contains("write the report"));
    ck.key("R");
    ck.wait_text(&format!("reply to {first}"));
    ck.type_text("now add the summary");
    ck.key("Enter");
    let second = continuation(&sb, &first);
    ck.wait_text("continues the session");
    wait_until("the reply to finish", || {
        meta(&sb, &second).get("exit_code").is_some()
    });
    assert_eq!(
        fs::read_to_string(sb.job_dir(&second).join("stdin.txt")).unwrap(),
        "now add the summary"
    );
    let session = meta(&sb, &first)["session_id"].clone();
    assert_eq!(meta(&sb, &second)["session_id"], session);
    assert_eq!(meta(&sb, &first)["resumed_by"], serde_json::json!([second]));
    ck.wait_row(&second, "the reply listed", |r| {
        r.contains("now add the summary")
    });
}

#[test]
fn attach_key_steps_aside_for_the_session_and_comes_back() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let config = config(&sb);
    let first = finished_job(&sb, &config);
    let session = meta(&sb, &first)["session_id"].as_str().unwrap().to_owned();
    let ck = cockpit(&sb, &config);
    ck.wait_row(&first, "completed", |r| r.contains("write the report"));
    ck.key("a");
    let s = ck.wait_text(&format!("FAKE SESSION {session}"));
    assert!(
        s.table_box().is_none(),
        "the cockpit stepped aside:\n{}",
        s.text()
    );
    // Typed at the session, not at the cockpit (whose `q` would quit).
    ck.type_text("quite right");
    ck.key("Enter");
    let attached = continuation(&sb, &first);
    wait_until("the session's job to end", || {
        meta(&sb, &attached).get("exit_code").is_some()
    });
    assert_eq!(
        fs::read_to_string(sb.job_dir(&attached).join("typed.txt")).unwrap(),
        "quite right\n"
    );
    ck.wait_ready();
    ck.wait_text(&format!("back from the session of {first}"));
    let m = meta(&sb, &attached);
    assert_eq!(m["foreground"], true);
    assert_eq!(m["exit_code"], 0);
    let argv: Vec<String> = fs::read_to_string(sb.job_dir(&attached).join("argv.txt"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    // No print mode and no prompt tool: the person in the terminal answers Claude Code.
    assert_eq!(
        argv,
        ["--resume", session.as_str(), "--permission-mode", "default"],
        "no print mode"
    );
    let log = fs::read_to_string(sb.job_dir(&attached).join("output.log")).unwrap();
    assert!(log.contains("runs in the foreground of"), "{log}");
    assert!(log.trim_end().ends_with("exit:0"), "{log}");
    // Still the cockpit: it takes keys again.
    ck.key("?");
    ck.wait_text("help (any key closes)");
}

#[test]
fn run_fg_runs_the_task_in_the_terminal_and_records_the_job() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let config = config(&sb);
    let opts = Opts {
        command: "run".into(),
        // After `--`, a task may begin with `-`; the jobs root is the config's.
        args: vec![
            "--fg".into(),
            "p".into(),
            "--".into(),
            "-start with the tests".into(),
        ],
        no_jobs_dir: true,
        ..Opts::default()
    }
    .global_arg("--config")
    .global_arg(config.to_str().unwrap());
    let ck = Cockpit::start(&sb, opts);
    let s = ck.wait_text("FAKE SESSION");
    assert!(s.contains("runs in this terminal"), "{}", s.text());
    ck.type_text("go on");
    ck.key("Enter");
    ck.wait_text("AFTER-COCKPIT rc=0");
    let id = common::job_ids(&sb.root).remove(0);
    let m = meta(&sb, &id);
    assert_eq!(
        (m["foreground"].clone(), m["exit_code"].clone()),
        (true.into(), 0.into())
    );
    let session = m["session_id"].as_str().unwrap();
    let argv: Vec<String> = fs::read_to_string(sb.job_dir(&id).join("argv.txt"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        argv,
        [
            "--session-id",
            session,
            "--permission-mode",
            "default",
            "--",
            "-start with the tests"
        ],
        "interactive, the task as the first prompt, and no prompt tool"
    );
    assert_eq!(
        fs::read_to_string(sb.job_dir(&id).join("typed.txt")).unwrap(),
        "go on\n"
    );
    assert!(sb.job_dir(&id).join(".luzia/process.json").exists());
}

#[test]
fn a_ctrl_c_in_the_session_is_the_session_s_and_the_cockpit_stays() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let config = config(&sb);
    let first = finished_job(&sb, &config);
    let ck = cockpit(&sb, &config);
    ck.wait_row(&first, "completed", |r| r.contains("write the report"));
    ck.key("a");
    ck.wait_text("FAKE SESSION");
    // Cooked mode: the terminal sends SIGINT to its whole foreground group, the cockpit too.
    ck.key("C-c");
    let attached = continuation(&sb, &first);
    wait_until("the session's job to end", || {
        meta(&sb, &attached).get("exit_code").is_some()
    });
    assert_eq!(meta(&sb, &attached)["exit_code"], -2, "ended by the Ctrl-C");
    ck.wait_text("press Enter to return to the cockpit");
    ck.key("Enter");
    ck.wait_ready();
    ck.wait_text(&format!("luzia attach {first} ended with exit 130"));
    assert!(
        !sb.ctl.join("luzia.rc").exists(),
        "the cockpit did not quit on the session's Ctrl-C"
    );
}
