//! The queue through the real binary: a queued task leaves the queue only once its job exists,
//! exactly one job per task whatever the number of starters racing, and a task that cannot
//! start (its project directory removed, a full disk under the jobs root or under the queue
//! itself) stays visible with the reason, or stays queued, and starts once the fault is fixed.
//!
//! Full disks are real: a small tmpfs mounted for the test (root only; without root these tests
//! say SKIPPED loudly and pass). Agents are real processes; nothing here asserts how fast
//! anything is, and every wait has a hang guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(60);
/// A shell fragment for agents: wait until the file named by `$1` exists.
const HOLD: &str = r#"while [ ! -e "$1" ]; do sleep 0.05; done"#;

/// A temporary directory with projects `p` and `alpha`, a jobs root, a queue and a config file
/// naming them. Dropping it kills every process it started, then unmounts what it mounted.
struct World {
    base: PathBuf,
    jobs: PathBuf,
    queue: PathBuf,
    config: PathBuf,
    mounts: Vec<Mount>,
    _tmp: TempDir,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-queue-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["jobs", "p", "alpha", "xdg"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        World {
            jobs: base.join("jobs"),
            queue: base.join("queue"),
            config: base.join("config.toml"),
            base,
            mounts: Vec::new(),
            _tmp: tmp,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    fn configure(&self, agent: &[&str], max: usize) {
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let p = |p: &Path| q(p.to_str().unwrap());
        let argv: Vec<String> = agent.iter().map(|a| q(a)).collect();
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [{}]\n\
             max_concurrent = {max}\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n\n\
             [projects.alpha]\npath = {}\n",
            p(&self.jobs),
            p(&self.path("notifications.log")),
            p(&self.queue),
            argv.join(", "),
            p(&self.path("p")),
            p(&self.path("alpha")),
        );
        fs::write(&self.config, text).unwrap();
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

    fn run(&self, args: &[&str]) -> Ran {
        let mut cmd = self.luzia();
        cmd.args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        Ran {
            code: out.status.code(),
            stdout: stdout_of(&out),
            stderr: stderr_of(&out),
        }
    }

    /// The queue id `luzia run ... --queue` printed.
    fn enqueue(&self, project: &str, task: &str) -> String {
        let r = self.run(&["run", "--queue", project, task]);
        r.ok();
        r.stdout
            .strip_prefix("queued ")
            .and_then(|s| s.split(' ').next())
            .unwrap_or_else(|| panic!("{task} should be queued: {r:?}"))
            .to_owned()
    }

    /// Every job directory with a meta.json, as task -> [(job id, meta)].
    fn jobs_by_task(&self) -> BTreeMap<String, Vec<(String, Value)>> {
        let mut by_task: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
        for id in job_ids(&self.jobs) {
            let Ok(bytes) = fs::read(self.jobs.join(&id).join("meta.json")) else {
                continue;
            };
            let meta: Value = serde_json::from_slice(&bytes).unwrap();
            let task = meta["task"].as_str().unwrap().to_owned();
            by_task.entry(task).or_default().push((id, meta));
        }
        by_task
    }

    /// Waits until every job has its exit line and returns `luzia jobs --json`.
    fn wait_all_done(&self, count: usize) -> Vec<Value> {
        wait_for(&format!("{count} jobs to finish"), || {
            let r = self.run(&["jobs", "--json"]);
            r.ok();
            let jobs: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
            // A directory a refused dispatch left without meta.json is not a task's job.
            let jobs: Vec<Value> = jobs.into_iter().filter(|j| j["task"] != "").collect();
            (jobs.len() == count && jobs.iter().all(|j| !j["exit_code"].is_null())).then_some(jobs)
        })
    }

    /// Files anywhere under the queue root but the lock and the running jobs' entries (which
    /// are not tasks), as paths relative to it.
    fn queue_files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.queue.clone()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
            {
                let p = e.path();
                if e.file_name() == ".running" {
                    continue;
                }
                if p.is_dir() {
                    stack.push(p);
                } else if e.file_name() != ".slots.lock" {
                    out.push(p.strip_prefix(&self.queue).unwrap().display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    /// Mounts a tmpfs of `size` at `name` under the test's directory.
    fn tmpfs(&mut self, name: &str, size: &str) -> PathBuf {
        let dir = self.path(name);
        fs::create_dir_all(&dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.mounts.push(Mount(dir.clone()));
        dir
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

/// A mounted tmpfs, unmounted when dropped (lazily: a process may still hold a file there).
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system of `dir` until a write fails; returns the filler to remove later.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    assert!(
        fs::write(dir.join("probe"), vec![0u8; 8192]).is_err(),
        "{} is not full",
        dir.display()
    );
    let _ = fs::remove_file(dir.join("probe"));
    filler
}

#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn ok(&self) {
        assert_eq!(self.code, Some(0), "{self:?}");
    }
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// Asserts each task has exactly one job, and that it completed.
fn one_completed_job_each(w: &World, tasks: &[String]) {
    let by_task = w.jobs_by_task();
    for t in tasks {
        let jobs = by_task.get(t).map_or(0, Vec::len);
        assert_eq!(jobs, 1, "task {t} has {jobs} jobs: {by_task:?}");
    }
    assert_eq!(
        by_task.len(),
        tasks.len(),
        "jobs of unknown tasks: {by_task:?}"
    );
}

#[test]
fn a_task_whose_project_directory_is_gone_fails_visibly_and_starts_once_it_is_back() {
    let w = World::new();
    w.configure(
        &[
            "sh",
            "-c",
            &format!("cat >/dev/null; {HOLD}"),
            "sh",
            w.path("release").to_str().unwrap(),
        ],
        1,
    );
    let first = w.run(&["run", "p", "one"]);
    first.ok();
    let qid = w.run(&["run", "alpha", "two"]);
    qid.ok();
    let qid = qid
        .stdout
        .strip_prefix("queued ")
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    fs::remove_dir(w.path("alpha")).unwrap();
    fs::write(w.path("release"), "").unwrap();
    // The first job's supervisor ends, and tries the queued task.
    let listing = wait_for("the queued task to fail", || {
        let r = w.run(&["queue"]);
        r.ok();
        r.stdout.contains("failed to start").then_some(r.stdout)
    });
    assert!(listing.starts_with("the queue is empty\n"), "{listing}");
    let failed_line = listing
        .lines()
        .find(|l| l.contains(&qid))
        .unwrap_or_else(|| panic!("{qid} is not listed: {listing}"));
    assert!(
        failed_line.contains("alpha") && failed_line.contains("two"),
        "{listing}"
    );
    let reason = format!(
        "could not start: the project directory {} does not exist",
        w.path("alpha").display()
    );
    assert!(listing.contains(&reason), "{listing}");
    assert_eq!(w.jobs_by_task().len(), 1, "no job for the failed task");

    // Fixed, and tried again: it starts at once (a slot is free) and runs to the end.
    fs::create_dir(w.path("alpha")).unwrap();
    let r = w.run(&["queue", "retry", &qid]);
    r.ok();
    assert_eq!(r.stdout, format!("queued {qid} again (alpha: two)\n"));
    let jobs = w.wait_all_done(2);
    assert!(jobs.iter().all(|j| j["status"] == "completed"), "{jobs:?}");
    one_completed_job_each(&w, &["one".into(), "two".into()]);
    assert_eq!(w.jobs_by_task()["two"][0].1["queue_id"], qid.as_str());
    assert_eq!(w.queue_files(), Vec::<String>::new());
    let r = w.run(&["queue"]);
    assert_eq!(r.stdout, "the queue is empty\n");
}

#[test]
fn a_full_disk_under_the_jobs_root_records_the_failure_and_the_task_starts_once_space_is_back() {
    if !common::root_or_skip("a full disk is a real tmpfs, and mounting one needs root") {
        return;
    }
    let mut w = World::new();
    let jobs_fs = w.tmpfs("jobs-fs", "256k");
    w.jobs = jobs_fs.join("jobs");
    fs::create_dir(&w.jobs).unwrap();
    w.configure(&["sh", "-c", "cat >/dev/null"], 8);
    let one = w.enqueue("p", "one");
    let filler = fill(&jobs_fs);

    // The next dispatch tries the queued task first; the disk refuses it.
    let r = w.run(&["run", "--queue", "p", "two"]);
    r.ok();
    assert!(
        r.stderr
            .contains(&format!("queued task {one} could not start"))
            && r.stderr.contains("No space left on device"),
        "{r:?}"
    );
    let listing = w.run(&["queue"]).stdout;
    let pending: Vec<&str> = listing.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(pending.len(), 1, "{listing}");
    assert!(pending[0].contains(" two"), "{listing}");
    assert!(listing.contains("failed to start"), "{listing}");
    assert!(
        listing.contains(&one) && listing.contains("No space left on device"),
        "{listing}"
    );
    assert!(w.jobs_by_task().is_empty());

    fs::remove_file(filler).unwrap();
    let r = w.run(&["queue", "retry", "--all"]);
    r.ok();
    let jobs = w.wait_all_done(2);
    assert!(jobs.iter().all(|j| j["status"] == "completed"), "{jobs:?}");
    one_completed_job_each(&w, &["one".into(), "two".into()]);
    assert_eq!(w.queue_files(), Vec::<String>::new());
}

#[test]
fn a_full_disk_under_the_queue_too_leaves_the_task_queued_and_says_so() {
    if !common::root_or_skip("a full disk is a real tmpfs, and mounting one needs root") {
        return;
    }
    let mut w = World::new();
    let disk = w.tmpfs("disk", "256k");
    w.jobs = disk.join("jobs");
    w.queue = disk.join("queue");
    fs::create_dir(&w.jobs).unwrap();
    w.configure(&["sh", "-c", "cat >/dev/null"], 8);
    let one = w.enqueue("p", "one");
    let filler = fill(&disk);

    let r = w.run(&["run", "p", "two"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr
            .contains(&format!("queued task {one} could not start"))
            && r.stderr.contains("stays queued"),
        "the queued task's failure is said: {r:?}"
    );
    let listing = w.run(&["queue"]).stdout;
    assert!(
        listing.contains(&one) && !listing.contains("failed to start"),
        "{listing}"
    );
    assert_eq!(w.queue_files().len(), 1, "{:?}", w.queue_files());
    assert!(w.queue_files()[0].starts_with("pending/normal/"));

    fs::remove_file(filler).unwrap();
    let r = w.run(&["run", "p", "two"]);
    r.ok();
    w.wait_all_done(2);
    one_completed_job_each(&w, &["one".into(), "two".into()]);
    assert_eq!(w.queue_files(), Vec::<String>::new());
}

#[test]
fn a_starter_that_died_holding_a_task_leaves_it_to_the_next_one_exactly_once() {
    let w = World::new();
    w.configure(&["sh", "-c", "cat >/dev/null"], 8);
    let queued = |t: &str| {
        luzia::jobs::run::queue::enqueue(
            &w.queue,
            "p",
            t,
            luzia::jobs::run::queue::Priority::Normal,
            "test",
        )
        .unwrap()
        .id
    };
    let one = queued("one");
    let two = queued("two");
    // Two claims left behind: `one` before its job was made, `two` after (its job names it).
    let claim = |id: &str| {
        let pending = w.queue.join("pending/normal");
        let name = fs::read_dir(&pending)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .find(|n| n.to_string_lossy().ends_with(&format!("_{id}.json")))
            .unwrap();
        fs::create_dir_all(w.queue.join("starting/normal")).unwrap();
        fs::rename(
            pending.join(&name),
            w.queue.join("starting/normal").join(&name),
        )
        .unwrap();
    };
    claim(&one);
    claim(&two);
    let dir = w.jobs.join("120000-dead");
    fs::create_dir(&dir).unwrap();
    fs::write(
        dir.join("meta.json"),
        serde_json::json!({"id": "120000-dead", "project": "p", "task": "two", "queue_id": two,
            "argv": ["true"], "started": now_rfc3339()})
        .to_string(),
    )
    .unwrap();
    fs::write(dir.join("output.log"), "\nexit:0\n").unwrap();

    let r = w.run(&["run", "p", "three"]);
    r.ok();
    w.wait_all_done(3);
    one_completed_job_each(&w, &["one".into(), "two".into(), "three".into()]);
    assert_eq!(w.queue_files(), Vec::<String>::new());
}

#[test]
fn many_starters_racing_start_every_task_exactly_once_again_and_again() {
    for round in 0..10 {
        let w = World::new();
        w.configure(&["sh", "-c", "cat >/dev/null"], 6);
        let mut tasks = Vec::new();
        for i in 0..20 {
            let t = format!("r{round}-early-{i:02}");
            luzia::jobs::run::queue::enqueue(
                &w.queue,
                "p",
                &t,
                luzia::jobs::run::queue::Priority::Normal,
                "test",
            )
            .unwrap();
            tasks.push(t);
        }
        // Twelve dispatchers at once, each starting what it finds queued, while the supervisors
        // of the jobs they start finish and start queued tasks too.
        let racers: Vec<String> = (0..12).map(|i| format!("r{round}-racer-{i}")).collect();
        let mut children: Vec<ChildGuard> = racers
            .iter()
            .map(|t| {
                let mut cmd = w.luzia();
                cmd.args(["run", "--queue", "p", t])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                ChildGuard::new(cmd.spawn().unwrap())
            })
            .collect();
        for c in &mut children {
            assert!(c.wait_within(GUARD, "a racing dispatcher").success());
        }
        tasks.extend(racers);
        // Whatever the last racers queued after every slot had freed starts with this one.
        let last = format!("r{round}-last");
        w.run(&["run", "p", &last]).ok();
        tasks.push(last);
        let jobs = w.wait_all_done(tasks.len());
        assert!(jobs.iter().all(|j| j["status"] == "completed"), "{jobs:?}");
        one_completed_job_each(&w, &tasks);
        assert_eq!(w.queue_files(), Vec::<String>::new(), "round {round}");
    }
}
