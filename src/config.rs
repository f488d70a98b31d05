//! Settings, layered once at start-up: defaults <- TOML file <- environment <- flags.
//! Unknown keys in the file are errors naming the key and the file: a typo must not be
//! silently ignored on a server someone else configured.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use std::time::Duration;

use serde::Deserialize;

use crate::jobs::insight::alarms::AlarmRules;
use crate::jobs::model::time::parse_duration;

pub const DEFAULT_JOBS_DIR: &str = "/var/log/luz-orchestrator/jobs";
pub const DEFAULT_NOTIFICATIONS_LOG: &str = "/var/log/luz-orchestrator/notifications.log";
pub const DEFAULT_QUEUE_DIR: &str = "/var/lib/luzia/queue";
pub const SYSTEM_CONFIG: &str = "/etc/luzia/config.toml";

/// The orchestrator's agent command; the task reaches it on stdin, never on this line.
pub const DEFAULT_AGENT_COMMAND: &[&str] = &[
    "claude",
    "--dangerously-skip-permissions",
    "--permission-mode",
    "bypassPermissions",
    "--add-dir",
    "{project_path}",
    "--print",
    "--verbose",
    "-p",
];

/// The file as written: every table refuses keys it does not know.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    jobs_dir: Option<PathBuf>,
    notifications_log: Option<PathBuf>,
    queue_dir: Option<PathBuf>,
    read_only: Option<bool>,
    bell: Option<bool>,
    known_issues: Option<PathBuf>,
    alarms: Option<AlarmsFile>,
    agent: Option<AgentConfig>,
    #[serde(default)]
    projects: BTreeMap<String, Project>,
    theme: Option<Theme>,
    #[serde(default)]
    keys: BTreeMap<String, KeyList>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    #[serde(default = "default_agent_command")]
    pub command: Vec<String>,
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
    /// The prompt around a task: `{task}`, `{project}`, `{project_path}`, `{job_id}`, `{job_dir}`.
    #[serde(default = "default_prompt_template")]
    pub prompt_template: String,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            command: default_agent_command(),
            max_concurrent: default_max_concurrent(),
            prompt_template: default_prompt_template(),
        }
    }
}

fn default_agent_command() -> Vec<String> {
    DEFAULT_AGENT_COMMAND
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn default_max_concurrent() -> usize {
    4
}

pub const DEFAULT_PROMPT_TEMPLATE: &str =
    "You are working on the project {project}, in {project_path}.

{task}

When you need a decision from a person, do not guess and do not stop silently. Run
`luzia ask \"<your question>\" --option <a> --option <b>` (or `--type text` for a free answer,
`--type confirm` for yes/no); it prints the answer on stdout when someone has answered. Before
anything destructive or irreversible (deleting data, migrating a database, deploying,
force-pushing), run `luzia gate <short_name> \"<what you are about to do>\"`: exit 0 means
approved, exit 4 means denied and the reason is on stderr; respect it. Report progress with
`luzia progress <percent> --name \"<what you are doing>\"` or
`luzia progress --step <k> --of <n> --name \"<step>\"`.
";

fn default_prompt_template() -> String {
    DEFAULT_PROMPT_TEMPLATE.to_string()
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    pub path: PathBuf,
    /// When set and luzia runs as root, agents of this project run as this user.
    pub user: Option<String>,
    /// How long a job of this project should take (`45m`), when the job gives no estimate.
    pub budget: Option<String>,
}

/// `[alarms]` as written: durations are strings with units, checked in `validate`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlarmsFile {
    stall_after: Option<String>,
    question_after: Option<String>,
    budget_warn_percent: Option<u8>,
    memory_percent: Option<u8>,
    bell: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Theme {
    /// `auto` (colour unless NO_COLOR is set), `16` (the terminal's own 16 colours only), or
    /// `none`.
    #[serde(default)]
    pub colors: ColorMode,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum ColorMode {
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "16")]
    Sixteen,
    #[serde(rename = "none")]
    None,
}

/// One key or several for an action: `quit = "q"` or `quit = ["q", "ctrl-c"]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum KeyList {
    One(String),
    Many(Vec<String>),
}

/// Where the jobs root came from, so an error about it can say what to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(&'static str),
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("the built-in default"),
            Source::File(p) => write!(f, "jobs_dir in {}", p.display()),
            Source::Env(var) => write!(f, "the {var} environment variable"),
            Source::Flag => f.write_str("--jobs-dir"),
        }
    }
}

/// The settings every command runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub jobs_dir: PathBuf,
    pub jobs_dir_source: Source,
    pub notifications_log: PathBuf,
    pub queue_dir: PathBuf,
    pub read_only: bool,
    /// Ring the terminal bell once when a new question or gate arrives in the cockpit.
    pub bell: bool,
    pub agent: AgentConfig,
    pub projects: BTreeMap<String, Project>,
    pub theme: Theme,
    pub keys: BTreeMap<String, KeyList>,
    /// Extra known-issue patterns (the orchestrator's format); used when it exists.
    pub known_issues: PathBuf,
    pub alarms: AlarmRules,
    /// Ring the bell once when an alarm is raised.
    pub alarm_bell: bool,
    /// The file that was read, if any.
    pub file: Option<PathBuf>,
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
        "the config file {path} is not valid: {message}(see assets/config.example.toml for every key)"
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
        let explicit = overrides.config.clone().or_else(|| env("LUZIA_CONFIG"));
        let path = match explicit {
            Some(p) => Some(p),
            None => default_config_paths(env).into_iter().find(|p| p.is_file()),
        };
        let mut file = match &path {
            Some(p) => parse_file(p)?,
            None => FileConfig::default(),
        };
        let invalid = |message: String| ConfigError::Invalid {
            path: path.clone().unwrap_or_default(),
            message,
        };
        let alarms_file = file.alarms.take().unwrap_or_default();
        let alarms = alarm_rules(&alarms_file, &file.projects, &invalid)?;
        // Beside the config file that was read, else where the user's config file would be.
        let known_issues = file.known_issues.take().unwrap_or_else(|| {
            path.as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .or_else(|| {
                    default_config_paths(env)
                        .first()
                        .and_then(|p| p.parent().map(Path::to_path_buf))
                })
                .unwrap_or_else(|| PathBuf::from("/etc/luzia"))
                .join(crate::jobs::insight::known_issues::KNOWN_ISSUES_FILE)
        });
        let mut cfg = Config {
            jobs_dir: PathBuf::from(DEFAULT_JOBS_DIR),
            jobs_dir_source: Source::Default,
            notifications_log: file
                .notifications_log
                .unwrap_or_else(|| DEFAULT_NOTIFICATIONS_LOG.into()),
            queue_dir: file.queue_dir.unwrap_or_else(|| DEFAULT_QUEUE_DIR.into()),
            read_only: file.read_only.unwrap_or(false),
            bell: file.bell.unwrap_or(true),
            agent: file.agent.unwrap_or_default(),
            projects: file.projects,
            theme: file.theme.unwrap_or_default(),
            keys: file.keys,
            known_issues,
            alarms,
            alarm_bell: alarms_file.bell.unwrap_or(true),
            file: path.clone(),
        };
        if let (Some(dir), Some(p)) = (file.jobs_dir, &path) {
            cfg.jobs_dir = dir;
            cfg.jobs_dir_source = Source::File(p.clone());
        }
        if let Some(dir) = env("LUZIA_JOBS_DIR").filter(|d| !d.as_os_str().is_empty()) {
            cfg.jobs_dir = dir;
            cfg.jobs_dir_source = Source::Env("LUZIA_JOBS_DIR");
        }
        if let Some(p) = env("LUZIA_NOTIFICATIONS_LOG") {
            cfg.notifications_log = p;
        }
        if let Some(p) = env("LUZIA_QUEUE_DIR") {
            cfg.queue_dir = p;
        }
        if let Some(dir) = &overrides.jobs_dir {
            cfg.jobs_dir = dir.clone();
            cfg.jobs_dir_source = Source::Flag;
        }
        cfg.validate()?;
        Ok(cfg)
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
        for (name, project) in &self.projects {
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

fn alarm_rules(
    file: &AlarmsFile,
    projects: &BTreeMap<String, Project>,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<AlarmRules, ConfigError> {
    let mut rules = AlarmRules::default();
    let duration = |key: &str, v: &Option<String>, default: Duration| match v {
        None => Ok(default),
        Some(s) => parse_duration(s)
            .map_err(|e| invalid(format!("[alarms] {key}: {e}")))
            .and_then(|d| {
                if d.is_zero() {
                    Err(invalid(format!("[alarms] {key} must be longer than 0s")))
                } else {
                    Ok(d)
                }
            }),
    };
    rules.stall_after = duration("stall_after", &file.stall_after, rules.stall_after)?;
    rules.question_after = duration("question_after", &file.question_after, rules.question_after)?;
    for (key, value, slot) in [
        (
            "budget_warn_percent",
            file.budget_warn_percent,
            &mut rules.budget_warn_percent,
        ),
        (
            "memory_percent",
            file.memory_percent,
            &mut rules.memory_percent,
        ),
    ] {
        match value {
            Some(v) if (1..=100).contains(&v) => *slot = v,
            Some(v) => {
                return Err(invalid(format!(
                    "[alarms] {key} = {v}: give a percent from 1 to 100"
                )));
            }
            None => {}
        }
    }
    for (name, project) in projects {
        if let Some(b) = &project.budget {
            let d =
                parse_duration(b).map_err(|e| invalid(format!("[projects.{name}] budget: {e}")))?;
            rules.project_budgets.insert(name.clone(), d);
        }
    }
    Ok(rules)
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

fn parse_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(
        files: &[(&str, &str)],
        env: &[(&str, &str)],
        ov: Overrides,
    ) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let root = dir.path().to_owned();
        let mut vars: HashMap<String, PathBuf> = env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    PathBuf::from(v.replace("$TMP", root.to_str().unwrap())),
                )
            })
            .collect();
        vars.entry("XDG_CONFIG_HOME".into())
            .or_insert_with(|| root.join("xdg"));
        let ov = Overrides {
            config: ov.config.map(|c| root.join(c)),
            jobs_dir: ov.jobs_dir,
        };
        let r = Config::load_with(&ov, &|k| vars.get(k).cloned());
        drop(dir);
        r
    }

    #[test]
    fn layers_apply_in_order() {
        let file = ("xdg/luzia/config.toml", "jobs_dir = \"/from/file\"\n");
        let c = load(&[], &[], Overrides::default()).unwrap();
        assert_eq!(
            (c.jobs_dir.to_str().unwrap(), &c.jobs_dir_source),
            (DEFAULT_JOBS_DIR, &Source::Default)
        );

        let c = load(&[file], &[], Overrides::default()).unwrap();
        assert_eq!(c.jobs_dir, PathBuf::from("/from/file"));
        assert!(matches!(c.jobs_dir_source, Source::File(_)));

        let c = load(
            &[file],
            &[("LUZIA_JOBS_DIR", "/from/env")],
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.jobs_dir, PathBuf::from("/from/env"));
        assert_eq!(c.jobs_dir_source, Source::Env("LUZIA_JOBS_DIR"));

        let flag = Overrides {
            jobs_dir: Some("/from/flag".into()),
            ..Overrides::default()
        };
        let c = load(&[file], &[("LUZIA_JOBS_DIR", "/from/env")], flag).unwrap();
        assert_eq!(c.jobs_dir, PathBuf::from("/from/flag"));
        assert_eq!(c.jobs_dir_source, Source::Flag);
    }

    #[test]
    fn explicit_config_wins_over_xdg() {
        let files = [
            ("xdg/luzia/config.toml", "jobs_dir = \"/xdg\""),
            ("mine.toml", "jobs_dir = \"/mine\""),
        ];
        let ov = Overrides {
            config: Some("mine.toml".into()),
            ..Overrides::default()
        };
        assert_eq!(
            load(&files, &[], ov).unwrap().jobs_dir,
            PathBuf::from("/mine")
        );
        let c = load(
            &files,
            &[("LUZIA_CONFIG", "$TMP/mine.toml")],
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.jobs_dir, PathBuf::from("/mine"));
    }

    #[test]
    fn unknown_keys_name_the_key_and_the_file() {
        let cases = [
            "jobs_dri = \"/x\"",
            "[agent]\ncommand = [\"a\"]\nmax_concurent = 3",
            "[projects.musica]\npath = \"/srv/musica\"\nusr = \"x\"",
            "[theme]\ncolours = \"auto\"",
        ];
        for body in cases {
            let ov = Overrides {
                config: Some("c.toml".into()),
                ..Overrides::default()
            };
            let err = load(&[("c.toml", body)], &[], ov).unwrap_err().to_string();
            let key = body.lines().last().unwrap().split(' ').next().unwrap();
            assert!(err.contains(key), "{err}");
            assert!(err.contains("c.toml"), "{err}");
        }
    }

    #[test]
    fn alarms_budgets_and_known_issues_are_read_and_checked() {
        let ov = || Overrides {
            config: Some("etc/c.toml".into()),
            ..Overrides::default()
        };
        let body = "[alarms]\nstall_after = \"3m\"\nquestion_after = \"90s\"\nmemory_percent = 90\nbell = false\n\
                    [projects.musica]\npath = \"/srv/musica\"\nbudget = \"45m\"\n";
        let cfg = load(&[("etc/c.toml", body)], &[], ov()).unwrap();
        assert_eq!(cfg.alarms.stall_after, Duration::from_secs(180));
        assert_eq!(cfg.alarms.question_after, Duration::from_secs(90));
        assert_eq!(cfg.alarms.memory_percent, 90);
        assert_eq!(cfg.alarms.budget_warn_percent, 80);
        assert_eq!(
            cfg.alarms.project_budgets["musica"],
            Duration::from_secs(2700)
        );
        assert!(!cfg.alarm_bell);
        assert!(
            cfg.known_issues.ends_with("etc/known_issues.json"),
            "{:?}",
            cfg.known_issues
        );

        let defaults = load(&[("etc/c.toml", "")], &[], ov()).unwrap();
        assert_eq!(defaults.alarms, AlarmRules::default());
        assert!(defaults.alarm_bell);

        for (bad, key) in [
            ("[alarms]\nstall_after = \"10\"", "stall_after"),
            ("[alarms]\nquestion_after = \"0s\"", "question_after"),
            ("[alarms]\nmemory_percent = 150", "memory_percent"),
            ("[projects.m]\npath = \"/m\"\nbudget = \"soon\"", "budget"),
        ] {
            let err = load(&[("etc/c.toml", bad)], &[], ov())
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains("c.toml"), "{err}");
        }
    }

    #[test]
    fn a_missing_explicit_file_is_an_error_but_missing_defaults_are_not() {
        let ov = Overrides {
            config: Some("absent.toml".into()),
            ..Overrides::default()
        };
        let err = load(&[], &[], ov).unwrap_err().to_string();
        assert!(err.contains("absent.toml"), "{err}");
        assert!(load(&[], &[], Overrides::default()).is_ok());
    }

    #[test]
    fn the_example_config_is_valid_and_complete() {
        let example = include_str!("../assets/config.example.toml");
        let parsed: FileConfig = toml::from_str(example).unwrap();
        assert!(
            parsed.jobs_dir.is_some()
                && parsed.notifications_log.is_some()
                && parsed.queue_dir.is_some()
        );
        assert!(parsed.agent.is_some() && parsed.theme.is_some() && !parsed.projects.is_empty());
        assert!(parsed.read_only.is_some());
    }

    #[test]
    fn validation_errors() {
        let bad = [
            "[agent]\ncommand = []",
            "[agent]\nmax_concurrent = 0",
            "[projects.\"../x\"]\npath = \"/x\"",
            "[projects.rel]\npath = \"relative/dir\"",
            "read_only = \"yes\"",
        ];
        for body in bad {
            let ov = Overrides {
                config: Some("c.toml".into()),
                ..Overrides::default()
            };
            assert!(load(&[("c.toml", body)], &[], ov).is_err(), "{body}");
        }
    }
}
