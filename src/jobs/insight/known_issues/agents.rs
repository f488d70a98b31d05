//! The agents' own failures to log in, known issues for each agent luzia drives through the
//! Agent Client Protocol, in the words each really prints (captured from the pinned CLIs run
//! from a fresh HOME: `tests/golden/<agent>/`). Claude Code's is `claude-not-logged-in` in
//! [`super::builtin`]. An ACP agent's refusal reaches output.log as luzia's line naming it
//! (`luzia: Codex refused session/new: Authentication required (-32000)`), which tells one
//! agent's refusal from another's; the rest are the agent's own words on its stderr.
//!
//! Two kinds each: `<agent>-not-logged-in`, no credentials reached it (the session is refused),
//! whose fix names the variables the agent's profile logs in with; and `<agent>-key-refused`, a
//! key that did reach it and that its API refused (the first prompt is refused), whose fix is
//! another key, and for Codex first the key it saved. opencode's provider refuses the key it
//! has or a missing one alike, so it has one issue for both.

use super::{Origin, Pattern, Severity};

struct Def {
    name: &'static str,
    description: &'static str,
    regexes: &'static [&'static str],
    fix: &'static str,
}

const DEFS: &[Def] = &[
    Def {
        name: "gemini-not-logged-in",
        description: "Gemini CLI could not log in: no API key reached it, or its settings chose a \
                      kind of login it has no credentials for",
        regexes: &[
            // 0.61 in ACP mode with no key: the session's refusal, in its own log line and in
            // luzia's; with settings choosing "gemini-api-key", its stderr first
            r"Gemini API key is missing or not configured",
            r"When using Gemini API, you must specify the GEMINI_API_KEY environment variable",
            // settings choosing "vertex-ai" with nothing for it
            r"When using Vertex AI, you must specify either:",
            // settings choosing "oauth-personal" with no saved login: it waits for a code
            r"^Please visit the following URL to authorize the application:",
            // ACP's own refusal when Gemini CLI gives no reason
            r"^luzia: Gemini CLI refused session/\S+: Authentication required",
        ],
        fix: "Give Gemini CLI a key in the environment luzia (and so the agent) runs in: export \
              GEMINI_API_KEY (or GOOGLE_API_KEY; GOOGLE_GEMINI_BASE_URL for a gateway) before \
              starting luzia, and in ~/.gemini/settings.json of the user agents run as choose \
              it: {\"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}} (Vertex AI: \
              GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION); \
              or run `gemini` once as that user to log in with Google. `luzia doctor --agent \
              gemini` says which are set. Retry (r) afterwards.",
    },
    Def {
        name: "gemini-key-refused",
        description: "The Gemini API refused Gemini CLI's key (400 API_KEY_INVALID): a wrong, \
                      revoked, rotated or expired key",
        regexes: &[
            // 0.61.0: the API's 400 ends the prompt with the API's whole answer, in luzia's line
            // and in the CLI's own report on its stderr
            r"^luzia: Gemini CLI refused session/prompt: .*(?:API_KEY_INVALID|API key not valid|API key expired)",
            r"^Error when talking to Gemini API .*(?:API_KEY_INVALID|API key not valid|API key expired)",
        ],
        fix: "Replace the key: the API will not take it again. Make a new one (Google AI Studio, \
              API keys) and export it as GEMINI_API_KEY (or GOOGLE_API_KEY, wherever the old \
              one was set) in the environment luzia (and so the agent) runs in, then start \
              luzia again so its agents get it; a key in a .env file Gemini CLI reads (the \
              project's, or ~/.gemini/.env of the user agents run as) is replaced there. `luzia \
              doctor --agent gemini` says which are set. Retry (r) afterwards.",
    },
    Def {
        name: "qwen-not-logged-in",
        description: "Qwen Code could not log in: no API key reached it and it has no saved login",
        regexes: &[
            // 0.15.10 in ACP mode with no key: the session's refusal
            r"Use Qwen Code CLI to authenticate first",
            r"^luzia: Qwen Code refused session/\S+: Authentication required",
        ],
        fix: "Give Qwen Code a key in the environment luzia (and so the agent) runs in: export \
              OPENAI_API_KEY with OPENAI_BASE_URL and OPENAI_MODEL (DASHSCOPE_API_KEY for \
              Alibaba's own) before starting luzia, and choose it in ~/.qwen/settings.json of \
              the user agents run as: {\"security\": {\"auth\": {\"selectedType\": \
              \"openai\"}}}; or run `qwen` once as that user to log in. `luzia doctor --agent \
              qwen` says which are set. Retry (r) afterwards.",
    },
    Def {
        name: "qwen-key-refused",
        description: "Qwen Code's model API refused its key (401): a wrong, revoked or rotated \
                      key",
        regexes: &[
            // 0.15.10: the API's 401 ends the prompt as an internal error carrying the status
            // and the API's words
            r#"^luzia: Qwen Code refused session/prompt: .*(?:"details":"401 |(?i:incorrect api key|invalid api[ _-]?key))"#,
        ],
        fix: "Replace the key the API refused: export a valid OPENAI_API_KEY (with the \
              OPENAI_BASE_URL and OPENAI_MODEL it belongs to; DASHSCOPE_API_KEY for Alibaba's \
              own) in the environment luzia (and so the agent) runs in, then start luzia again \
              so its agents get it; a key written in ~/.qwen/settings.json of the user agents \
              run as (security.auth.apiKey) is replaced there. `luzia doctor --agent qwen` says which are set. Retry \
              (r) afterwards.",
    },
    Def {
        name: "opencode-not-logged-in",
        description: "opencode's model provider refused its key, or it has none",
        regexes: &[
            // 1.18.33: the provider's 401 ends the turn as an internal error carrying the
            // provider's words ("Incorrect API key provided: ...", "invalid x-api-key")
            r"^luzia: opencode refused session/\S+: Internal error: .*(?i:api[ _-]?key|unauthori[sz]ed|authentication)",
            r"^luzia: opencode refused session/\S+: Authentication required",
        ],
        fix: "Give opencode the key of the provider its model uses in the environment luzia (and \
              so the agent) runs in: export OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, \
              OPENROUTER_API_KEY or an OPENCODE_* variable before starting luzia (a provider's \
              `apiKey: \"{env:MY_KEY}\"` in opencode.json reads MY_KEY, which reaches the agent \
              only through [agent] env_pass); or run `opencode auth login` once as the user \
              agents run as. A refused key must be replaced. `luzia doctor --agent opencode` \
              says which are set. Retry (r) afterwards.",
    },
    Def {
        name: "codex-not-logged-in",
        description: "Codex (codex-acp) could not log in: no key reached it, it has no saved \
                      login and no provider of the user's own",
        regexes: &[
            // codex-acp 0.16.0 with no ~/.codex/auth.json and no key luzia logs it in with
            r"^luzia: Codex refused session/\S+: Authentication required",
            // a key luzia logged it in with, refused
            r"^luzia: Codex refused authenticate: ",
        ],
        fix: "Give Codex a key in the environment luzia (and so the agent) runs in: export \
              OPENAI_API_KEY (or CODEX_API_KEY) before starting luzia; when codex-acp asks for a \
              login luzia logs it in with that key, which Codex then keeps as its own login \
              (~/.codex/auth.json, CODEX_HOME). For an endpoint other than OpenAI's set \
              openai_base_url in ~/.codex/config.toml of the user agents run as (Codex reads no \
              OPENAI_BASE_URL), or give Codex a provider of your own there whose env_key names a \
              variable that reaches the agent (OPENAI_API_KEY, CODEX_*, or one in [agent] \
              env_pass); for a ChatGPT plan run `codex login` once as that user. A login Codex \
              cannot keep (cli_auth_credentials_store = \"keyring\" with no keyring on the \
              machine) needs \"file\" or \"ephemeral\" there. `luzia doctor \
              --agent codex` says which are set. Retry (r) afterwards.",
    },
    Def {
        name: "codex-key-refused",
        description: "The API refused the key Codex sent (401): the one it saved at its first \
                      login (~/.codex/auth.json) when the key was since replaced, or a wrong one",
        regexes: &[
            // codex-acp 0.16.0: after its retries the 401 ends the prompt, in luzia's line and
            // in its own log of the turn
            r"^luzia: Codex refused session/prompt: .*\b401 Unauthorized\b",
            r"codex_acp::thread: Unhandled error during turn: unexpected status 401 Unauthorized",
        ],
        fix: "Codex sends the key it was first logged in with, which it keeps in \
              ~/.codex/auth.json (CODEX_HOME) of the user agents run as, not the one in the \
              environment: after a key was replaced it still sends the old one. Run `codex \
              logout` as that user (or remove the file), or set cli_auth_credentials_store = \
              \"ephemeral\" in ~/.codex/config.toml so Codex keeps no login; luzia then logs it \
              in with OPENAI_API_KEY (or CODEX_API_KEY) at the next job. If that key is refused \
              too, replace it in the environment luzia runs in and start luzia again. `luzia \
              doctor --agent codex` says which are set. Retry (r) afterwards.",
    },
];

/// The agents' patterns, after the generic ones: on a line both match, the agent's is shown
/// first (it is the more recent of the two at the same severity).
pub fn patterns() -> impl Iterator<Item = Pattern> {
    DEFS.iter().map(|d| Pattern {
        name: d.name.into(),
        description: d.description.into(),
        severity: Severity::Critical,
        regexes: d.regexes.iter().map(|r| (*r).to_string()).collect(),
        fix: d.fix.into(),
        ignore_case: false,
        origin: Origin::Builtin,
    })
}
