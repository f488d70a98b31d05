use std::path::Path;
use std::time::Duration;

use chrono::Utc;

use super::*;
use crate::jobs::run::slots::{Entry, RUNNING_DIR};

const DAY: u64 = 86_400;

/// A job finished `days_ago` days ago (its files and directory dated then), with `log` as its
/// output and, when `extra` names one, another file.
fn job(root: &Path, id: &str, days_ago: u64, log: &str, extra: Option<(&str, &str)>) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(META_FILE),
        format!(r#"{{"id": "{id}", "project": "p", "task": "t"}}"#),
    )
    .unwrap();
    std::fs::write(dir.join(LOG_FILE), log).unwrap();
    if let Some((name, body)) = extra {
        std::fs::write(dir.join(name), body).unwrap();
    }
    let then = std::time::SystemTime::now() - Duration::from_secs(days_ago * DAY);
    let secs = then
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let ts = rustix::fs::Timespec {
        tv_sec: secs,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: ts,
        last_modification: ts,
    };
    for p in [dir.join(META_FILE), dir.join(LOG_FILE), dir.clone()] {
        rustix::fs::utimensat(rustix::fs::CWD, &p, &times, rustix::fs::AtFlags::empty()).unwrap();
    }
}

fn ids(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    queue: PathBuf,
    archive: PathBuf,
}

fn rig() -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("jobs");
    std::fs::create_dir_all(&root).unwrap();
    job(&root, "100000-old", 40, "done\nexit:0\n", None);
    job(&root, "100001-oldfail", 31, "exit:1\n", None);
    job(&root, "100002-recent", 3, "exit:0\n", None);
    job(&root, "100003-unfinished", 90, "still going\n", None);
    job(&root, "100004-asked", 90, "exit:100\n", None);
    let q = r#"{"id": "q1", "question": "which?", "type": "text"}"#;
    job(
        &root,
        "100005-question",
        90,
        "exit:0\n",
        Some(("clarification.json", q)),
    );
    job(&root, "100006-held", 90, "exit:0\n", None);
    Rig {
        queue: tmp.path().join("queue"),
        archive: tmp.path().join("jobs-archive"),
        root,
        _tmp: tmp,
    }
}

fn plan(how: Disposal, dry_run: bool) -> Plan {
    Plan {
        older_than: Duration::from_secs(30 * DAY),
        how,
        dry_run,
    }
}

#[test]
fn ages_are_a_number_and_a_unit() {
    assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * DAY)));
    assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3600)));
    assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * DAY)));
    assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
    assert_eq!(parse_age("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_age("1w3d"), Ok(Duration::from_secs(10 * DAY)));
    for bad in [
        "",
        "30",
        "d",
        "30 days",
        "-1d",
        "1.5d",
        "30y",
        "99999999999999999999d",
        "1d1",
        "d1",
        "1h 30m",
        "2562047788015215w1w",
    ] {
        let e = parse_age(bad).unwrap_err();
        assert!(
            e.contains("not an age") && e.contains("30d"),
            "{bad:?}: {e}"
        );
    }
}

#[test]
fn only_old_finished_jobs_nobody_runs_or_waits_on_are_archived_and_a_dry_run_touches_nothing() {
    let r = rig();
    let lock = Slots::lock(&r.queue).unwrap();
    let held = Entry::take("100006-held", &lock).unwrap();
    drop(lock);
    let before = ids(&r.root);
    let how = Disposal::Archive(r.archive.clone());
    let dry = collect(&r.root, &r.queue, &plan(how.clone(), true), Utc::now()).unwrap();
    assert_eq!(dry.collected, 2);
    assert!(dry.bytes > 0);
    assert_eq!(ids(&r.root), before, "a dry run moves nothing");
    assert!(!r.archive.exists(), "nor makes the archive");

    let done = collect(&r.root, &r.queue, &plan(how.clone(), false), Utc::now()).unwrap();
    assert_eq!((done.collected, done.bytes), (dry.collected, dry.bytes));
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(ids(&r.archive), ["100000-old", "100001-oldfail"]);
    assert_eq!(
        ids(&r.root),
        [
            "100002-recent",
            "100003-unfinished",
            "100004-asked",
            "100005-question",
            "100006-held"
        ]
    );
    let kept = |k| done.kept.get(&k).copied().unwrap_or(0);
    assert_eq!(kept(Kept::Recent), 1);
    assert_eq!(kept(Kept::Unfinished), 1);
    assert_eq!(kept(Kept::Waiting), 2);
    assert_eq!(kept(Kept::Running), 1);
    // Its supervisor has gone: the job may go too.
    drop(held);
    slots::wait_until_free(&r.queue, "100006-held");
    let again = collect(&r.root, &r.queue, &plan(how, false), Utc::now()).unwrap();
    assert_eq!(again.collected, 1);
    assert!(r.archive.join("100006-held").is_dir());
}

#[test]
fn a_job_already_in_the_archive_stays_where_it_is() {
    let r = rig();
    std::fs::create_dir_all(r.archive.join("100000-old")).unwrap();
    let how = Disposal::Archive(r.archive.clone());
    let done = collect(&r.root, &r.queue, &plan(how, false), Utc::now()).unwrap();
    assert_eq!(
        done.collected, 2,
        "the failed job and the one nobody holds any more"
    );
    assert_eq!(done.kept.get(&Kept::InArchive), Some(&1));
    assert!(r.root.join("100000-old").join(LOG_FILE).is_file());
}

#[test]
fn delete_removes_the_jobs_and_what_a_stopped_gc_left() {
    let r = rig();
    std::fs::create_dir_all(r.root.join(".gc-090000-half").join("x")).unwrap();
    let done = collect(
        &r.root,
        &r.queue,
        &plan(Disposal::Delete, false),
        Utc::now(),
    )
    .unwrap();
    assert_eq!(done.collected, 3);
    assert!(!r.root.join("100000-old").exists());
    assert!(!r.root.join(".gc-090000-half").exists());
    assert!(!r.archive.exists());
}

#[test]
fn an_archive_inside_the_root_is_refused() {
    let r = rig();
    let how = Disposal::Archive(r.root.join("archive"));
    let e = collect(&r.root, &r.queue, &plan(how, false), Utc::now()).unwrap_err();
    assert!(e.to_string().contains("inside the jobs root"), "{e}");
    assert!(r.root.join("100000-old").is_dir());
}

#[test]
fn the_default_archive_is_beside_the_root() {
    assert_eq!(
        default_archive(Path::new("/var/log/luz-orchestrator/jobs")),
        Some(PathBuf::from("/var/log/luz-orchestrator/jobs-archive"))
    );
    assert_eq!(default_archive(Path::new("/")), None);
}

#[test]
fn the_running_index_is_read_again_after_a_collection() {
    let r = rig();
    let how = Disposal::Archive(r.archive.clone());
    collect(&r.root, &r.queue, &plan(how, false), Utc::now()).unwrap();
    assert!(r.queue.join(RUNNING_DIR).join(".others.json").is_file());
}
