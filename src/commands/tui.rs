//! `luzia tui`: checks what can be checked before the screen is taken, sets up the cockpit's
//! own log (never the screen, and nothing at all when read-only), then runs the cockpit.

use anyhow::{Context, Result};

use crate::cli::TuiArgs;
use crate::config::Config;
use crate::tui::action::KeyMap;
use crate::tui::app::Options;
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
        demo
    } else {
        user_cfg.clone()
    };
    let root = super::jobs_root(&cfg)?.to_owned();
    let keymap = KeyMap::new(&cfg.keys).map_err(|e| {
        let file = user_cfg
            .file
            .as_ref()
            .map_or(String::new(), |p| format!(" {}", p.display()));
        anyhow::anyhow!("the config file{file}: {e}")
    })?;
    let read_only = args.read_only || cfg.read_only;
    if !read_only {
        init_logging()?;
    }
    let projects: Vec<String> = cfg.projects.keys().cloned().collect();
    let opts = Options {
        root: root.clone(),
        projects: args.projects.clone(),
        read_only,
        cycle_secs: args.cycle,
        keymap,
        known_projects: projects.clone(),
        theme: Theme::detect(cfg.theme.colors),
        bell: cfg.bell,
        dispatch_projects: projects,
        insight: InsightOptions {
            // Compiled by the cockpit's scanning thread, while the first frame is drawn.
            patterns: None,
            known_issues: Some(cfg.known_issues.clone()),
            rules: cfg.alarms.clone(),
            alarm_bell: cfg.alarm_bell,
        },
    };
    tracing::info!(root = %opts.root.display(), read_only, "cockpit starting");
    let result = crate::tui::run(opts, Some(cfg.clone()));
    if args.demo {
        let file = cfg
            .file
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string());
        eprintln!(
            "luzia: the demo is in {} (its agents finish on their own; `luzia --config {file} jobs` lists them)",
            root.parent().unwrap_or(&root).display()
        );
    }
    Ok(result?.map_or(0, |stop| stop.exit_code()))
}

/// `$XDG_STATE_HOME/luzia/cockpit.log` (else `~/.local/state/luzia/`); level from `LUZIA_LOG`.
fn init_logging() -> Result<()> {
    let dir = crate::xdg::state_home(&crate::xdg::process_env)
        .map(|d| d.join("luzia"))
        .context("neither XDG_STATE_HOME nor HOME is set: cannot place the cockpit's log file")?;
    std::fs::create_dir_all(&dir)
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
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
    Ok(())
}
