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
        (&["/usr/bin/aider"], Kind::Command),
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
        .passed
        .iter()
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
