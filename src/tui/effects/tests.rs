//! The executor with real workers, a real jobs root and the event channel: what comes back,
//! in what order, and that `perform` never waits for what it asked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::*;
use crate::config::Overrides;
use crate::jobs::fs::follow::Reset;
use crate::jobs::fs::tail::LINE_CAP;
use crate::jobs::hitl::operator::Scope;

/// How long an awaited event may take before the test fails: generous, because the scanner
/// reads 16 MiB in a debug build on a loaded 2-core machine; a passing run never waits for it.
const WITHIN: Duration = Duration::from_secs(60);

struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    queue: PathBuf,
    exec: Executor,
    rx: UnboundedReceiver<Event>,
}

fn id(s: &str) -> JobId {
    JobId::parse(s).unwrap()
}

/// A jobs root holding one job that counts as running (its pid is this process), and a
/// config allowing one agent at a time, so a dispatch queues rather than starts anything.
fn rig(read_only: bool) -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("jobs");
    let queue = tmp.path().join("queue");
    let project = tmp.path().join("project");
    for d in [&root, &queue, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    let busy = root.join("100001-busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(
        busy.join("meta.json"),
        r#"{"project": "p", "task": "busy"}"#,
    )
    .unwrap();
    std::fs::write(busy.join("pid"), format!("{}\n", std::process::id())).unwrap();
    let file = tmp.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "queue_dir = {queue:?}\nnotifications_log = {:?}\n[agent]\nmax_concurrent = 1\n\
             [projects.p]\npath = {project:?}\n",
            tmp.path().join("notes.log")
        ),
    )
    .unwrap();
    let overrides = Overrides {
        config: Some(file),
        jobs_dir: Some(root.clone()),
    };
    let config = Config::load_with(&overrides, &|_| None).unwrap();
    let (tx, rx) = unbounded_channel();
    let setup = Setup {
        root: root.clone(),
        read_only,
        config: Some(config),
        patterns: Some(Arc::new(PatternSet::builtin())),
        known_issues: None,
        memory_percent: 100,
        cache: None,
    };
    let exec = Executor::new(setup, tx).unwrap();
    Rig {
        _tmp: tmp,
        root,
        queue,
        exec,
        rx,
    }
}

impl Rig {
    /// The next event `pick` takes, skipping the others (watch mode, system alerts...).
    fn next<T>(&mut self, what: &str, mut pick: impl FnMut(Event) -> Option<T>) -> T {
        let deadline = Instant::now() + WITHIN;
        loop {
            match self.rx.try_recv() {
                Ok(ev) => {
                    if let Some(t) = pick(ev) {
                        return t;
                    }
                }
                Err(_) if Instant::now() > deadline => panic!("no {what} within {WITHIN:?}"),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }

    /// Every event that arrives until `quiet` passes without one.
    fn drain(&mut self, quiet: Duration) -> Vec<Event> {
        let mut out = Vec::new();
        let mut last = Instant::now();
        while last.elapsed() < quiet {
            match self.rx.try_recv() {
                Ok(ev) => {
                    out.push(ev);
                    last = Instant::now();
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        out
    }

    fn job_dir(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn a_dispatch_blocked_on_the_slot_lock_holds_up_neither_perform_nor_other_effects() {
    let mut r = rig(false);
    // Another dispatcher holds the lock the dispatch needs.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(r.queue.join(".slots.lock"))
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();

    // This thread holds the queue's lock until the end of the test: a perform that waited for
    // it would never return, so reaching the next line is the proof (no clock needed).
    r.exec.perform(Effect::Dispatch {
        host: None,
        project: "p".into(),
        task: "waits for a slot".into(),
        retry_of: None,
        agent: None,
    });
    r.exec.perform(Effect::ReadJobs(vec![id("100001-busy")]));
    r.exec.perform(Effect::Answer {
        job: id("100009-gone"),
        question_id: "q1".into(),
        answer: "yes".into(),
    });

    // The job read and the answer come from two workers, in either order; the dispatch not
    // at all while the lock is held.
    let (mut read, mut answered) = (None, None);
    let mut early_dispatch = false;
    r.next("the job read and the answer's outcome", |ev| {
        match ev {
            Event::Dispatched(_) => early_dispatch = true,
            Event::JobsRead(jobs) => read = Some(jobs),
            Event::Answered { message, ok, .. } => answered = Some((ok, message)),
            _ => {}
        }
        (read.is_some() && answered.is_some()).then_some(())
    });
    assert!(read.is_some_and(|jobs| jobs[0].1.is_some()));
    assert_eq!(
        answered,
        Some((false, "job 100009-gone is gone".to_string()))
    );
    assert!(!early_dispatch, "the dispatch went past a lock still held");

    drop(lock);
    let result = r.next("the dispatch's outcome", |ev| match ev {
        Event::Dispatched(result) => Some(result),
        _ => None,
    });
    let (started, message) = result.unwrap();
    assert_eq!(started, None);
    assert!(message.starts_with("queued "), "{message}");
}

#[test]
fn log_results_come_in_the_order_asked_and_the_pane_feeds_the_scanner() {
    let mut r = rig(false);
    let a = r.job_dir("100002-a");
    let b = r.job_dir("100003-b");
    append(&a.join("output.log"), b"a says hello\n");
    append(&b.join("output.log"), b"b says hello\n");
    r.exec.first_frame_drawn();
    r.exec.perform(Effect::OpenLog(id("100002-a")));
    r.exec.perform(Effect::OpenLog(id("100003-b")));
    let mut log = Vec::new();
    let mut note = |ev: &Event| match ev {
        Event::LogLoaded { id, lines, .. } => log.push(format!("loaded {id} {}", lines.len())),
        Event::LogAppended { id, lines, .. } => log.push(format!("appended {id} {}", lines.len())),
        _ => {}
    };
    r.next("b's log loaded", |ev| {
        note(&ev);
        matches!(&ev, Event::LogLoaded { id, .. } if id.as_str() == "100003-b").then_some(())
    });
    // Written after the pane opened it: only the pane's follower reads this line.
    append(
        &b.join("output.log"),
        b"OSError: [Errno 28] No space left on device\n",
    );
    r.exec.perform(Effect::PollLog(id("100003-b")));
    // Polling a job no longer open reads nothing.
    r.exec.perform(Effect::PollLog(id("100002-a")));
    let findings = r.next("the pane's lines scanned", |ev| {
        note(&ev);
        match ev {
            Event::IssuesFound(found) => Some(found),
            _ => None,
        }
    });
    // Nothing asked the scanner to read b's log: the lines came from the pane's follower.
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].0, id("100003-b"));
    for ev in r.drain(Duration::from_millis(200)) {
        note(&ev);
    }
    assert_eq!(
        log,
        [
            "loaded 100002-a 1",
            "loaded 100003-b 1",
            "appended 100003-b 1"
        ]
    );
}

#[test]
fn a_fifo_in_a_job_directory_is_a_problem_not_a_hang() {
    let mut r = rig(false);
    let dir = r.job_dir("100004-fifo");
    crate::jobs::fs::files::tests::mkfifo(&dir.join("meta.json"));
    append(&dir.join("output.log"), b"done\n\nexit:0\n");
    r.exec.perform(Effect::Sync {
        skip: Default::default(),
    });
    let synced = r.next("the listing", |ev| match ev {
        Event::Synced(s) => Some(s),
        _ => None,
    });
    let job = synced
        .read
        .iter()
        .find(|j| j.id == id("100004-fifo"))
        .expect("the job is listed");
    let problem = job.problems[0].to_string();
    assert!(
        problem.contains(&*dir.join("meta.json").to_string_lossy())
            && problem.contains("is a FIFO, not a regular file"),
        "{problem}"
    );
}

#[test]
fn read_only_refuses_writes_where_they_are_performed() {
    let mut r = rig(true);
    r.exec.perform(Effect::Kill(id("100001-busy")));
    let notice = r.next("the refusal", |ev| match ev {
        Event::Notice(m) => Some(m),
        _ => None,
    });
    assert_eq!(notice, "read-only: this cockpit writes nothing");
    r.exec.perform(Effect::Decide {
        job: id("100001-busy"),
        gate_id: "g1".into(),
        approved: true,
        scope: Scope::Once,
        reason: String::new(),
    });
    let answered = r.next("the refusal", |ev| match ev {
        Event::Answered { ok, message, .. } => Some((ok, message)),
        _ => None,
    });
    assert!(!answered.0, "{}", answered.1);
    assert!(
        std::fs::read_dir(r.root.join("100001-busy"))
            .unwrap()
            .flatten()
            .all(|e| e.file_name() != "approved.json")
    );
}

/// The resident set of this process, in bytes (Linux).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn a_huge_line_without_its_newline_is_shown_cut_and_costs_little() {
    let mut r = rig(false);
    let dir = r.job_dir("100004-long");
    let log = dir.join("output.log");
    let mut body = b"first line\n".to_vec();
    body.extend(std::iter::repeat_n(b'z', 50 * 1024 * 1024));
    append(&log, &body);
    drop(body);
    let before = rss();
    r.exec.first_frame_drawn();
    r.exec.perform(Effect::OpenLog(id("100004-long")));
    let lines = r.next("the log loaded", |ev| match ev {
        Event::LogLoaded { lines, .. } => Some(lines),
        _ => None,
    });
    let partial = r.next("the line being written", |ev| match ev {
        Event::LogPartial { line, .. } => Some(line),
        _ => None,
    });
    assert!(
        lines.len() <= 1,
        "only what the read budget holds: {}",
        lines.len()
    );
    assert!(partial.cut, "shown cut");
    assert_eq!(partial.bytes.len(), LINE_CAP);
    assert!(partial.bytes.iter().all(|&b| b == b'z'));
    // More of the same line: the pane shows its new end, and holds no more of it.
    append(&log, &vec![b'w'; 8 * 1024 * 1024]);
    r.exec.perform(Effect::PollLog(id("100004-long")));
    let grown = r.next("the line grown", |ev| match ev {
        Event::LogPartial { line, .. } => Some(line),
        _ => None,
    });
    assert!(grown.cut && grown.bytes.ends_with(b"www"));
    assert_eq!(grown.bytes.len(), LINE_CAP);
    let grew = rss().saturating_sub(before);
    assert!(grew < 24 * 1024 * 1024, "{grew} bytes more resident");
}

#[test]
fn a_burst_far_ahead_of_the_pane_lands_on_its_end_and_the_scanner_still_sees_it_all() {
    let mut r = rig(false);
    let dir = r.job_dir("100005-burst");
    let log = dir.join("output.log");
    append(&log, b"before the burst\n");
    r.exec.first_frame_drawn();
    r.exec.perform(Effect::OpenLog(id("100005-burst")));
    r.next("the log loaded", |ev| match ev {
        Event::LogLoaded { .. } => Some(()),
        _ => None,
    });
    // 64 MiB of lines, a known issue early in them (in what the pane skips), then the end.
    let mut burst = b"OSError: [Errno 28] No space left on device\n".to_vec();
    let line = b"filler line of a burst written at once, far ahead of the pane\n";
    while burst.len() < 16 * 1024 * 1024 {
        burst.extend_from_slice(line);
    }
    burst.extend_from_slice(b"THE LAST LINE\n");
    append(&log, &burst);
    drop(burst);
    r.exec.perform(Effect::PollLog(id("100005-burst")));
    let (mut appended, mut findings) = (None, None);
    while appended.is_none() || findings.is_none() {
        let ev = r.next(
            "the burst's end and the scanner's findings",
            |ev| match ev {
                Event::LogAppended { .. } | Event::IssuesFound(_) => Some(ev),
                _ => None,
            },
        );
        match ev {
            Event::LogAppended { reset, lines, .. } => appended = Some((reset, lines)),
            Event::IssuesFound(found) => findings = Some(found),
            _ => {}
        }
    }
    let ((reset, lines), findings) = (appended.unwrap(), findings.unwrap());
    assert!(
        matches!(reset, Some(Reset::Skipped(n)) if n > 12 * 1024 * 1024),
        "{reset:?}"
    );
    assert_eq!(lines.last().unwrap().bytes, b"THE LAST LINE");
    assert!(
        lines.len() < 20_000,
        "only the end was read: {}",
        lines.len()
    );
    assert_eq!(
        findings[0].0,
        id("100005-burst"),
        "the scanner read what the pane skipped"
    );
}
