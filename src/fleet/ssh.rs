//! The `ssh` command line that reaches a host: the system's OpenSSH, never prompting, sharing
//! one connection per host (`ControlMaster`) between the watch and every action, and the remote
//! luzia's arguments quoted for the POSIX shell sshd runs them with.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::HostConfig;

/// Names another ssh binary (tests only); the system's `ssh` otherwise.
pub const SSH_ENV: &str = "LUZIA_SSH";

/// How long a shared connection stays open after its last user, in seconds.
const CONTROL_PERSIST_SECS: u32 = 60;

/// A unix socket path longer than this is refused on some systems; ssh adds a random suffix of
/// 17 bytes while it creates the socket, and `%C` is 40 hex digits.
const SOCKET_PATH_MAX: usize = 104;
const SOCKET_NAME_LEN: usize = 1 + 40 + 17;

/// `ssh … DESTINATION -- 'luzia' [--jobs-dir 'D'] ARGS…` for `host`: `remote` are the remote
/// luzia's arguments (its subcommand first).
pub fn command(host: &HostConfig, remote: &[String]) -> Command {
    let mut words = vec![host.luzia.clone()];
    if let Some(dir) = &host.jobs_dir {
        words.push("--jobs-dir".into());
        words.push(dir.clone());
    }
    words.extend(remote.iter().cloned());
    let mut cmd = base(host);
    cmd.arg("-T")
        .arg(&host.ssh)
        .arg("--")
        .arg(shell_line(&words));
    cmd
}

/// `ssh -O OPERATION` on `host`'s shared connection (`check`, `exit`).
pub fn control(host: &HostConfig, operation: &str) -> Command {
    let mut cmd = base(host);
    cmd.arg("-O").arg(operation).arg(&host.ssh);
    cmd
}

/// The binary and the options every connection gets, then the host's own.
fn base(host: &HostConfig) -> Command {
    let program = std::env::var_os(SSH_ENV)
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "ssh".into());
    let mut cmd = Command::new(program);
    let mut opt = |o: String| {
        cmd.arg("-o").arg(o);
    };
    opt("BatchMode=yes".into());
    match control_dir() {
        Some(dir) => {
            opt("ControlMaster=auto".into());
            opt(format!("ControlPath={}/%C", dir.display()));
            opt(format!("ControlPersist={CONTROL_PERSIST_SECS}"));
        }
        // Without a private directory for the sockets each command connects on its own:
        // slower, never shared with another user.
        None => {
            opt("ControlMaster=no".into());
            opt("ControlPath=none".into());
        }
    }
    opt("ServerAliveInterval=5".into());
    opt("ServerAliveCountMax=2".into());
    opt("ConnectTimeout=10".into());
    // The last line of ssh's stderr is shown as the host's error: warnings (a host key
    // added to known_hosts) would take its place.
    opt("LogLevel=ERROR".into());
    cmd.args(&host.ssh_options);
    cmd
}

/// `<runtime dir>/luzia-ssh`, created 0700 and owned by this user; `None` when no such
/// directory can be had with a path short enough for a socket.
pub fn control_dir() -> Option<PathBuf> {
    let uid = rustix::process::getuid().as_raw();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let fallback = PathBuf::from(format!("/tmp/luzia-{uid}"));
    runtime
        .into_iter()
        .chain([fallback])
        .map(|base| base.join("luzia-ssh"))
        .find(|dir| usable(dir, uid))
}

/// Whether `dir` can hold the sockets: created if missing, private to `uid`, short enough.
fn usable(dir: &Path, uid: u32) -> bool {
    let text = dir.to_string_lossy();
    // ssh reads ControlPath as a config value: blanks, quotes and '%' would be read otherwise.
    if text.len() + SOCKET_NAME_LEN >= SOCKET_PATH_MAX
        || text.contains(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '%' | '\\'))
    {
        return false;
    }
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    // Someone else's directory (a /tmp path taken before us) would hand them our connections.
    let private = |p: &Path| {
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0)
    };
    // A parent others may write to could have the directory swapped under us.
    let parent_ok = dir.parent().is_some_and(|p| {
        std::fs::symlink_metadata(p).is_ok_and(|m| {
            m.is_dir() && (m.uid() == uid || m.uid() == 0) && m.permissions().mode() & 0o022 == 0
        })
    });
    parent_ok && private(dir)
}

/// The words as one POSIX shell line, each coming back as itself.
pub fn shell_line(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// One word for a POSIX shell: as is when it holds only characters no shell treats specially,
/// else in single quotes (a quote inside written `'\''`).
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests;
