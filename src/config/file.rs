//! The config file as written: every table refuses keys it does not know, and the defaults of
//! what it may leave out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// Claude Code, printing its stream as it goes; the task reaches it on stdin, never on this
/// line. luzia adds `--permission-mode` (the project's `permission_mode`, `default` unless
/// configured), the allowed and disallowed tools, and its MCP server as the permission prompt
/// tool (`jobs::run::claude`): no bypass, so it runs as root too.
pub const DEFAULT_AGENT_COMMAND: &[&str] = &[
    "claude",
    "--print",
    "--output-format",
    "stream-json",
    "--verbose",
    "--add-dir",
    "{project_path}",
];

/// The file as written: every table refuses keys it does not know.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) jobs_dir: Option<PathBuf>,
    pub(super) notifications_log: Option<PathBuf>,
    pub(super) queue_dir: Option<PathBuf>,
    pub(super) read_only: Option<bool>,
    pub(super) bell: Option<bool>,
    pub(super) known_issues: Option<PathBuf>,
    pub(super) alarms: Option<AlarmsFile>,
    pub(super) agent: Option<AgentConfig>,
    /// `[agents.NAME]`: how each agent chosen by name is started.
    #[serde(default)]
    pub(super) agents: BTreeMap<String, NamedAgent>,
    #[serde(default)]
    pub(super) projects: BTreeMap<String, Project>,
    #[serde(default)]
    pub(super) hosts: BTreeMap<String, super::hosts::HostConfig>,
    pub(super) theme: Option<Theme>,
    pub(super) notify: Option<super::notify::NotifyFile>,
    pub(super) telegram: Option<super::telegram::TelegramFile>,
    /// Shape checked by `KeyBindings::from_table`, which says what is wrong better than serde.
    #[serde(default)]
    pub(super) keys: toml::Table,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    #[serde(default = "default_agent_command")]
    pub command: Vec<String>,
    /// The agent jobs run unless a project or `luzia run --agent` chooses another, by name
    /// (`gemini`, or a `[agents.NAME]` of the file). Unset: `command`.
    pub kind: Option<String>,
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
    /// The prompt around a task: `{task}`, `{project}`, `{project_path}`, `{job_id}`, `{job_dir}`.
    #[serde(default = "default_prompt_template")]
    pub prompt_template: String,
    /// Variables of luzia's environment every agent receives, beyond the allowlist.
    #[serde(default)]
    pub env_pass: Vec<String>,
    /// Variables every agent receives with these values.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Claude Code's `--permission-mode` (`default` when unset).
    pub permission_mode: Option<String>,
    /// Claude Code's `--allowedTools`: rules it allows without asking.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Claude Code's `--disallowedTools`: rules it refuses without asking.
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            command: default_agent_command(),
            kind: None,
            max_concurrent: default_max_concurrent(),
            prompt_template: default_prompt_template(),
            env_pass: Vec::new(),
            env: BTreeMap::new(),
            permission_mode: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
        }
    }
}

/// `[agents.NAME]`: how the agent of that name is started.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedAgent {
    /// Its argument vector, with the placeholders of `[agent] command`.
    pub command: Vec<String>,
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

A person (the operator) supervises this job from luzia and answers you there, possibly hours
later: waiting is expected. When you need a decision, do not guess and do not stop silently.
If you are Claude Code: ask with your AskUserQuestion tool (options with descriptions,
several questions at once, multi-select all reach the operator), and simply use your tools:
when one needs permission, the request goes to the operator, who approves it or denies it with
a reason; respect a denial and its reason. Report progress at each milestone with the
`mcp__luzia__progress` tool (percent, step and total_steps, step_name).
Otherwise, run `luzia ask \"<your question>\" --option <a> --option <b>` (or `--type text`
for a free answer, `--type confirm` for yes/no); it prints the answer on stdout when someone
has answered. Before anything destructive or irreversible (deleting data, migrating a
database, deploying, force-pushing), run `luzia gate <short_name> \"<what you are about to
do>\"`: exit 0 means approved, exit 4 means denied and the reason is on stderr; respect it.
Report progress with `luzia progress <percent> --name \"<what you are doing>\"` or
`luzia progress --step <k> --of <n> --name \"<step>\"`.
";

fn default_prompt_template() -> String {
    DEFAULT_PROMPT_TEMPLATE.to_string()
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    pub path: PathBuf,
    /// The agent this project's jobs run, by name (over `[agent] kind`).
    pub agent: Option<String>,
    /// When set and luzia runs as root, agents of this project run as this user.
    pub user: Option<String>,
    /// How long a job of this project should take (`45m`), when the job gives no estimate.
    pub budget: Option<String>,
    /// Variables of luzia's environment this project's agents receive, beyond `[agent]`'s.
    #[serde(default)]
    pub env_pass: Vec<String>,
    /// Variables this project's agents receive with these values (over `[agent.env]`'s).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Claude Code's `--permission-mode` for this project (over `[agent]`'s).
    pub permission_mode: Option<String>,
    /// Added to `[agent]`'s `allowed_tools` for this project.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Added to `[agent]`'s `disallowed_tools` for this project.
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// How the project's jobs are kept apart and their changes recorded: `none`, `snapshot` or
    /// `worktree`. Unset: `snapshot` when the project is in a git repository, else `none`.
    pub isolation: Option<crate::jobs::model::review::Isolation>,
    /// Whether a Claude Code job the account's usage limit stopped continues its session by
    /// itself when the limit resets (on when unset).
    pub resume_after_limit: Option<bool>,
    /// Untracked files copied into a new worktree (gitignore patterns, beside the repository's
    /// own `.worktreeinclude`).
    #[serde(default)]
    pub worktree_include: Vec<String>,
    /// Shell command lines run in a new job's tree before its agent starts, as the project's user.
    #[serde(default)]
    pub setup: Vec<String>,
    /// Shell command lines run in the job's tree after its agent ended well: the job is done only
    /// when each exits 0.
    #[serde(default)]
    pub checks: Vec<String>,
    /// The command `luzia pr ID` runs (a shell line; `{branch}` is the job's branch).
    pub pr_command: Option<String>,
    /// Not in the config file: made for the git repository luzia was started in (the
    /// cockpit's). A process that reads only the file (a supervisor starting queued tasks)
    /// does not know it, so its queued tasks keep their directory.
    #[serde(skip)]
    pub unconfigured: bool,
}

impl Project {
    /// A project at `path` with every setting at its default: the repository a task is given
    /// in, when the config does not name it.
    pub fn at(path: PathBuf) -> Project {
        Project {
            path,
            agent: None,
            user: None,
            budget: None,
            env_pass: Vec::new(),
            env: BTreeMap::new(),
            permission_mode: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            isolation: None,
            resume_after_limit: None,
            worktree_include: Vec::new(),
            setup: Vec::new(),
            checks: Vec::new(),
            pr_command: None,
            unconfigured: true,
        }
    }
}

/// `[alarms]` as written: durations are strings with units, checked in `validate`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AlarmsFile {
    pub(super) stall_after: Option<String>,
    pub(super) question_after: Option<String>,
    pub(super) budget_warn_percent: Option<u8>,
    pub(super) memory_percent: Option<u8>,
    pub(super) bell: Option<bool>,
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

pub(super) fn parse_file(path: &Path) -> Result<FileConfig, ConfigError> {
    // A link is followed (a dotfiles manager's), a FIFO or a directory refused at once, and a
    // config is no larger than a job's small file.
    let read = crate::jobs::fs::files::read_following(path, crate::jobs::fs::files::SMALL_FILE_CAP)
        .and_then(|b| b.ok_or_else(|| rustix::io::Errno::NOENT.into()))
        .and_then(|b| String::from_utf8(b).map_err(|_| std::io::Error::other("is not UTF-8 text")));
    let text = read.map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })
}
