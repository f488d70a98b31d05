//! The kinds of agent luzia runs, each behind one seam: which kind a command line is (from its
//! program), and what that kind needs from luzia's environment to log in and reach its API.
//! An agent's environment is an allowlist (see `account::agent_env`); each kind adds to it the
//! variables it declares here, when they are set, and nothing else. `luzia doctor` shows the
//! same declarations, by name only.

pub mod claude;
pub mod command;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// What kind of agent a command line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Claude Code: the program's file name is `claude`.
    ClaudeCode,
    /// Anything else, run as it is: it declares no variables (the config's `env_pass` and
    /// `env` give it what it needs).
    Command,
}

impl Kind {
    /// The kind of the command line `argv`, from its program (argv\[0\], a name or a path).
    pub fn of(argv: &[String]) -> Kind {
        argv.first().map_or(Kind::Command, |p| Kind::of_program(p))
    }

    pub fn of_program(program: &str) -> Kind {
        if claude::is_claude(program) {
            Kind::ClaudeCode
        } else {
            Kind::Command
        }
    }

    /// What a person calls it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ClaudeCode => "Claude Code",
            Kind::Command => "a plain command",
        }
    }

    /// The variables this kind needs from luzia's environment.
    pub fn needs(self) -> &'static Needs {
        match self {
            Kind::ClaudeCode => &claude::NEEDS,
            Kind::Command => &command::NEEDS,
        }
    }
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
        self.passed.iter().any(|v| {
            v.names(name)
                && match v.when {
                    When::Always => true,
                    When::AsRoot => as_root,
                    When::With(switch) => is_set(switch),
                }
        })
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
