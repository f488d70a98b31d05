//! Reading the end of a 2 GiB output.log: the last 100 lines and the exit code, against the
//! same reads on a 5 KB and a 1 MiB log of the same lines. The cost must depend on the lines
//! asked for, not on the size of the file.
//!
//! The 2 GiB log is written once to a fixed path under the temporary directory and reused by
//! later runs when it is still there with the expected size; it is never deleted by the bench
//! (remove it by hand: its path is printed). Every figure is taken with a warm page cache but
//! one, which drops the log's pages from the cache before each read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use luzia::jobs::fs::files::open_nofollow;
use luzia::jobs::fs::tail::{exit_code, last_lines};

const BIG_NAME: &str = "luzia-bench-tail-2GiB.log";
const TARGET_LEN: u64 = 2 << 30;
const LINES: usize = 100;
const EXIT_LINE: &[u8] = b"\nexit:0\n";

const WORDS: &[&str] = &[
    "running",
    "cargo",
    "test",
    "--workspace",
    "compiling",
    "luzia",
    "v0.1.0",
    "reading",
    "src/jobs/scan.rs",
    "ok",
    "warning:",
    "unused",
    "variable",
    "passed",
    "failed",
    "editing",
    "migration",
    "staging",
    "database",
    "retry",
];

/// A chunk of whole log lines of 60 to 140 bytes (about 100 on average), the same every run.
fn chunk() -> Vec<u8> {
    let mut out = Vec::with_capacity(8 << 20);
    let mut n: usize = 0;
    while out.len() < (8 << 20) - 200 {
        let target = 60 + (n * 37) % 81;
        let start = out.len();
        out.extend_from_slice(
            format!("[{:02}:{:02}:{:02}] ", n / 3600 % 24, n / 60 % 60, n % 60).as_bytes(),
        );
        let mut w = n;
        while out.len() - start < target - 1 {
            out.extend_from_slice(WORDS[w % WORDS.len()].as_bytes());
            out.push(b' ');
            w = w.wrapping_mul(31).wrapping_add(7);
        }
        out.truncate(start + target - 1);
        out.push(b'\n');
        n += 1;
    }
    out
}

/// Whole chunks up to at least [`TARGET_LEN`], then the supervisor's exit line.
fn big_len(chunk_len: u64) -> u64 {
    TARGET_LEN.div_ceil(chunk_len) * chunk_len + EXIT_LINE.len() as u64
}

fn write_log(file: &mut File, chunk: &[u8], total: u64) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(16 << 20, file);
    let mut written = EXIT_LINE.len() as u64;
    while written < total {
        w.write_all(chunk)?;
        written += chunk.len() as u64;
    }
    w.write_all(EXIT_LINE)?;
    w.flush()
}

/// The 2 GiB log and, when it was built just for this run, the directory to drop with it.
struct BigLog {
    path: PathBuf,
    _scratch: Option<tempfile::TempDir>,
}

fn big_log(chunk: &[u8]) -> BigLog {
    let len = big_len(chunk.len() as u64);
    let tmp = std::env::temp_dir();
    let fixed = tmp.join(BIG_NAME);
    match std::fs::symlink_metadata(&fixed) {
        Ok(md) if md.is_file() && md.len() == len => {
            eprintln!("reusing {} ({len} bytes)", fixed.display());
            return BigLog {
                path: fixed,
                _scratch: None,
            };
        }
        Ok(_) => {
            // Something else sits at the fixed path: leave it alone, build a private copy.
            let scratch = tempfile::Builder::new()
                .prefix("luzia-bench-tail-")
                .tempdir()
                .expect("create a temporary directory");
            let path = scratch.path().join(BIG_NAME);
            eprintln!(
                "{} exists with another size; building {} instead",
                fixed.display(),
                path.display()
            );
            let mut file = File::create(&path).expect("create the log");
            build(&mut file, chunk, len);
            return BigLog {
                path,
                _scratch: Some(scratch),
            };
        }
        Err(_) => {}
    }
    // Built under a temporary name and linked into place, so that an interrupted run never
    // leaves a short file at the fixed path, and nothing there is ever overwritten.
    let mut tmpfile = tempfile::Builder::new()
        .prefix("luzia-bench-tail-")
        .suffix(".partial")
        .tempfile_in(&tmp)
        .expect("create a temporary file");
    eprintln!("building {} ({len} bytes)", fixed.display());
    build(tmpfile.as_file_mut(), chunk, len);
    tmpfile
        .persist_noclobber(&fixed)
        .expect("link the log into place");
    BigLog {
        path: fixed,
        _scratch: None,
    }
}

fn build(file: &mut File, chunk: &[u8], len: u64) {
    let t = Instant::now();
    write_log(file, chunk, len).expect("write the log");
    assert_eq!(file.metadata().unwrap().len(), len);
    eprintln!("written in {:.1} s", t.elapsed().as_secs_f64());
}

/// A log of about `len` bytes of the same lines.
fn small_log(dir: &Path, chunk: &[u8], len: usize) -> PathBuf {
    let path = dir.join(format!("{len}.log"));
    let cut = memchr::memrchr(b'\n', &chunk[..len - EXIT_LINE.len()]).unwrap() + 1;
    let mut body = chunk[..cut].to_vec();
    body.extend_from_slice(EXIT_LINE);
    std::fs::write(&path, body).unwrap();
    path
}

fn open(path: &Path) -> (File, u64) {
    let file = open_nofollow(path).unwrap().expect("the log exists");
    let len = file.metadata().unwrap().len();
    (file, len)
}

/// Drops this file's pages from the page cache (it is the bench's own file; nothing else is
/// touched), so that the next read goes to the disk.
fn evict(file: &File) {
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
}

fn check(path: &Path) {
    let (file, len) = open(path);
    let lines = last_lines(&file, len, LINES).unwrap();
    assert!(!lines.is_empty() && lines.len() <= LINES);
    assert_eq!(lines.last().unwrap().bytes, b"exit:0");
    assert!(lines.iter().all(|l| !l.cut));
    assert_eq!(exit_code(&file, len).unwrap(), Some(0));
}

fn bench_tail(c: &mut Criterion) {
    let chunk = chunk();
    let big = big_log(&chunk);
    let small_dir = tempfile::tempdir().unwrap();
    let small = small_log(small_dir.path(), &chunk, 5_000);
    let medium = small_log(small_dir.path(), &chunk, 1 << 20);
    for path in [&big.path, &small, &medium] {
        check(path);
    }
    let (big_file, big_len) = open(&big.path);
    assert_eq!(last_lines(&big_file, big_len, LINES).unwrap().len(), LINES);
    let (small_file, small_len) = open(&small);
    let (medium_file, medium_len) = open(&medium);
    assert_eq!(
        last_lines(&medium_file, medium_len, LINES).unwrap().len(),
        LINES
    );

    let mut group = c.benchmark_group("tail");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("last_100_lines_2GiB", |b| {
        b.iter(|| last_lines(&big_file, big_len, LINES).unwrap())
    });
    group.bench_function("last_100_lines_2GiB_open_each_time", |b| {
        b.iter(|| {
            let (file, len) = open(&big.path);
            last_lines(&file, len, LINES).unwrap()
        })
    });
    // The same with the file's pages dropped from the page cache before each read (not timed):
    // what the first look at a log that nobody has read for a while costs.
    group.bench_function("last_100_lines_2GiB_cold_cache", |b| {
        b.iter_batched(
            || evict(&big_file),
            |()| last_lines(&big_file, big_len, LINES).unwrap(),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("exit_code_2GiB", |b| {
        b.iter(|| exit_code(&big_file, big_len).unwrap())
    });
    group.bench_function("last_100_lines_5KB", |b| {
        b.iter(|| last_lines(&small_file, small_len, LINES).unwrap())
    });
    group.bench_function("last_100_lines_5KB_open_each_time", |b| {
        b.iter(|| {
            let (file, len) = open(&small);
            last_lines(&file, len, LINES).unwrap()
        })
    });
    group.bench_function("last_100_lines_1MiB", |b| {
        b.iter(|| last_lines(&medium_file, medium_len, LINES).unwrap())
    });
    group.bench_function("exit_code_5KB", |b| {
        b.iter(|| exit_code(&small_file, small_len).unwrap())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Plots take seconds per benchmark to draw; `--plotting-backend` brings them back.
    config = Criterion::default().without_plots();
    targets = bench_tail
}
criterion_main!(benches);
