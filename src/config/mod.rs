//! Settings, layered once at start-up: defaults <- TOML file <- environment <- flags.
//! Unknown keys in the file are errors naming the key and the file: a typo must not be
//! silently ignored on a server someone else configured. `file` is the file as written,
//! `alarms` and `keys` turn parts of it into what the program uses.

mod agents;
mod alarms;
mod defaults;
mod file;
pub mod here;
mod hosts;
mod keys;
mod notify;
mod telegram;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::jobs::insight::alarms::AlarmRules;
use crate::jobs::run::account::{AgentEnv, is_env_name};
use crate::jobs::run::claude::{PERMISSION_MODES, Permissions};
use crate::jobs::run::steps::Steps;

pub use agents::UnknownAgent;
pub use defaults::{
    DEFAULT_JOBS_DIR, DEFAULT_NOTIFICATIONS_LOG, DEFAULT_QUEUE_DIR, ROOT_STATE_DIR, Source,
    user_state,
};
pub use file::{
    AgentConfig, ColorMode, DEFAULT_AGENT_COMMAND, DEFAULT_PROMPT_TEMPLATE, NamedAgent, Project,
    Theme,
};
pub use hosts::{DEFAULT_REMOTE_LUZIA, HostConfig, LOCAL_HOST};
pub use keys::{Binding, KeyBindings};
pub use notify::NotifyConfig;
pub use telegram::{DEFAULT_API as DEFAULT_TELEGRAM_API, TelegramConfig};

pub const SYSTEM_CONFIG: &str = "/etc/luzia/config.toml";

/// The settings every command runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub jobs_dir: PathBuf,
    pub jobs_dir_source: Source,
    pub notifications_log: PathBuf,
    pub notifications_log_source: Source,
    pub queue_dir: PathBuf,
    pub queue_dir_source: Source,
    pub read_only: bool,
    /// Ring the terminal bell once when a new question or gate arrives in the cockpit.
    pub bell: bool,
    pub agent: AgentConfig,
    /// `[agents.NAME]`: how each agent chosen by name is started.
    pub agents: BTreeMap<String, NamedAgent>,
    pub projects: BTreeMap<String, Project>,
    /// `[hosts.NAME]`: other machines reached over ssh (`crate::fleet`).
    pub hosts: BTreeMap<String, HostConfig>,
    pub theme: Theme,
    /// `[keys]`, its shape checked; the cockpit checks the actions and keys it names.
    pub keys: KeyBindings,
    /// Extra known-issue patterns (the orchestrator's format); used when it exists.
    pub known_issues: PathBuf,
    pub alarms: AlarmRules,
    /// Ring the bell once when an alarm is raised.
    pub alarm_bell: bool,
    /// `[notify]`: the command `luzia notify` runs for each event; `None` without the table.
    pub notify: Option<NotifyConfig>,
    /// `[telegram]`: the two-way bridge `luzia notify --watch` runs; `None` without the table.
    pub telegram: Option<TelegramConfig>,
    /// The file that was read, if any.
    pub file: Option<PathBuf>,
    /// The files looked for, in order, when none was named: the per-user one first (where
    /// `luzia init` writes). Errors name it, even when none exists.
    pub looked_for: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cannot read the config file {path}: {source} (fix the path given with --config or LUZIA_CONFIG)"
    )]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the config file {path} is not valid: {message}(`man luzia` lists every key; `luzia init --print` shows a config that loads)"
    )]
    Parse { path: PathBuf, message: String },
    #[error("the config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// What the command line says about configuration.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub jobs_dir: Option<PathBuf>,
}

impl Config {
    /// Loads with the process environment.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        Config::load_with(overrides, &|k| std::env::var_os(k).map(PathBuf::from))
    }

    /// Loads with `env` standing in for the environment (tests pass a map).
    pub fn load_with(
        overrides: &Overrides,
        env: &dyn Fn(&str) -> Option<PathBuf>,
    ) -> Result<Config, ConfigError> {
        Config::load_probed(overrides, env, &|p| p.is_dir())
    }

    /// Loads with `env` for the environment and `system_root_exists` saying whether the
    /// orchestrator's jobs root is here (tests answer both for this machine).
    pub fn load_probed(
        overrides: &Overrides,
        env: &dyn Fn(&str) -> Option<PathBuf>,
        system_root_exists: &dyn Fn(&Path) -> bool,
    ) -> Result<Config, ConfigError> {
        let explicit = overrides.config.clone().or_else(|| env("LUZIA_CONFIG"));
        let looked_for = match &explicit {
            Some(p) => vec![p.clone()],
            None => default_config_paths(env),
        };
        let path = match explicit {
            Some(p) => Some(p),
            None => looked_for.iter().find(|p| p.is_file()).cloned(),
        };
        let file = match &path {
            Some(p) => file::parse_file(p)?,
            None => file::FileConfig::default(),
        };
        Config::from_layers(file, path, looked_for, overrides, env, system_root_exists)
    }

    /// The defaults, the environment and the flags, without any file: what `luzia init` puts
    /// in the file it writes.
    pub fn without_file(overrides: &Overrides) -> Result<Config, ConfigError> {
        let env = crate::xdg::process_env;
        let looked_for = default_config_paths(&env);
        Config::from_layers(
            file::FileConfig::default(),
            None,
            looked_for,
            overrides,
            &env,
            &|p| p.is_dir(),
        )
    }

    fn from_layers(
        mut file: file::FileConfig,
        path: Option<PathBuf>,
        looked_for: Vec<PathBuf>,
        overrides: &Overrides,
        env: &dyn Fn(&str) -> Option<PathBuf>,
        system_root_exists: &dyn Fn(&Path) -> bool,
    ) -> Result<Config, ConfigError> {
        let from_file =
            |value: Option<PathBuf>| value.zip(path.clone()).map(|(v, p)| (v, Source::File(p)));
        let mut given = defaults::Given {
            jobs_dir: from_file(file.jobs_dir.take()),
            queue_dir: from_file(file.queue_dir.take()),
            notifications_log: from_file(file.notifications_log.take()),
        };
        given_by_env_and_flags(&mut given, overrides, env);
        let settled = defaults::settle(given, env, system_root_exists);
        let mut cfg = Config::from_file(file, path, env, settled)?;
        cfg.looked_for = looked_for;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The config file to name in an error: the one read, else the per-user one looked for,
    /// said not to exist yet.
    pub fn file_to_edit(&self) -> String {
        match (&self.file, self.looked_for.first()) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(p)) => format!(
                "{} (there is none yet: `luzia init` writes one)",
                p.display()
            ),
            (None, None) => "a config file (`luzia init` writes one)".into(),
        }
    }

    /// The file over the defaults.
    fn from_file(
        mut file: file::FileConfig,
        path: Option<PathBuf>,
        env: &dyn Fn(&str) -> Option<PathBuf>,
        settled: defaults::Settled,
    ) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.clone().unwrap_or_default(),
            message,
        };
        let alarms_file = file.alarms.take().unwrap_or_default();
        let alarms = alarms::alarm_rules(&alarms_file, &file.projects, &invalid)?;
        let keys = KeyBindings::from_table(&file.keys).map_err(invalid)?;
        let notify = notify::notify_config(file.notify.take(), &invalid)?;
        let telegram = telegram::telegram_config(file.telegram.take(), &invalid)?;
        let known_issues = file
            .known_issues
            .take()
            .unwrap_or_else(|| default_known_issues(path.as_deref(), env));
        let (jobs_dir, jobs_dir_source) = settled.jobs_dir;
        let (queue_dir, queue_dir_source) = settled.queue_dir;
        let (notifications_log, notifications_log_source) = settled.notifications_log;
        Ok(Config {
            jobs_dir,
            jobs_dir_source,
            notifications_log,
            notifications_log_source,
            queue_dir,
            queue_dir_source,
            read_only: file.read_only.unwrap_or(false),
            bell: file.bell.unwrap_or(true),
            agent: file.agent.unwrap_or_default(),
            agents: file.agents,
            projects: file.projects,
            hosts: file.hosts,
            theme: file.theme.unwrap_or_default(),
            keys,
            known_issues,
            alarms,
            alarm_bell: alarms_file.bell.unwrap_or(true),
            notify,
            telegram,
            file: path,
            looked_for: Vec::new(),
        })
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: self.file.clone().unwrap_or_default(),
            message,
        };
        if self.agent.command.is_empty() {
            return Err(invalid(
                "[agent] command is empty: give the agent program and its arguments".into(),
            ));
        }
        if self.agent.max_concurrent == 0 {
            return Err(invalid("[agent] max_concurrent must be at least 1".into()));
        }
        check_env("[agent]", &self.agent.env_pass, &self.agent.env).map_err(invalid)?;
        self.check_agents().map_err(invalid)?;
        hosts::check_hosts(&self.hosts).map_err(invalid)?;
        check_permissions(
            "[agent]",
            self.agent.permission_mode.as_deref(),
            [&self.agent.allowed_tools, &self.agent.disallowed_tools],
        )
        .map_err(invalid)?;
        for (name, project) in &self.projects {
            check_permissions(
                &format!("[projects.{name}]"),
                project.permission_mode.as_deref(),
                [&project.allowed_tools, &project.disallowed_tools],
            )
            .map_err(invalid)?;
            check_env(
                &format!("[projects.{name}]"),
                &project.env_pass,
                &project.env,
            )
            .map_err(invalid)?;
            check_lines(name, project).map_err(invalid)?;
            if !crate::jobs::model::id::is_valid(name) {
                return Err(invalid(format!(
                    "project name '{name}' may hold only letters, digits, '.', '_' and '-'"
                )));
            }
            if !project.path.is_absolute() {
                return Err(invalid(format!(
                    "[projects.{name}] path '{}' must be absolute",
                    project.path.display()
                )));
            }
        }
        Ok(())
    }
}

impl Config {
    /// What an agent of `project` receives beyond the allowlist: `[agent]`'s `env_pass` and
    /// `env`, then the project's (its values over `[agent]`'s).
    pub fn agent_env(&self, project: &str) -> AgentEnv {
        let mut env = AgentEnv {
            pass: self.agent.env_pass.clone(),
            set: self.agent.env.clone(),
        };
        if let Some(p) = self.projects.get(project) {
            env.pass.extend(p.env_pass.iter().cloned());
            env.set.extend(p.env.clone());
        }
        env
    }
}

impl Config {
    /// What runs around an agent of `project`: its setup, its checks, the untracked files its
    /// worktree receives.
    pub fn steps(&self, project: &str) -> Steps {
        self.projects
            .get(project)
            .map(|p| Steps {
                setup: p.setup.clone(),
                checks: p.checks.clone(),
                include: p.worktree_include.clone(),
            })
            .unwrap_or_default()
    }
}

impl Config {
    /// Claude Code's permission settings for an agent of `project`: the project's mode over
    /// `[agent]`'s, its allowed and disallowed tools added to `[agent]`'s.
    pub fn permissions(&self, project: &str) -> Permissions {
        let mut p = Permissions {
            mode: self.agent.permission_mode.clone(),
            allowed_tools: self.agent.allowed_tools.clone(),
            disallowed_tools: self.agent.disallowed_tools.clone(),
        };
        if let Some(proj) = self.projects.get(project) {
            if proj.permission_mode.is_some() {
                p.mode = proj.permission_mode.clone();
            }
            p.allowed_tools.extend(proj.allowed_tools.iter().cloned());
            p.disallowed_tools
                .extend(proj.disallowed_tools.iter().cloned());
        }
        p
    }
}

/// The environment over the file, and the flags over both.
fn given_by_env_and_flags(
    given: &mut defaults::Given,
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<PathBuf>,
) {
    let set = |var: &'static str| {
        env(var)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| (d, Source::Env(var)))
    };
    if let Some(dir) = set("LUZIA_JOBS_DIR") {
        given.jobs_dir = Some(dir);
    }
    if let Some(p) = set("LUZIA_NOTIFICATIONS_LOG") {
        given.notifications_log = Some(p);
    }
    if let Some(p) = set("LUZIA_QUEUE_DIR") {
        given.queue_dir = Some(p);
    }
    if let Some(dir) = &overrides.jobs_dir {
        given.jobs_dir = Some((dir.clone(), Source::Flag));
    }
}

/// `permission_mode`, `allowed_tools` and `disallowed_tools` of one table: a mode Claude Code
/// knows, and rules that are not empty.
fn check_permissions(
    table: &str,
    mode: Option<&str>,
    rules: [&Vec<String>; 2],
) -> Result<(), String> {
    if let Some(m) = mode
        && !PERMISSION_MODES.contains(&m)
    {
        return Err(format!(
            "{table} permission_mode '{}' is not one of Claude Code's modes: {}",
            m.escape_debug(),
            PERMISSION_MODES.join(", ")
        ));
    }
    if rules.iter().any(|r| r.iter().any(|t| t.trim().is_empty())) {
        return Err(format!(
            "{table} allowed_tools and disallowed_tools hold rules like \"Bash(npm test)\" or \"Edit\", never an empty one"
        ));
    }
    Ok(())
}

/// `setup`, `checks`, `worktree_include` and `pr_command`: lines with something in them, and
/// no NUL (a shell could not be given it).
fn check_lines(name: &str, p: &Project) -> Result<(), String> {
    let lists = [
        ("setup", &p.setup),
        ("checks", &p.checks),
        ("worktree_include", &p.worktree_include),
    ];
    for (key, lines) in lists {
        if lines
            .iter()
            .any(|l| l.trim().is_empty() || l.contains('\0'))
        {
            return Err(format!(
                "[projects.{name}] {key} holds an empty line or a NUL: give each command (or \
                 pattern) as a string with something in it, e.g. {key} = [\"npm ci\"]"
            ));
        }
    }
    if let Some(cmd) = &p.pr_command
        && (cmd.trim().is_empty() || cmd.contains('\0'))
    {
        return Err(format!(
            "[projects.{name}] pr_command is empty or holds a NUL: give the command, e.g. \
             \"gh pr create --fill --head {{branch}}\""
        ));
    }
    Ok(())
}

/// `env_pass` and `env` of one table: names a shell could export, values without NUL.
fn check_env(table: &str, pass: &[String], set: &BTreeMap<String, String>) -> Result<(), String> {
    let bad_name = |n: &str| {
        format!(
            "{table} env: '{}' is not a variable name (a letter or _, then letters, digits and _)",
            n.escape_debug()
        )
    };
    if let Some(n) = pass.iter().chain(set.keys()).find(|n| !is_env_name(n)) {
        return Err(bad_name(n));
    }
    if let Some((n, _)) = set.iter().find(|(_, v)| v.contains('\0')) {
        return Err(format!(
            "{table} env: the value of {n} holds a NUL character"
        ));
    }
    Ok(())
}

/// Beside the config file that was read, else where the user's config file would be.
fn default_known_issues(path: Option<&Path>, env: &dyn Fn(&str) -> Option<PathBuf>) -> PathBuf {
    path.and_then(Path::parent)
        .map(Path::to_path_buf)
        .or_else(|| {
            default_config_paths(env)
                .first()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| PathBuf::from("/etc/luzia"))
        .join(crate::jobs::insight::known_issues::KNOWN_ISSUES_FILE)
}

fn default_config_paths(env: &dyn Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    let xdg = crate::xdg::config_home(env);
    let mut paths: Vec<PathBuf> = xdg
        .map(|x| x.join("luzia/config.toml"))
        .into_iter()
        .collect();
    paths.push(PathBuf::from(SYSTEM_CONFIG));
    paths
}

#[cfg(test)]
mod tests;
