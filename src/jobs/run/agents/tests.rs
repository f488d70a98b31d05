use std::ffi::OsStr;

use super::*;

#[test]
fn the_kind_of_a_command_line_is_found_from_its_program() {
    let cases: &[(&[&str], Kind)] = &[
        (&["claude", "-p"], Kind::ClaudeCode),
        (
            &["/opt/claude-code/node_modules/.bin/claude"],
            Kind::ClaudeCode,
        ),
        (&["claude-wrapper"], Kind::Command),
        (&["sh", "-c", "claude -p"], Kind::Command),
        (&["/usr/bin/aider"], Kind::Aider),
        (&["codex", "exec"], Kind::Codex),
        (&["/opt/node_modules/.bin/codex-acp"], Kind::Codex),
        (&["gemini", "--acp"], Kind::Gemini),
        (&["opencode", "acp"], Kind::Opencode),
        (&["qwen"], Kind::Qwen),
        (&["qwen-code"], Kind::Command),
        (&["/"], Kind::Command),
        (&[], Kind::Command),
    ];
    for (argv, kind) in cases {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        assert_eq!(Kind::of(&argv), *kind, "{argv:?}");
    }
}

/// Which variables of luzia's environment reach a Claude Code agent, and under which
/// condition: (name, set beside it, as root, passes).
#[test]
fn claude_code_receives_its_declared_variables_and_nothing_else() {
    let cases: &[(&str, &[&str], bool, bool)] = &[
        ("ANTHROPIC_API_KEY", &[], false, true),
        ("ANTHROPIC_BASE_URL", &[], false, true),
        ("ANTHROPIC_FOUNDRY_API_KEY", &[], false, true),
        ("CLAUDE_CODE_OAUTH_TOKEN", &[], false, true),
        ("CLAUDE_CODE_USE_BEDROCK", &[], false, true),
        ("CLAUDE_CONFIG_DIR", &[], false, true),
        ("HTTPS_PROXY", &[], false, true),
        ("https_proxy", &[], false, true),
        ("NO_PROXY", &[], false, true),
        ("no_proxy", &[], false, true),
        ("SSL_CERT_FILE", &[], false, true),
        ("NODE_EXTRA_CA_CERTS", &[], false, true),
        // a prefix alone is not a variable of it
        ("ANTHROPIC_", &[], false, false),
        ("ANTHROPIC", &[], false, false),
        ("CLAUDE_CONFIG_DIRS", &[], false, false),
        // only as root
        ("IS_SANDBOX", &[], true, true),
        ("IS_SANDBOX", &[], false, false),
        // a cloud's credentials only with the switch to that cloud
        ("AWS_SECRET_ACCESS_KEY", &[], true, false),
        (
            "AWS_SECRET_ACCESS_KEY",
            &["CLAUDE_CODE_USE_BEDROCK"],
            false,
            true,
        ),
        (
            "AWS_BEARER_TOKEN_BEDROCK",
            &["CLAUDE_CODE_USE_BEDROCK"],
            false,
            true,
        ),
        ("AWS_REGION", &["CLAUDE_CODE_USE_VERTEX"], false, false),
        ("CLOUD_ML_REGION", &[], false, false),
        ("CLOUD_ML_REGION", &["CLAUDE_CODE_USE_VERTEX"], false, true),
        (
            "VERTEX_REGION_CLAUDE_4_5_SONNET",
            &["CLAUDE_CODE_USE_VERTEX"],
            false,
            true,
        ),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            &["CLAUDE_CODE_USE_VERTEX"],
            false,
            true,
        ),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            &["CLAUDE_CODE_USE_BEDROCK"],
            false,
            false,
        ),
        ("AZURE_CLIENT_SECRET", &[], false, false),
        (
            "AZURE_CLIENT_SECRET",
            &["CLAUDE_CODE_USE_FOUNDRY"],
            false,
            true,
        ),
        // anything else stays behind
        ("MY_SECRET_TOKEN", &["CLAUDE_CODE_USE_BEDROCK"], true, false),
        ("GITHUB_TOKEN", &[], true, false),
        ("SSH_AUTH_SOCK", &[], true, false),
        ("LD_PRELOAD", &[], true, false),
        ("OPENAI_API_KEY", &[], true, false),
    ];
    let needs = Kind::ClaudeCode.needs();
    for (name, beside, root, passes) in cases {
        let is_set = |n: &str| beside.contains(&n);
        assert_eq!(
            needs.passes(OsStr::new(name), &is_set, *root),
            *passes,
            "{name} with {beside:?}, as root: {root}"
        );
    }
}

#[test]
fn a_plain_command_declares_nothing() {
    let needs = Kind::Command.needs();
    let all = |_: &str| true;
    for name in [
        "ANTHROPIC_API_KEY",
        "IS_SANDBOX",
        "HTTPS_PROXY",
        "AWS_REGION",
    ] {
        assert!(!needs.passes(OsStr::new(name), &all, true), "{name}");
    }
    assert!(needs.credentials_set(&all).is_empty());
}

#[test]
fn the_credentials_set_are_named_in_order() {
    let needs = Kind::ClaudeCode.needs();
    let set = ["CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_API_KEY", "HTTPS_PROXY"];
    assert_eq!(
        needs.credentials_set(&|n| set.contains(&n)),
        ["ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_VERTEX"]
    );
    assert!(needs.credentials_set(&|_| false).is_empty());
}

#[test]
fn a_login_of_claude_codes_own_is_its_credentials_file() {
    let home = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let h = home.path().to_string_lossy().into_owned();
    let c = config.path().to_string_lossy().into_owned();
    let env = |home: &str, config: Option<&str>| {
        let (home, config) = (home.to_owned(), config.map(str::to_owned));
        move |n: &str| match n {
            "HOME" => Some(home.clone()),
            "CLAUDE_CONFIG_DIR" => config.clone(),
            _ => None,
        }
    };
    assert_eq!(claude::login_file(&env(&h, None)), None);
    std::fs::create_dir(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
    assert_eq!(
        claude::login_file(&env(&h, None)),
        Some(home.path().join(".claude/.credentials.json"))
    );
    // CLAUDE_CONFIG_DIR moves it
    assert_eq!(claude::login_file(&env(&h, Some(&c))), None);
    std::fs::write(config.path().join(".credentials.json"), "{}").unwrap();
    assert_eq!(
        claude::login_file(&env(&h, Some(&c))),
        Some(config.path().join(".credentials.json"))
    );
    assert_eq!(claude::login_file(&|_| None), None);
}

#[test]
fn conditions_read_as_words() {
    let needs = Kind::ClaudeCode.needs();
    let shown: Vec<String> = needs
        .declared()
        .filter_map(|v| v.condition().map(|c| format!("{}: {c}", v.pattern)))
        .collect();
    assert!(
        shown.contains(&"IS_SANDBOX: as root".to_string()),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"AWS_*: with CLAUDE_CODE_USE_BEDROCK".to_string()),
        "{shown:?}"
    );
    assert_eq!(Var::always("X").condition(), None);
}

#[test]
fn every_kind_has_its_own_name_and_is_found_by_it() {
    let mut seen = std::collections::BTreeSet::new();
    for kind in Kind::ALL {
        let short = kind.short();
        assert!(seen.insert(short), "{short} twice");
        assert_eq!(Kind::named(short), Some(kind));
        for program in kind.profile().programs {
            assert_eq!(Kind::of_program(program), kind, "{program}");
        }
    }
    assert_eq!(Kind::named("Claude Code"), None);
}

/// A known agent receives the network's variables beside its own; a plain command neither.
#[test]
fn agents_receive_their_own_variables_and_the_networks() {
    let cases: &[(Kind, &str, bool)] = &[
        (Kind::Codex, "OPENAI_API_KEY", true),
        (Kind::Codex, "CODEX_HOME", true),
        (Kind::Codex, "ANTHROPIC_API_KEY", false),
        (Kind::Gemini, "GEMINI_API_KEY", true),
        (Kind::Gemini, "GOOGLE_GEMINI_BASE_URL", true),
        (Kind::Gemini, "OPENAI_API_KEY", false),
        (Kind::Opencode, "OPENCODE_CONFIG", true),
        (Kind::Qwen, "OPENAI_BASE_URL", true),
        (Kind::Qwen, "GEMINI_API_KEY", false),
        (Kind::Aider, "OPENAI_API_BASE", true),
        (Kind::Aider, "HTTPS_PROXY", true),
        (Kind::Gemini, "NODE_EXTRA_CA_CERTS", true),
        (Kind::Command, "HTTPS_PROXY", false),
        (Kind::Command, "OPENAI_API_KEY", false),
    ];
    for (kind, name, passes) in cases {
        assert_eq!(
            kind.needs().passes(OsStr::new(name), &|_| false, false),
            *passes,
            "{name} to {kind:?}"
        );
    }
    // Vertex AI's credentials reach Gemini CLI only with its switch.
    let gemini = Kind::Gemini.needs();
    let name = OsStr::new("GOOGLE_APPLICATION_CREDENTIALS");
    assert!(!gemini.passes(name, &|_| false, false));
    assert!(gemini.passes(name, &|n| n == "GOOGLE_GENAI_USE_VERTEXAI", false));
}

#[test]
fn each_agents_own_login_is_found_where_it_leaves_it() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_string_lossy().into_owned();
    let env = move |n: &str| (n == "HOME").then(|| h.clone());
    let cases = [
        (Kind::Codex, ".codex/auth.json"),
        (Kind::Gemini, ".gemini/oauth_creds.json"),
        (Kind::Opencode, ".local/share/opencode/auth.json"),
        (Kind::Qwen, ".qwen/oauth_creds.json"),
    ];
    for (kind, rel) in cases {
        let login = kind.profile().login_file;
        assert_eq!(login(&env), None, "{kind:?}");
        let file = home.path().join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(login(&env), Some(file), "{kind:?}");
    }
    assert_eq!((Kind::Aider.profile().login_file)(&env), None);
}

#[test]
fn a_command_line_speaks_acp_when_its_kind_does_and_it_is_switched_on() {
    let cases: &[(&[&str], bool)] = &[
        (&["gemini", "--acp"], true),
        (&["/opt/bin/gemini", "-m", "x", "--experimental-acp"], true),
        (&["gemini", "-p"], false),
        (&["qwen", "--acp"], true),
        (&["opencode", "acp"], true),
        (&["opencode", "run", "acp"], false),
        (&["opencode", "run"], false),
        (&["/usr/lib/node_modules/.bin/codex-acp"], true),
        (&["codex", "exec"], false),
        // a kind that does not speak it, whatever its arguments
        (&["claude", "--acp"], false),
        (&["sh", "-c", "gemini --acp"], false),
        (&[], false),
    ];
    for (argv, acp) in cases {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        assert_eq!(speaks_acp(&argv), *acp, "{argv:?}");
    }
    for kind in Kind::ALL {
        if let Some(command) = kind.default_command() {
            let argv: Vec<String> = command.iter().map(|s| s.to_string()).collect();
            assert!(speaks_acp(&argv), "{kind:?}'s own command speaks ACP");
            assert_eq!(Kind::of(&argv), kind);
        }
    }
}
