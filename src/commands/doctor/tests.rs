use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::checks::{Facts, MIN_WATCHES};
use super::*;
use crate::config::{Config, Overrides};

/// A secret value that must never be printed.
const SECRET: &str = "sk-ant-doctor-must-not-print-this";

struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    /// A scratch machine: `bin/` (the only PATH) with `programs` (name, shell script body).
    fn new(programs: &[(&str, &str)]) -> Machine {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        for (name, body) in programs {
            let p = dir.path().join("bin").join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Machine { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn facts(&self, vars: &[(&str, &str)]) -> Facts {
        let mut env: std::collections::BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env.insert("PATH".into(), self.path().join("bin").display().to_string());
        env.entry("HOME".into())
            .or_insert_with(|| self.path().join("home").display().to_string());
        Facts {
            env,
            inotify: (Some(524_288), Some(128)),
            root: false,
            version_timeout: Duration::from_secs(5),
        }
    }

    /// The config `body` says, its directories under the scratch directory by default.
    fn config(&self, body: &str) -> Config {
        let file = self.path().join("config.toml");
        let body = if body.contains("jobs_dir") {
            body.to_owned()
        } else {
            format!(
                "jobs_dir = {:?}\nqueue_dir = {:?}\n{body}",
                self.path().join("jobs"),
                self.path().join("queue")
            )
        };
        std::fs::write(&file, body).unwrap();
        Config::load_with(
            &Overrides {
                config: Some(file),
                jobs_dir: None,
            },
            &|_| None,
        )
        .unwrap()
    }
}

const CLAUDE: (&str, &str) = ("claude", "echo '2.1.197 (Claude Code)'");

fn text(checks: &[Check]) -> String {
    let mut out = Vec::new();
    write_text(checks, None, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn topic<'a>(checks: &'a [Check], topic: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.topic == topic)
        .unwrap_or_else(|| panic!("no {topic} in {checks:#?}"))
}

fn problems(checks: &[Check]) -> Vec<&str> {
    checks
        .iter()
        .filter(|c| c.level == Level::Problem)
        .map(|c| c.topic)
        .collect()
}

/// Which credentials Claude Code will log in with: (luzia's environment, the config, a login
/// file, what the line must say, whether it is a problem).
#[test]
fn credentials_are_named_and_none_at_all_is_a_problem() {
    let cases: &[(&[(&str, &str)], &str, bool, &str, bool)] = &[
        (
            &[
                ("ANTHROPIC_API_KEY", SECRET),
                ("ANTHROPIC_BASE_URL", "http://gw"),
            ],
            "",
            false,
            "will log in with ANTHROPIC_API_KEY; set now: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL",
            false,
        ),
        (
            &[
                ("CLAUDE_CODE_USE_BEDROCK", "1"),
                ("AWS_SECRET_ACCESS_KEY", SECRET),
            ],
            "",
            false,
            "will log in with CLAUDE_CODE_USE_BEDROCK; set now: AWS_SECRET_ACCESS_KEY, CLAUDE_CODE_USE_BEDROCK",
            false,
        ),
        (
            &[],
            "[agent.env]\nANTHROPIC_API_KEY = \"sk-in-config\"\n",
            false,
            "will log in with ANTHROPIC_API_KEY",
            false,
        ),
        (&[], "", true, "will use its own login (", false),
        // Set but empty is not set; another secret is not a credential, and is not named.
        (
            &[
                ("ANTHROPIC_API_KEY", ""),
                ("MY_SECRET_TOKEN", SECRET),
                ("HTTPS_PROXY", "http://p"),
            ],
            "",
            false,
            "none of ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, \
             CLAUDE_CODE_USE_BEDROCK, CLAUDE_CODE_USE_VERTEX, CLAUDE_CODE_USE_FOUNDRY is set, and \
             Claude Code has no login of its own: the agent will not be able to log in; set now: \
             HTTPS_PROXY",
            true,
        ),
    ];
    for (vars, config, login, says, problem) in cases {
        let m = Machine::new(&[CLAUDE]);
        if *login {
            std::fs::create_dir(m.path().join("home/.claude")).unwrap();
            std::fs::write(m.path().join("home/.claude/.credentials.json"), "{}").unwrap();
        }
        let checks = gather(None, Ok(&m.config(config)), &m.facts(vars));
        let c = topic(&checks, "credentials");
        assert!(c.says.contains(says), "{vars:?}: {}", c.says);
        assert_eq!(c.level == Level::Problem, *problem, "{vars:?}: {c:?}");
        let shown = text(&checks);
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(!shown.contains("sk-in-config"), "{shown}");
        assert!(!shown.contains("MY_SECRET_TOKEN"), "{shown}");
        if *problem {
            assert!(
                c.fix.as_deref().unwrap().contains("ANTHROPIC_API_KEY"),
                "{c:?}"
            );
            assert!(
                shown.contains("a job cannot run until each problem is fixed"),
                "{shown}"
            );
        }
    }
}

/// Codex: its key unless it has a login of its own, which it uses first (luzia logs it in with
/// the key only when it asks for a login).
#[test]
fn codex_uses_its_own_login_first_and_its_key_when_it_asks() {
    let cases: &[(&[(&str, &str)], bool, &str)] = &[
        (
            &[("OPENAI_API_KEY", SECRET)],
            false,
            "Codex will log in with OPENAI_API_KEY",
        ),
        (&[], true, "Codex will use its own login ("),
        (
            &[("OPENAI_API_KEY", SECRET), ("CODEX_API_KEY", SECRET)],
            true,
            "/.codex/auth.json), and OPENAI_API_KEY, CODEX_API_KEY only if it asks for another",
        ),
    ];
    for (vars, login, says) in cases {
        let m = Machine::new(&[("codex-acp", "echo codex-acp 0.16.0")]);
        if *login {
            std::fs::create_dir(m.path().join("home/.codex")).unwrap();
            std::fs::write(m.path().join("home/.codex/auth.json"), "{}").unwrap();
        }
        let config = m.config("[agent]\nkind = \"codex\"\n");
        let checks = gather(None, Ok(&config), &m.facts(vars));
        let c = topic(&checks, "credentials");
        assert!(c.says.contains(says), "{vars:?}, login {login}: {}", c.says);
        assert_ne!(c.level, Level::Problem, "{c:?}");
        assert!(!text(&checks).contains(SECRET));
    }
}

#[test]
fn the_declared_variables_are_listed_by_name() {
    let m = Machine::new(&[CLAUDE]);
    let checks = gather(
        None,
        Ok(&m.config("")),
        &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]),
    );
    let passed = topic(&checks, "passed");
    for name in [
        "ANTHROPIC_*",
        "CLAUDE_CODE_*",
        "HTTPS_PROXY",
        "NODE_EXTRA_CA_CERTS",
        "; as root: IS_SANDBOX; with CLAUDE_CODE_USE_BEDROCK: AWS_*; with CLAUDE_CODE_USE_VERTEX: \
         CLOUD_ML_REGION, VERTEX_REGION_*,",
    ] {
        assert!(passed.says.contains(name), "{name}: {}", passed.says);
    }
}

#[test]
fn the_agent_program_is_found_and_asked_its_version() {
    let m = Machine::new(&[CLAUDE]);
    let checks = gather(
        None,
        Ok(&m.config("")),
        &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]),
    );
    let agent = topic(&checks, "agent");
    assert_eq!(agent.level, Level::Ok);
    assert!(
        agent.says.ends_with("(Claude Code): 2.1.197 (Claude Code)"),
        "{}",
        agent.says
    );
    assert!(problems(&checks).is_empty(), "{checks:#?}");

    // Missing: a problem, with how to install it.
    let m = Machine::new(&[]);
    let checks = gather(
        None,
        Ok(&m.config("")),
        &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]),
    );
    let agent = topic(&checks, "agent");
    assert_eq!(agent.level, Level::Problem);
    assert!(
        agent
            .says
            .contains("`claude` ([agent] command) is not on PATH"),
        "{}",
        agent.says
    );
    assert!(
        agent
            .fix
            .as_deref()
            .unwrap()
            .contains("npm install -g @anthropic-ai/claude-code")
    );
}

#[test]
fn a_program_that_hangs_cannot_hang_doctor() {
    let m = Machine::new(&[("claude", "sleep 30")]);
    let mut facts = m.facts(&[("ANTHROPIC_API_KEY", SECRET)]);
    facts.version_timeout = Duration::from_millis(300);
    let began = Instant::now();
    let checks = gather(None, Ok(&m.config("")), &facts);
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    let agent = topic(&checks, "agent");
    assert_eq!(agent.level, Level::Warning);
    assert!(
        agent.says.contains("did not answer within"),
        "{}",
        agent.says
    );
}

#[test]
fn a_plain_command_needs_no_credential() {
    let m = Machine::new(&[("my-agent", "echo my-agent 0.86")]);
    let checks = gather(
        None,
        Ok(&m.config("[agent]\ncommand = [\"my-agent\"]\n")),
        &m.facts(&[]),
    );
    assert!(problems(&checks).is_empty(), "{checks:#?}");
    assert!(
        topic(&checks, "credentials")
            .says
            .contains("a plain command")
    );
    assert!(topic(&checks, "agent").says.contains("my-agent 0.86"));
}

#[test]
fn another_known_agent_is_checked_for_its_own_credentials() {
    let m = Machine::new(&[("aider", "echo aider 0.86")]);
    let config = m.config("[agent]\ncommand = [\"aider\"]\n");
    let without = gather(None, Ok(&config), &m.facts(&[]));
    let problem = topic(&without, "credentials");
    assert_eq!(problem.level, Level::Problem);
    assert!(problem.says.contains("OPENAI_API_KEY"), "{}", problem.says);
    assert!(topic(&without, "agent").says.contains("(Aider)"));
    let with = gather(None, Ok(&config), &m.facts(&[("OPENAI_API_KEY", "k")]));
    assert!(problems(&with).is_empty(), "{with:#?}");
    assert!(topic(&with, "credentials").says.contains("OPENAI_API_KEY"));
}

#[test]
fn directories_are_writable_or_can_be_created() {
    let m = Machine::new(&[CLAUDE]);
    std::fs::create_dir(m.path().join("jobs")).unwrap();
    std::fs::write(m.path().join("file"), "").unwrap();
    let cases: &[(&str, Level, &str)] = &[
        ("jobs", Level::Ok, "(writable)"),
        (
            "new/deeper",
            Level::Ok,
            "does not exist yet; it will be created",
        ),
        ("file", Level::Problem, "exists but is not a directory"),
        ("file/below", Level::Problem, "cannot be created"),
    ];
    for (dir, level, says) in cases {
        let jobs = m.path().join(dir);
        let cfg = m.config(&format!("jobs_dir = {jobs:?}\nqueue_dir = {jobs:?}\n"));
        let checks = gather(None, Ok(&cfg), &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]));
        for t in ["jobs root", "queue"] {
            let c = topic(&checks, t);
            assert_eq!(c.level, *level, "{dir}: {c:?}");
            assert!(c.says.contains(says), "{dir}: {}", c.says);
            assert!(c.says.contains(&jobs.display().to_string()), "{}", c.says);
        }
    }
}

#[test]
fn low_inotify_limits_are_warnings_naming_the_sysctl() {
    let m = Machine::new(&[CLAUDE]);
    let mut facts = m.facts(&[("ANTHROPIC_API_KEY", SECRET)]);
    facts.inotify = (Some(8192), Some(128));
    let checks = gather(None, Ok(&m.config("")), &facts);
    let low = topic(&checks, "inotify");
    assert_eq!(low.level, Level::Warning);
    assert!(
        low.says.contains("max_user_watches is 8192"),
        "{}",
        low.says
    );
    assert!(
        low.fix
            .as_deref()
            .unwrap()
            .contains("sysctl -w fs.inotify.max_user_watches=")
    );
    assert!(problems(&checks).is_empty());
    facts.inotify = (Some(MIN_WATCHES), Some(128));
    let checks = gather(None, Ok(&m.config("")), &facts);
    assert_eq!(topic(&checks, "inotify").level, Level::Ok);
}

#[test]
fn git_tmux_and_ssh_missing_are_warnings() {
    let m = Machine::new(&[CLAUDE, ("git", "true")]);
    let checks = gather(
        None,
        Ok(&m.config("")),
        &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]),
    );
    assert_eq!(topic(&checks, "git").level, Level::Ok);
    for t in ["tmux", "ssh"] {
        assert_eq!(topic(&checks, t).level, Level::Warning, "{t}");
    }
    assert!(problems(&checks).is_empty());
    assert!(text(&checks).contains("ready for a first job (2 warnings)"));
}

#[test]
fn a_config_that_does_not_load_is_a_problem_and_the_rest_is_still_checked() {
    let m = Machine::new(&[CLAUDE]);
    let checks = gather(None, Err("the config file /x: bad".into()), &m.facts(&[]));
    assert_eq!(problems(&checks), ["config"]);
    assert!(checks.iter().any(|c| c.topic == "inotify"));
}

#[test]
fn json_has_every_check() {
    let m = Machine::new(&[CLAUDE]);
    let checks = gather(None, Ok(&m.config("")), &m.facts(&[]));
    let mut out = Vec::new();
    super::write_json(&checks, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["ready"], false);
    assert_eq!(v["checks"].as_array().unwrap().len(), checks.len());
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["topic"] == "credentials" && c["level"] == "problem")
    );
}

#[test]
fn the_agent_checked_is_the_one_a_job_runs() {
    let m = Machine::new(&[("gemini", "echo 0.61.0")]);
    let key = [("GEMINI_API_KEY", SECRET)];
    // `[agent] kind` chooses it: its own command line is checked, not `[agent] command`.
    let checks = gather(
        None,
        Ok(&m.config("[agent]\nkind = \"gemini\"\n")),
        &m.facts(&key),
    );
    assert!(problems(&checks).is_empty(), "{checks:#?}");
    let agent = topic(&checks, "agent");
    assert!(
        agent.says.ends_with("(Gemini CLI): 0.61.0"),
        "{}",
        agent.says
    );
    assert!(
        topic(&checks, "credentials")
            .says
            .contains("Gemini CLI will log in with GEMINI_API_KEY"),
        "{checks:#?}"
    );
    // Chosen and missing: the choice is named.
    let none = Machine::new(&[]);
    let checks = gather(
        None,
        Ok(&none.config("[agent]\nkind = \"qwen\"\n")),
        &none.facts(&[]),
    );
    let agent = topic(&checks, "agent");
    assert!(
        agent
            .says
            .contains("`qwen` ([agent] kind = \"qwen\") is not on PATH"),
        "{}",
        agent.says
    );
    assert!(
        agent
            .fix
            .as_deref()
            .unwrap()
            .contains("@qwen-code/qwen-code"),
        "{agent:?}"
    );
}

#[test]
fn without_the_default_agent_the_agents_on_path_are_named() {
    let m = Machine::new(&[("gemini", "echo 0.61.0"), ("qwen", "echo 0.15.10")]);
    let checks = gather(
        None,
        Ok(&m.config("")),
        &m.facts(&[("GEMINI_API_KEY", SECRET)]),
    );
    let agent = topic(&checks, "agent");
    assert_eq!(agent.level, Level::Problem);
    let fix = agent.fix.as_deref().unwrap();
    assert!(
        fix.contains(
            "or run an agent found on PATH: gemini, qwen (luzia run --agent gemini \"task\"; \
             luzia doctor --agent gemini checks it)"
        ),
        "{fix}"
    );
}

/// Every check of `topic`, in order.
fn all<'a>(checks: &'a [Check], topic: &str) -> Vec<&'a Check> {
    checks.iter().filter(|c| c.topic == topic).collect()
}

#[test]
fn each_agent_a_project_chooses_is_checked_once_with_its_own_credentials() {
    let m = Machine::new(&[CLAUDE, ("gemini", "echo 0.61.0")]);
    let config = "[projects.shop]\npath = \"/srv/shop\"\nagent = \"gemini\"\n\
                  [projects.web]\npath = \"/srv/web\"\nagent = \"gemini\"\n\
                  [projects.api]\npath = \"/srv/api\"\nagent = \"qwen\"\n\
                  [projects.docs]\npath = \"/srv/docs\"\n";
    let checks = gather(
        None,
        Ok(&m.config(config)),
        &m.facts(&[("ANTHROPIC_API_KEY", SECRET)]),
    );
    let agents = all(&checks, "agent");
    // The default (Claude Code), then gemini and qwen, each once.
    assert_eq!(agents.len(), 3, "{checks:#?}");
    assert!(agents[0].says.contains("(Claude Code)"), "{agents:#?}");
    assert!(
        agents[1]
            .says
            .ends_with("(Gemini CLI): 0.61.0 ([projects.shop, web] agent = \"gemini\")"),
        "{}",
        agents[1].says
    );
    assert_eq!(agents[2].level, Level::Problem);
    assert!(
        agents[2]
            .says
            .contains("`qwen` ([projects.api] agent = \"qwen\") is not on PATH"),
        "{}",
        agents[2].says
    );
    // Each kind's own credentials: Gemini CLI has none here, a problem with its fix.
    let credentials = all(&checks, "credentials");
    assert_eq!(credentials.len(), 3, "{checks:#?}");
    assert_eq!(credentials[0].level, Level::Ok);
    assert_eq!(credentials[1].level, Level::Problem);
    assert!(
        credentials[1].says.contains("GEMINI_API_KEY"),
        "{credentials:#?}"
    );
    assert!(
        credentials[1]
            .fix
            .as_deref()
            .unwrap()
            .contains("GEMINI_API_KEY"),
        "{credentials:#?}"
    );
    assert!(!text(&checks).contains(SECRET));
    // `--agent` chooses one agent for every project: the projects' are not checked.
    let checks = gather(
        Some("gemini"),
        Ok(&m.config(config)),
        &m.facts(&[("GEMINI_API_KEY", SECRET)]),
    );
    assert_eq!(all(&checks, "agent").len(), 1, "{checks:#?}");
    // A project's agent that is the default one is checked once.
    let checks = gather(
        None,
        Ok(&m.config(&format!("[agent]\nkind = \"gemini\"\n{config}"))),
        &m.facts(&[("GEMINI_API_KEY", SECRET)]),
    );
    assert_eq!(all(&checks, "agent").len(), 2, "{checks:#?}");
}

#[test]
fn a_missing_named_agent_is_installed_or_named_in_its_own_agents_table() {
    let m = Machine::new(&[CLAUDE]);
    let config = "[projects.shop]\npath = \"/srv/shop\"\nagent = \"opencode\"\n";
    let checks = gather(None, Ok(&m.config(config)), &m.facts(&[]));
    let missing = all(&checks, "agent")
        .into_iter()
        .find(|c| c.level == Level::Problem)
        .unwrap_or_else(|| panic!("{checks:#?}"));
    let fix = missing.fix.as_deref().unwrap();
    assert!(fix.contains("npm install -g opencode-ai"), "{fix}");
    assert!(fix.contains("[agents.opencode] command"), "{fix}");
    assert!(!fix.contains("[agent] command"), "{fix}");
    // The same for `--agent NAME` and `[agent] kind`.
    for (chosen, body) in [(Some("codex"), ""), (None, "[agent]\nkind = \"codex\"\n")] {
        let checks = gather(chosen, Ok(&m.config(body)), &m.facts(&[]));
        let fix = topic(&checks, "agent").fix.as_deref().unwrap_or_default();
        assert!(fix.contains("[agents.codex] command"), "{fix}");
        assert!(!fix.contains("[agent] command"), "{fix}");
    }
    // `[agent] command` itself keeps its own name.
    let none = Machine::new(&[]);
    let checks = gather(None, Ok(&none.config("")), &none.facts(&[]));
    let fix = topic(&checks, "agent").fix.as_deref().unwrap_or_default();
    assert!(fix.contains("[agent] command"), "{fix}");
}
