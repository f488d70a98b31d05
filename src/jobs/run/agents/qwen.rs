//! Qwen Code (a fork of Gemini CLI that speaks OpenAI's Chat Completions). It reads its key,
//! endpoint and model from `OPENAI_API_KEY`, `OPENAI_BASE_URL` and `OPENAI_MODEL` (or
//! DashScope's key), its own settings from `QWEN_*`, and keeps a login under `~/.qwen`.

use std::path::PathBuf;

use super::{Acp, Needs, Profile, Var};

pub const PROFILE: Profile = Profile {
    short: "qwen",
    name: "Qwen Code",
    programs: &["qwen"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("QWEN_*"),
            Var::always("OPENAI_API_KEY"),
            Var::always("OPENAI_BASE_URL"),
            Var::always("OPENAI_MODEL"),
            Var::always("DASHSCOPE_API_KEY"),
        ],
        credentials: &["OPENAI_API_KEY", "DASHSCOPE_API_KEY"],
    },
    install: "install Qwen Code (npm install -g @qwen-code/qwen-code), or name its full path in [agent] command",
    login_help: "export OPENAI_API_KEY=<your key> with OPENAI_BASE_URL and OPENAI_MODEL in the shell that starts luzia, or run `qwen` once as the user agents run as to log in; then `luzia doctor` again",
    login_file,
    acp: Some(Acp {
        command: &["qwen", "--acp"],
        marks: &["--acp", "--experimental-acp"],
        // 0.15.10 logs in with OPENAI_API_KEY by itself (with OPENAI_BASE_URL and OPENAI_MODEL);
        // with the key alone, authenticating with its `openai` method is refused too.
        logins: &[],
    }),
};

/// `~/.qwen/oauth_creds.json`, which logging in with Qwen leaves.
fn login_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    super::home_file(var, None, ".qwen", "oauth_creds.json")
}
