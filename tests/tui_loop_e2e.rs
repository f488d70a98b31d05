//! End-to-end: the cockpit's event loop stays live whatever its effects run into. A job file
//! that is a FIFO (opening one for reading blocks until a writer comes) and a dispatch that
//! waits on another process's slot lock must neither freeze the screen nor stop `q` from
//! quitting.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use tmux::{Cockpit, Opts, POLL, Sandbox, Screen};

/// How long `q` may take to end the cockpit. Quitting does no I/O, so this is generous even on
/// a loaded machine; a loop stuck on an effect never gets there.
const QUIT_DEADLINE: Duration = Duration::from_secs(5);

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

/// Presses `q` and waits, up to [`QUIT_DEADLINE`], for the cockpit to exit; returns its code.
fn quit_within_deadline(ck: &Cockpit) -> i32 {
    ck.pid();
    ck.key("q");
    let start = Instant::now();
    while !ck.exited() {
        assert!(
            start.elapsed() < QUIT_DEADLINE,
            "the cockpit did not quit within {QUIT_DEADLINE:?} of `q`\n--- screen ---\n{}\n---",
            ck.screen().text()
        );
        std::thread::sleep(POLL);
    }
    ck.wait_exit()
}

/// Selects job `id` with `g` (the first row) and then `j`, waiting for each move to show in the
/// output pane's title: every key is a redraw the loop has to make. `known` are the ids listed.
fn select(ck: &Cockpit, known: &[&str], id: &str) -> Screen {
    // A screen caught between two frames may show the table half drawn: wait for all of it.
    let order = ck
        .wait_for("every job listed", |s| {
            s.job_ids(known).len() == known.len()
        })
        .job_ids(known);
    let at = order
        .iter()
        .position(|x| x == id)
        .unwrap_or_else(|| panic!("{id} is not listed: {order:?}"));
    ck.key("g");
    let mut s = ck.wait_for(&format!("{} selected", order[0]), |s| {
        s.output_title().contains(&order[0])
    });
    for next in &order[1..=at] {
        ck.key("j");
        s = ck.wait_for(&format!("{next} selected"), |s| {
            s.output_title().contains(next.as_str())
        });
    }
    s
}

/// A job directory whose `meta.json` is a FIFO and another whose `output.log` is one: the
/// cockpit lists all the jobs, names the FIFO's path as the job's problem, stays responsive,
/// and quits on `q`.
#[test]
fn fifos_in_job_directories_neither_hang_nor_hide_the_jobs() {
    require_tmux!();
    let sb = Sandbox::new();
    let plain = "100001-plain";
    let fifo_meta = "100002-fmeta";
    let fifo_log = "100003-flog";
    sb.finished_job(plain, "musica", "A plain finished job", 1, 0);
    fs::create_dir(sb.job_dir(fifo_meta)).unwrap();
    mkfifo(&sb.job_dir(fifo_meta).join("meta.json"));
    sb.write(fifo_meta, "output.log", "its log is fine\n\nexit:0\n");
    sb.finished_job(fifo_log, "librec", "A job whose log is a FIFO", 2, 0);
    fs::remove_file(sb.job_dir(fifo_log).join("output.log")).unwrap();
    mkfifo(&sb.job_dir(fifo_log).join("output.log"));

    let ck = Cockpit::start(&sb, Opts::default());
    ck.wait_ready();
    ck.wait_for("all three jobs listed", |s| {
        [plain, fifo_meta, fifo_log]
            .iter()
            .all(|id| s.job_row(id).is_some())
    });
    let s = ck.wait_row(fifo_meta, "a problem mark", |r| r.contains('!'));
    assert!(
        s.job_row(plain).is_some_and(|r| !r.contains('!')),
        "{:?}",
        s.job_row(plain)
    );

    // The job whose log is a FIFO: the output pane says why it shows nothing.
    let all = [plain, fifo_meta, fifo_log];
    select(&ck, &all, fifo_log);
    ck.wait_for("the output pane naming the FIFO", |s| {
        s.text().contains("is a FIFO, not a regular file")
            && s.text().contains("100003-flog/output.log")
    });

    // The job whose meta.json is a FIFO: its details name the file and what it is.
    select(&ck, &all, fifo_meta);
    ck.key("v");
    ck.wait_for("the detail view naming meta.json as a FIFO", |s| {
        s.text().contains("100002-fmeta/meta.json")
            && s.text().contains("is a FIFO, not a regular file")
    });
    ck.esc();

    // Still live: navigation redraws.
    select(&ck, &all, plain);
    assert_eq!(quit_within_deadline(&ck), 0);
}

/// Whether `/proc/locks` shows process `pid` waiting for a `flock`.
fn waiting_for_flock(pid: u32) -> bool {
    let pid = pid.to_string();
    fs::read_to_string("/proc/locks").is_ok_and(|locks| {
        locks.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.get(1) == Some(&"->") && words.get(2) == Some(&"FLOCK") && words.contains(&&*pid)
        })
    })
}

/// A config with one project and the queue (and its slot lock) in the sandbox; returns the
/// config file and the queue directory.
fn dispatch_config(sb: &Sandbox) -> (std::path::PathBuf, std::path::PathBuf) {
    let queue = sb.tmp.path().join("queue");
    let project = sb.tmp.path().join("project");
    fs::create_dir_all(&queue).unwrap();
    fs::create_dir_all(&project).unwrap();
    let config = sb.config_file(
        "dispatch.toml",
        &format!(
            "queue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n[agent]\n\
             command = [\"/bin/sh\", \"-c\", \"exit 0\"]\n\n[projects.musica]\npath = {project:?}\n",
            notes = sb.tmp.path().join("notifications.log"),
        ),
    );
    (config, queue)
}

/// Takes the lock a dispatcher takes before it counts the running agents and starts one, as
/// another `luzia run` would hold it; it is let go when the file is dropped.
fn hold_slot_lock(queue: &Path) -> fs::File {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(queue.join(".slots.lock"))
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    lock
}

/// A dispatch from the input bar that blocks (another dispatcher holds the slot lock, as
/// `luzia run` does while it counts and starts agents): the cockpit keeps drawing, navigation
/// works, and `q` quits while the lock is still held.
#[test]
fn a_dispatch_waiting_on_the_slot_lock_does_not_freeze_the_cockpit() {
    require_tmux!();
    let sb = Sandbox::new();
    let (config, queue) = dispatch_config(&sb);
    let first = "100001-first";
    let second = "100002-second";
    sb.finished_job(first, "musica", "The first job", 1, 0);
    sb.finished_job(second, "musica", "The second job", 2, 0);
    let lock = hold_slot_lock(&queue);

    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .global_arg("--config")
            .global_arg(config.to_str().unwrap()),
    );
    ck.wait_ready();
    ck.wait_for("both jobs listed", |s| {
        s.job_row(first).is_some() && s.job_row(second).is_some()
    });
    let pid = ck.pid();

    ck.key("n");
    ck.wait_text("new task for");
    ck.type_text("a task that waits for a slot");
    ck.key("Enter");
    let start = Instant::now();
    while !waiting_for_flock(pid) {
        assert!(
            start.elapsed() < tmux::TIMEOUT,
            "the cockpit never waited for the slot lock:\n{}",
            fs::read_to_string("/proc/locks").unwrap_or_default()
        );
        std::thread::sleep(POLL);
    }

    // The dispatch is stuck on the lock; the screen is not.
    ck.esc();
    let both = [first, second];
    select(&ck, &both, first);
    select(&ck, &both, second);
    select(&ck, &both, first);
    assert!(
        waiting_for_flock(pid),
        "the dispatch stopped waiting for the lock"
    );
    assert_eq!(quit_within_deadline(&ck), 0);

    drop(lock);
    let jobs: Vec<_> = fs::read_dir(&sb.root).unwrap().flatten().collect();
    assert_eq!(jobs.len(), 2, "no job was started while the lock was held");
}

/// Runs `luzia ARGS` in the sandbox; fails the test if it had to be killed (it hung). Returns
/// its stdout and stderr.
fn run_luzia(sb: &common::Sandbox, args: &[&str]) -> String {
    let start = Instant::now();
    let out = sb
        .luzia()
        .env("LUZIA_QUEUE_DIR", sb.tmp.path().join("queue"))
        .env("LUZIA_NOTIFICATIONS_LOG", sb.tmp.path().join("notes.log"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some() && start.elapsed() < common::HANG_GUARD,
        "luzia {args:?} hung: {out:?}"
    );
    format!("{}{}", common::stdout_of(&out), common::stderr_of(&out))
}

/// The plain commands read the same job files the same way: `luzia jobs`, `questions`,
/// `status` and `logs` finish, and name the FIFO, whichever job file it is.
#[test]
fn the_cli_names_fifos_in_job_directories_and_does_not_hang() {
    let sb = common::Sandbox::new();
    let alive = common::sleeper();
    let meta = |id: &str| {
        serde_json::json!({"id": id, "project": "musica", "task": "t", "started": common::now_rfc3339()})
            .to_string()
    };
    let fifo = |id: &str, name: &str| {
        fs::create_dir_all(sb.job_dir(id)).unwrap();
        mkfifo(&sb.job_dir(id).join(name));
    };
    let cases = [
        ("100001-fmeta", "meta.json"),
        ("100002-flog", "output.log"),
        ("100003-fpid", "pid"),
        ("100004-fask", "clarification.json"),
        ("100005-fprog", "progress.json"),
    ];
    for (id, name) in cases {
        fifo(id, name);
        for (file, body) in [
            ("meta.json", meta(id)),
            ("pid", format!("{}\n", alive.id())),
            ("output.log", "working\n".to_string()),
        ] {
            if file != name {
                sb.write(id, file, body);
            }
        }
    }

    let run = |args: &[&str]| run_luzia(&sb, args);
    let listed = common::by_id(&sb.jobs_json(&[]));
    for (id, name) in cases {
        let problems = listed[id]["problems"].to_string();
        let path = sb.job_dir(id).join(name);
        assert!(
            problems.contains(&*path.to_string_lossy())
                && problems.contains("is a FIFO, not a regular file"),
            "{id}: {problems}"
        );
    }
    let questions = run(&["questions"]);
    assert!(
        questions.contains("clarification.json") && questions.contains("is a FIFO"),
        "{questions}"
    );
    run(&["status"]);
    let logs = run(&["logs", "100002-flog"]);
    assert!(logs.contains("is a FIFO, not a regular file"), "{logs}");
}
