//! Scanning a jobs root of 10,000 job directories, 1,000 of them running, against the floor:
//! merely reading and parsing every meta.json.
//!
//! The tree is built once in a temporary directory, so every figure is taken with a warm page
//! cache. `cargo bench --bench scan` prints the four measurements side by side.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::fs;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use luzia::jobs::model::meta::Meta;
use luzia::jobs::model::scan::{list_ids, scan, sort_newest_first};
use luzia::jobs::{Job, JobId, Status, read_job};

const JOBS: usize = 10_000;
/// Every tenth job is running.
const RUNNING_EVERY: usize = 10;
const RUNNING: usize = JOBS / RUNNING_EVERY;
/// Every fiftieth running job has a question pending.
const WAITING_EVERY: usize = RUNNING_EVERY * 50;

const PROJECTS: &[&str] = &[
    "musica",
    "overbits",
    "dss",
    "librechat",
    "admin",
    "assistant",
];
const TASKS: &[&str] = &[
    "Run tests and report results",
    "Fix the failing migration in the billing module",
    "Review the open pull request and summarise the risks",
    "Upgrade the dependencies and make the build pass again",
    "Write documentation for the deployment scripts",
];
const LOG_LINES: &[&str] = &[
    "Reading src/main.rs",
    "Running cargo test --workspace",
    "test result: ok. 142 passed; 0 failed; 3 ignored",
    "Editing src/billing/migrate.rs: replaced 12 lines",
    "warning: unused variable `count` in src/report.rs:88",
    "Searching the repository for callers of `apply_discount`",
    "All checks passed; writing the summary",
];

const QUESTION: &str = r#"{"id": "q1", "type": "choice", "question": "Which database: production or staging?", "options": ["production", "staging"], "context": "Running migration task", "asked_at": "2026-01-11T14:30:00Z", "timeout_minutes": 30, "default_if_timeout": "staging"}"#;

/// What the generated tree holds, to check that the scan saw all of it.
struct Tree {
    dir: tempfile::TempDir,
    waiting: usize,
}

fn build_tree() -> Tree {
    let dir = tempfile::Builder::new()
        .prefix("luzia-bench-scan-")
        .tempdir()
        .expect("create a temporary jobs root");
    let root = dir.path();
    let base: DateTime<Utc> = Utc::now() - TimeDelta::days(30);
    // Thousands of small files: written on all cores to keep the set-up short.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let waiting = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t..JOBS)
                        .step_by(threads)
                        .filter(|&i| write_job(root, i, base))
                        .count()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .sum()
    });
    Tree { dir, waiting }
}

/// Writes job number `i`; true when it is waiting for an answer.
fn write_job(root: &Path, i: usize, base: DateTime<Utc>) -> bool {
    let id = format!("{:06}-{:04x}", i, i);
    let job = root.join(&id);
    fs::create_dir(&job).unwrap();
    let running = i.is_multiple_of(RUNNING_EVERY);
    let waiting = i.is_multiple_of(WAITING_EVERY);
    let project = PROJECTS[i % PROJECTS.len()];
    let task = TASKS[i % TASKS.len()];
    // Running jobs carry the bench's own pid, which is alive; finished ones a long-gone pid.
    let pid = if running {
        std::process::id()
    } else {
        10_000 + i as u32
    };
    let started = base + TimeDelta::seconds(i as i64 * 250);
    let started = started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let meta = serde_json::json!({
        "id": id,
        "project": project,
        "task": task,
        "type": "agent",
        "user": project,
        "pid": pid.to_string(),
        "started": started,
        "status": "running",
        "debug": false,
    });
    fs::write(job.join("meta.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    fs::write(
        job.join("prompt.txt"),
        format!("You are working on the {project} project.\n\nTask: {task}\n"),
    )
    .unwrap();

    // A few hundred bytes to about 4 KB of output.
    let mut log = String::new();
    for line in 0..(3 + i % 40) {
        log.push_str(&format!(
            "[{:02}:{:02}:{:02}] {}\n",
            line / 3600 % 24,
            line / 60 % 60,
            line % 60,
            LOG_LINES[(i + line) % LOG_LINES.len()]
        ));
    }
    if running {
        fs::write(job.join("pid"), format!("{pid}\n")).unwrap();
        if i.is_multiple_of(3) {
            fs::write(
                job.join("progress.json"),
                format!(
                    r#"{{"percent": {}, "step": 2, "total_steps": 5, "step_name": "Running tests", "updated_at": "{started}", "eta_seconds": 120}}"#,
                    i % 100,
                ),
            )
            .unwrap();
        }
        if waiting {
            fs::write(job.join("clarification.json"), QUESTION).unwrap();
        }
    } else {
        let code = match i % 100 {
            1 | 33 | 67 => 1,
            7 => -9,
            51 => 100,
            _ => 0,
        };
        log.push_str(&format!("\nexit:{code}\n"));
    }
    fs::write(job.join("output.log"), log).unwrap();
    running && waiting
}

/// The floor: the ids, then every meta.json read and parsed, on one thread.
fn read_metas(root: &Path, ids: &[JobId]) -> Vec<Meta> {
    ids.iter()
        .filter_map(|id| {
            let bytes = fs::read(root.join(id.as_str()).join("meta.json")).ok()?;
            Meta::parse(&bytes).ok()
        })
        .collect()
}

/// The same floor on all cores, split the way `scan::read_all` splits its work.
fn read_metas_parallel(root: &Path, ids: &[JobId]) -> Vec<Meta> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let chunk = ids.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| s.spawn(move || read_metas(root, part)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("reader thread"))
            .collect()
    })
}

/// `scan` without its threads: the same reads and the same sort, on one thread.
fn scan_one_thread(root: &Path, now: DateTime<Utc>) -> Vec<Job> {
    let ids = list_ids(root).expect("list the jobs root");
    let mut jobs: Vec<Job> = ids
        .iter()
        .filter_map(|id| read_job(root, id, now))
        .collect();
    sort_newest_first(&mut jobs);
    jobs
}

fn check(tree: &Tree) {
    let root = tree.dir.path();
    let jobs = scan(root, Utc::now()).expect("scan the jobs root");
    let active = jobs
        .iter()
        .filter(|j| matches!(j.status, Status::Running | Status::Waiting))
        .count();
    let waiting = jobs.iter().filter(|j| j.status == Status::Waiting).count();
    let problems: usize = jobs.iter().map(|j| j.problems.len()).sum();
    assert!(
        jobs.len() == JOBS && active == RUNNING && waiting == tree.waiting && problems == 0,
        "scan found {} jobs ({active} running or waiting, {waiting} waiting, {problems} problems); \
         expected {JOBS} ({RUNNING} running or waiting, {} waiting, no problems)",
        jobs.len(),
        tree.waiting,
    );
    let ids = list_ids(root).unwrap();
    assert_eq!(read_metas(root, &ids).len(), JOBS);
    assert_eq!(read_metas_parallel(root, &ids).len(), JOBS);
    assert_eq!(scan_one_thread(root, Utc::now()).len(), JOBS);
}

fn bench_scan(c: &mut Criterion) {
    let t = std::time::Instant::now();
    let tree = build_tree();
    eprintln!(
        "built {JOBS} job directories in {} in {:.1} s",
        tree.dir.path().display(),
        t.elapsed().as_secs_f64()
    );
    check(&tree);
    let root = tree.dir.path();

    let mut group = c.benchmark_group("scan_10000_jobs");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    group.bench_function("read_meta_1_thread", |b| {
        b.iter(|| {
            let ids = list_ids(root).unwrap();
            read_metas(root, &ids)
        })
    });
    group.bench_function("read_meta_all_cores", |b| {
        b.iter(|| {
            let ids = list_ids(root).unwrap();
            read_metas_parallel(root, &ids)
        })
    });
    group.bench_function("scan_all_cores", |b| {
        b.iter(|| scan(root, Utc::now()).unwrap())
    });
    group.bench_function("scan_1_thread", |b| {
        b.iter(|| scan_one_thread(root, Utc::now()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Plots take seconds per benchmark to draw; `--plotting-backend` brings them back.
    config = Criterion::default().without_plots();
    targets = bench_scan
}
criterion_main!(benches);
