//! The kinds of agent luzia runs, each behind one seam: which kind a command line is (from its
//! program), and what that kind needs from luzia's environment to log in and reach its API.
//! An agent's environment is an allowlist (see `account::agent_env`); each kind adds to it the
//! variables it declares here, when they are set, and nothing else. `luzia doctor` shows the
//! same declarations, by name only.

pub mod aider;
pub mod claude;
pub mod codex;
pub mod command;
pub mod gemini;
pub mod opencode;
pub mod qwen;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::jobs::model::session::Usage;

/// What kind of agent a command line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Claude Code: the program's file name is `claude`.
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex`, or Zed's ACP adapter for it, `codex-acp`).
    Codex,
    /// Google's Gemini CLI (`gemini`).
    Gemini,
    /// opencode (`opencode`).
    Opencode,
    /// Qwen Code (`qwen`).
    Qwen,
    /// Aider (`aider`).
    Aider,
    /// Anything else, run as it is: it declares no variables (the config's `env_pass` and
    /// `env` give it what it needs).
    Command,
}

/// What one kind of agent is, in one place: each kind's module gives its own.
#[derive(Debug)]
pub struct Profile {
    /// Its name in the table, the config and on the command line: `claude`, `codex`.
    pub short: &'static str,
    /// What a person calls it.
    pub name: &'static str,
    /// The file names of the programs that are this agent.
    pub programs: &'static [&'static str],
    /// The variables it needs from luzia's environment.
    pub needs: Needs,
    /// How to install it, for `luzia doctor` when it is not found.
    pub install: &'static str,
    /// What to do when it cannot log in, for `luzia doctor`.
    pub login_help: &'static str,
    /// The file its own login leaves, when there is one (`var` reads the agent's environment).
    pub login_file: fn(&dyn Fn(&str) -> Option<String>) -> Option<PathBuf>,
    /// How it speaks the Agent Client Protocol, when it does.
    pub acp: Option<Acp>,
}

/// How a kind of agent is run as an Agent Client Protocol server on its stdio.
#[derive(Debug)]
pub struct Acp {
    /// Its command line when the config does not give one (`gemini --acp`).
    pub command: &'static [&'static str],
    /// The flags (`--acp`) or subcommand (`acp`) that switch it to ACP, or the file names of
    /// programs that speak nothing else (`codex-acp`): a command line with one of them speaks
    /// ACP.
    pub marks: &'static [&'static str],
    /// The ACP logins (`authenticate`) its keys stand for, the preferred first: sent only when
    /// it refuses the session for want of a login and offers the method, with its variable set
    /// in its environment. Only a kind that does not log in from that variable by itself
    /// declares any (see [`crate::jobs::run::acp::auth`]).
    pub logins: &'static [KeyLogin],
}

/// A variable of an agent's environment that stands for one of its ACP login methods: with
/// it set, `authenticate {methodId}` logs the agent in with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLogin {
    pub var: &'static str,
    /// The method's id in the agent's `authMethods` (`openai-api-key`).
    pub method: &'static str,
}

impl Kind {
    /// Every kind, the known agents first.
    pub const ALL: [Kind; 7] = [
        Kind::ClaudeCode,
        Kind::Codex,
        Kind::Gemini,
        Kind::Opencode,
        Kind::Qwen,
        Kind::Aider,
        Kind::Command,
    ];

    /// The kind of the command line `argv`, from its program (argv\[0\], a name or a path).
    pub fn of(argv: &[String]) -> Kind {
        argv.first().map_or(Kind::Command, |p| Kind::of_program(p))
    }

    pub fn of_program(program: &str) -> Kind {
        let Some(file) = Path::new(program).file_name() else {
            return Kind::Command;
        };
        Kind::ALL
            .into_iter()
            .find(|k| k.profile().programs.iter().any(|p| file == *p))
            .unwrap_or(Kind::Command)
    }

    /// The kind a person names (`claude`, `codex`, ...), as in `[projects.X] agent`.
    pub fn named(short: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.short() == short)
    }

    pub fn profile(self) -> &'static Profile {
        match self {
            Kind::ClaudeCode => &claude::PROFILE,
            Kind::Codex => &codex::PROFILE,
            Kind::Gemini => &gemini::PROFILE,
            Kind::Opencode => &opencode::PROFILE,
            Kind::Qwen => &qwen::PROFILE,
            Kind::Aider => &aider::PROFILE,
            Kind::Command => &command::PROFILE,
        }
    }

    /// Its name in the table, the config and on the command line.
    pub fn short(self) -> &'static str {
        self.profile().short
    }

    /// What a person calls it.
    pub fn name(self) -> &'static str {
        self.profile().name
    }

    /// The variables this kind needs from luzia's environment.
    pub fn needs(self) -> &'static Needs {
        &self.profile().needs
    }

    /// The command line it is started with when the config names it and says no more: its ACP
    /// command (Claude Code's is the config's `[agent] command`, see `config`).
    pub fn default_command(self) -> Option<&'static [&'static str]> {
        self.profile().acp.as_ref().map(|a| a.command)
    }

    /// What reads the figures of a kind that prints them as text in its output (Aider), rather
    /// than in a stream the supervisor reads as it comes: `None` for every other kind.
    pub fn text_usage(self) -> Option<Box<dyn TextUsage>> {
        match self {
            Kind::Aider => Some(Box::new(aider::Reports::default())),
            _ => None,
        }
    }
}

/// The account whose usage limit a job of `program` meets: its kind's name (`claude`, `codex`,
/// `gemini`, ...), or for a plain command the program's file name. One account's limit holds its
/// jobs only: another agent's tasks still start.
pub fn account(program: &str) -> String {
    let kind = Kind::of_program(program);
    if kind != Kind::Command {
        return kind.short().into();
    }
    Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the command line `argv` runs an agent that speaks the Agent Client Protocol on its
/// stdio: a kind that speaks it, started with its switch (`gemini --acp`) or as its adapter
/// (`codex-acp`). The same kind started otherwise (`gemini -p`) is a plain command.
pub fn speaks_acp(argv: &[String]) -> bool {
    let Some(acp) = &Kind::of(argv).profile().acp else {
        return false;
    };
    let program = argv
        .first()
        .and_then(|p| Path::new(p).file_name())
        .and_then(OsStr::to_str)
        .unwrap_or_default();
    // A flag anywhere; a word only as the subcommand (`opencode run acp` is a prompt).
    acp.marks.iter().any(|m| {
        *m == program
            || if m.starts_with('-') {
                argv[1..].iter().any(|a| a == m)
            } else {
                argv.get(1).is_some_and(|a| a == m)
            }
    })
}

/// The figures of a run read from the agent's output, line by line.
pub trait TextUsage {
    /// Takes the next line of the output (without its newline).
    fn line(&mut self, line: &[u8]);
    /// The run's figures once its output has ended; `None` when it printed none.
    fn finish(self: Box<Self>) -> Option<Usage>;
}

impl TextUsage for aider::Reports {
    fn line(&mut self, line: &[u8]) {
        aider::Reports::line(self, line);
    }

    fn finish(self: Box<Self>) -> Option<Usage> {
        aider::Reports::finish(*self)
    }
}

/// What every agent that reaches an API over the network receives when set: a proxy and a
/// private certificate authority, a server's way out (Node's, Python's and OpenSSL's names).
pub const NETWORK: &[Var] = &[
    Var::always("HTTP_PROXY"),
    Var::always("HTTPS_PROXY"),
    Var::always("NO_PROXY"),
    Var::always("http_proxy"),
    Var::always("https_proxy"),
    Var::always("no_proxy"),
    Var::always("SSL_CERT_FILE"),
    Var::always("SSL_CERT_DIR"),
    Var::always("NODE_EXTRA_CA_CERTS"),
    Var::always("REQUESTS_CA_BUNDLE"),
];

/// `$VAR` when it is set and not empty, else `$HOME/default`, joined with `file`, when that
/// file exists: where most agents keep their own login.
pub fn home_file(
    var: &dyn Fn(&str) -> Option<String>,
    dir_var: Option<&str>,
    default: &str,
    file: &str,
) -> Option<PathBuf> {
    let dir = match dir_var.and_then(var).filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(var("HOME").filter(|h| !h.is_empty())?).join(default),
    };
    let file = dir.join(file);
    file.is_file().then_some(file)
}

pub fn no_login_file(_: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    None
}

/// When a declared variable passes (always only when it is set in luzia's environment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// Only to an agent that runs as root (not one switched to a project's user).
    AsRoot,
    /// Only when this variable is set too (in luzia's environment or the config's `env`): a
    /// cloud's credentials go to the agent only when it is told to use that cloud.
    With(&'static str),
}

/// One declared variable: a name, or a prefix ending in `*` (`ANTHROPIC_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    pub pattern: &'static str,
    pub when: When,
}

impl Var {
    pub const fn always(pattern: &'static str) -> Var {
        Var {
            pattern,
            when: When::Always,
        }
    }

    pub const fn with(pattern: &'static str, switch: &'static str) -> Var {
        Var {
            pattern,
            when: When::With(switch),
        }
    }

    /// Whether `name` is this variable (or one of its prefix).
    pub fn names(&self, name: &[u8]) -> bool {
        match self.pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix.as_bytes()) && name.len() > prefix.len(),
            None => name == self.pattern.as_bytes(),
        }
    }

    /// The condition in words, for `luzia doctor`: none, `as root`, `with
    /// CLAUDE_CODE_USE_BEDROCK`.
    pub fn condition(&self) -> Option<String> {
        match self.when {
            When::Always => None,
            When::AsRoot => Some("as root".into()),
            When::With(switch) => Some(format!("with {switch}")),
        }
    }
}

/// What a kind of agent needs from luzia's environment.
#[derive(Debug)]
pub struct Needs {
    /// Every variable it receives when set, with its condition.
    pub passed: &'static [Var],
    /// Whether it also receives [`NETWORK`]'s variables.
    pub network: bool,
    /// Of those, the ones that let it log in: with none set (and no login of its own, see
    /// [`claude::login_file`]), it cannot.
    pub credentials: &'static [&'static str],
}

impl Needs {
    /// Whether the variable `name` of luzia's environment reaches the agent: one of the
    /// declared ones whose condition holds. `is_set` says whether a variable is set (in luzia's
    /// environment or by the config); `as_root`, whether the agent runs as root.
    pub fn passes(&self, name: &OsStr, is_set: &dyn Fn(&str) -> bool, as_root: bool) -> bool {
        let name = name.as_bytes();
        self.declared().any(|v| {
            v.names(name)
                && match v.when {
                    When::Always => true,
                    When::AsRoot => as_root,
                    When::With(switch) => is_set(switch),
                }
        })
    }

    /// Every variable it receives when set: its own, then the network's.
    pub fn declared(&self) -> impl Iterator<Item = &'static Var> + '_ {
        let network = if self.network { NETWORK } else { &[] };
        self.passed.iter().chain(network)
    }

    /// The declared credentials set, by name (`is_set` as for [`Needs::passes`]).
    pub fn credentials_set(&self, is_set: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
        self.credentials
            .iter()
            .copied()
            .filter(|c| is_set(c))
            .collect()
    }
}

#[cfg(test)]
mod tests;
