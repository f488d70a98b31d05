//! `luzia tui`: checks what can be checked before the screen is taken, sets up the cockpit's
//! own log (never the screen, and nothing at all when read-only), then runs the cockpit.

use anyhow::{Context, Result};

use crate::cli::TuiArgs;
use crate::config::Config;
use crate::jobs::run::agents::Kind;
use crate::tui::action::KeyMap;
use crate::tui::app::Options;
use crate::tui::app::input_bar::AgentChoice;
use crate::tui::app::insight::InsightOptions;
use crate::tui::theme::Theme;

/// Returns the process exit code: 0 on quit, 128 + the signal when one stopped the cockpit.
pub fn run(user_cfg: &Config, args: &TuiArgs) -> Result<u8> {
    // The demo brings its own jobs root, projects and agent; the operator's keys, theme and
    // bell still apply.
    let cfg = if args.demo {
        let mut demo = crate::demo::create()?;
        demo.keys = user_cfg.keys.clone();
        demo.theme = user_cfg.theme.clone();
        demo.bell = user_cfg.bell;
        demo.read_only = user_cfg.read_only;
        demo.known_issues = user_cfg.known_issues.clone();
        demo.hosts = user_cfg.hosts.clone();
        demo
    } else {
        user_cfg.clone()
    };
    let read_only = args.read_only || cfg.read_only;
    // Nothing ever ran here: a cockpit that may write makes the root (its first task goes
    // there); a read-only one has nothing to show yet.
    let root = match (super::existing_jobs_root(&cfg)?, read_only) {
        (Some(root), _) => root.to_owned(),
        (None, false) => super::ensure_jobs_root(&cfg)?.to_owned(),
        (None, true) => {
            crate::say!("luzia: {}", super::no_jobs_yet(&cfg));
            return Ok(0);
        }
    };
    // The repository the cockpit is started in is offered first for a new task.
    let (cfg, here) = with_project_here(cfg, args.demo);
    let keymap = KeyMap::new(&cfg.keys).map_err(|e| {
        let file = user_cfg
            .file
            .as_ref()
            .map_or(String::new(), |p| format!(" {}", p.display()));
        anyhow::anyhow!("the config file{file}: {e}")
    })?;
    let hosts = shown_hosts(&cfg, args)?;
    if !read_only {
        init_logging()?;
    }
    let mut projects: Vec<String> = cfg.projects.keys().cloned().collect();
    if let Some(name) = &here {
        projects.retain(|p| p != name);
        projects.insert(0, name.clone());
    }
    let opts = Options {
        root: root.clone(),
        projects: args.projects.clone(),
        read_only,
        cycle_secs: args.cycle,
        keymap,
        known_projects: projects.clone(),
        theme: Theme::detect(cfg.theme.colors),
        bell: cfg.bell,
        dispatch_agents: dispatch_agents(&cfg, &projects),
        dispatch_projects: projects,
        project_here: here,
        insight: InsightOptions {
            // Compiled by the cockpit's scanning thread, while the first frame is drawn.
            patterns: None,
            known_issues: Some(cfg.known_issues.clone()),
            rules: cfg.alarms.clone(),
            alarm_bell: cfg.alarm_bell,
        },
        hosts,
    };
    tracing::info!(root = %opts.root.display(), read_only, "cockpit starting");
    let result = crate::tui::run(opts, Some(cfg.clone()));
    // The terminal is restored by now: whatever waits below waits in the shell's view.
    report_log_failure();
    if args.demo {
        crate::say!("luzia: {}", end_demo(&cfg, &root, args.keep));
    }
    Ok(result?.map_or(0, |stop| stop.exit_code()))
}

/// The agents the input bar offers: every name `luzia run --agent` takes, and the one each
/// project runs by itself (its `agent`, `[agent] kind`, else `[agent] command`: its kind, or
/// its program's name for a plain command).
fn dispatch_agents(cfg: &Config, projects: &[String]) -> AgentChoice {
    let command = || match Kind::of(&cfg.agent.command) {
        Kind::Command => cfg
            .agent
            .command
            .first()
            .and_then(|p| std::path::Path::new(p).file_name())
            .map_or("command".into(), |f| f.to_string_lossy().into_owned()),
        kind => kind.short().to_owned(),
    };
    AgentChoice {
        names: cfg.agent_names(),
        of_project: projects
            .iter()
            .map(|p| {
                let own = cfg
                    .agent_choice(p, None)
                    .map_or_else(command, str::to_owned);
                (p.clone(), own)
            })
            .collect(),
    }
}

/// The config with the project of the repository the cockpit starts in (made a project for
/// this cockpit when the config does not name it), and that project's name; unchanged for the
/// demo, or outside a repository.
fn with_project_here(mut cfg: Config, demo: bool) -> (Config, Option<String>) {
    let Some(here) = std::env::current_dir()
        .ok()
        .filter(|_| !demo)
        .and_then(|dir| cfg.project_here(&dir).ok())
    else {
        return (cfg, None);
    };
    if !here.configured {
        cfg.projects
            .insert(here.name.clone(), crate::config::Project::at(here.path));
    }
    (cfg, Some(here.name))
}

/// The demo's agents stopped (unless `keep`), and what the operator is told of them.
fn end_demo(cfg: &Config, root: &std::path::Path, keep: bool) -> String {
    let file = cfg
        .file
        .as_ref()
        .map_or(String::new(), |p| p.display().to_string());
    let jobs = root.display();
    if keep {
        return format!(
            "the demo's agents keep running (--keep); their jobs are in {jobs}: \
             `luzia --config {file} jobs` lists them, `luzia --config {file} kill ID` stops one"
        );
    }
    let stopped = crate::demo::stop::stop_agents(root, &cfg.queue_dir);
    let agents = match stopped.agents {
        1 => "1 demo agent".to_owned(),
        n => format!("{n} demo agents"),
    };
    let mut said = format!(
        "stopped {agents}; their jobs are in {jobs} (`luzia --config {file} jobs` lists them)"
    );
    for failure in &stopped.failures {
        said.push_str(&format!("\nluzia: a demo agent was not stopped: {failure}"));
    }
    said
}

/// The remote hosts to show beside this machine: those named (each must be in the config), or
/// every one the config has.
fn shown_hosts(cfg: &Config, args: &TuiArgs) -> Result<Vec<String>> {
    let configured: Vec<&str> = cfg.hosts.keys().map(String::as_str).collect();
    let file = format!("the config file {}", cfg.file_to_edit());
    if args.all_hosts {
        anyhow::ensure!(
            !configured.is_empty(),
            "--all-hosts: {file} has no hosts: add a [hosts.NAME] table with ssh = \"user@machine\" for each"
        );
        return Ok(configured.iter().map(|h| (*h).to_owned()).collect());
    }
    let mut shown: Vec<String> = Vec::new();
    for name in &args.hosts {
        if name == crate::config::LOCAL_HOST || shown.contains(name) {
            continue;
        }
        if !cfg.hosts.contains_key(name) {
            let known = match configured.is_empty() {
                true => "it has no hosts".to_owned(),
                false => format!("its hosts are {}", configured.join(", ")),
            };
            anyhow::bail!(
                "--host {name}: no such host in {file} ({known}): add a [hosts.{name}] table with ssh = \"user@machine\""
            );
        }
        shown.push(name.clone());
    }
    Ok(shown)
}

/// `$XDG_STATE_HOME/luzia/cockpit.log` (else `~/.local/state/luzia/`); level from `LUZIA_LOG`.
fn init_logging() -> Result<()> {
    let dir = crate::config::user_state(&crate::xdg::process_env)
        .context("neither XDG_STATE_HOME nor HOME is set: cannot place the cockpit's log file")?;
    crate::xdg::make_private_dir(&dir)
        .with_context(|| format!("cannot create the log directory {}", dir.display()))?;
    let path = dir.join("cockpit.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open the cockpit's log file {}", path.display()))?;
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("LUZIA_LOG").unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_writer(LogFile { file, path })
        .with_ansi(false)
        .with_env_filter(filter)
        // Its own errors would go to stderr: onto the cockpit's screen.
        .log_internal_errors(false)
        .init();
    Ok(())
}

/// The first write to the log file that failed: what it was and why, said once the terminal is
/// restored (never on the screen the cockpit draws on).
static LOG_FAILURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The cockpit's log file. A write that fails (a full disk) is kept in [`LOG_FAILURE`] and
/// dropped; the cockpit goes on.
struct LogFile {
    file: std::fs::File,
    path: std::path::PathBuf,
}

/// One event, written in one `write` to a file opened for appending: lines of several threads
/// never interleave, so no lock is needed.
struct LogLine<'a>(&'a LogFile);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = LogLine<'a>;

    fn make_writer(&'a self) -> LogLine<'a> {
        LogLine(self)
    }
}

impl std::io::Write for LogLine<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&self.0.file).write(buf).inspect_err(|e| {
            LOG_FAILURE.get_or_init(|| {
                format!(
                    "the cockpit could not write its log file {}: {e} (free space there, or set XDG_STATE_HOME to another directory)",
                    self.0.path.display()
                )
            });
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Says that the log could not be written, if so: called once the terminal is restored.
fn report_log_failure() {
    if let Some(failure) = LOG_FAILURE.get() {
        crate::say!("luzia: {failure}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::Overrides;
    use clap::Parser;

    fn config(body: &str) -> (tempfile::TempDir, Config) {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("config.toml");
        std::fs::write(&file, body).unwrap();
        let overrides = Overrides {
            config: Some(file),
            jobs_dir: Some(tmp.path().to_owned()),
        };
        let cfg = Config::load_with(&overrides, &|_| None).unwrap();
        (tmp, cfg)
    }

    fn hosts(cfg: &Config, args: &[&str]) -> Result<Vec<String>> {
        let cli = Cli::try_parse_from(["luzia", "tui"].iter().chain(args)).unwrap();
        let Command::Tui(tui) = cli.command else {
            panic!("not tui")
        };
        shown_hosts(cfg, &tui)
    }

    const TWO: &str = "[hosts.gpu2]\nssh = \"ops@gpu2\"\n[hosts.gpu3]\nssh = \"ops@gpu3\"\n";

    #[test]
    fn hosts_are_those_named_in_order_or_every_one_configured() {
        let (_tmp, cfg) = config(TWO);
        assert_eq!(hosts(&cfg, &[]).unwrap(), Vec::<String>::new());
        assert_eq!(
            hosts(
                &cfg,
                &["--host", "gpu3", "--host", "local", "--host", "gpu3"]
            )
            .unwrap(),
            ["gpu3"]
        );
        assert_eq!(hosts(&cfg, &["--all-hosts"]).unwrap(), ["gpu2", "gpu3"]);
        assert!(Cli::try_parse_from(["luzia", "tui", "--all-hosts", "--host", "gpu2"]).is_err());
    }

    #[test]
    fn an_unknown_host_names_the_configured_ones_and_the_file() {
        let (tmp, cfg) = config(TWO);
        let e = hosts(&cfg, &["--host", "gpu9"]).unwrap_err().to_string();
        assert!(e.contains("--host gpu9"), "{e}");
        assert!(e.contains("gpu2, gpu3"), "{e}");
        assert!(
            e.contains(&tmp.path().join("config.toml").display().to_string()),
            "{e}"
        );
        assert!(e.contains("[hosts.gpu9]"), "{e}");
        let (_tmp, none) = config("");
        let e = hosts(&none, &["--all-hosts"]).unwrap_err().to_string();
        assert!(e.contains("has no hosts"), "{e}");
    }
}
