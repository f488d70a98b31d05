//! The overlap check of 50 unmerged worktree jobs of a 100,000-file repository, as the
//! cockpit's review worker does it: each job read from its directory, then the paths each
//! recorded when it ended (`changed-files`) compared. No git runs: the repository enters only
//! through the paths, drawn from a tree of 100,000 files in 1,000 directories (each job changed
//! 200 of them, a tenth shared with another job). Against the floor: merely reading the 50
//! jobs. `cargo bench --bench overlap`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benches may panic: that is how they fail

use std::fs;
use std::time::Duration;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use luzia::jobs::review::overlap::overlaps;
use luzia::jobs::{Job, JobId, read_job};

const JOBS: usize = 50;
const FILES: usize = 100_000;
const CHANGED: usize = 200;

fn path(i: usize) -> String {
    format!(
        "src/module_{:04}/file_{:03}_of_the_repository.rs",
        i / 100,
        i % 100
    )
}

fn build(root: &std::path::Path) -> Vec<JobId> {
    let mut ids = Vec::new();
    for j in 0..JOBS {
        let id = format!("120000-{j:04x}");
        let dir = root.join(&id);
        fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "id": id, "project": "big", "task": "t", "type": "agent",
            "started": "2026-01-09T14:23:15Z",
            "review": {"isolation": "worktree", "repo": "/srv/big", "base": "b", "after": "a",
                       "worktree": dir.join("worktree"), "branch": format!("luzia/{id}"),
                       "changes": {"files": CHANGED, "added": 1, "removed": 1}}
        });
        fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        fs::write(dir.join("output.log"), "done\n\nexit:0\n").unwrap();
        let mut list = Vec::new();
        for k in 0..CHANGED {
            // Nine in ten paths are the job's own; one in ten is also its neighbour's.
            let i = if k % 10 == 0 {
                (j / 2 * 7919 + k) % FILES
            } else {
                (j * 104_729 + k * 31) % FILES
            };
            list.extend_from_slice(path(i).as_bytes());
            list.push(0);
        }
        fs::write(dir.join("changed-files"), list).unwrap();
        ids.push(JobId::parse(&id).unwrap());
    }
    ids
}

fn read(root: &std::path::Path, ids: &[JobId]) -> Vec<Job> {
    ids.iter()
        .filter_map(|id| read_job(root, id, Utc::now()))
        .collect()
}

fn bench_overlap(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ids = build(dir.path());
    let found = overlaps(&read(dir.path(), &ids));
    assert_eq!(
        found.len(),
        JOBS,
        "every job shares paths with its neighbour"
    );
    let mut group = c.benchmark_group("overlap_50_jobs");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("read_jobs_only", |b| b.iter(|| read(dir.path(), &ids)));
    group.bench_function("read_jobs_and_overlaps", |b| {
        b.iter(|| overlaps(&read(dir.path(), &ids)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench_overlap
}
criterion_main!(benches);
