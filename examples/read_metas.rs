//! The floor the cockpit's first frame is measured against: list a jobs root, then read and
//! parse every job's meta.json on all cores (split the way the scan splits its work), and
//! nothing else. Prints the milliseconds it took and how many were read.
//!
//!     cargo build --release --example read_metas
//!     target/release/examples/read_metas JOBS_ROOT [RUNS]
//!
//! With RUNS > 1, prints one line per run (benches/cockpit_scale.py takes the median).

use std::path::Path;
use std::time::Instant;

use luzia::jobs::JobId;
use luzia::jobs::model::meta::Meta;
use luzia::jobs::model::scan::list_ids;

fn read_metas(root: &Path, ids: &[JobId]) -> usize {
    ids.iter()
        .filter(|id| {
            std::fs::read(root.join(id.as_str()).join("meta.json"))
                .ok()
                .is_some_and(|bytes| Meta::parse(&bytes).is_ok())
        })
        .count()
}

fn floor(root: &Path) -> Result<usize, String> {
    let ids = list_ids(root).map_err(|e| e.to_string())?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let chunk = ids.len().div_ceil(threads).max(1);
    Ok(std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| s.spawn(move || read_metas(root, part)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    }))
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: read_metas JOBS_ROOT [RUNS]");
        return std::process::ExitCode::from(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(1);
    for _ in 0..runs {
        let t = Instant::now();
        match floor(Path::new(&root)) {
            Ok(n) => println!("{:.1} ms {n} metas", t.elapsed().as_secs_f64() * 1000.0),
            Err(e) => {
                eprintln!("{e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
