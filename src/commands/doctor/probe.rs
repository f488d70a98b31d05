//! Asking this machine: a program on PATH, its version (within a time limit, so a program that
//! hangs cannot hang doctor), whether a directory can be written or created.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a program has to print its version.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// Where `program` is: itself when it names a path (`./x`, `/usr/bin/x`), else the first
/// executable file of that name in `path` (a PATH's value).
pub fn find_program(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    p.is_file() && rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok()
}

/// The first line `program --version` prints, or why there is none.
pub fn version(program: &Path, timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err("cannot read what it prints".into());
    };
    let (tx, rx) = mpsc::channel();
    // Reads until the program (and anything it started that holds its stdout) is done; left
    // behind on a timeout, it ends with the process.
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.by_ref().take(64 * 1024).read_to_end(&mut text);
        let _ = tx.send(text);
    });
    match rx.recv_timeout(timeout) {
        Ok(text) => {
            let status = child.wait().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&text);
            let first = text.lines().map(str::trim).find(|l| !l.is_empty());
            match (status.success(), first) {
                (true, Some(line)) => Ok(line.chars().take(120).collect()),
                (true, None) => Err("`--version` printed nothing".into()),
                (false, _) => Err(format!("`--version` failed ({status})")),
            }
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "`--version` did not answer within {}s",
                timeout.as_secs()
            ))
        }
    }
}

/// Whether this process may create files in the directory `dir`.
pub fn writable(dir: &Path) -> bool {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// The nearest path above `path` that exists: the directory that would have to be written to
/// create it (when it is a directory at all).
pub fn nearest_existing(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|p| !p.as_os_str().is_empty() && p.symlink_metadata().is_ok())
}
