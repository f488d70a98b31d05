//! `luzia init`: a commented config file written from what is found here (the agent CLIs on
//! PATH, the git repository the person stands in, the jobs root in use). What it writes loads as
//! it is; what it leaves commented out is the default in use, so writing it changes nothing
//! until a person edits it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cli::{Global, InitArgs};
use crate::config::{Config, DEFAULT_AGENT_COMMAND, Overrides, here};

/// The agent CLIs looked for on PATH; only `claude` is run by the default agent command.
pub const AGENT_CLIS: &[&str] = &["claude", "codex", "gemini", "opencode", "qwen", "aider"];

/// What the config is written from.
#[derive(Debug)]
pub struct Found {
    /// Each agent CLI found, with where.
    pub agents: Vec<(&'static str, PathBuf)>,
    /// The repository stood in: its project name and top level.
    pub project: Option<(String, PathBuf)>,
    pub cfg: Config,
}

pub fn run(global: &Global, args: &InitArgs, out: &mut dyn Write) -> Result<u8> {
    let overrides = Overrides {
        config: None,
        jobs_dir: global.jobs_dir.clone(),
    };
    let cfg = Config::without_file(&overrides)?;
    let project = std::env::current_dir()
        .ok()
        .and_then(|dir| here::repository_top(&dir))
        .map(|top| (here::name_for(&top), top));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = Found {
        agents: agents_on(&path),
        project,
        cfg,
    };
    let text = config_text(&found);
    if args.print {
        out.write_all(text.as_bytes())?;
        return Ok(0);
    }
    let target = target(global)?;
    write_config(&target, &text, args.force)?;
    writeln!(out, "wrote {}", target.display())?;
    for line in summary(&found) {
        writeln!(out, "  {line}")?;
    }
    Ok(0)
}

/// Where the file goes: `--config`, else `LUZIA_CONFIG`, else the per-user config file.
fn target(global: &Global) -> Result<PathBuf> {
    if let Some(p) = global
        .config
        .clone()
        .or_else(|| std::env::var_os("LUZIA_CONFIG").map(PathBuf::from))
    {
        return Ok(p);
    }
    crate::xdg::config_home(&crate::xdg::process_env)
        .map(|c| c.join("luzia/config.toml"))
        .context(
            "neither XDG_CONFIG_HOME nor HOME is set: name the file with `luzia --config FILE init`, \
             or print it with `luzia init --print`",
        )
}

/// Writes the file (private to this user: it may come to hold variables), refusing to replace
/// one unless `force`.
fn write_config(target: &Path, text: &str, force: bool) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if target.exists() && !force {
        bail!(
            "{} exists: `luzia init` leaves it as it is (`luzia init --force` replaces it, \
             `luzia init --print` shows what it would write)",
            target.display()
        );
    }
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::xdg::make_private_dir(dir)
            .with_context(|| format!("cannot make the directory {}", dir.display()))?;
    }
    // Not by the rule of job files (`jobs::fs::files`): the config is the operator's own, and
    // a link there (a dotfiles manager's) is written through on purpose.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(target)
        .with_context(|| format!("cannot write {}", target.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok(())
}

/// The agent CLIs of [`AGENT_CLIS`] that `path` (a PATH value) holds as executable files.
pub fn agents_on(path: &std::ffi::OsStr) -> Vec<(&'static str, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    AGENT_CLIS
        .iter()
        .filter_map(|name| {
            std::env::split_paths(path)
                .map(|dir| dir.join(name))
                .find(|p| {
                    p.metadata()
                        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                })
                .map(|p| (*name, p))
        })
        .collect()
}

/// What `luzia init` says it found, one line each.
fn summary(found: &Found) -> Vec<String> {
    let mut lines = vec![agents_line(&found.agents)];
    lines.push(match &found.project {
        Some((name, top)) => format!(
            "project {name}: {} (`luzia run \"task\"` there, or `luzia run {name} TASK...` anywhere)",
            top.display()
        ),
        None => "no project: not inside a git repository (add [projects.NAME] to the file, or \
                 run `luzia init` inside one)"
            .into(),
    });
    lines.push(format!(
        "jobs root {} ({})",
        found.cfg.jobs_dir.display(),
        found.cfg.jobs_dir_source
    ));
    lines
}

fn agents_line(agents: &[(&str, PathBuf)]) -> String {
    let claude = agents.iter().find(|(n, _)| *n == "claude");
    let others: Vec<&str> = agents
        .iter()
        .filter(|(n, _)| *n != "claude")
        .map(|(n, _)| *n)
        .collect();
    let also = match others.is_empty() {
        true => String::new(),
        false => format!("; also on PATH: {}", others.join(", ")),
    };
    match claude {
        Some((_, p)) => format!("agent: claude ({}){also}", p.display()),
        None => format!(
            "agent: claude is not on PATH: install Claude Code \
             (`npm install -g @anthropic-ai/claude-code`) before the first task{also}"
        ),
    }
}

/// A TOML string (quoted and escaped).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A project's table header: the name bare when it may be, quoted otherwise (a `.` would make
/// a nested table).
fn project_header(name: &str) -> String {
    if name.contains('.') {
        format!("[projects.{}]", quoted(name))
    } else {
        format!("[projects.{name}]")
    }
}

/// The file `luzia init` writes.
pub fn config_text(found: &Found) -> String {
    let cfg = &found.cfg;
    let commented =
        |key: &str, value: &Path| format!("# {key} = {}\n", quoted(&value.to_string_lossy()));
    let command: Vec<String> = DEFAULT_AGENT_COMMAND.iter().map(|a| quoted(a)).collect();
    let mut text = String::from(
        "# luzia's configuration, written by `luzia init`. Every key is optional; a commented-out\n\
         # key shows the default in use. `man luzia` lists every key; `luzia doctor` checks what a\n\
         # first job needs. Precedence: defaults < this file < environment < command-line flags.\n\n",
    );
    text.push_str(&format!(
        "# The jobs root in use: {} ({}).\n\
         # Set jobs_dir to pin one; a root of its own keeps its queue and notifications log in its\n\
         # .luzia/ directory unless queue_dir and notifications_log say otherwise.\n",
        cfg.jobs_dir.display(),
        cfg.jobs_dir_source
    ));
    text.push_str(&commented("jobs_dir", &cfg.jobs_dir));
    text.push_str(&commented("queue_dir", &cfg.queue_dir));
    text.push_str(&commented("notifications_log", &cfg.notifications_log));
    text.push_str("\n[agent]\n");
    text.push_str(&format!("# {}\n", agents_line(&found.agents)));
    text.push_str(&format!(
        "# The agent program and its arguments (never a shell line); the task reaches it on stdin.\n\
         # command = [{}]\n\
         # Agents running at once; further tasks wait in the queue.\n\
         # max_concurrent = {}\n",
        command.join(", "),
        cfg.agent.max_concurrent
    ));
    text.push('\n');
    match &found.project {
        Some((name, top)) => {
            text.push_str(&format!(
                "# The repository `luzia init` ran in. `luzia run \"task\"` inside it, or\n\
                 # `luzia run {name} TASK...` anywhere. Add one table per project.\n{}\npath = {}\n\
                 # How jobs are kept apart: \"snapshot\" (the default in a git repository), \"worktree\"\n\
                 # or \"none\".\n# isolation = \"snapshot\"\n\
                 # How long a job should take, for the budget alarms.\n# budget = \"45m\"\n",
                project_header(name),
                quoted(&top.to_string_lossy())
            ));
        }
        None => text.push_str(
            "# Projects: `luzia run \"task\"` inside any git repository runs there with no table\n\
             # here; a table names a project, runnable from anywhere as `luzia run NAME TASK...`.\n\
             # [projects.NAME]\n# path = \"/absolute/path/to/the/repository\"\n",
        ),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(project: Option<(&str, &Path)>, agents: Vec<(&'static str, PathBuf)>) -> Found {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        let ov = Overrides {
            config: Some(empty),
            jobs_dir: Some(d.path().join("jobs")),
        };
        Found {
            agents,
            project: project.map(|(n, p)| (n.to_owned(), p.to_owned())),
            cfg: Config::load_with(&ov, &|_| None).unwrap(),
        }
    }

    #[test]
    fn what_it_writes_loads_with_the_repository_as_a_project() {
        let d = tempfile::tempdir().unwrap();
        for (name, with_agent) in [("shop", true), ("my.app", false)] {
            let top = d.path().join(name);
            let agents = match with_agent {
                true => vec![
                    ("claude", PathBuf::from("/usr/bin/claude")),
                    ("codex", "/x/codex".into()),
                ],
                false => vec![("gemini", PathBuf::from("/x/gemini"))],
            };
            let text = config_text(&found(Some((name, &top)), agents));
            let file = d.path().join(format!("{name}.toml"));
            std::fs::write(&file, &text).unwrap();
            let ov = Overrides {
                config: Some(file.clone()),
                jobs_dir: None,
            };
            let cfg = Config::load_with(&ov, &|_| None).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cfg.projects[name].path, top, "{text}");
            assert_eq!(cfg.agent.command, DEFAULT_AGENT_COMMAND, "{text}");
            match with_agent {
                true => assert!(
                    text.contains("claude (/usr/bin/claude); also on PATH: codex"),
                    "{text}"
                ),
                false => assert!(
                    text.contains("claude is not on PATH") && text.contains("also on PATH: gemini"),
                    "{text}"
                ),
            }
        }
        let text = config_text(&found(None, vec![]));
        assert!(text.contains("# [projects.NAME]"), "{text}");
        let file = d.path().join("none.toml");
        std::fs::write(&file, &text).unwrap();
        let ov = Overrides {
            config: Some(file),
            jobs_dir: None,
        };
        assert!(
            Config::load_with(&ov, &|_| None)
                .unwrap()
                .projects
                .is_empty()
        );
    }

    #[test]
    fn agents_are_the_executable_files_on_path() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for (dir, name, mode) in [
            (&a, "codex", 0o755),
            (&b, "claude", 0o755),
            (&a, "aider", 0o644),
        ] {
            let p = dir.join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::create_dir_all(a.join("gemini")).unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        let names: Vec<&str> = agents_on(&path).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["claude", "codex"]);
    }
}
