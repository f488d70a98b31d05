//! opencode. It reaches many providers, each with its own key (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, ...), or a provider of its config (`opencode.json`, `OPENCODE_CONFIG`),
//! and keeps a login of its own (`opencode auth login`) under `$XDG_DATA_HOME/opencode`.

use std::path::PathBuf;

use super::{Acp, Needs, Profile, Var};

pub const PROFILE: Profile = Profile {
    short: "opencode",
    name: "opencode",
    programs: &["opencode"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("OPENCODE_*"),
            Var::always("OPENAI_API_KEY"),
            Var::always("OPENAI_BASE_URL"),
            Var::always("ANTHROPIC_API_KEY"),
            Var::always("ANTHROPIC_BASE_URL"),
            Var::always("GEMINI_API_KEY"),
            Var::always("GOOGLE_GENERATIVE_AI_API_KEY"),
            Var::always("OPENROUTER_API_KEY"),
            Var::always("XDG_DATA_HOME"),
            Var::always("XDG_CONFIG_HOME"),
        ],
        credentials: &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_GENERATIVE_AI_API_KEY",
            "OPENROUTER_API_KEY",
        ],
    },
    install: "install opencode (npm install -g opencode-ai), or name its full path in [agent] command",
    login_help: "export the key of the provider it uses (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) in the shell that starts luzia, or run `opencode auth login` once as the user agents run as; then `luzia doctor` again",
    login_file,
    acp: Some(Acp {
        command: &["opencode", "acp"],
        marks: &["acp"],
        // 1.18.33 offers only a login in the terminal (`opencode auth login`); keys it reads
        // by itself.
        logins: &[],
    }),
};

/// `opencode/auth.json` in `XDG_DATA_HOME` (else `~/.local/share`), which `opencode auth login`
/// leaves.
fn login_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    super::home_file(
        var,
        Some("XDG_DATA_HOME"),
        ".local/share",
        "opencode/auth.json",
    )
}
