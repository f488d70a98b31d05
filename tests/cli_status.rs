//! `luzia status` against real job directories: live jobs claim the pid of a real `sleep`, logs
//! are real files (their times set where age matters), /proc is a fake one given through
//! LUZIA_PROC, and `--watch` runs as a real process stopped by a real signal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use common::*;
use serde_json::{Value, json};

/// A sandbox with a fake /proc (memory half used, load below the cores), its own notifications
/// log and queue, so that nothing of the host can raise an alert or add an event.
struct Fleet {
    sb: Sandbox,
    proc_dir: PathBuf,
}

fn fake_proc(dir: &Path, used_percent: u64, load1: &str, cores: usize) {
    fs::create_dir_all(dir).unwrap();
    let total = 16_000_000u64;
    let available = total - total * used_percent / 100;
    fs::write(
        dir.join("meminfo"),
        format!("MemTotal: {total} kB\nMemFree: 1000 kB\nMemAvailable: {available} kB\n"),
    )
    .unwrap();
    fs::write(
        dir.join("loadavg"),
        format!("{load1} 0.40 0.30 1/234 5678\n"),
    )
    .unwrap();
    let mut stat = String::from("cpu  100 0 100 1000 0 0 0 0 0 0\n");
    for i in 0..cores {
        stat.push_str(&format!("cpu{i} 50 0 50 500 0 0 0 0 0 0\n"));
    }
    fs::write(dir.join("stat"), stat).unwrap();
}

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Fleet {
    fn new() -> Fleet {
        let sb = Sandbox::new();
        let proc_dir = sb.tmp.path().join("proc");
        fake_proc(&proc_dir, 50, "0.50", 4);
        Fleet { sb, proc_dir }
    }

    fn envs(&self) -> Vec<(&'static str, PathBuf)> {
        let tmp = self.sb.tmp.path();
        vec![
            ("LUZIA_PROC", self.proc_dir.clone()),
            ("LUZIA_NOTIFICATIONS_LOG", tmp.join("notifications.log")),
            ("LUZIA_QUEUE_DIR", tmp.join("queue")),
        ]
    }

    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = self.sb.luzia();
        cmd.envs(self.envs()).arg("status");
        cmd
    }

    fn status(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// The report's text, checking the exit code.
    fn text(&self, args: &[&str], code: i32) -> String {
        let out = self.status(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "status {args:?}: {}{}",
            stdout_of(&out),
            stderr_of(&out)
        );
        stdout_of(&out)
    }

    fn config(&self, body: &str) {
        let dir = self.sb.xdg.join("luzia");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("config.toml"), body).unwrap();
    }

    fn meta(&self, id: &str, project: &str, task: &str, started: &str) {
        let m = json!({"id": id, "project": project, "task": task, "started": started});
        self.sb.write(id, "meta.json", m.to_string());
    }

    /// A job whose agent is the live process `pid`, started `minutes` ago.
    fn running(&self, id: &str, project: &str, pid: u32, minutes: i64) {
        self.meta(id, project, "work", &ago(minutes));
        self.sb.write_pid(id, pid);
        self.sb.write(id, "output.log", "working\n");
    }

    fn finished(&self, id: &str, project: &str, code: i32, log: &str) {
        self.meta(id, project, "work", &ago(60));
        self.sb
            .write(id, "output.log", format!("{log}\n\nexit:{code}\n"));
    }

    fn queue_task(&self, project: &str, id: &str) {
        let dir = self.sb.tmp.path().join("queue/pending/normal");
        fs::create_dir_all(&dir).unwrap();
        let body = json!({"id": id, "project": project, "priority": 5, "prompt": "later",
                          "enqueued_at": now_rfc3339(), "enqueued_by": "t", "status": "pending"});
        fs::write(
            dir.join(format!("5_20260101T000000.000000_{project}_{id}.json")),
            body.to_string(),
        )
        .unwrap();
    }

    fn set_log_age(&self, id: &str, minutes: u64) {
        let f = fs::File::options()
            .write(true)
            .open(self.sb.job_dir(id).join("output.log"))
            .unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(minutes * 60))
            .unwrap();
    }
}

/// The lines of a section, from its heading to the next blank line.
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(title));
    let Some(_) = lines.next() else {
        panic!("no section {title:?} in:\n{text}");
    };
    lines.take_while(|l| !l.is_empty()).collect()
}

/// The section's table rows (without its column headings), or none when it says `none`.
fn rows<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let lines = section(text, title);
    if lines == ["  none"] {
        return Vec::new();
    }
    lines.into_iter().skip(1).collect()
}

fn row_of<'a>(rows: &[&'a str], id: &str) -> &'a str {
    rows.iter()
        .find(|r| r.trim_start().starts_with(&format!("{id} ")))
        .unwrap_or_else(|| panic!("no row for {id} in {rows:#?}"))
}

// ---------------------------------------------------------------------------------------------
// The dashboard
// ---------------------------------------------------------------------------------------------

#[test]
fn the_header_counts_every_status_and_the_queue() {
    let f = Fleet::new();
    let agent = sleeper();
    let pid = agent.id();
    f.running("run-a", "p", pid, 1);
    f.running("run-b", "p", pid, 2);
    f.running("asks", "p", pid, 3);
    f.sb.write(
        "asks",
        "clarification.json",
        json!({"question": "Go?", "asked_at": now_rfc3339()}).to_string(),
    );
    f.finished("stopped", "p", 100, "need an answer");
    f.finished("done-1", "p", 0, "ok");
    f.finished("done-2", "p", 0, "ok");
    f.finished("broke", "p", 1, "oops");
    f.finished("shot", "p", -9, "killed");
    f.meta("vanished", "p", "work", &ago(30));
    f.sb.write("vanished", "output.log", "working\n");
    f.sb.write("vanished", "pid", format!("{}\n", dead_pid()));
    f.queue_task("p", "q1");

    let text = f.text(&[], 0);
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with(&format!("luzia status  {}  ", f.sb.root.display()))
    );
    assert_eq!(
        lines.next().unwrap(),
        "2 running · 1 waiting · 1 needs input · 1 queued · 2 completed · 1 failed · 1 died · 1 killed"
    );
}

#[test]
fn a_running_job_shows_its_progress_bar_and_step() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("halfway", "musica", agent.id(), 5);
    f.sb.write(
        "halfway",
        "progress.json",
        r#"{"percent": 50, "step_name": "Running tests"}"#,
    );
    f.running("stepping", "librec", agent.id(), 1);
    f.sb.write(
        "stepping",
        "progress.json",
        r#"{"step": 2, "total_steps": 5, "step_name": "Build"}"#,
    );
    f.running("silent", "librec", agent.id(), 1);

    let text = f.text(&[], 0);
    let running = rows(&text, "Running (3)");
    let half = row_of(&running, "halfway");
    assert!(
        half.contains("musica")
            && half.contains(" [#####-----] 50% ")
            && half.ends_with(" Running tests"),
        "{half}"
    );
    assert!(half.contains(" 5m0"), "elapsed about five minutes: {half}");
    let stepping = row_of(&running, "stepping");
    assert!(
        stepping.contains(" [####------] 40% ") && stepping.ends_with(" 2/5 Build"),
        "{stepping}"
    );
    assert!(row_of(&running, "silent").contains(" [----------] ? "));
}

#[test]
fn waiting_questions_and_gates_show_what_they_ask_and_how_long() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("asks", "musica", agent.id(), 10);
    f.sb.write(
        "asks",
        "clarification.json",
        json!({"id": "q1", "type": "choice", "question": "Which database?",
               "options": ["production", "staging"], "asked_at": ago(7)})
        .to_string(),
    );
    f.running("gated", "musica", agent.id(), 10);
    f.sb.write(
        "gated",
        "approval.json",
        json!({"gate": "deploy", "description": "Push to prod", "awaiting_since": ago(2)})
            .to_string(),
    );

    let text = f.text(&[], 0);
    let waiting = rows(&text, "Waiting (2)");
    // Oldest first.
    assert!(waiting[0].trim_start().starts_with("asks "), "{waiting:#?}");
    let asks = row_of(&waiting, "asks");
    assert!(
        asks.contains("question: Which database? [1) production 2) staging]"),
        "{asks}"
    );
    assert!(asks.contains(" 7m0"), "waited about seven minutes: {asks}");
    assert!(row_of(&waiting, "gated").contains("approval: gate deploy: Push to prod"));
    // Waiting jobs are not listed as running.
    assert!(rows(&text, "Running (0)").is_empty());
    // Seven minutes is past the default question_after (5m): called out.
    assert!(
        row_of(&rows(&text, "Alarms (1)"), "asks").contains("question waiting"),
        "{text}"
    );
}

#[test]
fn a_stalled_job_is_an_alarm_and_alerts_exit_3_while_a_healthy_tree_exits_0() {
    let f = Fleet::new();
    f.config("[alarms]\nstall_after = \"10m\"\n");
    let agent = sleeper();
    f.running("busy", "musica", agent.id(), 30);
    f.finished("done", "musica", 0, "all good");

    let healthy = f.text(&["--alerts"], 0);
    assert!(healthy.lines().any(|l| l == "no alerts"), "{healthy}");
    assert!(!healthy.contains("Running"), "--alerts shows alerts only");

    f.set_log_age("busy", 20);
    let text = f.text(&[], 0);
    let alarm = row_of(&rows(&text, "Alarms (1)"), "busy");
    assert!(
        alarm.contains("stalled") && alarm.contains("no output or progress for 20m"),
        "{alarm}"
    );
    let busy = row_of(&rows(&text, "Running (1)"), "busy");
    assert!(busy.contains(" stalled "), "{busy}");

    let alerts = f.text(&["--alerts"], 3);
    assert!(alerts.contains("stalled"), "{alerts}");
    assert!(!alerts.contains("no alerts"), "{alerts}");

    // A longer rule: not stalled yet.
    f.config("[alarms]\nstall_after = \"30m\"\n");
    f.text(&["--alerts"], 0);
}

#[test]
fn a_missing_python_module_is_shown_with_its_fix() {
    let f = Fleet::new();
    f.finished(
        "broke",
        "musica",
        1,
        "Traceback (most recent call last):\n  File \"app.py\", line 1\nModuleNotFoundError: No module named 'yaml'",
    );
    let text = f.text(&[], 0);
    let issues = section(&text, "Issues (2)");
    let at = issues
        .iter()
        .position(|l| l.contains("python-module-not-found"))
        .unwrap_or_else(|| panic!("{issues:#?}"));
    let head: Vec<&str> = issues[at].split_whitespace().collect();
    assert_eq!(
        head,
        ["broke", "failed", "error", "python-module-not-found"]
    );
    assert_eq!(
        issues[at + 1].trim(),
        "ModuleNotFoundError: No module named 'yaml'"
    );
    assert!(
        issues[at + 2]
            .trim()
            .starts_with("fix: Install it in the environment the agent uses"),
        "{issues:#?}"
    );
    // A finished job's issue is not an alert; the same in a live job is.
    f.text(&["--alerts"], 0);
    let agent = sleeper();
    f.running("live", "musica", agent.id(), 1);
    f.sb.write(
        "live",
        "output.log",
        "ModuleNotFoundError: No module named 'requests'\n",
    );
    let alerts = f.text(&["--alerts"], 3);
    let issues = section(&alerts, "Issues (1)");
    assert!(
        issues
            .iter()
            .any(|l| l.contains("live") && l.contains("python-module-not-found")),
        "{alerts}"
    );
    assert!(!alerts.contains("broke"), "{alerts}");
    let running = rows(&f.text(&[], 0), "Running (1)").join("\n");
    assert!(running.contains("python-module-not-found"), "{running}");
}

#[test]
fn memory_read_from_a_fake_proc_raises_the_system_alert() {
    let f = Fleet::new();
    let text = f.text(&[], 0);
    assert_eq!(
        section(&text, "System"),
        Vec::<&str>::new(),
        "no alert at 50%: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l == "System  memory 50% used · load 0.50 on 4 cores")
    );

    fake_proc(&f.proc_dir, 90, "0.50", 4);
    let text = f.text(&[], 0);
    assert!(
        text.lines()
            .any(|l| l == "System  memory 90% used · load 0.50 on 4 cores"),
        "{text}"
    );
    assert_eq!(
        section(&text, "System"),
        ["  ! memory 90% used (above 80%)"]
    );
    assert!(row_of(&rows(&text, "Alarms (1)"), "system").contains("memory 90% used"));
    f.text(&["--alerts"], 3);

    // The limit comes from the config.
    f.config("[alarms]\nmemory_percent = 95\n");
    f.text(&["--alerts"], 0);
}

#[test]
fn recent_limits_the_events() {
    let f = Fleet::new();
    for i in 0..6 {
        f.finished(&format!("job-{i}"), "p", 0, "ok");
    }
    // Each finished job brings a start and a finish: twelve events.
    let text = f.text(&[], 0);
    assert_eq!(rows(&text, "Recent events (10)").len(), 10);
    let text = f.text(&["--recent", "2"], 0);
    let recent = rows(&text, "Recent events (2)");
    assert_eq!(recent.len(), 2, "{recent:#?}");
    assert!(
        recent
            .iter()
            .all(|r| r.contains("finished: completed (exit 0)"))
    );
}

// ---------------------------------------------------------------------------------------------
// Exports
// ---------------------------------------------------------------------------------------------

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn rfc3339(v: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("{v}")))
        .unwrap_or_else(|e| panic!("{v}: {e}"))
}

#[test]
fn export_json_writes_the_documented_shape_and_prints_the_path() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("halfway", "musica", agent.id(), 5);
    f.sb.write("halfway", "progress.json", r#"{"percent": 50}"#);
    f.finished(
        "broke",
        "musica",
        1,
        "ModuleNotFoundError: No module named 'yaml'",
    );
    let out_dir = f.sb.tmp.path().join("reports");
    fs::create_dir(&out_dir).unwrap();

    let out = f
        .cmd()
        .args(["--export", "json"])
        .current_dir(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let printed = stdout_of(&out);
    let path = PathBuf::from(printed.trim_end());
    assert_eq!(printed.lines().count(), 1, "{printed}");
    assert_eq!(path.parent().unwrap(), out_dir.canonicalize().unwrap());
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        name.len() == "luzia-status-YYYYMMDD-HHMMSS.json".len()
            && name.starts_with("luzia-status-")
            && name.ends_with(".json")
            && name[13..21].bytes().all(|b| b.is_ascii_digit())
            && name[22..28].bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    assert_eq!(files_in(&out_dir), [name], "the report and nothing else");

    let v: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for key in [
        "generated_at",
        "jobs_root",
        "project",
        "counts",
        "system",
        "running",
        "waiting",
        "alarms",
        "issues",
        "recent",
        "alert_count",
    ] {
        assert!(v.get(key).is_some(), "no {key} in {v:#}");
    }
    rfc3339(&v["generated_at"]);
    assert_eq!(v["jobs_root"], json!(f.sb.root.display().to_string()));
    assert_eq!(v["project"], Value::Null);
    let counts = v["counts"].as_object().unwrap();
    let keys: Vec<&str> = counts.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "running",
            "waiting",
            "needs_input",
            "limited",
            "queued",
            "completed",
            "failed",
            "checks_failed",
            "died",
            "killed",
            "unknown"
        ]
    );
    assert_eq!(
        (counts["running"].clone(), counts["failed"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(v["system"]["memory_used_percent"], json!(50.0));
    assert_eq!(v["system"]["load1"], json!(0.5));
    assert_eq!(v["system"]["cores"], json!(4));
    assert_eq!(v["system"]["alerts"], json!([]));
    let running = &v["running"][0];
    assert_eq!(running["id"], "halfway");
    assert_eq!(running["percent"], json!(50.0));
    assert!(running["elapsed_seconds"].as_i64().unwrap() >= 300);
    let issue = &v["issues"][0];
    assert_eq!(issue["job"], "broke");
    assert_eq!(issue["pattern"], "python-module-not-found");
    assert_eq!(issue["severity"], "error");
    assert!(issue["fix"].as_str().unwrap().starts_with("Install it"));
    let recent = v["recent"].as_array().unwrap();
    assert!(!recent.is_empty());
    for e in recent {
        rfc3339(&e["at"]);
        assert!(e["text"].is_string() && e["kind"].is_string(), "{e}");
    }
}

#[test]
fn export_md_escapes_agent_text_that_would_break_a_table() {
    let f = Fleet::new();
    f.meta("piped", "musica", "Compare a | b\nthen c", &ago(10));
    f.sb.write("piped", "output.log", "done\n\nexit:0\n");
    let target = f.sb.tmp.path().join("report.md");
    let out = f
        .cmd()
        .args(["--export", "md", "--output"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim_end(), target.display().to_string());
    let md = fs::read_to_string(&target).unwrap();
    assert!(md.starts_with("# luzia status\n"), "{md}");
    let line = md
        .lines()
        .find(|l| l.contains("Compare"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(line.contains("started: Compare a \\| b then c"), "{line}");
    // Three columns: four unescaped pipes, as in the table's own header.
    let unescaped = |l: &str| {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    };
    assert_eq!(
        unescaped(line),
        unescaped("| Time | Job | Event |"),
        "{line}"
    );
    assert!(md.contains("\n## Recent events (2)\n"), "{md}");
}

#[test]
fn an_export_that_cannot_be_written_names_the_path_and_leaves_nothing() {
    let f = Fleet::new();
    let tmp = f.sb.tmp.path();
    // A regular file where a directory should be: no one can write below it.
    fs::write(tmp.join("plain-file"), "x").unwrap();
    let target = tmp.join("plain-file/report.json");
    let out = f
        .cmd()
        .args(["--export", "json", "--output"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains(&target.display().to_string()) && err.contains("--output"),
        "{err}"
    );
    assert_eq!(stdout_of(&out), "");

    // A directory that does not exist.
    let target = tmp.join("missing/report.md");
    let out = f
        .cmd()
        .args(["--export", "md", "--output"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains(&target.display().to_string()) && err.contains("does not exist"),
        "{err}"
    );
    assert!(!tmp.join("missing").exists());

    // A directory without write permission (root writes anywhere, so only as another user).
    if rustix::process::geteuid().is_root() {
        eprintln!("running as root: the read-only directory case cannot be made here");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let locked = tmp.join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    let out = f
        .cmd()
        .args(["--export", "json", "--output"])
        .arg(&locked)
        .output()
        .unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains(&locked.display().to_string()) && err.contains("choose a directory"),
        "{err}"
    );
    assert!(files_in(&locked).is_empty(), "{:?}", files_in(&locked));
}

#[test]
fn usage_errors_exit_2() {
    let f = Fleet::new();
    for args in [
        &["--watch", "--export", "json"][..],
        &["--output", "x.json"],
        &["--export", "xml"],
        &["--watch", "--interval", "0s"],
        &["--watch", "--interval", "2"],
    ] {
        let out = f.status(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
    }
}

// ---------------------------------------------------------------------------------------------
// Filters and hostile input
// ---------------------------------------------------------------------------------------------

#[test]
fn project_filters_everything() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("m-run", "musica", agent.id(), 1);
    f.finished("m-done", "musica", 0, "ok");
    f.running("l-run", "librec", agent.id(), 1);
    f.finished(
        "l-fail",
        "librec",
        1,
        "ModuleNotFoundError: No module named 'x'",
    );
    f.queue_task("librec", "q1");
    fs::write(
        f.sb.tmp.path().join("notifications.log"),
        "[00:00:01] Agent 000001-gone finished (exit 0)\n",
    )
    .unwrap();

    let all = f.text(&[], 0);
    assert!(
        all.contains("l-run") && all.contains("000001-gone"),
        "{all}"
    );

    let text = f.text(&["--project", "musica"], 0);
    assert!(text.lines().next().unwrap().contains("  project musica  "));
    assert_eq!(
        text.lines().nth(1).unwrap(),
        "1 running · 0 waiting · 0 needs input · 0 queued · 1 completed · 0 failed · 0 died · 0 killed"
    );
    for other in ["l-run", "l-fail", "librec", "000001-gone"] {
        assert!(!text.contains(other), "{other} leaked into:\n{text}");
    }
    assert!(rows(&text, "Issues (0)").is_empty());
    assert!(text.contains("m-run") && text.contains("m-done"));

    let text = f.text(&["--project", "nope"], 0);
    assert!(
        text.contains("note: no jobs of project 'nope' (known projects: librec, musica)"),
        "{text}"
    );
    assert!(rows(&text, "Running (0)").is_empty());
}

fn assert_clean(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    for bad in ['\x1b', '\x07', '\u{9b}', '\u{202e}'] {
        assert!(!text.contains(bad), "{what} holds {bad:?}: {text:?}");
    }
}

#[test]
fn hostile_text_never_reaches_the_output_raw() {
    let f = Fleet::new();
    let agent = sleeper();
    let evil = "Deploy\x1b]0;pwned\x07 now\x1b[2J\x1b[H\u{202e}gnp.exe\x1b]52;c;aGk=\x07";
    f.meta("evil-run", "mus\x1b[31mica", evil, &ago(1));
    f.sb.write_pid("evil-run", agent.id());
    f.sb.write(
        "evil-run",
        "output.log",
        "\x1b[31mModuleNotFoundError: No module named 'x'\x1b]0;t\x07\x1b[?1049h\n",
    );
    f.sb.write(
        "evil-run",
        "progress.json",
        json!({"percent": 10, "step_name": "st\x1b[5mep\x07"}).to_string(),
    );
    f.running("evil-ask", "p", agent.id(), 1);
    f.sb.write(
        "evil-ask",
        "clarification.json",
        json!({"question": "Which\x1b[1A\x1b[2K one?\u{9b}31m", "options": ["a\x1b[8m", "b"],
               "asked_at": now_rfc3339()})
        .to_string(),
    );
    let text = f.text(&[], 0);
    assert_clean(text.as_bytes(), "stdout");
    assert!(text.contains("started: Deploy nowgnp.exe"), "{text}");
    assert!(text.contains("question: Which one?"), "{text}");
    let row = row_of(&rows(&text, "Running (1)"), "evil-run");
    assert!(row.contains(" 10% ") && row.ends_with(" step"), "{row}");
    assert!(
        text.contains("ModuleNotFoundError: No module named 'x'"),
        "{text}"
    );

    for format in ["json", "md"] {
        let target = f.sb.tmp.path().join(format!("r.{format}"));
        let out = f
            .cmd()
            .args(["--export", format, "--output"])
            .arg(&target)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let body = fs::read(&target).unwrap();
        assert_clean(&body, format);
        assert!(
            !String::from_utf8_lossy(&body).contains("\\u001b"),
            "{format}"
        );
    }
}

#[test]
fn a_malformed_meta_json_does_not_break_the_report() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("fine", "musica", agent.id(), 1);
    f.sb.write("torn", "meta.json", "{\"project\": \"mus");
    f.sb.write("torn", "output.log", "half\n\nexit:1\n");
    f.sb.write("array", "meta.json", "[1, 2]");
    let text = f.text(&[], 0);
    assert!(
        text.contains("1 running · ") && text.contains(" · 1 failed · "),
        "{text}"
    );
    assert!(row_of(&rows(&text, "Running (1)"), "fine").contains("musica"));
    assert!(
        text.contains("job(s) have files that could not be read"),
        "{text}"
    );
    let target = f.sb.tmp.path().join("r.json");
    let out = f
        .cmd()
        .args(["--export", "json", "--output"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&fs::read(&target).unwrap()).unwrap();
    assert_eq!(v["jobs_with_problems"], json!(2));
}

#[test]
fn bad_known_issue_patterns_are_warned_about_once_and_the_good_ones_work() {
    let f = Fleet::new();
    f.config("");
    fs::write(
        f.sb.xdg.join("luzia/known_issues.json"),
        json!({"patterns": [
            {"name": "broken-one", "error_patterns": ["(unclosed"], "fix": "x"},
            {"name": "custom-boom", "error_patterns": ["BOOM"], "fix": "Stop the boom.",
             "severity": "critical"},
        ]})
        .to_string(),
    )
    .unwrap();
    f.finished("boomed", "p", 1, "a BOOM happened");
    let out = f.status(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("luzia: warning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("known_issues.json") && warnings[0].contains("broken-one"),
        "{err}"
    );
    let text = stdout_of(&out);
    let issues = section(&text, "Issues (1)");
    assert_eq!(
        issues[1].split_whitespace().collect::<Vec<_>>(),
        ["boomed", "failed", "critical", "custom-boom"]
    );
    assert_eq!(issues[3].trim(), "fix: Stop the boom.");
}

// ---------------------------------------------------------------------------------------------
// --watch
// ---------------------------------------------------------------------------------------------

const HOME: &str = "\x1b[H";

/// `luzia status --watch` with its stdout a pipe, read on a thread.
struct Watch {
    child: ChildGuard,
    out: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn spawn(f: &Fleet, extra: &[&str]) -> Watch {
        let mut cmd = f.sb.luzia_std();
        cmd.envs(f.envs())
            .args(["status", "--watch"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn luzia status --watch");
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&out);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
        });
        Watch {
            child: ChildGuard::new(child),
            out,
            reader: Some(reader),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    fn frames(&self) -> usize {
        self.text().matches(HOME).count()
    }

    /// Waits until the output holds at least `n` frames and the last one is whole and `pred`
    /// holds for it (the hang guard fails the test).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let text = self.text();
            let last = text.rsplit(HOME).next().unwrap_or("");
            if last.ends_with("\x1b[J") && pred(last) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "gave up waiting for {what}; output so far: {text:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&mut self, name: &str) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{name} {pid}");
        let status = self.child.wait_within(HANG_GUARD, "luzia status --watch");
        self.reader.take().unwrap().join().unwrap();
        let mut err = String::new();
        if let Some(mut e) = self.child.child().stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status.code(), err)
    }
}

#[test]
fn watch_redraws_in_place_rescans_and_stops_on_sigterm() {
    let f = Fleet::new();
    let agent = sleeper();
    f.running("busy", "musica", agent.id(), 1);
    f.meta(
        "long",
        "musica",
        &"a very long task description ".repeat(20),
        &ago(2),
    );
    f.sb.write("long", "output.log", "ok\n\nexit:0\n");
    let mut w = Watch::spawn(&f, &["--interval", "200ms"]);
    w.wait_for("a first frame", |frame| frame.contains("Running (1)"));
    w.wait_for("a second frame", |_| w.frames() >= 2);

    // Something new in the log shows in a later frame: the scanner is still at work.
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(f.sb.job_dir("busy").join("output.log"))
        .unwrap();
    std::io::Write::write_all(&mut log, b"ModuleNotFoundError: No module named 'zz'\n").unwrap();
    w.wait_for("the issue in a frame", |frame| {
        frame.contains("python-module-not-found") && frame.contains("'zz'")
    });

    let (code, err) = w.signal("TERM");
    assert_eq!(code, Some(143), "stderr: {err}");
    let text = w.text();
    assert!(text.starts_with(HOME), "{text:?}");
    assert!(
        text.ends_with("\x1b[J"),
        "the last frame is whole: {text:?}"
    );
    assert!(!text.contains("\x1b[?1049h"), "no alternate screen");
    for frame in text.split(HOME).filter(|s| !s.is_empty()) {
        let body = frame
            .strip_suffix("\x1b[J")
            .expect("each frame ends clearing below");
        for line in body.split_terminator('\n') {
            let line = line
                .strip_suffix("\x1b[K")
                .unwrap_or_else(|| panic!("a line without clear-to-end: {line:?}"));
            assert!(!line.contains('\x1b'), "NO_COLOR, yet: {line:?}");
            assert!(
                line.chars().count() < 80,
                "{} columns: {line:?}",
                line.chars().count()
            );
        }
    }
    assert!(text.contains("refreshing every 200ms"), "{text:?}");
    // The counts wrap instead of being cut: the last one is there whole.
    let last = text.rsplit(HOME).next().unwrap();
    assert!(last.contains(" 0 killed\x1b[K\n"), "{last:?}");
}

#[test]
fn watch_ends_with_0_on_ctrl_c() {
    let f = Fleet::new();
    let mut w = Watch::spawn(&f, &["--interval", "1m"]);
    w.wait_for("a first frame", |frame| frame.contains("Running (0)"));
    let (code, err) = w.signal("INT");
    assert_eq!(code, Some(0), "stderr: {err}");
    assert!(w.text().ends_with("\x1b[J"));
    assert_eq!(
        w.frames(),
        1,
        "interrupted while asleep, before the next frame"
    );
}

// ---------------------------------------------------------------------------------------------
// Usage: tokens and cost of the runs that recorded them
// ---------------------------------------------------------------------------------------------

impl Fleet {
    /// A finished job whose meta.json records the figures of its run, started `minutes` ago.
    fn costed(&self, id: &str, project: &str, minutes: i64, cost: Option<f64>, input: u64) {
        let mut usage = json!({"model": "claude-sonnet-4-5", "turns": 3, "input_tokens": input,
                               "output_tokens": 500, "cache_read_tokens": 10000});
        if let Some(c) = cost {
            usage["cost_usd"] = json!(c);
        }
        let m = json!({"id": id, "project": project, "task": "work", "started": ago(minutes),
                       "usage": usage});
        self.sb.write(id, "meta.json", m.to_string());
        self.sb.write(id, "output.log", "done\n\nexit:0\n");
    }
}

#[test]
fn usage_totals_per_project_and_per_day_in_the_text_and_both_exports() {
    let f = Fleet::new();
    f.costed("c1", "musica", 30, Some(0.5), 1000);
    f.costed("c2", "musica", 20, None, 2000);
    f.costed("c3", "librec", 10, Some(1.25), 3000);
    // No figures: counts in the header, not in the usage.
    f.finished("plain", "librec", 0, "ok");

    let text = f.text(&[], 0);
    let usage = section(&text, "Usage");
    let head = text.lines().find(|l| l.starts_with("Usage")).unwrap();
    assert_eq!(
        head,
        "Usage  3 jobs · 37.5k tokens · $1.75 (+1 without a cost)"
    );
    let librec = row_of(&usage, "librec");
    assert!(
        librec.contains(" 1 ") && librec.ends_with("$1.25"),
        "{librec}"
    );
    let musica = row_of(&usage, "musica");
    assert!(
        musica.contains(" 2 ") && musica.ends_with("$0.50 (+1 without a cost)"),
        "{musica}"
    );
    // The jobs started minutes ago: one day, unless the test straddles midnight.
    let days: Vec<&&str> = usage
        .iter()
        .filter(|l| l.trim_start().starts_with("20"))
        .collect();
    assert!(
        (1..=2).contains(&days.len()) && days.iter().all(|l| l.contains('$')),
        "{usage:#?}"
    );

    let out_dir = f.sb.tmp.path().join("reports");
    fs::create_dir(&out_dir).unwrap();
    let json_path = out_dir.join("r.json");
    let out = f
        .cmd()
        .args(["--export", "json", "--output"])
        .arg(&json_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&fs::read(&json_path).unwrap()).unwrap();
    let u = &v["usage"];
    assert_eq!(
        (u["jobs"].clone(), u["jobs_without_cost"].clone()),
        (json!(3), json!(1))
    );
    assert_eq!(u["cost_usd"], json!(1.75));
    assert_eq!(u["input_tokens"], json!(6000));
    assert_eq!(u["total_tokens"], json!(6000 + 1500 + 30000));
    assert_eq!(u["by_project"][0]["project"], "librec");
    assert_eq!(u["by_project"][1]["cost_usd"], json!(0.5));
    let days = u["by_day"].as_array().unwrap();
    let jobs: u64 = days.iter().map(|d| d["jobs"].as_u64().unwrap()).sum();
    assert_eq!(jobs, 3);
    assert!(days[0]["day"].as_str().unwrap().starts_with("20"), "{u}");

    let md_path = out_dir.join("r.md");
    let out = f
        .cmd()
        .args(["--export", "md", "--output"])
        .arg(&md_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let md = fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("\n## Usage\n\n3 jobs · 37.5k tokens · $1.75"),
        "{md}"
    );
    assert!(
        md.contains("\n| librec | 1 | 3.0k | 500 | 10.0k | $1.25 |\n"),
        "{md}"
    );
}

#[test]
fn without_figures_there_is_no_usage_section() {
    let f = Fleet::new();
    f.finished("plain", "librec", 0, "ok");
    let text = f.text(&[], 0);
    assert!(!text.lines().any(|l| l.starts_with("Usage")), "{text}");
}

#[test]
fn usage_is_split_by_kind_of_agent_when_more_than_one_kind_has_figures() {
    let f = Fleet::new();
    let job = |id: &str, agent: &str, cost: f64, input: u64| {
        let m = json!({"id": id, "project": "musica", "task": "work", "started": ago(30),
            "agent": agent, "usage": {"input_tokens": input, "output_tokens": 10,
            "cost_usd": cost}});
        f.sb.write(id, "meta.json", m.to_string());
        f.sb.write(id, "output.log", "done\n\nexit:0\n");
    };
    job("120000-cla1", "/usr/local/bin/claude", 1.5, 2000);
    job("120100-cla2", "claude", 0.5, 1000);
    assert!(
        !f.text(&[], 0).contains("AGENT"),
        "one kind of agent: nothing to split"
    );

    job("120200-aid1", "/opt/aider/bin/aider", 0.25, 900);
    let text = f.text(&[], 0);
    let usage = section(&text, "Usage");
    let at = usage.iter().position(|l| l.contains("AGENT")).unwrap();
    let agents: Vec<Vec<&str>> = usage[at + 1..at + 3]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        agents,
        [
            ["claude", "2", "3.0k", "20", "0", "$2.00"],
            ["aider", "1", "900", "10", "0", "$0.25"]
        ],
        "{text}"
    );

    let out_dir = f.sb.tmp.path().join("reports");
    fs::create_dir(&out_dir).unwrap();
    let out = f
        .cmd()
        .args(["--export", "json", "--output"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&fs::read(stdout_of(&out).trim_end()).unwrap()).unwrap();
    let by_agent: Vec<(&str, u64, f64)> = v["usage"]["by_agent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let n = a["input_tokens"].as_u64().unwrap();
            (
                a["agent"].as_str().unwrap(),
                n,
                a["cost_usd"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(by_agent, [("claude", 3000, 2.0), ("aider", 900, 0.25)]);
}
