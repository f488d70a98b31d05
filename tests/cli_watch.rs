//! `luzia watch --json` through the real binary: the initial state, then a job's whole life as
//! real processes live it (`luzia run` starts a detached supervisor and an agent that asks with
//! `luzia ask`, is answered with `luzia answer`, ends with its exit line, and has its directory
//! removed), heartbeats, and the two ways a reader goes away (stdin closed, stdout closed), both
//! while the stream is idle. Every line is read back with the crate's own decoder. Nothing here
//! asserts how fast anything is: every wait is a hang guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use common::*;
use luzia::jobs::wire::{Change, How, Line, PROTOCOL, Pending, Record, decode};

/// `luzia watch --json` running as a child, its stdin held open, its lines decoded as they come.
struct Watching {
    child: ChildGuard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every line read so far, raw.
    raw: Vec<String>,
}

impl Watching {
    fn start(sb: &Sandbox, heartbeat: u64) -> Watching {
        Watching::start_with_env(sb, heartbeat, &[])
    }

    fn start_with_env(sb: &Sandbox, heartbeat: u64, env: &[(&str, &str)]) -> Watching {
        let mut child = sb
            .luzia_std()
            .envs(env.iter().copied())
            .args(["watch", "--json", "--heartbeat", &heartbeat.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn luzia watch --json");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        Watching {
            child: ChildGuard::new(child),
            stdin,
            lines,
            raw: Vec::new(),
        }
    }

    /// Reads lines until one for which `want` gives a value (the hang guard fails the test).
    fn until<T>(&mut self, what: &str, mut want: impl FnMut(&Line) -> Option<T>) -> T {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let text = self.lines.recv_timeout(left).unwrap_or_else(|e| {
                panic!(
                    "waiting for {what} ({e:?}); the lines so far: {:#?}",
                    self.raw
                )
            });
            assert!(text.starts_with(r#"{"type":""#), "type first: {text}");
            let line = decode(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            self.raw.push(text);
            if let Some(v) = want(&line) {
                return v;
            }
        }
    }

    /// The next `job` line of job `id` with this change.
    fn job(&mut self, id: &str, change: Change) -> Record {
        self.until(&format!("{change:?} of {id}"), |line| match line {
            Line::Job { change: c, job, .. } if *c == change && job.id.as_str() == id => {
                Some((**job).clone())
            }
            _ => None,
        })
    }
}

/// A sandbox whose config names project `p` and an agent that waits for the file `go`, asks
/// which database, waits for the file `release` and exits 3. Dropping it kills what it started.
struct World {
    sb: Sandbox,
    go: PathBuf,
    release: PathBuf,
}

impl World {
    fn new() -> World {
        let sb = Sandbox::new();
        let base = sb.tmp.path();
        let go = base.join("go");
        let release = base.join("release");
        let project = base.join("proj");
        fs::create_dir(&project).unwrap();
        let q = |p: PathBuf| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let script = format!(
            "while [ ! -e {go} ]; do sleep 0.05; done; \
             luzia ask 'Which database?' -o production -o staging >/dev/null; \
             while [ ! -e {rel} ]; do sleep 0.05; done; echo done; exit 3",
            go = go.to_str().unwrap(),
            rel = release.to_str().unwrap()
        );
        let config = format!(
            "notifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [\"sh\", \"-c\", {}]\n\n\
             [projects.p]\npath = {}\n",
            q(base.join("notifications.log")),
            q(base.join("queue")),
            serde_json::to_string(&script).unwrap(),
            q(project),
        );
        fs::create_dir_all(sb.xdg.join("luzia")).unwrap();
        fs::write(sb.xdg.join("luzia/config.toml"), config).unwrap();
        World { sb, go, release }
    }

    /// Runs a luzia command to its end, successfully, and returns its stdout.
    fn luzia(&self, args: &[&str]) -> String {
        let out = self
            .sb
            .luzia()
            .args(args)
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        assert!(out.status.success(), "luzia {args:?}: {}", stderr_of(&out));
        stdout_of(&out)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(self.sb.tmp.path());
    }
}

fn finished_job(sb: &Sandbox, id: &str) {
    sb.write(id, "meta.json", r#"{"project": "p", "task": "an old one"}"#);
    sb.write(id, "output.log", "all good\nexit:0\n");
}

#[test]
fn the_state_then_a_job_s_whole_life_as_it_happens() {
    let w = World::new();
    finished_job(&w.sb, "100000-old");
    let mut watch = Watching::start(&w.sb, 5);
    let hello = watch.until("hello", |l| match l {
        Line::Hello(h) => Some(h.clone()),
        _ => None,
    });
    assert_eq!(hello.protocol, PROTOCOL);
    assert_eq!(hello.luzia, env!("CARGO_PKG_VERSION"));
    assert_eq!(hello.projects, ["p"]);
    assert_eq!(hello.heartbeat_secs, 5);
    assert!(!hello.host.is_empty());
    assert_eq!(PathBuf::from(&hello.root), w.sb.root);
    let old = watch.job("100000-old", Change::Added);
    assert_eq!(
        (old.exit_code, old.meta.unwrap().task.as_str()),
        (Some(0), "an old one")
    );
    let synced = watch.until("synced", |l| match l {
        Line::Synced { jobs } => Some(*jobs),
        Line::Job { .. } => panic!("a job line after the initial one"),
        _ => None,
    });
    assert_eq!(synced, 1);

    let id = w.luzia(&["run", "p", "a task"]).trim().to_owned();
    let added = watch.job(&id, Change::Added);
    assert_eq!(added.meta.unwrap().project, "p");
    fs::write(&w.go, "").unwrap();
    let raised = watch.job(&id, Change::Raised);
    let question = raised.question.expect("the question pending");
    assert_eq!(question.question, "Which database?");
    assert_eq!(question.options, ["production", "staging"]);
    assert_eq!(raised.status.as_str(), "waiting");

    w.luzia(&["answer", &id, "staging"]);
    let (settled, how) = watch.until("settled", |l| match l {
        Line::Job {
            change: Change::Settled,
            job,
            settled,
        } if job.id.as_str() == id => Some(((**job).clone(), settled.clone())),
        _ => None,
    });
    assert!(settled.question.is_none(), "{settled:?}");
    // The line says who answered and how, so that another machine can say so too.
    let [how] = &how[..] else {
        panic!("one settlement: {how:?}")
    };
    assert_eq!(
        (how.kind, how.id.as_str(), how.how, how.source.as_str()),
        (Pending::Question, "q1", How::Answered, "cli")
    );
    assert_eq!(how.text, "staging");
    assert!(how.by.contains('@'), "{how:?}");

    fs::write(&w.release, "").unwrap();
    let ended = watch.until("the exit line", |l| match l {
        Line::Job { change, job, .. } if job.id.as_str() == id && job.exit_code.is_some() => {
            Some((*change, (**job).clone()))
        }
        _ => None,
    });
    assert_eq!(ended.0, Change::Changed);
    assert_eq!(
        (ended.1.exit_code, ended.1.status.as_str()),
        (Some(3), "failed")
    );

    fs::remove_dir_all(w.sb.job_dir(&id)).unwrap();
    watch.until("gone", |l| match l {
        Line::Gone { id: gone } if gone.as_str() == id => Some(()),
        _ => None,
    });
    // Nothing is said twice: each line of the job differs from the one before it.
    let lines_of_job = watch
        .raw
        .iter()
        .filter(|l| l.contains(&id))
        .collect::<Vec<_>>();
    for pair in lines_of_job.windows(2) {
        assert_ne!(pair[0], pair[1]);
    }
}

#[test]
fn a_heartbeat_comes_every_second_when_asked() {
    let sb = Sandbox::new();
    let mut watch = Watching::start(&sb, 1);
    watch.until("synced", |l| {
        matches!(l, Line::Synced { jobs: 0 }).then_some(())
    });
    let first = watch.until("a heartbeat", |l| match l {
        Line::Heartbeat { at } => Some(*at),
        _ => None,
    });
    let second = watch.until("another heartbeat", |l| match l {
        Line::Heartbeat { at } => Some(*at),
        _ => None,
    });
    assert!(second > first, "{first} then {second}");
}

#[test]
fn it_ends_when_its_stdin_closes_even_while_idle() {
    let sb = Sandbox::new();
    finished_job(&sb, "100000-old");
    let mut watch = Watching::start(&sb, 3600);
    watch.until("synced", |l| matches!(l, Line::Synced { .. }).then_some(()));
    drop(watch.stdin.take());
    let status = watch
        .child
        .wait_within(HANG_GUARD, "luzia watch after stdin closed");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn it_ends_when_its_stdout_closes_even_while_idle() {
    let sb = Sandbox::new();
    finished_job(&sb, "100000-old");
    let mut child = sb
        .luzia_std()
        .args(["watch", "--json", "--heartbeat", "3600"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let stdout = child.stdout.take().unwrap();
    let mut guard = ChildGuard::new(child);
    // Read up to `synced`, then close the reading end: nothing more is written for an hour,
    // so only noticing the closed pipe while idle ends it.
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stdout).lines();
        lines.any(|l| l.is_ok_and(|l| l.contains(r#""type":"synced""#)))
    });
    assert!(reader.join().unwrap(), "the stream never said synced");
    let status = guard.wait_within(HANG_GUARD, "luzia watch after stdout closed");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_missing_root_is_an_error_that_names_it_and_says_what_to_do() {
    let sb = Sandbox::new();
    let missing = sb.tmp.path().join("nowhere");
    let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
    isolate_assert(&mut cmd, &sb.xdg);
    let out = cmd
        .args(["--jobs-dir", missing.to_str().unwrap(), "watch", "--json"])
        .timeout(HANG_GUARD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains(missing.to_str().unwrap()) && err.contains("--jobs-dir"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: {}",
        stdout_of(&out)
    );
    let plain = sb
        .luzia()
        .arg("watch")
        .timeout(HANG_GUARD)
        .output()
        .unwrap();
    assert!(!plain.status.success());
    assert!(stderr_of(&plain).contains("luzia watch --json"));
}

#[test]
fn a_log_that_grows_is_sent_at_most_once_per_gap_and_its_end_always() {
    let sb = Sandbox::new();
    let sleeper = sleeper();
    sb.write(
        "200000-busy",
        "meta.json",
        r#"{"project": "p", "task": "streams"}"#,
    );
    sb.write_pid("200000-busy", sleeper.id());
    sb.write("200000-busy", "output.log", "");
    let mut watch = Watching::start(&sb, 3600);
    watch.until("synced", |l| {
        matches!(l, Line::Synced { jobs: 1 }).then_some(())
    });
    let log = sb.job_dir("200000-busy").join("output.log");
    let started = Instant::now();
    // A real process writes 100 lines, 20 ms apart: each would be a line of its own.
    let mut writer = shell(
        r#"i=0; while [ $i -lt 100 ]; do echo "line $i" >> "$LOG"; i=$((i+1)); sleep 0.02; done"#,
        &[("LOG", &log)],
    );
    writer.wait_within(HANG_GUARD, "the writer");
    let full = fs::metadata(&log).unwrap().len();
    watch.until("the whole log", |l| match l {
        Line::Job { job, .. } if job.log_len == full => Some(()),
        _ => None,
    });
    let changes = watch
        .raw
        .iter()
        .filter(|l| l.contains("200000-busy"))
        .count();
    // At most one line per 100 ms while it wrote, plus the last one: far fewer than 100.
    let bound = 2 + (started.elapsed().as_millis() / 100) as usize + 10;
    assert!(
        changes < 100 && changes <= bound,
        "{changes} lines in {:?}",
        started.elapsed()
    );
    drop(sleeper);
}

/// `mv jobs jobs.old; mkdir jobs` under a running stream: the stream says the root is gone,
/// then watches the new directory at that path (a job made there is `added`, the old ones are
/// `gone`), and nothing written in the old directory reaches it any more.
#[test]
fn a_jobs_root_moved_away_and_made_again_is_watched_again() {
    let sb = Sandbox::new();
    finished_job(&sb, "100000-old");
    let mut watch = Watching::start(&sb, 3600);
    watch.until("synced", |l| {
        matches!(l, Line::Synced { jobs: 1 }).then_some(())
    });
    let old = sb.tmp.path().join("jobs.old");
    fs::rename(&sb.root, &old).unwrap();
    let said = watch.until("the root said to be gone", |l| match l {
        Line::Error { message } if message.contains("gone") => Some(message.clone()),
        _ => None,
    });
    assert!(
        said.contains(sb.root.to_str().unwrap()) && said.contains("gone"),
        "{said}"
    );
    fs::create_dir(&sb.root).unwrap();
    watch.until("the old job gone", |l| match l {
        Line::Gone { id } if id.as_str() == "100000-old" => Some(()),
        _ => None,
    });
    finished_job(&sb, "100001-new");
    // Its files are written one after the other: it is added with both, or with the first and
    // then changed.
    let mut first = None;
    watch.until("the new job, finished", |l| match l {
        Line::Job { job, change, .. } if job.id.as_str() == "100001-new" => {
            first.get_or_insert(*change);
            (job.exit_code == Some(0)).then_some(())
        }
        _ => None,
    });
    assert_eq!(first, Some(Change::Added));
    // The old directory is no longer heard: a job made there is not in the stream, while one
    // made after it in the new root is.
    fs::create_dir(old.join("100002-stale")).unwrap();
    fs::write(old.join("100002-stale/output.log"), "exit:0\n").unwrap();
    finished_job(&sb, "100003-later");
    watch.until("the later job", |l| match l {
        Line::Job { job, .. } if job.id.as_str() == "100002-stale" => {
            panic!("a job of the old root reached the stream")
        }
        Line::Job { job, change, .. } if job.id.as_str() == "100003-later" => {
            (*change == Change::Added).then_some(())
        }
        _ => None,
    });
}

#[test]
fn where_the_watcher_polls_changes_are_still_seen() {
    let sb = Sandbox::new();
    finished_job(&sb, "100000-old");
    let mut watch = Watching::start_with_env(&sb, 3600, &[("LUZIA_WATCH", "poll")]);
    watch.until("synced", |l| {
        matches!(l, Line::Synced { jobs: 1 }).then_some(())
    });
    finished_job(&sb, "100001-new");
    let added = watch.job("100001-new", Change::Added);
    assert_eq!(added.exit_code, Some(0));
    fs::remove_dir_all(sb.job_dir("100000-old")).unwrap();
    watch.until("gone", |l| match l {
        Line::Gone { id } if id.as_str() == "100000-old" => Some(()),
        _ => None,
    });
}

#[test]
fn a_queued_task_is_a_row_until_it_leaves_the_queue() {
    queued_row_comes_and_goes(true);
}

#[test]
fn a_queue_made_after_the_watch_began_is_listed_all_the_same() {
    queued_row_comes_and_goes(false);
}

/// `queue_exists`: the queue's root is there when the watch starts (and is watched), else it is
/// made by `luzia run --queue` later (and listed at each tick).
fn queued_row_comes_and_goes(queue_exists: bool) {
    let w = World::new();
    if queue_exists {
        fs::create_dir(w.sb.tmp.path().join("queue")).unwrap();
    }
    let mut watch = Watching::start(&w.sb, 3600);
    watch.until("synced", |l| {
        matches!(l, Line::Synced { jobs: 0 }).then_some(())
    });
    let said = w.luzia(&["run", "--queue", "p", "later, please"]);
    let queue_id = said
        .strip_prefix("queued ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{said}"))
        .to_owned();
    let key = format!("queued:{queue_id}");
    let row = watch.job(&key, Change::Added);
    assert_eq!(row.status.as_str(), "queued");
    assert_eq!(row.queue_position, Some(1));
    assert_eq!(row.meta.unwrap().task, "later, please");
    w.luzia(&["queue", "cancel", &queue_id]);
    watch.until("the row gone", |l| match l {
        Line::Gone { id } if id.as_str() == key => Some(()),
        _ => None,
    });
}
