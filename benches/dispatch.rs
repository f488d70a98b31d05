//! Creating job directories: `luzia::jobs::run::dispatch::create` (a fresh id by `mkdir`, then
//! prompt.txt, run.sh and meta.json, each written to a temporary name, fsynced, renamed into
//! place and its directory fsynced), one after another on one thread. The supervisor is not
//! started: `benches/dispatch_rate.py` measures whole `luzia run` processes.
//!
//! Target: at least 1,000 jobs/s on one thread (the Python orchestrator managed 434 tasks/s).
//! Two places are measured: the system's temporary directory (a real disk here, where the
//! fsyncs cost what they cost on a server's /var/log) and /dev/shm when it exists (tmpfs, where
//! an fsync is free: the floor of the work itself). `cargo bench --bench dispatch` prints
//! criterion's figures (`thrpt` is jobs/s) and, first, a plain count over a fixed number of jobs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use luzia::config::DEFAULT_PROMPT_TEMPLATE;
use luzia::jobs::run::dispatch::{Spec, create};

/// Jobs created in the plain count before criterion runs.
const PLAIN_COUNT: usize = 2_000;

fn spec(project_path: &Path) -> Spec {
    Spec {
        project: "musica".into(),
        project_path: project_path.to_owned(),
        user: None,
        task: "Run tests and report results".into(),
        command: ["true", "--add-dir", "{project_path}", "{job_id}"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        prompt_template: DEFAULT_PROMPT_TEMPLATE.into(),
        retry_of: None,
        addendum: None,
        queue_id: None,
        session: Default::default(),
        permissions: Default::default(),
        isolation: None,
        claude_dirs: Default::default(),
        steps: Default::default(),
    }
}

/// A fresh temporary directory under `parent`, holding a project directory.
fn fresh(parent: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("luzia-bench-dispatch-")
        .tempdir_in(parent)
        .expect("create a temporary jobs root");
    let project = dir.path().join(".project");
    std::fs::create_dir(&project).unwrap();
    (dir, project)
}

/// Creates `n` jobs in a fresh root under `parent`; returns the time the creates took.
fn create_n(parent: &Path, n: u64) -> Duration {
    let (root, project) = fresh(parent);
    let spec = spec(&project);
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(create(root.path(), &spec, Utc::now()).expect("create a job"));
    }
    let took = start.elapsed();
    // Every job is really there (outside the timing).
    let made = std::fs::read_dir(root.path()).unwrap().count() - 1;
    assert_eq!(made as u64, n, "every create made one directory");
    took
}

/// The places to measure: (name, parent directory).
fn places() -> Vec<(&'static str, PathBuf)> {
    let mut v = vec![("temp_dir", std::env::temp_dir())];
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        v.push(("dev_shm", shm.to_owned()));
    }
    v
}

fn bench_create(c: &mut Criterion) {
    for (name, parent) in places() {
        let took = create_n(&parent, PLAIN_COUNT as u64);
        eprintln!(
            "plain count, {name} ({}): {PLAIN_COUNT} jobs in {:.3} s = {:.0} jobs/s",
            parent.display(),
            took.as_secs_f64(),
            PLAIN_COUNT as f64 / took.as_secs_f64()
        );
    }

    let mut group = c.benchmark_group("dispatch_create");
    group
        .throughput(Throughput::Elements(1))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, parent) in places() {
        // Each sample creates its jobs in a root of its own, removed afterwards (not timed), so
        // that no sample works in a directory the earlier ones filled.
        group.bench_function(name, |b| b.iter_custom(|iters| create_n(&parent, iters)));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Plots take seconds per benchmark to draw; `--plotting-backend` brings them back.
    config = Criterion::default().without_plots();
    targets = bench_create
}
criterion_main!(benches);
