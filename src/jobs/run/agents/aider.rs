//! Aider. It reaches providers through LiteLLM, each with its own key (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, ...; `OPENAI_API_BASE` for an OpenAI-compatible endpoint), and reads
//! its own options from `AIDER_*`. It keeps no login of its own.

use super::{Needs, Profile, Var};

pub const PROFILE: Profile = Profile {
    short: "aider",
    name: "Aider",
    programs: &["aider"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("AIDER_*"),
            Var::always("OPENAI_API_KEY"),
            Var::always("OPENAI_API_BASE"),
            Var::always("OPENAI_BASE_URL"),
            Var::always("ANTHROPIC_API_KEY"),
            Var::always("GEMINI_API_KEY"),
            Var::always("OPENROUTER_API_KEY"),
            Var::always("DEEPSEEK_API_KEY"),
        ],
        credentials: &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
        ],
    },
    install: "install Aider (python -m pip install aider-chat), or name its full path in [agent] command",
    login_help: "export the key of the provider it uses (OPENAI_API_KEY with OPENAI_API_BASE, ANTHROPIC_API_KEY, ...) in the shell that starts luzia; then `luzia doctor` again",
    login_file: super::no_login_file,
    acp: None,
};
