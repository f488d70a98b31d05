//! The watcher's fallbacks, what an event means, and a watched directory replaced.

use super::*;
use std::sync::mpsc;

/// What inotify_init1 gives when the user's inotify instances are used up.
fn no_instances_left(_: Handler) -> ::notify::Result<Box<dyn Watcher + Send>> {
    Err(::notify::Error::io(rustix::io::Errno::MFILE.into()))
}

/// A watcher that starts but finds the watch table full.
struct FullTable;

impl Watcher for FullTable {
    fn new<F: ::notify::EventHandler>(_: F, _: ::notify::Config) -> ::notify::Result<Self> {
        Ok(FullTable)
    }
    fn watch(&mut self, _: &Path, _: RecursiveMode) -> ::notify::Result<()> {
        Err(::notify::Error::new(::notify::ErrorKind::MaxFilesWatch))
    }
    fn unwatch(&mut self, _: &Path) -> ::notify::Result<()> {
        Ok(())
    }
    fn kind() -> ::notify::WatcherKind {
        ::notify::WatcherKind::NullWatcher
    }
}

fn full_table(_: Handler) -> ::notify::Result<Box<dyn Watcher + Send>> {
    Ok(Box::new(FullTable))
}

#[test]
fn every_way_the_native_watcher_fails_ends_in_polling() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(Backend, &str); 3] = [
        (Backend::Native(no_instances_left), "file watching failed"),
        (Backend::Native(full_table), "inotify watch limit reached"),
        (Backend::Poll("LUZIA_WATCH=poll".into()), "LUZIA_WATCH=poll"),
    ];
    for (backend, reason) in cases {
        let w = FsWatcher::start(dir.path(), backend.clone(), |_| {});
        match w.mode() {
            WatchMode::Polling { reason: got } => {
                assert!(got.contains(reason), "{backend:?}: {got}")
            }
            WatchMode::Inotify => panic!("{backend:?} did not fall back"),
        }
    }
}

#[test]
fn own_reads_are_no_change_and_an_overflow_is_a_rescan() {
    let ev = |kind| Event::new(kind).add_path(PathBuf::from("/j/a1/meta.json"));
    let open = ev(EventKind::Access(AccessKind::Open(AccessMode::Any)));
    assert_eq!(change(&open), None);
    let read_close = ev(EventKind::Access(AccessKind::Close(AccessMode::Read)));
    assert_eq!(change(&read_close), None);
    let write_close = ev(EventKind::Access(AccessKind::Close(AccessMode::Write)));
    assert_eq!(
        change(&write_close),
        Some(Change::Paths(vec![PathBuf::from("/j/a1/meta.json")]))
    );
    let overflow = Event::new(EventKind::Other).set_flag(::notify::event::Flag::Rescan);
    assert_eq!(change(&overflow), Some(Change::Rescan));
    assert_eq!(
        change_of(Err(::notify::Error::generic("queue overflow"))),
        Some(Change::Rescan)
    );
}

#[test]
fn local_tmp_is_not_remote() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(remote_fs_name(dir.path()), None);
}

/// The next change that is not `Paths` (or, with `paths`, the next one of either).
fn next_change(rx: &mpsc::Receiver<Change>, what: &str, paths: bool) -> Change {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(Change::Paths(_)) if !paths => continue,
            Ok(change) => return change,
            Err(e) => panic!("no {what}: {e}"),
        }
    }
}

#[test]
fn a_directory_moved_away_and_made_again_is_watched_again() {
    let base = tempfile::tempdir().unwrap();
    let (dir, old) = (base.path().join("jobs"), base.path().join("jobs.old"));
    std::fs::create_dir_all(dir.join("j1")).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut w = FsWatcher::start(&dir, Backend::default(), move |c| {
        let _ = tx.send(c);
    });
    assert_eq!(w.add(&dir.join("j1")), Ok(()));
    std::fs::rename(&dir, &old).unwrap();
    assert_eq!(next_change(&rx, "Gone", false), Change::Gone);
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(next_change(&rx, "Back", false), Change::Back);
    assert!(
        !w.is_added(&dir.join("j1")),
        "the old root's job is still watched"
    );
    assert_eq!(w.added_count(), 0);
    // The old directory is heard no more (its events would come first: one queue).
    std::fs::write(old.join("stale"), b"x").unwrap();
    std::fs::write(old.join("j1/output.log"), b"x").unwrap();
    std::fs::create_dir(dir.join("j2")).unwrap();
    assert_eq!(
        next_change(&rx, "j2 made", true),
        Change::Paths(vec![dir.join("j2")])
    );
    // Removed and made again: the same.
    std::fs::remove_dir(dir.join("j2")).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    assert_eq!(next_change(&rx, "Gone", false), Change::Gone);
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(next_change(&rx, "Back", false), Change::Back);
    std::fs::create_dir(dir.join("j3")).unwrap();
    assert_eq!(
        next_change(&rx, "j3 made", true),
        Change::Paths(vec![dir.join("j3")])
    );
}

#[test]
fn a_native_watcher_reports_writes_in_added_directories() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut w = FsWatcher::start(dir.path(), Backend::default(), move |c| {
        let _ = tx.send(c);
    });
    assert_eq!(w.mode(), WatchMode::Inotify);
    let sub = dir.path().join("j1");
    std::fs::create_dir(&sub).unwrap();
    let created = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(created, Change::Paths(vec![sub.clone()]));
    assert_eq!(w.add(&sub), Ok(()));
    assert!(matches!(
        w.add(&dir.path().join("gone")),
        Err(AddError::Failed(_))
    ));
    std::fs::write(sub.join("output.log"), b"x\n").unwrap();
    let written = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        matches!(&written, Change::Paths(p) if p.contains(&sub.join("output.log"))),
        "{written:?}"
    );
}
