//! `luzia jobs` against real job directories: the shipped samples, every row of protocol.md's
//! status table built by hand with real processes, and a tree shaped like the Python
//! orchestrator's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use common::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// 1. The samples
// ---------------------------------------------------------------------------------------------

/// (id, status, exit_code, pid, project)
type SampleRow = (
    &'static str,
    &'static str,
    Option<i64>,
    Option<u64>,
    &'static str,
);

/// Every job directory among the samples.
const SAMPLES: &[SampleRow] = &[
    ("155500-evil", "failed", Some(3), Some(15550), "overbits"),
    ("153500-orph", "died", None, Some(999_999_998), "musica"),
    ("153000-dead", "died", None, Some(999_999_999), "librec"),
    ("152000-f00d", "failed", Some(2), Some(15200), "librec"),
    (
        "151200-q1q1",
        "needs_input",
        Some(100),
        Some(15120),
        "musica",
    ),
    ("150500-a9b8", "killed", Some(143), Some(15050), "overbits"),
    ("150110-e5f6", "killed", Some(-9), Some(15011), "overbits"),
    ("143002-c3d4", "failed", Some(1), Some(13020), "musica"),
    ("142315-a1b2", "completed", Some(0), Some(12847), "musica"),
    // No start time: after every job that has one, by id descending.
    ("155000-junk", "unknown", None, None, ""),
    ("154500-trnc", "completed", Some(0), None, ""),
    ("154000-void", "unknown", None, None, ""),
];

#[test]
fn samples_json_reports_every_job_exactly() {
    let sb = Sandbox::with_samples();
    assert!(
        std::fs::symlink_metadata(sb.root.join("160500-link"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the copy keeps the link a link"
    );
    let items = sb.jobs_json(&[]);
    let got_ids = ids(&items);
    let want_ids: Vec<&str> = SAMPLES.iter().map(|s| s.0).collect();
    assert_eq!(got_ids, want_ids, "every job, newest first, nothing else");

    for stray in ["README.txt", ".partial-160000", "bad id!", "160500-link"] {
        assert!(
            !got_ids.iter().any(|i| i == stray),
            "{stray} is not a job but was listed"
        );
    }

    let jobs = by_id(&items);
    for (id, status, exit, pid, project) in SAMPLES {
        let j = &jobs[*id];
        assert_eq!(j["status"], json!(status), "{id} status");
        assert_eq!(j["exit_code"], json!(exit), "{id} exit_code");
        assert_eq!(j["pid"], json!(pid), "{id} pid");
        assert_eq!(j["project"], json!(project), "{id} project");
        // No sample has a live agent, so none is waiting (not even the orphaned question).
        assert_eq!(j["waiting"], Value::Null, "{id} waiting");
        for key in [
            "id",
            "project",
            "task",
            "status",
            "exit_code",
            "pid",
            "started",
            "finished",
            "elapsed_seconds",
            "progress",
            "waiting",
        ] {
            assert!(j.get(key).is_some(), "{id} lacks key {key}: {j}");
        }
    }

    // Newest first: the start times that exist never increase down the list.
    let starts: Vec<&str> = items.iter().filter_map(|j| j["started"].as_str()).collect();
    assert_eq!(starts.len(), 9);
    assert!(
        starts.windows(2).all(|w| w[0] >= w[1]),
        "not newest first: {starts:?}"
    );

    // A few concrete values beyond status.
    let a1b2 = &jobs["142315-a1b2"];
    assert_eq!(a1b2["task"], "Run tests and report results");
    assert_eq!(a1b2["started"], "2026-01-09T14:23:15Z");
    assert_eq!(a1b2["finished"], "2026-01-09T14:31:52Z");
    assert_eq!(a1b2["elapsed_seconds"], 517);
    assert_eq!(
        a1b2["progress"],
        json!({"percent": 100.0, "step": 5, "total_steps": 5, "step_name": "Report"})
    );
    // A naive start time (the orchestrator's) read as local time, here UTC.
    assert_eq!(jobs["150110-e5f6"]["started"], "2026-01-09T15:01:10Z");
    assert_eq!(jobs["150110-e5f6"]["elapsed_seconds"], 482);
    // A job that died without an exit line ends at its last output: the log's mtime.
    let log_mtime: chrono::DateTime<chrono::Utc> =
        std::fs::metadata(sb.root.join("153000-dead/output.log"))
            .unwrap()
            .modified()
            .unwrap()
            .into();
    assert_eq!(
        jobs["153000-dead"]["finished"],
        log_mtime.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    assert_eq!(jobs["153000-dead"]["exit_code"], Value::Null);

    // The malformed meta.json jobs say which file, by path; the rest have no problems.
    for (id, needle) in [
        ("154500-trnc", "is not valid JSON"),
        ("155000-junk", "is not valid JSON"),
    ] {
        let problems = jobs[id]["problems"].as_array().expect("problems array");
        let path = sb.root.join(id).join("meta.json");
        assert!(
            problems.iter().any(|p| {
                let p = p.as_str().unwrap();
                p.contains(&path.display().to_string()) && p.contains(needle)
            }),
            "{id}: no problem naming {}: {problems:?}",
            path.display()
        );
    }
    for (id, ..) in SAMPLES {
        if !["154500-trnc", "155000-junk"].contains(id) {
            assert_eq!(jobs[*id]["problems"], json!([]), "{id}");
        }
    }
}

#[test]
fn samples_table_lists_the_jobs_and_flags_unreadable_ones() {
    let sb = Sandbox::with_samples();
    let out = sb.luzia().arg("jobs").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "PROJECT", "STATUS", "PROGRESS", "ELAPSED", "TASK"]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    let row_ids: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    let want: Vec<&str> = SAMPLES.iter().map(|s| s.0).collect();
    assert_eq!(row_ids, want);
    let row = |id: &str| rows.iter().find(|r| r[0] == id).unwrap().clone();
    assert_eq!(row("151200-q1q1")[1..3], ["musica", "needs_input"]);
    assert_eq!(
        row("142315-a1b2")[1..5],
        ["musica", "completed", "5/5", "Report"]
    );
    // Unreadable files mark the status with '!', and stderr says why to look.
    assert_eq!(row("154500-trnc")[1], "completed!");
    assert_eq!(row("155000-junk")[1], "unknown!");
    assert!(
        stderr_of(&out).contains("2 job(s) marked '!'"),
        "{}",
        stderr_of(&out)
    );
    assert!(!text.contains("160500-link") && !text.contains("README"));
}

/// Where each of the first `n` whitespace-separated cells of `line` starts, in terminal columns.
fn cell_columns(line: &str, n: usize) -> Vec<usize> {
    use unicode_width::UnicodeWidthStr;
    let mut out = Vec::new();
    let mut rest = line;
    let mut col = 0;
    for cell in line.split_whitespace().take(n) {
        let i = rest.find(cell).unwrap();
        col += rest[..i].width();
        out.push(col);
        col += cell.width();
        rest = &rest[i + cell.len()..];
    }
    out
}

#[test]
fn wide_project_names_and_tasks_keep_the_columns_in_line() {
    let sb = Sandbox::new();
    for (id, project, task) in [
        ("w1", "音楽", "ビルドを修正する"),
        ("w2", "🚀rocket", "deploy 🚀 now"),
        ("w3", "plain", "ascii task"),
        ("w4", "日本語プロジェクト", "テスト"),
    ] {
        let meta = json!({"project": project, "task": task, "started": "2025-06-01T00:00:00Z"});
        sb.write(id, "meta.json", meta.to_string());
        sb.write(id, "output.log", "done\n\nexit:0\n");
    }
    let out = sb.luzia().arg("jobs").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let header = cell_columns(lines[0], 6);
    for line in &lines[1..] {
        assert_eq!(cell_columns(line, 6), header, "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Every row of the status table, with real processes
// ---------------------------------------------------------------------------------------------

const QUESTION: &str = r#"{"id": "q7", "type": "choice", "question": "Which database?",
    "options": ["production", "staging"], "asked_at": "2026-01-11T14:30:00Z"}"#;
const GATE: &str = r#"{"gate": "database_migration", "description": "3 migrations",
    "awaiting_since": "2026-01-11T14:30:00Z", "auto_approve_after_minutes": null}"#;
const OLD: &str = "2025-06-01T00:00:00Z";

fn meta(project: &str, started: &str, pid: Option<Value>) -> String {
    let mut m = json!({"project": project, "task": "t", "started": started});
    if let Some(pid) = pid {
        m["pid"] = pid;
    }
    m.to_string()
}

#[test]
fn every_status_table_row_from_real_directories() {
    let sb = Sandbox::new();
    let live = sleeper();
    let live_pid = live.id();
    let gone = dead_pid();
    let now = now_rfc3339();

    // A finished job: meta, and a log ending with the supervisor's exit line.
    let finished = |id: &str, code: &str| {
        sb.write(id, "meta.json", meta("p", OLD, Some(json!(4242))));
        sb.write(id, "output.log", format!("working\n\nexit:{code}\n"));
    };
    // A live job: meta, a log without exit line, and the sleeper's pid in `pid`.
    let alive = |id: &str| {
        sb.write(id, "meta.json", meta("p", OLD, None));
        sb.write(id, "output.log", "working\n");
        sb.write_pid(id, live_pid);
    };

    alive("running");
    alive("asking");
    sb.write("asking", "clarification.json", QUESTION);
    alive("gated");
    sb.write("gated", "approval.json", GATE);
    alive("answered");
    sb.write("answered", "clarification.json", QUESTION);
    sb.write(
        "answered",
        "response.json",
        r#"{"question_id": "q7", "answer": "staging", "choice": "staging"}"#,
    );
    alive("stale");
    sb.write("stale", "clarification.json", QUESTION);
    sb.write(
        "stale",
        "response.json",
        r#"{"question_id": "q6", "answer": "production"}"#,
    );
    finished("exit0", "0");
    finished("exit1", "1");
    finished("exit2", "2");
    finished("sigkill", "-9");
    finished("e137", "137");
    finished("e143", "143");
    finished("sigterm", "-15");
    finished("needs", "100");
    sb.write("died", "meta.json", meta("p", OLD, None));
    sb.write("died", "output.log", "working\n");
    sb.write("died", "pid", format!("{gone}\n"));
    sb.write("young", "meta.json", meta("p", &now, None));
    sb.write("old", "meta.json", meta("p", OLD, None));
    sb.write("old", "output.log", "working\n");
    sb.write("nothing", "prompt.txt", "do it\n");
    sb.write(
        "metapid",
        "meta.json",
        meta("p", OLD, Some(json!(live_pid.to_string()))),
    );
    sb.write("metapid", "output.log", "working\n");
    // The sleeper started long after OLD: only its recorded start makes it this job's.
    record_process(&sb.job_dir("metapid"), live_pid);
    alive("midexit");
    sb.write(
        "midexit",
        "output.log",
        "step 1\nrunning a tool\n\nexit:0\nthe tool returned; going on\nstep 2\n",
    );

    // (id, status, exit_code, waiting, pid)
    type Row = (
        &'static str,
        &'static str,
        Option<i64>,
        Option<&'static str>,
        Option<u64>,
    );
    let live_pid = Some(u64::from(live_pid));
    let table: &[Row] = &[
        ("running", "running", None, None, live_pid),
        ("asking", "waiting", None, Some("question"), live_pid),
        ("gated", "waiting", None, Some("approval"), live_pid),
        ("answered", "running", None, None, live_pid),
        ("stale", "waiting", None, Some("question"), live_pid),
        ("exit0", "completed", Some(0), None, Some(4242)),
        ("exit1", "failed", Some(1), None, Some(4242)),
        ("exit2", "failed", Some(2), None, Some(4242)),
        ("sigkill", "killed", Some(-9), None, Some(4242)),
        ("e137", "killed", Some(137), None, Some(4242)),
        ("e143", "killed", Some(143), None, Some(4242)),
        ("sigterm", "killed", Some(-15), None, Some(4242)),
        ("needs", "needs_input", Some(100), None, Some(4242)),
        ("died", "died", None, None, Some(u64::from(gone))),
        ("young", "running", None, None, None),
        ("old", "died", None, None, None),
        ("nothing", "unknown", None, None, None),
        ("metapid", "running", None, None, live_pid),
        ("midexit", "running", None, None, live_pid),
    ];

    let items = sb.jobs_json(&[]);
    let jobs = by_id(&items);
    assert_eq!(jobs.len(), table.len(), "{:?}", ids(&items));
    for (id, status, exit, waiting, pid) in table {
        let j = &jobs[*id];
        assert_eq!(j["status"], json!(status), "{id}: {j}");
        assert_eq!(j["exit_code"], json!(exit), "{id}: {j}");
        assert_eq!(j["waiting"], json!(waiting), "{id}: {j}");
        assert_eq!(j["pid"], json!(pid), "{id}: {j}");
        assert_eq!(j["problems"], json!([]), "{id}: {j}");
    }
    // Still running: no exit code and no finish time.
    assert_eq!(jobs["running"]["finished"], Value::Null);

    // The same, filtered by status through the CLI.
    let waiting = sb.jobs_json(&["--status", "waiting"]);
    let mut w = ids(&waiting);
    w.sort();
    assert_eq!(w, ["asking", "gated", "stale"]);
    let killed = sb.jobs_json(&["--status", "killed"]);
    let mut k = ids(&killed);
    k.sort();
    assert_eq!(k, ["e137", "e143", "sigkill", "sigterm"]);

    // The full view says what a waiting job waits for.
    let out = sb.luzia().args(["jobs", "asking"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    assert!(text.contains("status:    waiting (for question)"), "{text}");
    assert!(text.contains("q7 (choice): Which database?"), "{text}");
    assert!(
        text.contains(&format!("pid:       {} (alive)", live.id())),
        "{text}"
    );
    let out = sb.luzia().args(["jobs", "gated"]).output().unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("status:    waiting (for approval)"), "{text}");
    assert!(
        text.contains("gate:      database_migration: 3 migrations"),
        "{text}"
    );
    drop(live);
}

#[test]
fn a_killed_agent_turns_running_into_died() {
    let sb = Sandbox::new();
    let mut agent = sleeper();
    sb.write("j1", "meta.json", meta("p", OLD, None));
    sb.write("j1", "output.log", "working\n");
    sb.write_pid("j1", agent.id());
    assert_eq!(sb.jobs_json(&[])[0]["status"], "running");
    agent.kill_and_reap();
    let after = sb.jobs_json(&[]);
    assert_eq!(after[0]["status"], "died");
    assert_eq!(after[0]["exit_code"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// 3. A tree as the Python orchestrator writes it
// ---------------------------------------------------------------------------------------------

/// The orchestrator's meta.json: string pid, naive local `datetime.now().isoformat()`.
fn orch_meta(id: &str, project: &str, task: &str, pid: &str, started: &str) -> String {
    format!(
        r#"{{"id": "{id}", "project": "{project}", "task": "{task}", "type": "agent", "user": "{project}", "pid": "{pid}", "started": "{started}", "status": "running", "debug": false}}"#
    )
}

struct OrchTree {
    sb: Sandbox,
    agent: ChildGuard,
}

fn orchestrator_tree() -> OrchTree {
    let sb = Sandbox::new();
    let agent = sleeper();
    let alive = agent.id().to_string();
    let gone = dead_pid().to_string();
    let job = |id: &str, project: &str, task: &str, pid: &str, started: &str, log: &str| {
        sb.write(id, "meta.json", orch_meta(id, project, task, pid, started));
        sb.write(id, "prompt.txt", format!("{task}\n"));
        sb.write(
            id,
            "run.sh",
            "#!/bin/bash\nclaude --print --verbose -p < prompt.txt >> output.log 2>&1\necho >> output.log\necho \"exit:$?\" >> output.log\n",
        );
        sb.write(id, "output.log", log);
    };
    job(
        "090000-aaaa",
        "musica",
        "Run tests and report results",
        "12847",
        "2026-01-09T09:00:00.123456",
        "Collecting tests...\n128 passed\n\nexit:0\n",
    );
    job(
        "100000-bbbb",
        "overbits",
        "Rebuild the search index",
        "15011",
        "2026-01-09T10:00:00",
        "indexing 1/40\nindexing 2/40\n\nexit:-9\n",
    );
    job(
        "110000-cccc",
        "musica",
        "Refactor the importer",
        &alive,
        "2026-01-09T11:00:00.5",
        "step 1 ok\nrunning subcommand...\nexit:0\nsubcommand returned, continuing\nstep 2...\n",
    );
    // The live agent started today, long after this job's start time: without a record of its
    // start it would rightly be taken for a reused pid.
    record_process(&sb.job_dir("110000-cccc"), agent.id());
    job(
        "120000-dddd",
        "librec",
        "Type-check the frontend",
        "15200",
        "2026-01-09T12:00:00",
        "Found 1 error.\n\nexit:1\n",
    );
    job(
        "130000-eeee",
        "musica",
        "Migrate the playlist schema",
        &gone,
        "2026-01-09T13:00:00",
        "migrating...\nexit:0 is what the tool said\n",
    );
    // Cut off mid-write (an older dispatcher wrote meta.json in place).
    sb.write(
        "140000-ffff",
        "meta.json",
        r#"{"id": "140000-ffff", "project": "musica", "task": "Upd"#,
    );
    sb.write(
        "140000-ffff",
        "output.log",
        "updated 4 packages\n\nexit:0\n",
    );
    // Things in the jobs root that are not jobs.
    std::fs::write(
        sb.root.join("notifications.log"),
        "[14:31:52] Agent x finished\n",
    )
    .unwrap();
    std::fs::write(sb.root.join("jobs.json"), "{}").unwrap();
    std::fs::write(sb.root.join(".lock"), "").unwrap();
    std::fs::create_dir(sb.root.join("__pycache__")).unwrap();
    std::fs::write(sb.root.join("__pycache__/meta.json"), "{}").unwrap();
    std::fs::create_dir(sb.root.join(".tmp-150000-gggg")).unwrap();
    std::fs::write(
        sb.root.join(".tmp-150000-gggg/meta.json"),
        orch_meta("150000-gggg", "musica", "x", "1", "2026-01-09T15:00:00"),
    )
    .unwrap();
    OrchTree { sb, agent }
}

/// All orchestrator jobs, newest first: (id, status, exit_code, project).
const ORCH: &[(&str, &str, Option<i64>, &str)] = &[
    ("130000-eeee", "died", None, "musica"),
    ("120000-dddd", "failed", Some(1), "librec"),
    ("110000-cccc", "running", None, "musica"),
    ("100000-bbbb", "killed", Some(-9), "overbits"),
    ("090000-aaaa", "completed", Some(0), "musica"),
    ("140000-ffff", "completed", Some(0), ""),
];

#[test]
fn orchestrator_tree_is_read_correctly() {
    let t = orchestrator_tree();
    let mut cmd = t.sb.luzia();
    // Naive times are local: in UTC+9 the orchestrator's 09:00 is 00:00Z.
    let out = cmd
        .env("TZ", "JST-9")
        .args(["jobs", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let items: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let want: Vec<&str> = ORCH.iter().map(|o| o.0).collect();
    assert_eq!(ids(&items), want);
    let jobs = by_id(&items);
    for (id, status, exit, project) in ORCH {
        let j = &jobs[*id];
        assert_eq!(j["status"], json!(status), "{id}: {j}");
        assert_eq!(j["exit_code"], json!(exit), "{id}: {j}");
        assert_eq!(j["project"], json!(project), "{id}: {j}");
        assert_eq!(j["waiting"], Value::Null, "{id}");
    }
    assert_eq!(
        jobs["090000-aaaa"]["pid"], 12847,
        "string pid read as a number"
    );
    assert_eq!(jobs["090000-aaaa"]["started"], "2026-01-09T00:00:00Z");
    assert_eq!(jobs["110000-cccc"]["started"], "2026-01-09T02:00:00Z");
    assert_eq!(
        jobs["110000-cccc"]["pid"],
        json!(t.agent.id()),
        "the live pid from meta.json"
    );
    assert_eq!(jobs["090000-aaaa"]["task"], "Run tests and report results");
    let problems = jobs["140000-ffff"]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let path = t.sb.root.join("140000-ffff/meta.json");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .starts_with(&path.display().to_string()),
        "{problems:?}"
    );
}

#[test]
fn orchestrator_tree_filters() {
    let t = orchestrator_tree();
    let sb = &t.sb;
    assert_eq!(
        ids(&sb.jobs_json(&["--status", "failed", "--status", "killed"])),
        ["120000-dddd", "100000-bbbb"]
    );
    assert_eq!(
        ids(&sb.jobs_json(&["--project", "musica"])),
        ["130000-eeee", "110000-cccc", "090000-aaaa"]
    );
    assert_eq!(
        ids(&sb.jobs_json(&["--project", "musica", "--project", "librec"])),
        ["130000-eeee", "120000-dddd", "110000-cccc", "090000-aaaa"]
    );
    assert_eq!(
        ids(&sb.jobs_json(&["--limit", "2"])),
        ["130000-eeee", "120000-dddd"]
    );
    assert_eq!(
        ids(&sb.jobs_json(&["--project", "musica", "--status", "completed"])),
        ["090000-aaaa"]
    );
    // A project nobody knows is a mistake, not an empty fleet: the known ones are named.
    let typo = sb
        .luzia()
        .args(["jobs", "--json", "--project", "musicaa"])
        .output()
        .unwrap();
    assert_eq!(typo.status.code(), Some(1));
    assert!(typo.stdout.is_empty());
    let said = String::from_utf8_lossy(&typo.stderr);
    assert!(
        said.contains("unknown project 'musicaa' (known: librec, musica"),
        "{said}"
    );
    let questions = sb
        .luzia()
        .args(["questions", "--project", "musicaa"])
        .output()
        .unwrap();
    assert_eq!(questions.status.code(), Some(1));
    assert_eq!(
        ids(&sb.jobs_json(&["--status", "died", "--limit", "5"])),
        ["130000-eeee"]
    );
}

#[test]
fn orchestrator_tree_table_and_timing() {
    let t = orchestrator_tree();
    let out = t.sb.luzia().arg("jobs").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    let header = text.lines().next().unwrap();
    assert!(header.starts_with("ID  "), "{header}");
    let words: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        words,
        ["ID", "PROJECT", "STATUS", "PROGRESS", "ELAPSED", "TASK"]
    );
    assert!(!header.contains("STARTED"));
    for (id, status, _, _) in ORCH {
        let line = text
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}: {text}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        let shown = if *id == "140000-ffff" {
            format!("{status}!")
        } else {
            status.to_string()
        };
        assert!(cells.contains(&shown.as_str()), "{line}");
    }
    assert!(text.contains("Refactor the importer"));
    assert!(!text.contains("notifications") && !text.contains("pycache"));
    assert!(stderr_of(&out).contains("1 job(s) marked '!'"));
    assert!(!text.contains('\x1b'), "NO_COLOR and a pipe: no escapes");

    timing_columns(&t.sb);
}

fn timing_columns(sb: &Sandbox) {
    // A finished time so the duration column has something to show.
    sb.write(
        "090000-aaaa",
        "meta.json",
        r#"{"project": "musica", "task": "Run tests", "pid": "12847", "started": "2026-01-09T09:00:00.123456", "finished": "2026-01-09T09:08:37.5"}"#,
    );
    let out = sb.luzia().args(["jobs", "--timing"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    let words: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        words,
        [
            "ID", "PROJECT", "STATUS", "PROGRESS", "ELAPSED", "STARTED", "FINISHED", "DURATION",
            "TASK"
        ]
    );
    let row = text.lines().find(|l| l.starts_with("090000-aaaa")).unwrap();
    // TZ=UTC: local and UTC agree.
    assert!(row.contains("2026-01-09 09:00:00"), "{row}");
    assert!(row.contains("2026-01-09 09:08:37"), "{row}");
    assert!(row.contains("8m37s"), "{row}");
    let running = text.lines().find(|l| l.starts_with("110000-cccc")).unwrap();
    assert!(running.contains("2026-01-09 11:00:00"), "{running}");
}

// ---------------------------------------------------------------------------------------------
// 4. One job in full
// ---------------------------------------------------------------------------------------------

#[test]
fn full_view_of_needs_input_shows_the_question_and_options() {
    let sb = Sandbox::with_samples();
    let out = sb.luzia().args(["jobs", "151200-q1q1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let field = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{k}:")))
            .unwrap_or_else(|| panic!("no {k} line: {text}"))
            .split_once(':')
            .unwrap()
            .1
            .trim()
            .to_owned()
    };
    assert_eq!(field("id"), "151200-q1q1");
    assert_eq!(field("status"), "needs_input");
    assert_eq!(field("exit code"), "100");
    assert_eq!(field("project"), "musica");
    let question = field("question");
    assert!(question.starts_with("q1 (choice)"), "{question}");
    assert!(
        question.ends_with("Which database: production or staging?"),
        "{question}"
    );
    assert_eq!(field("options"), "1) production  2) staging");
    assert_eq!(field("context"), "Running migration task");
    // The last lines of output, after the marker.
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("--- last 10 lines of"))
        .skip(1)
        .collect();
    assert_eq!(
        tail,
        [
            "Found 3 pending migrations.",
            "Need to know which database to use.",
            "",
            "exit:100"
        ]
    );
}

#[test]
fn full_view_of_a_truncated_meta_names_the_problem() {
    let sb = Sandbox::with_samples();
    let out = sb.luzia().args(["jobs", "154500-trnc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    let path = sb.root.join("154500-trnc/meta.json");
    let problem = text
        .lines()
        .find(|l| l.starts_with("problem:"))
        .unwrap_or_else(|| panic!("no problem line: {text}"));
    assert!(
        problem.contains(&path.display().to_string()) && problem.contains("is not valid JSON"),
        "{problem}"
    );
    assert!(text.contains("status:    completed\n"), "{text}");
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("--- last 10 lines of"))
        .skip(1)
        .collect();
    assert_eq!(tail, ["updated 4 packages", "", "exit:0"]);
}

#[test]
fn full_view_json_is_one_object() {
    let sb = Sandbox::with_samples();
    let out = sb
        .luzia()
        .args(["jobs", "150110-e5f6", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.is_object(), "{v}");
    assert_eq!(v["id"], "150110-e5f6");
    assert_eq!(v["status"], "killed");
    assert_eq!(v["exit_code"], -9);
    assert_eq!(v["pid"], 15011);
    assert_eq!(v["project"], "overbits");
    assert_eq!(v["task"], "Rebuild the search index");
    assert_eq!(v["waiting"], Value::Null);
}

#[test]
fn full_view_shows_the_last_ten_lines() {
    let sb = Sandbox::new();
    sb.write("j1", "meta.json", meta("p", OLD, None));
    let log: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    sb.write("j1", "output.log", format!("{log}\nexit:0\n"));
    let out = sb.luzia().args(["jobs", "j1"]).output().unwrap();
    let text = stdout_of(&out);
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("--- last 10 lines of"))
        .skip(1)
        .collect();
    let want: Vec<String> = (23..=30)
        .map(|i| format!("line {i}"))
        .chain(["".into(), "exit:0".into()])
        .collect();
    assert_eq!(tail, want);
}

#[test]
fn links_are_not_jobs() {
    let sb = Sandbox::with_samples();
    // A link in the root is not a job, even named like one.
    let out = sb.luzia().args(["jobs", "160500-link"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("no job '160500-link'"));
    // A link inside a job directory is not followed out of it.
    let secret = sb.tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET\n\nexit:0\n").unwrap();
    sb.write("j1", "meta.json", meta("p", OLD, None));
    std::os::unix::fs::symlink(&secret, sb.job_dir("j1").join("output.log")).unwrap();
    let jobs = by_id(&sb.jobs_json(&[]));
    let j1 = &jobs["j1"];
    assert_ne!(
        j1["status"], "completed",
        "read the exit line through a link"
    );
    let problems = j1["problems"].to_string();
    assert!(problems.contains("symbolic link"), "{problems}");
    let out = sb.luzia().args(["logs", "j1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!stdout_of(&out).contains("TOP SECRET"));
}

#[test]
fn full_view_names_known_issues_with_their_fix_and_the_timeline() {
    let sb = Sandbox::new();
    sb.write("j1", "meta.json", meta("p", OLD, None));
    sb.write(
        "j1",
        "output.log",
        "Collecting pyyaml\nTraceback (most recent call last):\n  File \"run.py\", line 1, in <module>\n\
         \x1b[31mModuleNotFoundError: No module named 'yaml'\x1b[0m\n\nexit:1\n",
    );
    sb.write(
        "j1",
        "history.jsonl",
        "{\"progress\": {\"percent\": 50, \"step_name\": \"installing\"}, \"at\": \"2026-01-09T14:00:00Z\"}\n",
    );
    let out = sb.luzia().args(["jobs", "j1"]).output().unwrap();
    assert!(out.status.success());
    let text = stdout_of(&out);
    assert!(
        text.contains("issue:     error python-module-not-found (×1): ModuleNotFoundError: No module named 'yaml'"),
        "{text}"
    );
    assert!(
        text.contains("  fix:     Install it in the environment"),
        "{text}"
    );
    let timeline: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "--- timeline ---")
        .take_while(|l| !l.starts_with("--- last"))
        .collect();
    assert!(
        timeline
            .iter()
            .any(|l| l.contains("progress 50%: installing")),
        "{text}"
    );
    assert!(
        timeline
            .iter()
            .any(|l| l.contains("finished: failed (exit 1)")),
        "{text}"
    );
    // No escape sequence of the log reaches the issue line.
    assert!(
        !text
            .lines()
            .find(|l| l.starts_with("issue:"))
            .unwrap()
            .contains('\x1b')
    );

    // A clean log: no issue lines at all.
    sb.write("j2", "meta.json", meta("p", OLD, None));
    sb.write("j2", "output.log", "all good\n\nexit:0\n");
    let text = stdout_of(&sb.luzia().args(["jobs", "j2"]).output().unwrap());
    assert!(!text.contains("issue:"), "{text}");
}
