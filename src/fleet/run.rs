//! One luzia command on a host, over its shared ssh connection, and what went wrong when it
//! did not work: the host could not be reached, its luzia is missing or too old, or the
//! command itself failed.

use std::process::{ExitStatus, Output, Stdio};

use crate::config::HostConfig;
use crate::jobs::text::sanitize::{ellipsize, plain_text};

use super::ssh;

/// This luzia's version: the one a host should run.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// ssh's own exit status when it failed (connection, authentication, host key).
const SSH_FAILED: i32 = 255;

/// Why a remote command gave no result. Each says the host, what ssh or the remote luzia said
/// (the last line of its stderr) and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(
        "host {host}: cannot run ssh: {error} (install the OpenSSH client, or put ssh on PATH)"
    )]
    Spawn { host: String, error: std::io::Error },
    #[error("host {host} ({destination}) cannot be reached: {said} ({todo})")]
    Unreachable {
        host: String,
        destination: String,
        said: String,
        todo: String,
    },
    #[error(
        "host {host}: no luzia at '{luzia}' ({said}): install luzia {VERSION} there, or set luzia = \"/path/to/luzia\" in [hosts.{host}]"
    )]
    Missing {
        host: String,
        luzia: String,
        said: String,
    },
    #[error(
        "host {host}: the luzia there has no `{command}` ({said}): install luzia {VERSION} there"
    )]
    Incompatible {
        host: String,
        command: String,
        said: String,
    },
    #[error("host {host}: `luzia {command}` failed (exit {code}): {said}")]
    Failed {
        host: String,
        command: String,
        code: i32,
        said: String,
        /// The remote command's whole stderr.
        stderr: String,
        /// And its stdout (a command may print its result and still exit non-zero).
        stdout: Vec<u8>,
    },
}

impl RemoteError {
    /// The host it is about.
    pub fn host(&self) -> &str {
        match self {
            RemoteError::Spawn { host, .. }
            | RemoteError::Unreachable { host, .. }
            | RemoteError::Missing { host, .. }
            | RemoteError::Incompatible { host, .. }
            | RemoteError::Failed { host, .. } => host,
        }
    }

    /// Whether the host's luzia cannot do what is asked, however often it is tried: it needs
    /// another luzia installed, not another attempt soon.
    pub fn needs_install(&self) -> bool {
        matches!(
            self,
            RemoteError::Missing { .. } | RemoteError::Incompatible { .. }
        )
    }
}

/// Runs `luzia ARGS` on host `name` and returns its output when it succeeded.
pub fn run(name: &str, host: &HostConfig, args: &[String]) -> Result<Output, RemoteError> {
    let out = ssh::command(host, args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| RemoteError::Spawn {
            host: name.to_owned(),
            error,
        })?;
    let command = args.first().map(String::as_str).unwrap_or_default();
    match classify(name, host, command, out.status, &out.stderr) {
        Some(RemoteError::Failed {
            host,
            command,
            code,
            said,
            stderr,
            ..
        }) => Err(RemoteError::Failed {
            host,
            command,
            code,
            said,
            stderr,
            stdout: out.stdout,
        }),
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// What an ended `ssh … luzia COMMAND …` means: `None` when it succeeded.
pub fn classify(
    name: &str,
    host: &HostConfig,
    command: &str,
    status: ExitStatus,
    stderr: &[u8],
) -> Option<RemoteError> {
    if status.success() {
        return None;
    }
    let said = last_line(stderr).unwrap_or_else(|| format!("ssh ended: {status}"));
    let host_name = name.to_owned();
    let Some(code) = status.code() else {
        return Some(unreachable(name, host, said));
    };
    let text = String::from_utf8_lossy(stderr);
    Some(match code {
        SSH_FAILED => unreachable(name, host, said),
        // The remote shell's "not found" and "not executable".
        126 | 127 => RemoteError::Missing {
            host: host_name,
            luzia: host.luzia.clone(),
            said,
        },
        _ if text.contains("unrecognized subcommand") => RemoteError::Incompatible {
            host: host_name,
            command: command.to_owned(),
            said,
        },
        _ => RemoteError::Failed {
            host: host_name,
            command: command.to_owned(),
            code,
            said,
            stderr: text.into_owned(),
            stdout: Vec::new(),
        },
    })
}

fn unreachable(name: &str, host: &HostConfig, said: String) -> RemoteError {
    let todo = if said.contains("Permission denied") {
        format!(
            "the host refuses the key: add your public key to its ~/.ssh/authorized_keys, or name the key with ssh_options = [\"-i\", \"KEY\"] in [hosts.{name}]"
        )
    } else if said.contains("Host key verification failed") || said.contains("HOST IDENTIFICATION")
    {
        format!(
            "the host's key is unknown or changed: run `ssh {}` once to check and accept it",
            host.ssh
        )
    } else if said.contains("Could not resolve hostname") {
        format!(
            "check the destination ssh = \"{}\" in [hosts.{name}]",
            host.ssh
        )
    } else {
        format!(
            "check that `ssh {} true` works without a prompt: luzia runs ssh with BatchMode=yes",
            host.ssh
        )
    };
    RemoteError::Unreachable {
        host: name.to_owned(),
        destination: host.ssh.clone(),
        said,
        todo,
    }
}

/// The last line of `stderr` with text on it, made safe to print and kept short.
pub fn last_line(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| ellipsize(&plain_text(l), 300))
}

#[cfg(test)]
mod tests;
