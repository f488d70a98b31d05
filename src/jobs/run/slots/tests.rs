use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::path::Path;

use chrono::Utc;

use super::*;

fn rig() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("jobs");
    let queue = tmp.path().join("queue");
    std::fs::create_dir_all(&root).unwrap();
    (tmp, root, queue)
}

fn names(set: &HashSet<String>) -> Vec<&str> {
    let mut v: Vec<&str> = set.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

#[test]
fn an_entry_counts_while_held_and_is_reclaimed_once_let_go() {
    let (_tmp, _root, queue) = rig();
    let slots = Slots::lock(&queue).unwrap();
    let a = Entry::take("100000-aaaa", &slots).unwrap();
    let b = Entry::take("100000-bbbb", &slots).unwrap();
    assert_eq!(
        names(&live(&slots).unwrap()),
        ["100000-aaaa", "100000-bbbb"]
    );
    // A holder that dies without removing its entry: the lock goes with the descriptor.
    drop(a);
    wait_until_free(&queue, "100000-aaaa");
    assert_eq!(names(&live(&slots).unwrap()), ["100000-bbbb"]);
    assert!(
        !queue.join(RUNNING_DIR).join("100000-aaaa").exists(),
        "reclaimed"
    );
    b.remove();
    assert!(live(&slots).unwrap().is_empty());
}

#[test]
fn a_temporary_entry_left_by_a_dead_starter_is_removed_and_not_counted() {
    let (_tmp, _root, queue) = rig();
    let slots = Slots::lock(&queue).unwrap();
    let dir = queue.join(RUNNING_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".new-100000-aaaa"), "").unwrap();
    assert!(live(&slots).unwrap().is_empty());
    assert!(!dir.join(".new-100000-aaaa").exists());
}

#[test]
fn an_inherited_descriptor_is_taken_only_when_it_is_the_jobs_entry() {
    let (_tmp, root, queue) = rig();
    let slots = Slots::lock(&queue).unwrap();
    let job = root.join("100000-aaaa");
    std::fs::create_dir(&job).unwrap();
    let entry = Entry::take("100000-aaaa", &slots).unwrap();
    let other = std::fs::File::open(queue.join(RUNNING_DIR)).unwrap();
    assert!(Entry::inherited(other.as_raw_fd(), &queue, &job).is_none());
    assert!(Entry::inherited(-1, &queue, &job).is_none());
    assert!(Entry::inherited(1_000_000, &queue, &job).is_none());
    let dup = entry.file.try_clone().unwrap();
    let fd = dup.as_raw_fd();
    // Ownership passes to the new Entry: forget the clone's handle so it is closed once.
    std::mem::forget(dup);
    let taken = Entry::inherited(fd, &queue, &job).unwrap();
    drop(entry);
    assert_eq!(names(&live(&slots).unwrap()), ["100000-aaaa"], "still held");
    taken.remove();
    assert!(live(&slots).unwrap().is_empty());
}

fn job(root: &Path, id: &str, pid: u32, log: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("meta.json"),
        format!(
            r#"{{"id": "{id}", "project": "p", "task": "t", "started": "{}"}}"#,
            Utc::now().to_rfc3339()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("pid"), format!("{pid}\n")).unwrap();
    std::fs::write(dir.join("output.log"), log).unwrap();
}

#[test]
fn jobs_without_an_entry_count_while_running_and_a_new_one_is_seen() {
    let (_tmp, root, queue) = rig();
    let slots = Slots::lock(&queue).unwrap();
    let me = std::process::id();
    job(&root, "100000-done", me, "ok\nexit:0\n");
    job(&root, "100000-busy", me, "working\n");
    let none = HashSet::new();
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    // Read from the index this time (the root has not changed), with the same answer.
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    let index = std::fs::read_to_string(queue.join(RUNNING_DIR).join(".others.json")).unwrap();
    assert!(
        index.contains("100000-busy") && !index.contains("100000-done"),
        "{index}"
    );
    job(&root, "100001-late", me, "");
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 2);
    std::fs::write(root.join("100000-busy").join("output.log"), "exit:0\n").unwrap();
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    // A job with an entry is counted by its entry, not twice.
    let mine: HashSet<String> = ["100001-late".to_owned()].into();
    assert_eq!(others::count(&root, &queue, &mine, Utc::now()).unwrap(), 0);
    drop(slots);
}

#[test]
fn a_change_luzia_records_as_its_own_needs_no_new_reading_and_a_later_one_is_still_seen() {
    let (_tmp, root, queue) = rig();
    let slots = Slots::lock(&queue).unwrap();
    let me = std::process::id();
    job(&root, "100000-busy", me, "");
    let none = HashSet::new();
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    let before = others::stamp(&root);
    std::fs::create_dir(root.join("100002-mine")).unwrap();
    others::record_own_change(&root, &queue, before);
    let after = others::stamp(&root);
    assert_ne!(after, before);
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 1);
    assert_eq!(
        others::stamp(&root),
        after,
        "read from the index: the root was not touched"
    );
    // Someone else's job, made right after: the root's time moves past ours.
    job(&root, "100003-theirs", me, "");
    assert_eq!(others::count(&root, &queue, &none, Utc::now()).unwrap(), 2);
    drop(slots);
}
