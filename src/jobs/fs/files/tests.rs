//! The rule of opening job files, for reading and for writing.

use super::*;

#[test]
fn a_process_file_owned_by_someone_else_is_not_trusted() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: changing a file's owner needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let pid = root.path().join("pid");
    std::fs::write(&pid, b"1\n").unwrap();
    assert_eq!(read_trusted(&pid, root.path()).unwrap().unwrap(), b"1\n");
    std::os::unix::fs::chown(&pid, Some(54321), None).unwrap();
    let err = read_trusted(&pid, root.path()).unwrap_err().to_string();
    assert!(
        err.contains("uid 54321") && err.contains("not trusted"),
        "{err}"
    );
    // The jobs root's owner is trusted: the orchestrator's own account.
    std::os::unix::fs::chown(root.path(), Some(54321), None).unwrap();
    assert!(read_trusted(&pid, root.path()).is_ok());
}

#[test]
fn refuses_links_and_oversized_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, b"secret").unwrap();
    let link = dir.path().join("meta.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = read_small(&link).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");

    let big = dir.path().join("big");
    std::fs::write(&big, vec![b' '; SMALL_FILE_CAP as usize + 1]).unwrap();
    assert!(read_small(&big).is_err());

    assert_eq!(read_small(&dir.path().join("absent")).unwrap(), None);
    assert_eq!(read_small(&target).unwrap().unwrap(), b"secret");
}

#[test]
fn a_file_as_long_as_its_cap_is_read_whole_and_one_byte_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (len, ok) in [(0, true), (1, true), (4096, true), (10_000, false)] {
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let cap = if ok { len as u64 } else { len as u64 - 1 };
        match read_capped(&path, cap) {
            Ok(Some(read)) => assert!(ok && read == bytes, "{len}"),
            Ok(None) => panic!("{len}: not found"),
            Err(e) => assert!(
                !ok && e.to_string().contains("is larger than"),
                "{len}: {e}"
            ),
        }
    }
}

/// Opened relative to the jobs root, a job's files read as they read by their paths: the
/// same bytes, the same refusals, the same absence.
#[test]
fn files_opened_from_the_root_read_as_by_their_paths() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("120000-abcd");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("meta.json"), b"{}").unwrap();
    std::fs::write(root.path().join("elsewhere"), b"secret").unwrap();
    std::os::unix::fs::symlink(root.path().join("elsewhere"), dir.join("stop.json")).unwrap();
    mkfifo(&dir.join("progress.json"));
    std::fs::create_dir(dir.join("output.log")).unwrap();
    let fd = open_root(root.path()).unwrap();
    let fd = Some(fd);
    let at = JobDir::in_root(&dir, borrow(&fd), "120000-abcd");
    let by_path = JobDir::new(&dir);
    let text = |r: io::Result<Option<Vec<u8>>>| format!("{r:?}");
    for name in [
        "meta.json",
        "stop.json",
        "progress.json",
        "output.log",
        "absent",
    ] {
        let from_root = text(at.read_small(name));
        assert_eq!(from_root, text(by_path.read_small(name)), "{name}");
        assert_eq!(from_root, text(read_small(&dir.join(name))), "{name}");
    }
    assert_eq!(at.read_small("meta.json").unwrap().unwrap(), b"{}");
    assert!(at.read_small("absent").unwrap().is_none());
    let err = at.read_small("stop.json").unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    let (_, md) = at.open("meta.json").unwrap().unwrap();
    assert_eq!(md.len(), 2);
}

/// Runs `f` on a thread of its own and fails if it has not returned within five seconds:
/// a read that blocks must fail the test, not hang the suite.
pub(crate) fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(5))
        .unwrap_or_else(|_| panic!("{what} blocked"))
}

pub(crate) fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

#[test]
fn refuses_a_fifo_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("meta.json");
    mkfifo(&fifo);
    for (what, read) in [("open_nofollow", 0), ("read_small", 1), ("read_capped", 2)] {
        let path = fifo.clone();
        let err = returns(what, move || match read {
            0 => open_nofollow(&path).map(|_| ()),
            1 => read_small(&path).map(|_| ()),
            _ => read_capped(&path, META_FILE_CAP).map(|_| ()),
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("is a FIFO, not a regular file"),
            "{what}: {err}"
        );
    }
}

#[test]
fn refuses_directories_and_sockets_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("output.log");
    std::fs::create_dir(&sub).unwrap();
    let err = read_small(&sub).unwrap_err().to_string();
    assert!(err.contains("is a directory, not a regular file"), "{err}");

    let sock = dir.path().join("pid");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let err = returns("opening a socket", move || read_small(&sock))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a socket, not a regular file"), "{err}");
}

/// What a hostile agent may leave where luzia writes: each kind of file by the name.
#[derive(Clone, Copy, Debug)]
enum Planted {
    Nothing,
    Regular,
    LinkToVictim,
    HardLinkToVictim,
    Fifo,
    FifoWithReader,
    Directory,
    DanglingLink,
}

const VICTIM: &[u8] = b"someone else's\n";

/// Plants `what` as `dir/name`; returns a reader holding a FIFO open, when there is one.
fn plant(dir: &Path, name: &str, what: Planted) -> Option<File> {
    let path = dir.join(name);
    let victim = dir.join("victim");
    match what {
        Planted::Nothing => {}
        Planted::Regular => std::fs::write(&path, b"old\n").unwrap(),
        Planted::LinkToVictim => std::os::unix::fs::symlink(&victim, &path).unwrap(),
        Planted::HardLinkToVictim => std::fs::hard_link(&victim, &path).unwrap(),
        Planted::Fifo => mkfifo(&path),
        Planted::FifoWithReader => {
            mkfifo(&path);
            let flags = OFlags::RDONLY | OFlags::NONBLOCK;
            return Some(File::from(
                rustix::fs::open(&path, flags, Mode::empty()).unwrap(),
            ));
        }
        Planted::Directory => std::fs::create_dir(&path).unwrap(),
        Planted::DanglingLink => std::os::unix::fs::symlink(dir.join("nowhere"), &path).unwrap(),
    }
    None
}

const MODES: [Write; 5] = [
    Write::Append { create: true },
    Write::Append { create: false },
    Write::InPlace,
    Write::Truncate,
    Write::New,
];

/// What writing `new` through `open_write(how)` over `planted` may give: the bytes the file
/// holds afterwards, or `None` when the open must be refused.
fn expected(planted: Planted, how: Write) -> Option<&'static [u8]> {
    match (planted, how) {
        (Planted::Nothing, Write::Append { create: true } | Write::Truncate | Write::New) => {
            Some(b"new\n")
        }
        (Planted::Regular, Write::Append { .. }) => Some(b"old\nnew\n"),
        (Planted::Regular, Write::InPlace | Write::Truncate) => Some(b"new\n"),
        _ => None,
    }
}

/// Every kind of planted file against every way of opening for writing: a regular file of one
/// name is written as asked; anything else is refused, at once, and nothing else is written.
#[test]
fn writing_goes_only_to_a_regular_file_of_one_name_and_never_waits() {
    let kinds = [
        Planted::Nothing,
        Planted::Regular,
        Planted::LinkToVictim,
        Planted::HardLinkToVictim,
        Planted::Fifo,
        Planted::FifoWithReader,
        Planted::Directory,
        Planted::DanglingLink,
    ];
    for planted in kinds {
        for how in MODES {
            let dir = tempfile::tempdir().unwrap();
            let victim = dir.path().join("victim");
            std::fs::write(&victim, VICTIM).unwrap();
            let _reader = plant(dir.path(), "history.jsonl", planted);
            let path = dir.path().join("history.jsonl");
            let opened = returns("open_write", move || {
                open_write(&path, how, 0o644).and_then(|mut f| {
                    assert!(
                        !rustix::fs::fcntl_getfl(&f)
                            .unwrap()
                            .contains(OFlags::NONBLOCK),
                        "handed out blocking"
                    );
                    std::io::Write::write_all(&mut f, b"new\n")
                })
            });
            let case = format!("{planted:?} {how:?}: {opened:?}");
            assert_eq!(std::fs::read(&victim).unwrap(), VICTIM, "{case}");
            match expected(planted, how) {
                Some(bytes) => {
                    assert!(opened.is_ok(), "{case}");
                    let got = std::fs::read(dir.path().join("history.jsonl")).unwrap();
                    assert_eq!(got, bytes, "{case}");
                }
                None => assert!(opened.is_err(), "{case}"),
            }
        }
    }
}

#[test]
fn a_refused_write_says_what_the_file_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim"), VICTIM).unwrap();
    let says = |planted, how| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("victim"), VICTIM).unwrap();
        let _reader = plant(d.path(), "f", planted);
        let path = d.path().join("f");
        returns("open_write", move || open_write(&path, how, 0o644))
            .unwrap_err()
            .to_string()
    };
    let append = Write::Append { create: true };
    for (planted, how, want) in [
        (Planted::LinkToVictim, append, "is a symbolic link"),
        (Planted::Fifo, append, "is a FIFO, not a regular file"),
        (
            Planted::FifoWithReader,
            Write::InPlace,
            "is a FIFO, not a regular file",
        ),
        (
            Planted::Directory,
            append,
            "is a directory, not a regular file",
        ),
        (
            Planted::HardLinkToVictim,
            Write::Truncate,
            "has 2 names (hard links)",
        ),
        (Planted::Regular, Write::New, "exists"),
    ] {
        let err = says(planted, how);
        assert!(err.contains(want), "{planted:?} {how:?}: {err}");
    }
}

#[test]
fn a_config_behind_a_link_is_read_and_a_loop_or_a_fifo_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.toml");
    std::fs::write(&real, b"x = 1\n").unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(read_following(&link, 100).unwrap().unwrap(), b"x = 1\n");
    assert!(
        read_following(&dir.path().join("absent"), 100)
            .unwrap()
            .is_none()
    );

    let looped = dir.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let err = read_following(&looped, 100).unwrap_err().to_string();
    assert!(err.contains("loop of symbolic links"), "{err}");

    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let to_fifo = dir.path().join("to-fifo");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    let err = returns("read_following", move || read_following(&to_fifo, 100))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
}

#[test]
fn a_path_that_is_no_directory_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("file"), b"").unwrap();
    std::os::unix::fs::symlink(d.join("loop"), d.join("loop")).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    std::os::unix::fs::symlink(d, d.join("to-dir")).unwrap();
    mkfifo(&d.join("fifo"));
    assert_eq!(not_a_directory(d), None);
    assert_eq!(not_a_directory(&d.join("to-dir")), None);
    for (name, want) in [
        ("absent", "does not exist"),
        ("file", "is a file, not a directory"),
        ("loop", "is a loop of symbolic links"),
        ("dangling", "which does not exist"),
        ("fifo", "is a FIFO, not a directory"),
    ] {
        let said = not_a_directory(&d.join(name)).unwrap();
        assert!(said.contains(want), "{name}: {said}");
    }
}

#[test]
fn an_unnamed_file_has_no_name_until_it_is_given_one() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut file) = open_unnamed(dir.path(), 0o644).unwrap() else {
        eprintln!("SKIPPED: this file system has no O_TMPFILE");
        return;
    };
    std::io::Write::write_all(&mut file, b"whole").unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn planted() -> impl Strategy<Value = Planted> {
        prop_oneof![
            Just(Planted::Nothing),
            Just(Planted::Regular),
            Just(Planted::LinkToVictim),
            Just(Planted::HardLinkToVictim),
            Just(Planted::Fifo),
            Just(Planted::Directory),
            Just(Planted::DanglingLink),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A run of opens, each for reading or for writing in any way, of one name the agent
        /// changes between them: the victim is never written, nothing blocks, and what is
        /// read is only ever what luzia itself wrote there.
        #[test]
        fn no_run_of_opens_reaches_past_the_name(
            steps in proptest::collection::vec((planted(), 0usize..6), 1..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let victim = dir.path().join("victim");
            std::fs::write(&victim, VICTIM).unwrap();
            let path = dir.path().join("f");
            for (what, op) in steps {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_dir(&path);
                if matches!(what, Planted::Regular) {
                    std::fs::write(&path, b"luzia's\n").unwrap();
                } else {
                    plant(dir.path(), "f", what);
                }
                let p = path.clone();
                let read = returns("an open", move || match MODES.get(op) {
                    Some(how) => open_write(&p, *how, 0o644)
                        .and_then(|mut f| std::io::Write::write_all(&mut f, b"luzia's\n"))
                        .map(|()| None),
                    None => read_small(&p),
                });
                prop_assert_eq!(std::fs::read(&victim).unwrap(), VICTIM);
                // A read through a hard link reads what it names: only what the agent's user
                // may read itself can be linked (fs.protected_hardlinks), and a job file's
                // bytes are the agent's word anyway. Writing through one is what is refused.
                if matches!(what, Planted::HardLinkToVictim) {
                    continue;
                }
                if let Ok(Some(bytes)) = read {
                    prop_assert!(bytes.split_inclusive(|b| *b == b'\n').all(|l| l == b"luzia's\n"));
                }
            }
        }
    }
}

/// A job file is appended to (kill's exit line) only if it is a regular file of its own:
/// never through a link, never a FIFO (which would block), never a second name of another
/// file.
#[test]
fn appends_only_to_a_regular_file_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"root's own\n").unwrap();
    let log = dir.path().join("output.log");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let err = open_append(&log).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(dir.path().join("absent"), &log).unwrap();
    assert!(open_append(&log).is_err());
    assert!(
        !dir.path().join("absent").exists(),
        "no file made through a link"
    );

    std::fs::remove_file(&log).unwrap();
    std::fs::hard_link(&victim, &log).unwrap();
    let err = open_append(&log).unwrap_err().to_string();
    assert!(err.contains("hard links"), "{err}");

    std::fs::remove_file(&log).unwrap();
    mkfifo(&log);
    let path = log.clone();
    let err = returns("appending to a FIFO", move || {
        open_append(&path).map(|_| ())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("is a FIFO"), "{err}");
    // With a reader, the open itself succeeds: the file is refused by what it is.
    let reader = open_nofollow(&log);
    assert!(reader.is_err(), "a FIFO is not read either");
    let _reading = std::fs::File::from(
        rustix::fs::open(&log, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()).unwrap(),
    );
    let path = log.clone();
    let err = returns("appending to a FIFO being read", move || {
        open_append(&path).map(|_| ())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("is a FIFO"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's own\n");

    std::fs::remove_file(&log).unwrap();
    use std::io::Write;
    open_append(&log).unwrap().write_all(b"a").unwrap();
    open_append(&log).unwrap().write_all(b"b").unwrap();
    assert_eq!(std::fs::read(&log).unwrap(), b"ab");
}
