//! Finding the real coding agents a test drives (`.ci/run` pins and installs each, and names it
//! in a `LUZIA_TEST_*` variable): the variable's path, else the program on PATH. A missing one
//! is skipped loudly, or fails the test where CI says every agent must be there
//! (`LUZIA_REQUIRE_AGENTS=1`).

use std::path::PathBuf;
use std::process::Command;

/// An agent a test can ask for: its program, the variable naming it, and how to install it.
pub struct Agent {
    pub program: &'static str,
    pub var: &'static str,
    pub install: &'static str,
}

pub const CODEX: Agent = Agent {
    program: "codex",
    var: "LUZIA_TEST_CODEX",
    install: "npm install -g @openai/codex@0.171.0",
};
pub const CODEX_ACP: Agent = Agent {
    program: "codex-acp",
    var: "LUZIA_TEST_CODEX_ACP",
    install: "npm install -g @zed-industries/codex-acp@0.16.0",
};
pub const GEMINI: Agent = Agent {
    program: "gemini",
    var: "LUZIA_TEST_GEMINI",
    install: "npm install -g @google/gemini-cli@0.61.0",
};
pub const QWEN: Agent = Agent {
    program: "qwen",
    var: "LUZIA_TEST_QWEN",
    install: "npm install -g @qwen-code/qwen-code@0.15.10",
};
pub const OPENCODE: Agent = Agent {
    program: "opencode",
    var: "LUZIA_TEST_OPENCODE",
    install: "npm install -g opencode-ai@1.18.33",
};
pub const AIDER: Agent = Agent {
    program: "aider",
    var: "LUZIA_TEST_AIDER",
    install: "python3 -m pip install aider-chat==0.86.2",
};

/// The agent's program for `test`, or `None` after saying loudly why the test is skipped.
/// With `LUZIA_REQUIRE_AGENTS=1` (CI) a missing agent fails the test instead.
pub fn agent_or_skip(test: &str, agent: &Agent) -> Option<PathBuf> {
    let named = std::env::var_os(agent.var).map(PathBuf::from);
    let found = named.clone().or_else(|| on_path(agent.program));
    if let Some(path) = found.filter(|p| p.is_file()) {
        eprintln!("{test}: with {} ({})", agent.program, path.display());
        return Some(path);
    }
    let why = match named {
        Some(path) => format!(
            "{} names {}, which is not a file",
            agent.var,
            path.display()
        ),
        None => format!("`{}` is not on PATH (or {})", agent.program, agent.var),
    };
    if std::env::var_os("LUZIA_REQUIRE_AGENTS").is_some_and(|v| v == "1") {
        panic!("{test}: {why}, and LUZIA_REQUIRE_AGENTS=1 says it must be");
    }
    eprintln!(
        "\n{0}\nSKIPPED {test}: {why}; install it with `{1}`\n{0}\n",
        "*".repeat(72),
        agent.install
    );
    None
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The agent run from a fresh home (`home`, as HOME, its config directories inside), with no
/// other variable of the test's environment than PATH: what a user who has just installed it
/// has, and nothing the machine running the tests happens to set.
pub fn fresh(program: &std::path::Path, home: &std::path::Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .stdin(std::process::Stdio::null());
    cmd
}
