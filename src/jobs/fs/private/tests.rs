use super::*;

use std::os::unix::fs::PermissionsExt;

/// A jobs root with one job directory in it.
fn job() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("120000-abcd");
    std::fs::create_dir(&dir).unwrap();
    (root, dir)
}

fn is_this_job(b: &[u8]) -> bool {
    b.starts_with(b"this job")
}

#[test]
fn what_is_written_is_read_back_and_only_if_accepted() {
    let (_root, dir) = job();
    assert_eq!(read(&dir, "process.json", |_| true).unwrap(), None);
    let private = Private::create(&dir).unwrap();
    assert_eq!(read(&dir, "process.json", |_| true).unwrap(), None);
    private
        .write("process.json", b"this job, first", true)
        .unwrap();
    private
        .write("process.json", b"this job, then", false)
        .unwrap();
    let read_back = read(&dir, "process.json", is_this_job).unwrap();
    assert_eq!(read_back.as_deref(), Some(&b"this job, then"[..]));
    // Nothing but the file itself is left in the directory.
    let names: Vec<_> = std::fs::read_dir(dir.join(PRIVATE_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["process.json"]);
    let md = std::fs::metadata(dir.join(PRIVATE_DIR)).unwrap();
    assert_eq!(md.mode() & 0o022, 0, "nobody else may write in it");

    let err = read(&dir, "process.json", |_| false).unwrap_err();
    assert!(err.to_string().contains("not this job's record"), "{err}");
    // Made again (a second supervisor of the same directory), it is the same directory.
    Private::create(&dir).unwrap();
}

#[test]
fn a_link_a_file_or_a_directory_others_may_write_is_not_private() {
    let (root, dir) = job();
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("process.json"), b"this job").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(PRIVATE_DIR)).unwrap();
    let err = read(&dir, "process.json", is_this_job).unwrap_err();
    assert!(err.to_string().contains("link or a file"), "{err}");
    assert!(Private::create(&dir).is_err());

    std::fs::remove_file(dir.join(PRIVATE_DIR)).unwrap();
    std::fs::create_dir(dir.join(PRIVATE_DIR)).unwrap();
    std::fs::write(dir.join(PRIVATE_DIR).join("process.json"), b"this job").unwrap();
    for mode in [0o775, 0o757] {
        std::fs::set_permissions(dir.join(PRIVATE_DIR), std::fs::Permissions::from_mode(mode))
            .unwrap();
        let err = read(&dir, "process.json", is_this_job).unwrap_err();
        assert!(
            err.to_string().contains("written by others"),
            "{mode:o}: {err}"
        );
    }
}

#[test]
fn in_a_directory_given_away_the_agent_s_own_is_refused_and_luzia_s_found_where_it_was_moved() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: giving a directory to another user needs root");
        return;
    }
    let (_root, dir) = job();
    let private = Private::create(&dir).unwrap();
    private.write("process.json", b"this job", true).unwrap();
    assert_eq!(given_away(&dir), None);
    std::os::unix::fs::chown(&dir, Some(54321), None).unwrap();
    assert_eq!(given_away(&dir).as_deref(), Some("belongs to uid 54321"));

    // The agent moves luzia's directory aside and puts one of its own in its place.
    std::fs::rename(dir.join(PRIVATE_DIR), dir.join("aside")).unwrap();
    std::fs::create_dir(dir.join(PRIVATE_DIR)).unwrap();
    std::fs::write(
        dir.join(PRIVATE_DIR).join("process.json"),
        b"this job, forged",
    )
    .unwrap();
    std::os::unix::fs::chown(dir.join(PRIVATE_DIR), Some(54321), None).unwrap();
    let found = read(&dir, "process.json", is_this_job).unwrap();
    assert_eq!(found.as_deref(), Some(&b"this job"[..]));

    // Without it, nothing is found, and the agent's is said to be untrusted.
    std::fs::remove_dir_all(dir.join("aside")).unwrap();
    let err = read(&dir, "process.json", is_this_job).unwrap_err();
    assert!(err.to_string().contains("owned by uid 54321"), "{err}");

    std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(
        given_away(&dir).as_deref(),
        Some("may be written by anyone")
    );
}
