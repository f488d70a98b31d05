//! Claude Code: which programs are Claude Code, and the variables of luzia's environment it
//! receives. They are the names its documentation gives for logging in and reaching the API:
//! its own (`ANTHROPIC_*`, `CLAUDE_CODE_*`, `CLAUDE_CONFIG_DIR`), the network's (a proxy and a
//! private CA), `IS_SANDBOX` for an agent that runs as root, and a cloud's credentials (Amazon Bedrock,
//! Google Vertex AI, Microsoft Foundry) only when the variable that selects that cloud is set.

use std::path::{Path, PathBuf};

use super::{Needs, Profile, Var, When};

/// Whether `program` (argv\[0\], a name or a path) is Claude Code: its file name is `claude`.
pub fn is_claude(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == "claude")
}

const BEDROCK: &str = "CLAUDE_CODE_USE_BEDROCK";
const VERTEX: &str = "CLAUDE_CODE_USE_VERTEX";
const FOUNDRY: &str = "CLAUDE_CODE_USE_FOUNDRY";

pub const PROFILE: Profile = Profile {
    short: "claude",
    name: "Claude Code",
    programs: &["claude"],
    needs: NEEDS,
    install: "install Claude Code (npm install -g @anthropic-ai/claude-code) where the user agents \
              run as can run it, or name its full path in [agent] command",
    login_help: "export ANTHROPIC_API_KEY=<your key> in the shell that starts luzia (with \
                 ANTHROPIC_BASE_URL for a gateway; or CLAUDE_CODE_USE_BEDROCK=1, _VERTEX or \
                 _FOUNDRY with that cloud's credentials), or run `claude /login` once as the user \
                 agents run as; then `luzia doctor` again",
    login_file,
    acp: None,
};

const NEEDS: Needs = Needs {
    network: true,
    passed: &[
        // Its API key or token, its endpoint and models, and its own settings (which include
        // CLAUDE_CODE_OAUTH_TOKEN and the switches to Bedrock, Vertex AI and Foundry).
        Var::always("ANTHROPIC_*"),
        Var::always("CLAUDE_CODE_*"),
        Var::always("CLAUDE_CONFIG_DIR"),
        // What lets it run as root at all on a disposable machine.
        Var {
            pattern: "IS_SANDBOX",
            when: When::AsRoot,
        },
        // Amazon Bedrock: the AWS SDK's credential chain (keys, profile, region, Bedrock's
        // API key AWS_BEARER_TOKEN_BEDROCK).
        Var::with("AWS_*", BEDROCK),
        // Google Vertex AI: the region (and per-model regions), the project, the service
        // account's key file.
        Var::with("CLOUD_ML_REGION", VERTEX),
        Var::with("VERTEX_REGION_*", VERTEX),
        Var::with("GOOGLE_APPLICATION_CREDENTIALS", VERTEX),
        Var::with("GOOGLE_CLOUD_PROJECT", VERTEX),
        Var::with("GCLOUD_PROJECT", VERTEX),
        // Microsoft Foundry: its own ANTHROPIC_FOUNDRY_* pass above; Microsoft Entra ID's
        // credentials (AZURE_CLIENT_ID, AZURE_TENANT_ID, ...) pass with it.
        Var::with("AZURE_*", FOUNDRY),
    ],
    credentials: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        BEDROCK,
        VERTEX,
        FOUNDRY,
    ],
};

/// The file a `claude /login` leaves (`.credentials.json` in `CLAUDE_CONFIG_DIR`, else in
/// `~/.claude`), when it exists: a login of its own, which needs no variable. `var` reads the
/// environment the agent will have.
pub fn login_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    super::home_file(
        var,
        Some("CLAUDE_CONFIG_DIR"),
        ".claude",
        ".credentials.json",
    )
}
