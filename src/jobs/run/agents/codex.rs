//! OpenAI's Codex CLI, and Zed's ACP adapter for it (`codex-acp`, which embeds Codex). Its key is
//! `OPENAI_API_KEY` or `CODEX_API_KEY` (a `model_providers` entry of its config.toml may name
//! another variable, which `[agent] env_pass` passes), with which codex-acp logs in only when
//! asked to (see `logins`); its config and login are in `CODEX_HOME` (default `~/.codex`). The
//! Codex that codex-acp 0.16.0 embeds (0.137) reads no `OPENAI_BASE_URL`: another endpoint for
//! OpenAI's own provider is `openai_base_url` in its config.toml (the variable still passes,
//! for the `codex` CLI of releases that read it).

use std::path::PathBuf;

use super::{Acp, KeyLogin, Needs, Profile, Var};

pub mod rollout;

pub const PROFILE: Profile = Profile {
    short: "codex",
    name: "Codex",
    programs: &["codex", "codex-acp"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("OPENAI_API_KEY"),
            Var::always("OPENAI_BASE_URL"),
            Var::always("OPENAI_ORG_ID"),
            Var::always("OPENAI_PROJECT_ID"),
            Var::always("CODEX_*"),
        ],
        credentials: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    },
    install: "install Codex (npm install -g @openai/codex, and @zed-industries/codex-acp for its ACP adapter), or name its full path in [agent] command",
    login_help: "export OPENAI_API_KEY=<your key> (or CODEX_API_KEY; for a gateway, openai_base_url in ~/.codex/config.toml) in the shell that starts luzia, or run `codex login` once as the user agents run as; then `luzia doctor` again",
    login_file,
    acp: Some(Acp {
        command: &["codex-acp"],
        marks: &["codex-acp"],
        // codex-acp 0.16.0 logs in from its saved login only, and refuses the session without
        // one; its `authMethods` offer each key (`"type": "env_var"`), and authenticating with
        // one saves it as that login (~/.codex/auth.json). CODEX_API_KEY first: set for Codex
        // alone, where OPENAI_API_KEY may be there for other tools.
        logins: &[
            KeyLogin {
                var: "CODEX_API_KEY",
                method: "codex-api-key",
            },
            KeyLogin {
                var: "OPENAI_API_KEY",
                method: "openai-api-key",
            },
        ],
    }),
};

/// `auth.json` in `CODEX_HOME` (else `~/.codex`), which `codex login` leaves.
fn login_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    super::home_file(var, Some("CODEX_HOME"), ".codex", "auth.json")
}
