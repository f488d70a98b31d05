//! `[hosts.NAME]`: other machines whose jobs luzia shows and acts on over ssh (`crate::fleet`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// The name of this machine's own jobs root among the hosts; no `[hosts.local]` may take it.
pub const LOCAL_HOST: &str = "local";

/// The remote binary when the table names none: `luzia` on the remote PATH.
pub const DEFAULT_REMOTE_LUZIA: &str = "luzia";

/// One `[hosts.NAME]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Any destination ssh accepts (`ops@gpu2.example`, or a `Host` of ~/.ssh/config).
    pub ssh: String,
    /// Passed to ssh before the destination (`["-p", "2222"]`).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// The luzia binary on the host.
    #[serde(default = "default_luzia")]
    pub luzia: String,
    /// The jobs root on the host (`--jobs-dir`); unset, the host's own config decides.
    pub jobs_dir: Option<String>,
}

impl HostConfig {
    /// A host reached at `ssh` with no other setting.
    pub fn new(ssh: impl Into<String>) -> HostConfig {
        HostConfig {
            ssh: ssh.into(),
            ssh_options: Vec::new(),
            luzia: default_luzia(),
            jobs_dir: None,
        }
    }
}

fn default_luzia() -> String {
    DEFAULT_REMOTE_LUZIA.to_owned()
}

/// Every `[hosts.NAME]`: a name usable in a job key, values ssh can be given. `Err` says
/// which table and key is wrong and what to write instead.
pub(super) fn check_hosts(hosts: &BTreeMap<String, HostConfig>) -> Result<(), String> {
    for (name, host) in hosts {
        if name == LOCAL_HOST {
            return Err(format!(
                "[hosts.{LOCAL_HOST}]: '{LOCAL_HOST}' names this machine's own jobs root; give the host another name"
            ));
        }
        if !crate::jobs::model::id::is_valid(name) {
            return Err(format!(
                "[hosts.\"{}\"]: a host name starts with a letter or digit and holds only letters, digits, '.', '_' and '-'",
                name.escape_debug()
            ));
        }
        check_host(name, host)?;
    }
    Ok(())
}

fn check_host(name: &str, host: &HostConfig) -> Result<(), String> {
    let table = format!("[hosts.{name}]");
    if host.ssh.trim().is_empty() {
        return Err(format!(
            "{table} ssh is empty: give the destination, e.g. ssh = \"ops@{name}.example\""
        ));
    }
    // ssh would read a destination starting with '-' as an option.
    if host.ssh.starts_with('-') {
        return Err(format!(
            "{table} ssh = '{}' starts with '-': put options in ssh_options and the destination in ssh",
            host.ssh.escape_debug()
        ));
    }
    if host.luzia.trim().is_empty() {
        return Err(format!(
            "{table} luzia is empty: give the remote binary's path, or leave the key out for luzia on the host's PATH"
        ));
    }
    if host
        .jobs_dir
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err(format!(
            "{table} jobs_dir is empty: give the host's jobs root, or leave the key out for the host's own config"
        ));
    }
    let words = std::iter::once(("ssh", &host.ssh))
        .chain(host.ssh_options.iter().map(|o| ("ssh_options", o)))
        .chain([("luzia", &host.luzia)])
        .chain(host.jobs_dir.iter().map(|d| ("jobs_dir", d)));
    for (key, word) in words {
        if word.contains('\0') {
            return Err(format!("{table} {key} holds a NUL character"));
        }
    }
    Ok(())
}
