use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use proptest::prelude::*;

use super::*;
use crate::jobs::JobId;
use crate::jobs::model::scan::{IndexUse, list_ids, read_all, read_all_with};

/// `now` for a refresh that takes in what the test just wrote: files are seconds old in a test,
/// and the settling rule is tested on its own.
fn later() -> DateTime<Utc> {
    Utc::now() + chrono::Duration::seconds(SETTLE_SECS + 60)
}

fn job(root: &Path, id: &str, task: &str, log: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"id": "{id}", "project": "p", "task": "{task}", "started": "2026-01-09T10:00:00Z"}}"#
    );
    std::fs::write(dir.join("meta.json"), meta).unwrap();
    std::fs::write(dir.join("output.log"), log).unwrap();
}

/// The ctime of `path`, to the nanosecond.
fn ctime(path: &Path) -> (i64, u32) {
    let fd = open_root(path.parent().unwrap());
    let (stamp, _) = Stamp::at(fd.as_fd(), path.file_name().unwrap().to_str().unwrap()).unwrap();
    stamp.ctime
}

fn open_root(dir: &Path) -> std::os::fd::OwnedFd {
    crate::jobs::fs::files::open_root(dir).unwrap()
}

use std::os::fd::AsFd;

/// Waits until the kernel's clock for file times has moved past `path`'s ctime, so that a change
/// made now cannot carry the same stamp (file times tick every few ms).
fn wait_for_next_tick(path: &Path) {
    let probe = path.with_extension("tick");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        std::fs::write(&probe, b"").unwrap();
        if ctime(&probe) > ctime(path) {
            std::fs::remove_file(&probe).unwrap();
            return;
        }
        assert!(Instant::now() < deadline, "file times never moved on");
        std::thread::yield_now();
    }
}

/// Every job of `root` read from its files, and read through the index at `path`, printed
/// whole: the two must be the same, job by job.
fn both_ways(root: &Path, path: &Path) -> (String, String, IndexUse) {
    let mut ids = list_ids(root).unwrap();
    ids.sort();
    let now = Utc::now();
    let index = Index::load(path, root);
    let plain = read_all(root, &ids, now);
    let (through, used) = read_all_with(root, &ids, now, index.as_ref());
    (format!("{plain:#?}"), format!("{through:#?}"), used)
}

struct Root {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    index: std::path::PathBuf,
}

fn root() -> Root {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("jobs");
    std::fs::create_dir(&root).unwrap();
    let index = path_for(&tmp.path().join("cache"), &root);
    Root {
        _tmp: tmp,
        root,
        index,
    }
}

#[test]
fn settled_jobs_read_through_the_index_are_the_jobs_their_files_make() {
    let r = root();
    let root = &r.root;
    job(root, "100000-done", "done", "ok\n\nexit:0\n");
    job(root, "100001-fail", "fail", "boom\n\nexit:2\n");
    job(root, "100002-kill", "kill", "bye\n\nexit:-15\n");
    std::fs::write(
        root.join("100002-kill/stop.json"),
        r#"{"requested_by": "ana@host", "source": "cli"}"#,
    )
    .unwrap();
    job(root, "100003-prog", "prog", "ok\n\nexit:0\n");
    std::fs::write(root.join("100003-prog/progress.json"), r#"{"percent": 40}"#).unwrap();
    // Not settled, or read with a problem: never taken in.
    job(root, "100004-ask", "needs input", "?\n\nexit:100\n");
    job(root, "100005-live", "running", "working\n");
    std::fs::write(
        root.join("100005-live/pid"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    job(root, "100006-bad", "bad", "ok\n\nexit:0\n");
    std::fs::write(root.join("100006-bad/meta.json"), "{not json").unwrap();
    std::fs::create_dir(root.join("100007-nolog")).unwrap();

    let done = refresh(root, &r.index, later()).unwrap();
    assert_eq!(
        done,
        Refreshed {
            kept: 0,
            taken: 4,
            left: 4
        }
    );
    let (plain, through, used) = both_ways(root, &r.index);
    assert_eq!(plain, through);
    assert_eq!((used.hits, used.misses), (4, 0));

    // The user's alone: the entries hold every job's meta.json.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&r.index), 0o600);
    assert_eq!(mode(r.index.parent().unwrap()), 0o700);
    // A second refresh keeps the four as they are, byte for byte.
    let before = std::fs::read(&r.index).unwrap();
    let again = refresh(root, &r.index, later()).unwrap();
    assert_eq!((again.kept, again.taken), (4, 0));
    assert_eq!(std::fs::read(&r.index).unwrap(), before);
}

#[test]
fn every_way_a_settled_job_changes_is_read_from_its_files() {
    // Each change to one settled job, and what the job then says.
    type Change = fn(&Path);
    let changes: [(&str, Change, &str); 9] = [
        (
            "meta.json rewritten in place, same size",
            |d| {
                std::fs::write(
                d.join("meta.json"),
                r#"{"id": "200000-job", "project": "p", "task": "TASK", "started": "2026-01-09T10:00:00Z"}"#,
            )
            .unwrap()
            },
            "TASK",
        ),
        (
            "meta.json replaced by a rename",
            |d| {
                std::fs::write(d.join("m.tmp"), r#"{"project": "p", "task": "renamed"}"#).unwrap();
                std::fs::rename(d.join("m.tmp"), d.join("meta.json")).unwrap();
            },
            "renamed",
        ),
        (
            "a stop recorded after the end",
            |d| std::fs::write(d.join("stop.json"), r#"{"requested_by": "bo@host"}"#).unwrap(),
            "Killed",
        ),
        (
            "progress.json written late",
            |d| std::fs::write(d.join("progress.json"), r#"{"percent": 77}"#).unwrap(),
            "77",
        ),
        (
            "output.log appended",
            |d| {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(d.join("output.log"))
                    .unwrap();
                f.write_all(b"\nexit:3\n").unwrap();
            },
            "Failed",
        ),
        (
            "output.log rewritten, same size",
            |d| std::fs::write(d.join("output.log"), "ok\n\nexit:1\n").unwrap(),
            "Failed",
        ),
        (
            "meta.json made a link",
            |d| {
                std::fs::remove_file(d.join("meta.json")).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", d.join("meta.json")).unwrap();
            },
            "symbolic link",
        ),
        (
            "meta.json removed",
            |d| std::fs::remove_file(d.join("meta.json")).unwrap(),
            "meta: None",
        ),
        (
            "the directory made again",
            |d| {
                std::fs::remove_dir_all(d).unwrap();
                std::fs::create_dir(d).unwrap();
                std::fs::write(d.join("meta.json"), r#"{"project": "p", "task": "again"}"#)
                    .unwrap();
                std::fs::write(d.join("output.log"), "ok\n\nexit:0\n").unwrap();
            },
            "again",
        ),
    ];
    for (what, change, shows) in changes {
        let r = root();
        let dir = r.root.join("200000-job");
        job(&r.root, "200000-job", "task", "ok\n\nexit:0\n");
        job(&r.root, "200001-other", "other", "ok\n\nexit:0\n");
        assert_eq!(
            refresh(&r.root, &r.index, later()).unwrap().taken,
            2,
            "{what}"
        );
        wait_for_next_tick(&dir.join("output.log"));
        change(&dir);
        let (plain, through, used) = both_ways(&r.root, &r.index);
        assert_eq!(plain, through, "{what}");
        assert!(through.contains(shows), "{what}: {through}");
        assert_eq!(
            used.hits, 1,
            "{what}: only the other job is taken from the index"
        );
    }
}

#[test]
fn what_a_refresh_ended_mid_write_left_is_removed_by_the_next() {
    let r = root();
    job(&r.root, "600000-a", "a", "ok\n\nexit:0\n");
    let dir = r.index.parent().unwrap().to_owned();
    std::fs::create_dir_all(&dir).unwrap();
    let name = r.index.file_name().unwrap().to_str().unwrap().to_owned();
    // A process that has ended, and this one (a refresh under way).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let ended = child.id();
    child.wait().unwrap();
    let abandoned = dir.join(format!(".{name}.{ended}.tmp"));
    let running = dir.join(format!(".{name}.1.tmp"));
    let other = dir.join(format!(".another.{ended}.tmp"));
    for p in [&abandoned, &running, &other] {
        std::fs::write(p, b"half").unwrap();
    }
    refresh(&r.root, &r.index, later()).unwrap();
    assert!(!abandoned.exists(), "the ended writer's file is gone");
    assert!(running.exists(), "a live writer's file is its own");
    assert!(other.exists(), "another root's file is not this refresh's");
}

#[test]
fn a_job_that_changed_lately_is_not_taken_in() {
    let r = root();
    job(&r.root, "300000-new", "new", "ok\n\nexit:0\n");
    let now = Utc::now();
    assert_eq!(
        refresh(&r.root, &r.index, now).unwrap(),
        Refreshed {
            kept: 0,
            taken: 0,
            left: 1
        }
    );
    let ctime = ctime(&r.root.join("300000-new/output.log"));
    let old_enough = DateTime::from_timestamp(ctime.0 + SETTLE_SECS, 0).unwrap();
    assert_eq!(refresh(&r.root, &r.index, old_enough).unwrap().taken, 1);
}

#[test]
fn an_index_torn_damaged_or_of_another_root_is_not_used() {
    let r = root();
    for i in 0..3 {
        job(&r.root, &format!("40000{i}-a"), "a", "ok\n\nexit:0\n");
    }
    refresh(&r.root, &r.index, later()).unwrap();
    let good = std::fs::read(&r.index).unwrap();
    let hits = |bytes: &[u8]| {
        std::fs::write(&r.index, bytes).unwrap();
        both_ways(&r.root, &r.index).2.hits
    };
    assert_eq!(hits(&good), 3);
    assert!(Index::load(&r.index, &r.root.join("other")).is_none());
    // The same root named otherwise is the same index.
    let named_otherwise = r.root.with_file_name("by-another-name");
    std::os::unix::fs::symlink(&r.root, &named_otherwise).unwrap();
    assert_eq!(
        path_for(Path::new("/cache"), &named_otherwise),
        path_for(Path::new("/cache"), &r.root)
    );
    assert!(Index::load(&r.index, &named_otherwise).is_some());
    assert_eq!(hits(&good[..good.len() - 1]), 0, "torn");
    assert_eq!(hits(&[]), 0, "empty");
    // A byte flipped anywhere, in the head, a block, the table or the trail: nothing is taken
    // from the index, and the jobs read the same.
    for at in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        std::fs::write(&r.index, &bad).unwrap();
        let (plain, through, used) = both_ways(&r.root, &r.index);
        assert_eq!(
            (used.hits, plain == through),
            (0, true),
            "byte {at} flipped"
        );
    }
    // A damaged index is rebuilt, not read.
    std::fs::write(&r.index, &good[..good.len() / 2]).unwrap();
    assert_eq!(refresh(&r.root, &r.index, later()).unwrap().taken, 3);
    assert_eq!(std::fs::read(&r.index).unwrap(), good);
}

/// An index file with `ids` (ascending) all holding `tape`, in blocks.
fn written(root: &Path, ids: &[String], tape: &Tape<'_>) -> Vec<u8> {
    let mut w = format::Writer::start(root, Vec::new()).unwrap();
    for id in ids {
        assert!(w.entry(id, tape).unwrap());
    }
    w.finish().unwrap()
}

#[test]
fn entries_round_trip_across_blocks_in_any_order_asked() {
    let stamp = Stamp {
        dev: (8, 1),
        ino: 42,
        size: 7,
        mtime: (-5, 999_999_999),
        ctime: (1_700_000_000, 1),
    };
    let tape = Tape {
        dir: stamp,
        files: vec![
            (
                crate::jobs::fs::names::META_FILE,
                Taken::Bytes {
                    stamp,
                    bytes: Cow::Borrowed(b"{}"),
                },
            ),
            (
                crate::jobs::fs::names::LOG_FILE,
                Taken::LogEnd {
                    stamp,
                    exit_code: Some(-9),
                },
            ),
            (crate::jobs::fs::names::STOP_FILE, Taken::Absent),
        ],
        complete: true,
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new("/jobs");
    let ids: Vec<String> = (0..2 * format::BLOCK + 5)
        .map(|i| format!("{i:06}"))
        .collect();
    let path = tmp.path().join("index");
    std::fs::write(&path, written(root, &ids, &tape)).unwrap();
    let index = Index::load(&path, root).unwrap();
    assert_eq!(index.len(), ids.len());
    let mut c = index.cursor();
    for id in ids.iter().step_by(97) {
        assert_eq!(c.find(id).unwrap().0, tape, "{id}");
    }
    // Asked backwards, and for ids between and beyond those held.
    for id in ids.iter().rev().step_by(101) {
        assert_eq!(c.find(id).unwrap().0, tape, "{id}");
    }
    for missing in ["", "000000a", "999999", "-"] {
        assert!(c.find(missing).is_none(), "{missing}");
    }
    // Out of order in the file: that block is refused.
    let mut swapped = ids.clone();
    swapped.swap(3, 4);
    std::fs::write(&path, written(root, &swapped, &tape)).unwrap();
    let index = Index::load(&path, root).unwrap();
    let mut c = index.cursor();
    assert!(c.find(&ids[0]).is_none(), "the first block is refused");
    assert!(
        c.find(&ids[format::BLOCK + 1]).is_some(),
        "the others are read"
    );
}

#[test]
fn the_index_file_is_named_by_the_root_and_kept_under_the_cache() {
    let r = root();
    let other = r.root.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    assert!(
        r.index
            .starts_with(r.root.parent().unwrap().join("cache/luzia/index"))
    );
    assert_ne!(
        r.index,
        path_for(&r.root.parent().unwrap().join("cache"), &other)
    );
    // The same root by another spelling is the same index.
    let dotted = r.root.join("..").join("jobs");
    assert_eq!(
        r.index,
        path_for(&r.root.parent().unwrap().join("cache"), &dotted)
    );
}

#[test]
fn jobs_are_read_through_the_index_by_id_whatever_the_listing_order() {
    let r = root();
    for i in 0..300 {
        job(&r.root, &format!("5{i:05}-j"), "t", "ok\n\nexit:0\n");
    }
    refresh(&r.root, &r.index, later()).unwrap();
    let mut ids: Vec<JobId> = list_ids(&r.root).unwrap();
    ids.reverse();
    let index = Index::load(&r.index, &r.root).unwrap();
    assert_eq!(index.len(), 300);
    let (jobs, used) = read_all_with(&r.root, &ids, Utc::now(), Some(&index));
    assert_eq!((jobs.len(), used.hits, used.misses), (300, 300, 0));
}

proptest! {
    /// Whatever bytes the file holds (checksums made to match included), opening it and
    /// looking ids up never panics and never reads outside the file.
    #[test]
    fn any_bytes_load_without_panicking(body in proptest::collection::vec(any::<u8>(), 0..600),
                                         id in "[a-z0-9]{1,8}") {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("index");
        let root = Path::new("/jobs");
        let look = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            if let Some(index) = Index::load(&path, root) {
                let mut c = index.cursor();
                let _ = c.find(&id);
                let _ = c.find("");
            }
        };
        look(&body);
        // A real file whose one block is the random bytes, every checksum matching: the
        // entries' reader meets them.
        let mut w = format::Writer::start(root, Vec::new()).unwrap();
        w.raw(&id, &body).unwrap();
        look(&w.finish().unwrap());
        // The same with the random bytes after a real entry's id.
        let mut entry = vec![u8::try_from(id.len()).unwrap()];
        entry.extend_from_slice(id.as_bytes());
        entry.extend_from_slice(&body);
        let mut w = format::Writer::start(root, Vec::new()).unwrap();
        w.raw(&id, &entry).unwrap();
        look(&w.finish().unwrap());
    }
}
