//! The cases of the agents' own known issues (`src/jobs/insight/known_issues/agents.rs`): the
//! positive ones are lines of the output.log a job got from the pinned CLI run through `luzia
//! run --agent NAME` from a fresh HOME with no credentials (the whole logs are in
//! `tests/golden/<agent>/`); the negative ones are near misses.

use super::Case;

pub const POSITIVE: &[Case] = &[
    // --------------------------------------------------------------------- gemini-not-logged-in
    // Gemini CLI 0.61.0 (`gemini --acp`), no key and no settings.json
    Case {
        pattern: "gemini-not-logged-in",
        from: "luzia run --agent gemini (0.61.0, no key)",
        text: "luzia: Gemini CLI refused session/new: Gemini API key is missing or not configured. (-32000)\n",
    },
    // The same with settings.json choosing "gemini-api-key": its stderr first
    Case {
        pattern: "gemini-not-logged-in",
        from: "gemini --acp (0.61.0, gemini-api-key chosen, no key)",
        text: "Error authenticating: Error: When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n",
    },
    // settings.json choosing "vertex-ai", nothing set for it
    Case {
        pattern: "gemini-not-logged-in",
        from: "gemini --acp (0.61.0, vertex-ai chosen, nothing set)",
        text: "Error authenticating: Error: When using Vertex AI, you must specify either:\n\u{2022} GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION environment variables.\n",
    },
    // settings.json choosing "oauth-personal" with no saved login: it waits for a code
    Case {
        pattern: "gemini-not-logged-in",
        from: "gemini --acp (0.61.0, oauth-personal chosen, no login)",
        text: "\x1b[?1049h\x1b[2J\x1b[H\x1b[?1006l\x1b[?1002l\x1b[<u\x1b[?7hPlease visit the following URL to authorize the application:\n",
    },
    // ----------------------------------------------------------------------- qwen-not-logged-in
    // Qwen Code 0.15.10 (`qwen --acp`), no key and no settings.json
    Case {
        pattern: "qwen-not-logged-in",
        from: "luzia run --agent qwen (0.15.10, no key)",
        text: "luzia: Qwen Code refused session/new: Authentication required: Use Qwen Code CLI to authenticate first. (-32000): {\"authMethods\":[]}\n",
    },
    Case {
        pattern: "qwen-not-logged-in",
        from: "qwen --acp's own log of the refusal (0.15.10, no key)",
        text: "  message: 'Authentication required: Use Qwen Code CLI to authenticate first.',\n",
    },
    // ------------------------------------------------------------------- opencode-not-logged-in
    // opencode 1.18.33 (`opencode acp`), its provider answering 401 as OpenAI does
    Case {
        pattern: "opencode-not-logged-in",
        from: "luzia run --agent opencode (1.18.33, HTTP 401)",
        text: "luzia: opencode refused session/prompt: Internal error: Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys. (-32603): {\"service\":\"session\",\"errorName\":\"APIError\"}\n",
    },
    // ---------------------------------------------------------------------- codex-not-logged-in
    // codex-acp 0.16.0, no ~/.codex/auth.json and no key
    Case {
        pattern: "codex-not-logged-in",
        from: "luzia run --agent codex (codex-acp 0.16.0, no login, no key)",
        text: "luzia: Codex refused session/new: Authentication required (-32000)\n",
    },
    // codex-acp 0.16.0 refusing the login luzia asked for (its words when the key is missing)
    Case {
        pattern: "codex-not-logged-in",
        from: "luzia run --agent codex (codex-acp 0.16.0, authenticate refused)",
        text: "luzia: Codex refused authenticate: Internal error (-32603): OPENAI_API_KEY is not set\n",
    },
];

pub const NEGATIVE: &[Case] = &[
    Case {
        pattern: "gemini-not-logged-in",
        from: "a job whose Gemini CLI logged in",
        text: "── Gemini CLI session 32d1ebdc-558e-42c1-bb73-576408bf0bad · gemini-cli 0.61.0\n",
    },
    Case {
        pattern: "gemini-not-logged-in",
        from: "another agent's refusal",
        text: "luzia: Codex refused session/new: Authentication required (-32000)\n",
    },
    Case {
        pattern: "qwen-not-logged-in",
        from: "another agent's refusal",
        text: "luzia: Gemini CLI refused session/new: Authentication required.\n",
    },
    Case {
        pattern: "opencode-not-logged-in",
        from: "opencode's turn refused for a reason other than its key",
        text: "luzia: opencode refused session/prompt: Internal error (-32603): {\"message\":\"stream disconnected before completion\"}\n",
    },
    Case {
        pattern: "opencode-not-logged-in",
        from: "an agent writing about keys",
        text: "Added a check that the API key is set before calling the provider\n",
    },
    Case {
        pattern: "codex-not-logged-in",
        from: "Codex's turn refused for another reason",
        text: "luzia: Codex refused session/prompt: Internal error (-32603): {\"message\":\"stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)\",\"codex_error_info\":\"other\"}\n",
    },
    Case {
        pattern: "codex-not-logged-in",
        from: "a web service's log",
        text: "GET /admin 401 Authentication required\n",
    },
];

/// Each captured log of an agent that could not log in, with the issue it is and the variables
/// its fix must name (those of the agent's `login_help`).
pub const LOGS: &[(&str, &str, &str, &[&str])] = &[
    (
        "gemini, no key",
        include_str!("../golden/gemini/no-key-0.61.0.log"),
        "gemini-not-logged-in",
        &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "selectedType"],
    ),
    (
        "gemini, gemini-api-key chosen, no key",
        include_str!("../golden/gemini/api-key-chosen-no-key-0.61.0.log"),
        "gemini-not-logged-in",
        &["GEMINI_API_KEY"],
    ),
    (
        "qwen, no key",
        include_str!("../golden/qwen/no-key-0.15.10.log"),
        "qwen-not-logged-in",
        &["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"],
    ),
    (
        "opencode, key refused",
        include_str!("../golden/opencode/key-refused-1.18.33.log"),
        "opencode-not-logged-in",
        &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "opencode auth login"],
    ),
    (
        "codex, no login",
        include_str!("../golden/codex/no-login-0.16.0.log"),
        "codex-not-logged-in",
        &["OPENAI_API_KEY", "CODEX_API_KEY", "openai_base_url"],
    ),
];
