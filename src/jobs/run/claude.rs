//! What luzia adds to a Claude Code command line (a command whose program's file name is
//! `claude`): the job's MCP server (`DIR/mcp.json`, naming luzia's own binary with
//! `mcp --job-dir DIR`) as the permission prompt tool, so that permission requests and
//! AskUserQuestion reach the operator, and the project's permission settings (mode, allowed
//! and disallowed tools). Any other agent's command line is left as it is.

pub mod servers;

use std::path::Path;

use serde_json::json;

/// Claude Code's permission modes (`claude --help`, 2.1.x).
pub const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "dontAsk",
    "auto",
    "bypassPermissions",
];

/// The mode when none is configured: Claude Code asks before writes and commands that are not
/// known to be harmless, and the requests reach the operator. It works as root, which
/// `bypassPermissions` does not.
pub const DEFAULT_PERMISSION_MODE: &str = "default";

/// The permission prompt tool as Claude Code names it: server `luzia`, tool `permission`.
pub const PROMPT_TOOL: &str = "mcp__luzia__permission";

/// luzia's progress tool as Claude Code names it. It only writes the job's progress.json, so a
/// job allows it without asking: otherwise every report would wait at a gate for the operator.
pub const PROGRESS_TOOL: &str = "mcp__luzia__progress";

/// A project's permission settings (`[agent]`, then `[projects.NAME]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    /// One of [`PERMISSION_MODES`]; `None` for the default.
    pub mode: Option<String>,
    /// Rules Claude Code allows without asking (`Bash(npm test)`, `Edit`).
    pub allowed_tools: Vec<String>,
    /// Rules Claude Code refuses without asking.
    pub disallowed_tools: Vec<String>,
}

/// A command line as it will run, and the `mcp.json` to write beside it (for Claude Code).
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub argv: Vec<String>,
    pub mcp_config: Option<Vec<u8>>,
}

/// Whether `argv` runs Claude Code: its program's file name is `claude`.
pub fn is_claude(argv: &[String]) -> bool {
    argv.first().is_some_and(|p| super::session::is_claude(p))
}

fn names_flag(argv: &[String], flag: &str) -> bool {
    argv.iter()
        .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
}

/// `argv` with what a Claude Code job needs added at its end (after everything the operator's
/// command says, so that none of its options takes ours as its values), and the `mcp.json` for
/// job directory `dir`, whose server is `exe mcp --job-dir DIR`. A mode the command line sets
/// itself stands; so does a permission prompt tool of its own.
pub fn prepare(mut argv: Vec<String>, dir: &Path, exe: &Path, p: &Permissions) -> Prepared {
    if !is_claude(&argv) {
        return Prepared {
            argv,
            mcp_config: None,
        };
    }
    let mut added = permission_flags(&argv, p);
    added.extend(["--allowedTools".into(), PROGRESS_TOOL.into()]);
    let config = dir.join(crate::jobs::fs::names::MCP_CONFIG_FILE);
    added.extend(["--mcp-config".into(), config.display().to_string()]);
    if !names_flag(&argv, "--permission-prompt-tool") {
        added.extend(["--permission-prompt-tool".into(), PROMPT_TOOL.into()]);
    }
    argv.extend(added);
    let ours = json!({"mcpServers": {(servers::SERVER): {
        "type": "stdio",
        "command": exe.display().to_string(),
        "args": ["mcp", "--job-dir", dir.display().to_string()],
    }}});
    Prepared {
        argv,
        mcp_config: serde_json::to_vec_pretty(&ours).ok(),
    }
}

/// For a session a person runs in their terminal (`run --fg`, `attach`): the project's
/// permission settings only. Claude Code asks that person itself, so no prompt tool and no
/// luzia MCP server, whose tools the model would otherwise be offered as ordinary ones.
pub fn for_operator(mut argv: Vec<String>, p: &Permissions) -> Prepared {
    if is_claude(&argv) {
        let added = permission_flags(&argv, p);
        argv.extend(added);
    }
    Prepared {
        argv,
        mcp_config: None,
    }
}

/// `--permission-mode` (unless the command line sets one) and the allowed and disallowed tools.
fn permission_flags(argv: &[String], p: &Permissions) -> Vec<String> {
    let mut added: Vec<String> = Vec::new();
    if !names_flag(argv, "--permission-mode") {
        let mode = p.mode.as_deref().unwrap_or(DEFAULT_PERMISSION_MODE);
        added.extend(["--permission-mode".into(), mode.into()]);
    }
    for (flag, tools) in [
        ("--allowedTools", &p.allowed_tools),
        ("--disallowedTools", &p.disallowed_tools),
    ] {
        if !tools.is_empty() {
            added.push(flag.into());
            added.extend(tools.iter().cloned());
        }
    }
    added
}

/// [`prepare`] with luzia's own binary as the MCP server (asked only for a Claude Code
/// command line).
pub fn for_job(argv: Vec<String>, dir: &Path, p: &Permissions) -> std::io::Result<Prepared> {
    if !is_claude(&argv) {
        return Ok(prepare(argv, dir, Path::new(""), p));
    }
    let exe = std::env::current_exe()?;
    Ok(prepare(argv, dir, &exe, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_claude_command_gets_the_mcp_server_and_the_permission_settings() {
        let p = Permissions {
            mode: Some("acceptEdits".into()),
            allowed_tools: vec!["Bash(npm test)".into(), "Read".into()],
            disallowed_tools: vec!["WebFetch".into()],
        };
        let got = prepare(
            argv(&["/usr/bin/claude", "--print", "--add-dir", "/srv/p"]),
            Path::new("/jobs/j1"),
            Path::new("/usr/local/bin/luzia"),
            &p,
        );
        assert_eq!(
            got.argv,
            argv(&[
                "/usr/bin/claude",
                "--print",
                "--add-dir",
                "/srv/p",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Bash(npm test)",
                "Read",
                "--disallowedTools",
                "WebFetch",
                "--allowedTools",
                "mcp__luzia__progress",
                "--mcp-config",
                "/jobs/j1/mcp.json",
                "--permission-prompt-tool",
                "mcp__luzia__permission",
            ])
        );
        let config: serde_json::Value = serde_json::from_slice(&got.mcp_config.unwrap()).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"luzia": {"type": "stdio",
                "command": "/usr/local/bin/luzia", "args": ["mcp", "--job-dir", "/jobs/j1"]}}})
        );
    }

    #[test]
    fn what_the_command_says_itself_stands_and_other_agents_are_left_alone() {
        let exe = Path::new("/l");
        let own = prepare(
            argv(&["claude", "--permission-mode=plan", "-p"]),
            Path::new("/j"),
            exe,
            &Permissions::default(),
        );
        assert!(!own.argv.contains(&"default".to_string()), "{:?}", own.argv);
        assert!(own.argv.contains(&PROMPT_TOOL.to_string()));
        let default = prepare(
            argv(&["claude"]),
            Path::new("/j"),
            exe,
            &Permissions::default(),
        );
        assert_eq!(default.argv[1..3], argv(&["--permission-mode", "default"]));
        for other in [
            &["sh", "-c", "claude"][..],
            &["claude-code"],
            &["/opt/claude/bin/node"],
        ] {
            let got = prepare(argv(other), Path::new("/j"), exe, &Permissions::default());
            assert_eq!((got.argv, got.mcp_config), (argv(other), None));
        }
    }
}
