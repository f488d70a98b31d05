//! A throwaway system user for the tests in which luzia, running as root, runs an agent as a
//! project's `user`, and the programs that user must be able to run (luzia itself, the Claude
//! Code CLI) put where it can reach them. Creating a user needs root: see `root_or_skip`.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{all_pids, kill_hard};

/// A throwaway system user (`useradd --system`, no home created), removed (with anything still
/// running as it) when dropped.
pub struct User {
    pub name: String,
    pub uid: u32,
}

impl User {
    /// A new user whose home is `home` (which the caller creates and gives it). Each user of a
    /// test process has its own name, so tests running side by side never share one.
    pub fn create(home: &Path) -> User {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "luzia-t{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/bin/sh",
                "--home-dir",
            ])
            .arg(home)
            .arg(&name)
            .output()
            .expect("useradd");
        assert!(
            out.status.success(),
            "useradd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = Command::new("id").arg("-u").arg(&name).output().unwrap();
        let uid = String::from_utf8_lossy(&id.stdout).trim().parse().unwrap();
        User { name, uid }
    }

    /// Makes `path` the user's (its group and mode stay).
    pub fn give(&self, path: &Path) {
        rustix::fs::chown(path, Some(rustix::fs::Uid::from_raw(self.uid)), None)
            .unwrap_or_else(|e| panic!("chown {} to {}: {e}", path.display(), self.name));
    }
}

impl Drop for User {
    fn drop(&mut self) {
        for pid in all_pids() {
            if fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == self.uid) {
                kill_hard(pid);
            }
        }
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}

/// The luzia binary, where any user can run it: see [`reachable`].
pub fn reachable_luzia(base: &Path) -> PathBuf {
    reachable(Path::new(env!("CARGO_BIN_EXE_luzia")), base, "luzia")
}

/// The program `file` (symbolic links followed), where any user can run it: where it is if
/// every directory on the way lets others through and others may read and run it; else, named
/// `name`, in `base` (which must itself be reachable): a hard link when on the same file system
/// (the Claude Code CLI is a single file of a quarter of a gigabyte), else a copy.
pub fn reachable(file: &Path, base: &Path, name: &str) -> PathBuf {
    let real = fs::canonicalize(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let open_dirs = real
        .ancestors()
        .skip(1)
        .all(|d| fs::metadata(d).is_ok_and(|m| m.mode() & 0o001 != 0));
    let open_file = fs::metadata(&real).is_ok_and(|m| m.mode() & 0o005 == 0o005);
    if open_dirs && open_file && real.file_name().is_some_and(|n| n == name) {
        return real;
    }
    let there = base.join(name);
    if !open_file || fs::hard_link(&real, &there).is_err() {
        fs::copy(&real, &there)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", real.display(), there.display()));
        fs::set_permissions(&there, fs::Permissions::from_mode(0o755)).unwrap();
    }
    there
}
