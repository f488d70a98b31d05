//! The cases of the agents' own known issues (`src/jobs/insight/known_issues/agents.rs`): the
//! positive ones are lines of the output.log a job got from the pinned CLI run through `luzia
//! run --agent NAME` from a fresh HOME with no credentials, or with a key the API refused (the
//! whole logs are in `tests/golden/<agent>/`); the negative ones are near misses.

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
    // ---------------------------------------------------------------------- gemini-key-refused
    // Gemini CLI 0.61.0, GEMINI_API_KEY set and the API answering 400 API_KEY_INVALID
    Case {
        pattern: "gemini-key-refused",
        from: "luzia run --agent gemini (0.61.0, key refused)",
        text: "luzia: Gemini CLI refused session/prompt: {\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"API_KEY_INVALID\",\"domain\":\"googleapis.com\",\"metadata\":{\"service\":\"generativelanguage.googleapis.com\"}},{\"@type\":\"type.googleapis.com/google.rpc.LocalizedMessage\",\"locale\":\"en-US\",\"message\":\"API key not valid. Please pass a valid API key.\"}]}} (400)\n",
    },
    Case {
        pattern: "gemini-key-refused",
        from: "gemini --acp's own report of the refusal (0.61.0, key refused)",
        text: "Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-2026-12-04T21-29-17-010Z.json _ApiError: {\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\"}}\n",
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
    // ------------------------------------------------------------------------ qwen-key-refused
    // Qwen Code 0.15.10, OPENAI_API_KEY set and the API answering 401 invalid_api_key
    Case {
        pattern: "qwen-key-refused",
        from: "luzia run --agent qwen (0.15.10, key refused)",
        text: "luzia: Qwen Code refused session/prompt: Internal error (-32603): {\"details\":\"401 Incorrect API key provided: sk-*********-key. You can find your API key at https://platform.openai.com/account/api-keys.\"}\n",
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
    // ----------------------------------------------------------------------- codex-key-refused
    // codex-acp 0.16.0 sending the key it saved in ~/.codex/auth.json, which the API no longer
    // takes (401 invalid_api_key), after its retries
    Case {
        pattern: "codex-key-refused",
        from: "luzia run --agent codex (codex-acp 0.16.0, saved key refused)",
        text: "luzia: Codex refused session/prompt: Internal error (-32603): {\"message\":\"unexpected status 401 Unauthorized: Incorrect API key provided: sk-****************0001. You can find your API key at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:46641/v1/responses\",\"codex_error_info\":\"other\"}\n",
    },
    Case {
        pattern: "codex-key-refused",
        from: "codex-acp's own log of the turn (0.16.0, key refused)",
        text: "\x1b[2m2026-12-04T21:28:46.202190Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mcodex_acp::thread\x1b[0m\x1b[2m:\x1b[0m Unhandled error during turn: unexpected status 401 Unauthorized: Incorrect API key provided: sk-****************0001. You can find your API key at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:46641/v1/responses Some(Other)\n",
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
    Case {
        pattern: "gemini-key-refused",
        from: "Gemini CLI's prompt refused for its quota",
        text: "luzia: Gemini CLI refused session/prompt: {\"error\":{\"code\":429,\"message\":\"You exceeded your current quota, please check your plan and billing details.\",\"status\":\"RESOURCE_EXHAUSTED\"}} (429)\n",
    },
    Case {
        pattern: "gemini-key-refused",
        from: "another agent's API refusing a Google key",
        text: "luzia: opencode refused session/prompt: Internal error: API key not valid. Please pass a valid API key. (-32603)\n",
    },
    Case {
        pattern: "qwen-key-refused",
        from: "Qwen Code with no key at all (its session refused, not its prompt)",
        text: "luzia: Qwen Code refused session/new: Authentication required: Use Qwen Code CLI to authenticate first. (-32000): {\"authMethods\":[{\"id\":\"openai\",\"name\":\"Use OpenAI API key\",\"description\":\"Requires setting the `OPENAI_API_KEY` environment variable\"}]}\n",
    },
    Case {
        pattern: "qwen-key-refused",
        from: "Qwen Code's prompt refused for the rate limit",
        text: "luzia: Qwen Code refused session/prompt: Internal error (-32603): {\"details\":\"429 Rate limit reached for requests\"}\n",
    },
    Case {
        pattern: "codex-key-refused",
        from: "Codex's turn refused for the usage limit",
        text: "luzia: Codex refused session/prompt: Internal error (-32603): {\"message\":\"You've hit your usage limit. Try again at 3:00 PM.\",\"codex_error_info\":\"usage_limit_exceeded\"}\n",
    },
    Case {
        pattern: "codex-key-refused",
        from: "codex-acp retrying, before it gives up",
        text: "2026-12-04T21:28:33.652118Z ERROR codex_acp::thread: Handled error during turn: Reconnecting... 2/5 Some(ResponseStreamDisconnected { http_status_code: Some(401) })\n",
    },
];

/// Each captured log of an agent that could not log in, or whose key its API refused, with the
/// issue it is and what its fix must name (the variables of the agent's `login_help`; for a
/// refused key, that it must be replaced, and for Codex where its saved login is).
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
    (
        "gemini, key refused",
        include_str!("../golden/gemini/key-refused-0.61.0.log"),
        "gemini-key-refused",
        &["Replace the key", "GEMINI_API_KEY", "GOOGLE_API_KEY"],
    ),
    (
        "qwen, key refused",
        include_str!("../golden/qwen/key-refused-0.15.10.log"),
        "qwen-key-refused",
        &["Replace the key", "OPENAI_API_KEY", "DASHSCOPE_API_KEY"],
    ),
    (
        "codex, key refused",
        include_str!("../golden/codex/key-refused-0.16.0.log"),
        "codex-key-refused",
        &[
            "~/.codex/auth.json",
            "codex logout",
            "ephemeral",
            "OPENAI_API_KEY",
        ],
    ),
    (
        "codex, the key it saved refused after the key was replaced",
        include_str!("../golden/codex/key-refused-saved-login-0.16.0.log"),
        "codex-key-refused",
        &[
            "~/.codex/auth.json",
            "codex logout",
            "ephemeral",
            "OPENAI_API_KEY",
        ],
    ),
];

/// The agents whose own issues are named after them: a line of one agent's log must match no
/// issue of another agent, nor another issue of its own.
pub const AGENTS: &[&str] = &["claude", "gemini", "qwen", "opencode", "codex"];
