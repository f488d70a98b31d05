//! The checks themselves, from the config and what this machine says ([`Facts`]), so that a
//! test can give any machine.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::probe::{self, VERSION_TIMEOUT};
use super::{Check, Level};
use crate::config::Config;
use crate::jobs::run::agents::{Kind, Needs};

/// Below these, inotify may run out (`sysctl fs.inotify.max_user_watches` and
/// `max_user_instances`): every program of the user shares them.
pub const MIN_WATCHES: u64 = 65_536;
pub const MIN_INSTANCES: u64 = 128;

/// What this machine says, read once.
#[derive(Clone, Debug)]
pub struct Facts {
    /// luzia's environment (what an agent's is made from).
    pub env: BTreeMap<String, String>,
    /// `/proc/sys/fs/inotify/max_user_watches` and `max_user_instances`.
    pub inotify: (Option<u64>, Option<u64>),
    /// Whether luzia runs as root (an agent it starts does, unless a project names a user).
    pub root: bool,
    /// How long the agent's program has to print its version.
    pub version_timeout: Duration,
}

impl Facts {
    pub fn of_this_machine() -> Facts {
        let read = |name: &str| {
            std::fs::read_to_string(Path::new("/proc/sys/fs/inotify").join(name))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        Facts {
            env: std::env::vars_os()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect(),
            inotify: (read("max_user_watches"), read("max_user_instances")),
            root: rustix::process::geteuid().is_root(),
            version_timeout: VERSION_TIMEOUT,
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        self.env.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn find(&self, program: &str) -> Option<PathBuf> {
        probe::find_program(program, self.env.get("PATH").map(OsStr::new))
    }
}

/// Every check, in the order a person reads them: the config, the agent (the one `chosen`
/// names, as `luzia run --agent` does) and its credentials, the directories, then what some
/// features need.
pub fn gather(chosen: Option<&str>, config: Result<&Config, String>, facts: &Facts) -> Vec<Check> {
    let mut checks = Vec::new();
    match config {
        Ok(cfg) => {
            checks.push(config_file(cfg));
            checks.extend(agent(cfg, chosen, facts));
            checks.push(directory("jobs root", &cfg.jobs_dir, JOBS_ROOT_FIX));
            checks.push(directory("queue", &cfg.queue_dir, QUEUE_FIX));
        }
        Err(e) => checks.push(Check::problem(
            "config",
            e,
            "correct the file it names, or move it away: luzia runs without one",
        )),
    }
    checks.extend(inotify(facts.inotify));
    checks.extend(tools(facts));
    checks
}

fn config_file(cfg: &Config) -> Check {
    match &cfg.file {
        Some(p) => Check::ok("config", format!("{} read", p.display())),
        None => Check::ok(
            "config",
            "no config file found, and none is needed: the defaults are used",
        ),
    }
}

/// The agent a job runs where no project chooses another: the one `chosen` names, else
/// `[agent] kind`'s, else `[agent] command`. Its program (found, and its version) and, for its
/// kind, the credentials it will receive. Then each other agent a project chooses
/// (`[projects.X] agent`), unless `--agent` chose one for every project.
fn agent(cfg: &Config, chosen: Option<&str>, facts: &Facts) -> Vec<Check> {
    let by_name = match (chosen, cfg.agent.kind.as_deref()) {
        (Some(name), _) => Some((name, format!("--agent {name}"))),
        (None, Some(kind)) => Some((kind, format!("[agent] kind = \"{kind}\""))),
        (None, None) => None,
    };
    let default_name = by_name.as_ref().map(|(name, _)| *name);
    let mut checks = match by_name {
        None => program_checks(cfg, &cfg.agent.command, "[agent] command", None, facts),
        Some((name, by)) => named_checks(cfg, name, &by, facts),
    };
    if chosen.is_none() {
        for (name, projects) in project_agents(cfg) {
            if Some(name) == default_name {
                continue;
            }
            let by = format!("[projects.{}] agent = \"{name}\"", projects.join(", "));
            let mut theirs = named_checks(cfg, name, &by, facts);
            // A found program's line says whose agent it is (a missing one's says it already).
            if let Some(found) = theirs.first_mut().filter(|c| c.level != Level::Problem) {
                found.says.push_str(&format!(" ({by})"));
            }
            checks.extend(theirs);
        }
    }
    checks
}

/// Each distinct agent the projects choose, with the projects that choose it, by name.
fn project_agents(cfg: &Config) -> Vec<(&str, Vec<&str>)> {
    let mut agents: Vec<(&str, Vec<&str>)> = Vec::new();
    for (project, p) in &cfg.projects {
        let Some(name) = p.agent.as_deref() else {
            continue;
        };
        match agents.iter_mut().find(|(n, _)| *n == name) {
            Some((_, projects)) => projects.push(project),
            None => agents.push((name, vec![project])),
        }
    }
    agents.sort_by_key(|(name, _)| *name);
    agents
}

/// The checks of the agent named `name`, chosen `by` (`--agent gemini`, `[projects.shop]
/// agent = "gemini"`).
fn named_checks(cfg: &Config, name: &str, by: &str, facts: &Facts) -> Vec<Check> {
    match cfg.named_agent_command(name) {
        Ok(command) => program_checks(cfg, &command, by, Some(name), facts),
        Err(e) => vec![Check::problem(
            "agent",
            format!(
                "no agent named '{name}' ({by}; known: {})",
                e.known.join(", ")
            ),
            format!(
                "choose one of those, or say how it is started with [agents.{name}] command = \
                 [\"program\", \"arg\"] in {}",
                e.file
            ),
        )],
    }
}

/// The agent program of `command` (found, and its version) and its kind's credentials. An
/// agent chosen by `name` is started by `[agents.NAME] command`, which its install hint names.
fn program_checks(
    cfg: &Config,
    command: &[String],
    by: &str,
    name: Option<&str>,
    facts: &Facts,
) -> Vec<Check> {
    let Some(program) = command.first() else {
        return Vec::new();
    };
    let kind = Kind::of(command);
    let mut checks = vec![match facts.find(program) {
        None => {
            let install = kind.profile().install;
            let fix = match name {
                Some(name) => {
                    install.replace("[agent] command", &format!("[agents.{name}] command"))
                }
                None => format!("{install}{}", others_on_path(kind, facts)),
            };
            Check::problem(
                "agent",
                format!("`{program}` ({by}) is not on PATH, so no job can start"),
                fix,
            )
        }
        Some(path) => match probe::version(&path, facts.version_timeout) {
            Ok(v) => Check::ok(
                "agent",
                format!("{} ({}): {v}", path.display(), kind.name()),
            ),
            Err(why) => Check::warning(
                "agent",
                format!("{} ({}): {why}", path.display(), kind.name()),
                format!(
                    "run `{} --version` yourself to see what it does",
                    path.display()
                ),
            ),
        },
    }];
    checks.extend(credentials(cfg, facts, kind));
    checks
}

/// `; or run an agent found on PATH: gemini, qwen (luzia run --agent gemini ...)`: the other
/// kinds luzia can start by themselves whose program is here, when there is one.
fn others_on_path(missing: Kind, facts: &Facts) -> String {
    let found: Vec<&str> = Kind::ALL
        .into_iter()
        .filter(|k| *k != missing)
        .filter(|k| {
            k.default_command()
                .and_then(|c| c.first())
                .is_some_and(|p| facts.find(p).is_some())
        })
        .map(Kind::short)
        .collect();
    match found.first() {
        None => String::new(),
        Some(first) => format!(
            "; or run an agent found on PATH: {} (luzia run --agent {first} \"task\"; luzia \
             doctor --agent {first} checks it)",
            found.join(", ")
        ),
    }
}

/// Which of the variables the agent's kind declares are set (by name), and whether it can log
/// in at all.
fn credentials(cfg: &Config, facts: &Facts, kind: Kind) -> Vec<Check> {
    let needs = kind.needs();
    if kind == Kind::Command {
        return vec![Check::ok(
            "credentials",
            "a plain command declares no variables: it receives the allowlist (HOME, PATH, \
             ...) and what [agent] env_pass and env give it",
        )];
    }
    // Set in luzia's environment, or by the config for every agent or for a project.
    let by_config = |name: &str| {
        cfg.agent.env.contains_key(name) || cfg.projects.values().any(|p| p.env.contains_key(name))
    };
    let is_set = |name: &str| facts.var(name).is_some() || by_config(name);
    let passed: Vec<&str> = facts
        .env
        .iter()
        .filter(|(k, v)| !v.is_empty() && needs.passes(OsStr::new(k), &is_set, facts.root))
        .map(|(k, _)| k.as_str())
        .collect();
    let also = if passed.is_empty() {
        String::new()
    } else {
        format!("; set now: {}", passed.join(", "))
    };
    vec![
        Check::ok(
            "passed",
            format!("{} receives, when set: {}", kind.name(), declared(needs)),
        ),
        login(
            kind,
            &needs.credentials_set(&is_set),
            (kind.profile().login_file)(&|n| facts.var(n)),
            &also,
        ),
    ]
}

/// How the agent will log in: with the credentials `set`, else with its own `login_file`, else
/// not at all (a problem). An agent that luzia logs in with a key only when it asks for a login
/// (codex-acp: its kind declares ACP logins) uses its own login first, when it has one. `also`
/// names the other declared variables set.
fn login(kind: Kind, set: &[&str], login_file: Option<PathBuf>, also: &str) -> Check {
    let name = kind.name();
    let on_refusal = kind
        .profile()
        .acp
        .as_ref()
        .is_some_and(|a| !a.logins.is_empty());
    match (set.is_empty(), login_file) {
        (false, Some(file)) if on_refusal => Check::ok(
            "credentials",
            format!(
                "{name} will use its own login ({}), and {} only if it asks for another{also}",
                file.display(),
                set.join(", ")
            ),
        ),
        (false, _) => Check::ok(
            "credentials",
            format!("{name} will log in with {}{also}", set.join(", ")),
        ),
        (true, Some(file)) => Check::ok(
            "credentials",
            format!("{name} will use its own login ({}){also}", file.display()),
        ),
        (true, None) => Check::problem(
            "credentials",
            format!(
                "none of {} is set, and {name} has no login of its own: the agent will not be \
                 able to log in{also}",
                kind.needs().credentials.join(", "),
            ),
            kind.profile().login_help,
        ),
    }
}

/// `ANTHROPIC_*, CLAUDE_CODE_*, ...; as root: IS_SANDBOX; with CLAUDE_CODE_USE_BEDROCK:
/// AWS_*; ...`: the names, grouped by their condition in the order declared.
fn declared(needs: &Needs) -> String {
    let mut groups: Vec<(Option<String>, Vec<&str>)> = Vec::new();
    for v in needs.declared() {
        let condition = v.condition();
        match groups.iter_mut().find(|(c, _)| *c == condition) {
            Some((_, names)) => names.push(v.pattern),
            None => groups.push((condition, vec![v.pattern])),
        }
    }
    groups
        .iter()
        .map(|(c, names)| match c {
            None => names.join(", "),
            Some(c) => format!("{c}: {}", names.join(", ")),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

const JOBS_ROOT_FIX: &str = "run luzia as a user who may write there, or choose another \
                             directory: --jobs-dir DIR, LUZIA_JOBS_DIR, or jobs_dir in the config";
const QUEUE_FIX: &str = "run luzia as a user who may write there, or choose another directory: \
                         LUZIA_QUEUE_DIR, or queue_dir in the config";

/// A directory luzia writes: writable, or missing and creatable (its nearest existing parent
/// writable).
fn directory(topic: &'static str, dir: &Path, fix: &str) -> Check {
    let shown = dir.display();
    if dir.is_dir() {
        return if probe::writable(dir) {
            Check::ok(topic, format!("{shown} (writable)"))
        } else {
            Check::problem(topic, format!("{shown} is not writable by this user"), fix)
        };
    }
    if dir.exists() {
        return Check::problem(topic, format!("{shown} exists but is not a directory"), fix);
    }
    match probe::nearest_existing(dir) {
        Some(parent) if parent.is_dir() && probe::writable(parent) => Check::ok(
            topic,
            format!(
                "{shown} does not exist yet; it will be created ({} is writable)",
                parent.display()
            ),
        ),
        Some(parent) => Check::problem(
            topic,
            format!(
                "{shown} does not exist and cannot be created: {} is {}",
                parent.display(),
                if parent.is_dir() {
                    "not writable"
                } else {
                    "not a directory"
                }
            ),
            fix,
        ),
        None => Check::problem(topic, format!("{shown} cannot be created"), fix),
    }
}

fn inotify((watches, instances): (Option<u64>, Option<u64>)) -> Vec<Check> {
    let limit = |name: &str, value: Option<u64>, min: u64| match value {
        None => Check::warning(
            "inotify",
            format!("cannot read /proc/sys/fs/inotify/{name}"),
            "nothing to do if the cockpit follows jobs as they change; else it falls back to \
             polling once a second",
        ),
        Some(v) if v < min => Check::warning(
            "inotify",
            format!("{name} is {v}: the cockpit may run out of watches and fall back to polling"),
            format!(
                "sysctl -w fs.inotify.{name}={} (and in /etc/sysctl.d/ to keep it)",
                min * 8
            ),
        ),
        Some(v) => Check::ok("inotify", format!("{name} {v}")),
    };
    let checks = [
        limit("max_user_watches", watches, MIN_WATCHES),
        limit("max_user_instances", instances, MIN_INSTANCES),
    ];
    // Both fine: one line.
    if checks.iter().all(|c| c.level == Level::Ok) {
        return vec![Check::ok(
            "inotify",
            format!("{}, {}", checks[0].says, checks[1].says),
        )];
    }
    checks.into()
}

/// git, tmux and ssh: each a warning when missing, for the features that use it.
fn tools(facts: &Facts) -> Vec<Check> {
    let tools: [(&'static str, &str, &str); 3] = [
        (
            "git",
            "what a job changed (luzia diff, merge, discard; worktree isolation) cannot be \
             recorded",
            "install git (apt install git)",
        ),
        (
            "tmux",
            "the cockpit cannot outlive your ssh session",
            "install tmux (apt install tmux), then run the cockpit inside it: tmux new -s luzia \
             'luzia tui'",
        ),
        (
            "ssh",
            "other machines' jobs ([hosts] in the config, --host) cannot be reached",
            "install the OpenSSH client (apt install openssh-client)",
        ),
    ];
    tools
        .into_iter()
        .map(|(name, without, fix)| match facts.find(name) {
            Some(path) => Check::ok(name, path.display().to_string()),
            None => Check::warning(name, format!("not on PATH: {without}"), fix),
        })
        .collect()
}
