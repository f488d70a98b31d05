//! The MCP servers Claude Code reads besides luzia's, and a clash with luzia's refused. A Claude
//! Code job gets luzia's server (named [`SERVER`]) by a `--mcp-config` added last to its command
//! line, and Claude Code lets that one win over a server of the same name from anywhere else:
//! the person's own server would be silently replaced, and anything naming its tools fails. So
//! a server of that name is found where Claude Code reads servers (2.1.197 to 2.1.332 checked)
//! and the job is refused before it starts, naming the file:
//!
//! - every `--mcp-config` of the agent command line (a file, relative to the job's directory,
//!   or the JSON itself), the later ones winning;
//! - unless it says `--strict-mcp-config`: `.mcp.json` in the job's directory and each
//!   directory above it (project scope); `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`),
//!   its `mcpServers` (user scope) and those of its `projects` entry for the job's directory or
//!   a directory above it (local scope: Claude Code keys it by the repository's top).
//!
//! `settings.json` holds no servers (Claude Code ignores `mcpServers` there). A file that cannot
//! be read or parsed is passed over: Claude Code reports its own configuration's faults.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::jobs::fs::files::read_following;

/// The name of luzia's own server in a job's `mcp.json`: its tools are `mcp__luzia__*`.
pub const SERVER: &str = "luzia";

/// `~/.claude.json` keeps a person's history of projects too: it may be large.
const USER_FILE_CAP: u64 = 64 * 1024 * 1024;

/// Where the agent's Claude Code keeps its user configuration: its HOME, and
/// `CLAUDE_CONFIG_DIR` when set (which then holds `.claude.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaudeDirs {
    pub home: Option<PathBuf>,
    pub config_dir: Option<PathBuf>,
}

impl ClaudeDirs {
    /// `.claude.json`: in `CLAUDE_CONFIG_DIR`, else in HOME.
    pub fn user_file(&self) -> Option<PathBuf> {
        let dir = self.config_dir.as_ref().or(self.home.as_ref())?;
        Some(dir.join(".claude.json"))
    }
}

/// A server named [`SERVER`] where the job's Claude Code would read it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{place} defines an MCP server named \"{SERVER}\", the name luzia gives its own server in \
     every Claude Code job (the permission prompt and progress tools); Claude Code would run \
     luzia's in its place and yours would be gone. {fix}, then run the task again"
)]
pub struct Clash {
    /// Where it is, in words (the file, and which part of it).
    pub place: String,
    /// What to do about it.
    pub fix: String,
}

/// The first clash with luzia's server for a Claude Code command line `argv` run in `cwd`.
pub fn clash(argv: &[String], cwd: &Path, dirs: &ClaudeDirs) -> Result<(), Clash> {
    for value in flag_values(argv, "--mcp-config") {
        let inline = value.trim_start().starts_with('{');
        let (servers, place) = if inline {
            let shown: String = value.chars().take(60).collect();
            let servers = serde_json::from_str(&value).ok();
            (
                servers,
                format!("the agent command's --mcp-config '{shown}…'"),
            )
        } else {
            let file = cwd.join(&value);
            (read_json(&file, USER_FILE_CAP), file.display().to_string())
        };
        if servers.as_ref().is_some_and(defines_luzia) {
            let fix = if inline {
                "Rename that server in the agent command ([agent] command in the config)".into()
            } else {
                format!("Rename that server in {place} (its key under mcpServers)")
            };
            return Err(Clash { place, fix });
        }
    }
    if argv.iter().any(|a| a == "--strict-mcp-config") {
        return Ok(());
    }
    for dir in cwd.ancestors() {
        let file = dir.join(".mcp.json");
        if read_json(&file, USER_FILE_CAP).is_some_and(|v| defines_luzia(&v)) {
            let place = format!("{} (project scope)", file.display());
            let fix = format!(
                "Rename that server in {} (its key under mcpServers)",
                file.display()
            );
            return Err(Clash { place, fix });
        }
    }
    user_clash(cwd, dirs)
}

/// A server named [`SERVER`] in `.claude.json`: user scope, or local scope for `cwd` or a
/// directory above it.
fn user_clash(cwd: &Path, dirs: &ClaudeDirs) -> Result<(), Clash> {
    let Some(file) = dirs.user_file() else {
        return Ok(());
    };
    let Some(config) = read_json(&file, USER_FILE_CAP) else {
        return Ok(());
    };
    let shown = file.display();
    if defines_luzia(&config) {
        return Err(Clash {
            place: format!("{shown} (user scope, Claude Code's own settings)"),
            fix: format!(
                "Rename that server: `claude mcp get {SERVER}` shows it, `claude mcp remove \
                 {SERVER} -s user` removes it, `claude mcp add NAME -s user ...` adds it again \
                 under another name"
            ),
        });
    }
    let projects = config.get("projects").and_then(Value::as_object);
    for dir in cwd.ancestors() {
        let entry = projects.and_then(|p| p.get(dir.to_str()?));
        if entry.is_some_and(defines_luzia) {
            return Err(Clash {
                place: format!("{shown} (local scope, for {})", dir.display()),
                fix: format!(
                    "Rename that server: in {} `claude mcp remove {SERVER} -s local` removes \
                     it, `claude mcp add NAME -s local ...` adds it again under another name",
                    dir.display()
                ),
            });
        }
    }
    Ok(())
}

/// Whether a configuration's `mcpServers` has a server named [`SERVER`].
fn defines_luzia(config: &Value) -> bool {
    config
        .get("mcpServers")
        .and_then(Value::as_object)
        .is_some_and(|s| s.contains_key(SERVER))
}

fn read_json(file: &Path, cap: u64) -> Option<Value> {
    // Links followed: a person's dotfiles are often links into a repository of them.
    let bytes = read_following(file, cap).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The values of every `flag` of `argv`: `--flag=V`, or `--flag V1 V2 ...` up to the next
/// option (Claude Code's `--mcp-config` takes several).
fn flag_values(argv: &[String], flag: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut taking = false;
    for arg in argv.iter().skip(1) {
        if arg == flag {
            taking = true;
        } else if let Some(v) = arg.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            taking = false;
            values.push(v.to_owned());
        } else if arg.starts_with('-') {
            taking = false;
        } else if taking {
            values.push(arg.clone());
        }
    }
    values
}

#[cfg(test)]
mod tests;
