//! The running count and `luzia gc` through the real binary, with real processes: the cap holds
//! under many dispatchers at once while supervisors finish and one is SIGKILLed; a job luzia
//! did not start takes a slot while it runs; gc moves every old finished job exactly once while
//! jobs are dispatched and finish around it, and never one still being written; `luzia status`
//! works throughout; a dry run changes nothing; bad input is refused with the reason.
//!
//! Nothing here asserts how fast anything is, and every wait has a hang guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(90);
/// A shell fragment for agents: wait until the file named by `$1` exists.
const HOLD: &str = r#"while [ ! -e "$1" ]; do sleep 0.05; done"#;
const DAY: u64 = 86_400;

struct World {
    base: PathBuf,
    jobs: PathBuf,
    queue: PathBuf,
    config: PathBuf,
    _tmp: TempDir,
}

impl World {
    fn new(agent: &[&str], max: usize) -> World {
        let w = World::bare();
        w.configure(agent, max);
        w
    }

    fn bare() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-scale-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "p", "xdg"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        World {
            jobs: base.join("jobs"),
            queue: base.join("queue"),
            config: base.join("config.toml"),
            base,
            _tmp: tmp,
        }
    }

    fn configure(&self, agent: &[&str], max: usize) {
        let w = self;
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let p = |p: &Path| q(p.to_str().unwrap());
        let argv: Vec<String> = agent.iter().map(|a| q(a)).collect();
        fs::write(
            &w.config,
            format!(
                "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [{}]\n\
                 max_concurrent = {max}\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n",
                p(&w.jobs),
                p(&w.path("notifications.log")),
                p(&w.queue),
                argv.join(", "),
                p(&w.path("p")),
            ),
        )
        .unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    fn luzia(&self) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .arg("--config")
            .arg(&self.config);
        cmd
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = self.luzia();
        cmd.args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            stdout_of(&out),
            stderr_of(&out),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "luzia {args:?}: {out}{err}");
        out
    }

    fn jobs(&self) -> Vec<Value> {
        serde_json::from_str(&self.ok(&["jobs", "--json"])).unwrap()
    }

    fn release(&self) {
        fs::write(self.path("release"), "").unwrap();
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

fn nanos_now() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The most agents at once, from `(ns, +1 start / -1 end)` events; an end before a start at the
/// same instant.
fn most_at_once(events: &[(u128, i32)]) -> i32 {
    let mut sorted = events.to_vec();
    sorted.sort();
    let (mut now, mut most) = (0, 0);
    for (_, d) in sorted {
        now += d;
        most = most.max(now);
    }
    most
}

fn count_status(jobs: &[Value], status: &str) -> usize {
    jobs.iter().filter(|j| j["status"] == status).count()
}

/// `n` `luzia run` processes started at once; returns what each printed.
fn dispatch_at_once(w: &World, tasks: &[String]) -> Vec<String> {
    let children: Vec<(ChildGuard, PathBuf)> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let out = w.path(&format!("run-{i}.out"));
            let mut cmd = w.luzia();
            cmd.args(["run", "p", t])
                .stdout(fs::File::create(&out).unwrap())
                .stderr(Stdio::null());
            (ChildGuard::new(cmd.spawn().unwrap()), out)
        })
        .collect();
    children
        .into_iter()
        .map(|(mut c, out)| {
            assert!(c.wait_within(GUARD, "a dispatcher").success());
            fs::read_to_string(out).unwrap()
        })
        .collect()
}

#[test]
fn the_cap_holds_under_concurrent_dispatch_finishes_and_a_sigkilled_supervisor() {
    let times = tempfile::NamedTempFile::new().unwrap();
    let times_path = times.path().to_owned();
    let script = format!(
        r#"t=$(cat); echo "start $(date +%s%N) $t" >> "$2"; {HOLD}; sleep 0.1; echo "end $(date +%s%N) $t" >> "$2""#
    );
    let w = World::bare();
    let release = w.path("release");
    w.configure(
        &[
            "sh",
            "-c",
            &script,
            "sh",
            release.to_str().unwrap(),
            times_path.to_str().unwrap(),
        ],
        3,
    );

    let tasks: Vec<String> = (0..12).map(|i| format!("task-{i:02}")).collect();
    let printed = dispatch_at_once(&w, &tasks);
    let started: Vec<&str> = printed
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.starts_with("queued"))
        .collect();
    assert_eq!(started.len(), 3, "three slots, three started: {printed:?}");
    wait_for("three agents running", || {
        (fs::read_to_string(&times_path).unwrap().lines().count() == 3).then_some(())
    });

    // One supervisor dies by SIGKILL: its agent dies with it, nobody writes its exit line, and
    // its slot must come free without trusting any pid.
    let victim = started[0];
    let pid: i32 = fs::read_to_string(w.jobs.join(victim).join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(kill_9(pid), 0, "kill -9 {pid}");
    wait_for("the killed job to read as died", || {
        w.jobs()
            .iter()
            .any(|j| j["id"] == victim && j["status"] == "died")
            .then_some(())
    });
    let killed_at = nanos_now();
    // A dispatch now takes the freed slot for the next queued task; the new task waits.
    let out = w.ok(&["run", "p", "task-late"]);
    assert!(out.starts_with("queued "), "{out}");
    wait_for("a queued task to take the freed slot", || {
        (fs::read_to_string(&times_path).unwrap().lines().count() == 4).then_some(())
    });
    assert_eq!(count_status(&w.jobs(), "running"), 3);

    w.release();
    let all = tasks.len() + 1;
    let jobs = wait_for("every task to run", || {
        let jobs = w.jobs();
        (jobs.len() == all && jobs.iter().all(|j| j["status"] != "running")).then_some(jobs)
    });
    assert_eq!(count_status(&jobs, "completed"), all - 1, "{jobs:?}");
    assert_eq!(count_status(&jobs, "died"), 1);
    let mut by_task: BTreeMap<String, usize> = BTreeMap::new();
    for j in &jobs {
        *by_task
            .entry(j["task"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert!(by_task.values().all(|&n| n == 1), "{by_task:?}");

    let lines = fs::read_to_string(&times_path).unwrap();
    let mut events: Vec<(u128, i32)> = lines
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[1].parse().unwrap(), if f[0] == "start" { 1 } else { -1 })
        })
        .collect();
    // The killed agent wrote no end: it was dead by the time the job read as died.
    events.push((killed_at, -1));
    assert_eq!(events.len(), 2 * all, "{lines}");
    assert!(most_at_once(&events) <= 3, "{lines}");
    wait_for("every running entry to be gone", || {
        let left = fs::read_dir(w.queue.join(".running"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0);
        // The killed supervisor's entry is removed by the next count, which the last
        // supervisor's finish made.
        (left == 0).then_some(())
    });
}

/// SIGKILL, through the `kill` program.
fn kill_9(pid: i32) -> i32 {
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .code()
        .unwrap_or(-1)
}

#[test]
fn a_job_luzia_did_not_start_takes_a_slot_while_it_runs() {
    let w = World::new(&["true"], 1);
    let foreign = w.jobs.join("101010-orch");
    fs::create_dir(&foreign).unwrap();
    let mut sleeper = sleeper();
    fs::write(
        foreign.join("meta.json"),
        serde_json::json!({"id": "101010-orch", "project": "p", "task": "orchestrated",
            "started": now_rfc3339()})
        .to_string(),
    )
    .unwrap();
    fs::write(foreign.join("pid"), format!("{}\n", sleeper.id())).unwrap();
    let out = w.ok(&["run", "p", "one"]);
    assert!(
        out.starts_with("queued "),
        "the foreign job holds the slot: {out}"
    );
    // Counted again from what was kept of the root: still there.
    let out = w.ok(&["run", "p", "two"]);
    assert!(out.starts_with("queued "), "{out}");
    fs::write(foreign.join("output.log"), "exit:0\n").unwrap();
    sleeper.kill_and_reap();
    // The slot is free again: the queued tasks start, one at a time, and this one after them.
    w.ok(&["run", "p", "three"]);
    let jobs = wait_for("the three tasks to run", || {
        let jobs = w.jobs();
        (jobs.iter().filter(|j| j["status"] == "completed").count() == 4).then_some(jobs)
    });
    assert_eq!(jobs.len(), 4);
}

/// `n` finished jobs dated `days` back, each with a known body.
fn old_jobs(root: &Path, n: usize, days: u64) -> BTreeSet<String> {
    let then = SystemTime::now() - Duration::from_secs(days * DAY);
    let mut ids = BTreeSet::new();
    for i in 0..n {
        let id = format!("old{i:04}-aaaa");
        let dir = root.join(&id);
        fs::create_dir(&dir).unwrap();
        fs::write(
            dir.join("meta.json"),
            format!(r#"{{"id": "{id}", "project": "p", "task": "old {i}"}}"#),
        )
        .unwrap();
        fs::write(dir.join("output.log"), format!("old work {i}\nexit:0\n")).unwrap();
        for p in [dir.join("meta.json"), dir.join("output.log"), dir.clone()] {
            fs::File::options()
                .write(p.is_file())
                .read(true)
                .open(&p)
                .unwrap()
                .set_modified(then)
                .unwrap_or_else(|_| set_dir_time(&p, then));
        }
        ids.insert(id);
    }
    ids
}

fn set_dir_time(p: &Path, then: SystemTime) {
    let secs = then
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ok = Command::new("touch")
        .arg("-m")
        .arg("-d")
        .arg(format!("@{secs}"))
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "touch {}", p.display());
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn gc_racing_dispatch_moves_every_old_job_once_and_never_one_being_written() {
    let w = World::new(&["sh", "-c", "cat >/dev/null; sleep 0.05"], 1000);
    let old = old_jobs(&w.jobs, 200, 40);
    let archive = w.path("jobs-archive");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (dispatched, gcs, statuses) = std::thread::scope(|s| {
        let runs = s.spawn(|| {
            (0..40)
                .map(|i| w.ok(&["run", "p", &format!("new {i}")]).trim().to_owned())
                .collect::<Vec<String>>()
        });
        let status = s.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                w.ok(&["status"]);
                n += 1;
            }
            n
        });
        // Age 0: every job that has ended and whose supervisor is gone may go, so the new
        // jobs are raced too, at every step of their lives.
        let mut gcs = Vec::new();
        while !runs.is_finished() {
            gcs.push(w.ok(&["gc", "--older-than", "0s"]));
        }
        let dispatched = runs.join().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (dispatched, gcs, status.join().unwrap())
    });
    assert!(gcs.len() >= 2, "gc ran while dispatching: {gcs:?}");
    assert!(statuses >= 1);
    // Whatever is left once every job has ended goes too.
    wait_for("the new jobs to end", || {
        dispatched
            .iter()
            .all(|id| {
                [w.jobs.join(id), archive.join(id)].iter().any(|d| {
                    fs::read_to_string(d.join("output.log")).is_ok_and(|l| l.contains("exit:0"))
                })
            })
            .then_some(())
    });
    wait_for("every supervisor to let go", || {
        w.ok(&["gc", "--older-than", "0s"]);
        names(&w.jobs).is_empty().then_some(())
    });
    let archived = names(&archive);
    let expected: BTreeSet<String> = old.iter().cloned().chain(dispatched.clone()).collect();
    assert_eq!(
        archived, expected,
        "every job moved exactly once, none lost"
    );
    for id in &dispatched {
        let dir = archive.join(id);
        let meta: Value =
            serde_json::from_slice(&fs::read(dir.join("meta.json")).unwrap()).unwrap();
        assert!(
            meta["finished"].is_string(),
            "{id} was moved before its supervisor recorded the finish: {meta}"
        );
        assert!(
            !dir.join(".reserve").exists(),
            "{id} was moved before its supervisor was done with it"
        );
    }
}

#[test]
fn a_dry_run_changes_nothing_and_says_what_would_go() {
    let w = World::new(&["true"], 4);
    let old = old_jobs(&w.jobs, 5, 40);
    old_jobs_recent(&w.jobs);
    let before = tree(&w.base);
    let out = w.ok(&["gc", "--older-than", "30d", "--dry-run"]);
    assert!(
        out.starts_with("would move 5 jobs finished more than 30d ago ("),
        "{out}"
    );
    assert!(out.contains("kept: 1 newer than the age"), "{out}");
    assert_eq!(tree(&w.base), before, "a dry run touches nothing");
    let out = w.ok(&["gc", "--older-than", "30d", "--delete", "--dry-run"]);
    assert!(out.starts_with("would delete 5 jobs"), "{out}");
    assert_eq!(tree(&w.base), before);
    let out = w.ok(&["gc", "--older-than", "30d"]);
    assert!(out.starts_with("moved 5 jobs"), "{out}");
    assert_eq!(names(&w.path("jobs-archive")), old);
}

fn old_jobs_recent(root: &Path) {
    let dir = root.join("recent-aaaa");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "new"}"#).unwrap();
    fs::write(dir.join("output.log"), "exit:0\n").unwrap();
}

/// Every path under `dir` with its size and modification time.
fn tree(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().filter_map(Result::ok) {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.push((e.path(), m.len(), m.modified().ok()));
        }
    }
    out.sort();
    out
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let w = World::new(&["true"], 4);
    old_jobs(&w.jobs, 2, 40);
    for bad in ["30", "30y", "-3d", "soon", ""] {
        let (code, _, err) = w.run(&["gc", &format!("--older-than={bad}")]);
        assert_eq!(code, 1, "{bad}: {err}");
        assert!(
            err.contains("is not an age") && err.contains("30d"),
            "{err}"
        );
    }
    let (code, _, err) = w.run(&[
        "gc",
        "--older-than",
        "30d",
        "--delete",
        "--archive-to",
        "/tmp",
    ]);
    assert_eq!(code, 2, "{err}");
    let inside = w.jobs.join("archive");
    let (code, _, err) = w.run(&[
        "gc",
        "--older-than",
        "30d",
        "--archive-to",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("inside the jobs root"), "{err}");
    assert_eq!(names(&w.jobs).len(), 2, "nothing moved, nothing made");
    let shm = Path::new("/dev/shm");
    let dev = |p: &Path| std::os::unix::fs::MetadataExt::dev(&fs::metadata(p).unwrap());
    if !shm.is_dir() || dev(shm) == dev(&w.jobs) {
        eprintln!("SKIPPED: no /dev/shm on another file system to archive to");
        return;
    }
    let elsewhere = tempfile::tempdir_in(shm).unwrap();
    let (code, _, err) = w.run(&[
        "gc",
        "--older-than",
        "30d",
        "--archive-to",
        elsewhere.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("another file system"), "{err}");
    assert_eq!(names(&w.jobs).len(), 2, "nothing moved");
}
