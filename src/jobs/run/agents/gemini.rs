//! Google's Gemini CLI. It reads its key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`), its
//! endpoint from `GOOGLE_GEMINI_BASE_URL`, its own settings from `GEMINI_*`, and Vertex AI's
//! project, region and service account when `GOOGLE_GENAI_USE_VERTEXAI` is set.

use std::path::PathBuf;

use super::{Acp, Needs, Profile, Var};

/// The switch to Vertex AI: Google Cloud's credentials pass only with it.
const VERTEX: &str = "GOOGLE_GENAI_USE_VERTEXAI";

pub const PROFILE: Profile = Profile {
    short: "gemini",
    name: "Gemini CLI",
    programs: &["gemini"],
    needs: Needs {
        network: true,
        passed: &[
            Var::always("GEMINI_*"),
            Var::always("GOOGLE_GEMINI_BASE_URL"),
            Var::always("GOOGLE_API_KEY"),
            Var::always("GOOGLE_GENAI_USE_VERTEXAI"),
            Var::with("GOOGLE_CLOUD_*", VERTEX),
            Var::with("GOOGLE_APPLICATION_CREDENTIALS", VERTEX),
        ],
        credentials: &["GEMINI_API_KEY", "GOOGLE_API_KEY", VERTEX],
    },
    install: "install Gemini CLI (npm install -g @google/gemini-cli), or name its full path in [agent] command",
    login_help: "export GEMINI_API_KEY=<your key> (with GOOGLE_GEMINI_BASE_URL for a gateway) in the shell that starts luzia, or run `gemini` once as the user agents run as to log in; then `luzia doctor` again",
    login_file,
    acp: Some(Acp {
        command: &["gemini", "--acp"],
        marks: &["--acp", "--experimental-acp"],
        // 0.61.0 logs in with GEMINI_API_KEY by itself (with no kind chosen in its settings);
        // authenticating would add nothing.
        logins: &[],
    }),
};

/// `~/.gemini/oauth_creds.json`, which logging in with Google leaves.
fn login_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    super::home_file(var, None, ".gemini", "oauth_creds.json")
}
