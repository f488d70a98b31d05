//! Loading the config: layers, errors that name the key and the file, validation.

use std::collections::HashMap;
use std::time::Duration;

use super::file::FileConfig;
use super::*;

fn load(
    files: &[(&str, &str)],
    env: &[(&str, &str)],
    ov: Overrides,
) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    let root = dir.path().to_owned();
    let mut vars: HashMap<String, PathBuf> = env
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                PathBuf::from(v.replace("$TMP", root.to_str().unwrap())),
            )
        })
        .collect();
    vars.entry("XDG_CONFIG_HOME".into())
        .or_insert_with(|| root.join("xdg"));
    let ov = Overrides {
        config: ov.config.map(|c| root.join(c)),
        jobs_dir: ov.jobs_dir,
    };
    let r = Config::load_with(&ov, &|k| vars.get(k).cloned());
    drop(dir);
    r
}

#[test]
fn layers_apply_in_order() {
    let file = ("xdg/luzia/config.toml", "jobs_dir = \"/from/file\"\n");
    let c = load(&[], &[], Overrides::default()).unwrap();
    assert_eq!(
        (c.jobs_dir.to_str().unwrap(), &c.jobs_dir_source),
        (DEFAULT_JOBS_DIR, &Source::Default)
    );

    let c = load(&[file], &[], Overrides::default()).unwrap();
    assert_eq!(c.jobs_dir, PathBuf::from("/from/file"));
    assert!(matches!(c.jobs_dir_source, Source::File(_)));

    let c = load(
        &[file],
        &[("LUZIA_JOBS_DIR", "/from/env")],
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.jobs_dir, PathBuf::from("/from/env"));
    assert_eq!(c.jobs_dir_source, Source::Env("LUZIA_JOBS_DIR"));

    let flag = Overrides {
        jobs_dir: Some("/from/flag".into()),
        ..Overrides::default()
    };
    let c = load(&[file], &[("LUZIA_JOBS_DIR", "/from/env")], flag).unwrap();
    assert_eq!(c.jobs_dir, PathBuf::from("/from/flag"));
    assert_eq!(c.jobs_dir_source, Source::Flag);
}

#[test]
fn explicit_config_wins_over_xdg() {
    let files = [
        ("xdg/luzia/config.toml", "jobs_dir = \"/xdg\""),
        ("mine.toml", "jobs_dir = \"/mine\""),
    ];
    let ov = Overrides {
        config: Some("mine.toml".into()),
        ..Overrides::default()
    };
    assert_eq!(
        load(&files, &[], ov).unwrap().jobs_dir,
        PathBuf::from("/mine")
    );
    let c = load(
        &files,
        &[("LUZIA_CONFIG", "$TMP/mine.toml")],
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.jobs_dir, PathBuf::from("/mine"));
}

#[test]
fn unknown_keys_name_the_key_and_the_file() {
    let cases = [
        "jobs_dri = \"/x\"",
        "[agent]\ncommand = [\"a\"]\nmax_concurent = 3",
        "[projects.musica]\npath = \"/srv/musica\"\nusr = \"x\"",
        "[theme]\ncolours = \"auto\"",
    ];
    for body in cases {
        let ov = Overrides {
            config: Some("c.toml".into()),
            ..Overrides::default()
        };
        let err = load(&[("c.toml", body)], &[], ov).unwrap_err().to_string();
        let key = body.lines().last().unwrap().split(' ').next().unwrap();
        assert!(err.contains(key), "{err}");
        assert!(err.contains("c.toml"), "{err}");
    }
}

#[test]
fn alarms_budgets_and_known_issues_are_read_and_checked() {
    let ov = || Overrides {
        config: Some("etc/c.toml".into()),
        ..Overrides::default()
    };
    let body = "[alarms]\nstall_after = \"3m\"\nquestion_after = \"90s\"\nmemory_percent = 90\nbell = false\n\
                [projects.musica]\npath = \"/srv/musica\"\nbudget = \"45m\"\n";
    let cfg = load(&[("etc/c.toml", body)], &[], ov()).unwrap();
    assert_eq!(cfg.alarms.stall_after, Duration::from_secs(180));
    assert_eq!(cfg.alarms.question_after, Duration::from_secs(90));
    assert_eq!(cfg.alarms.memory_percent, 90);
    assert_eq!(cfg.alarms.budget_warn_percent, 80);
    assert_eq!(
        cfg.alarms.project_budgets["musica"],
        Duration::from_secs(2700)
    );
    assert!(!cfg.alarm_bell);
    assert!(
        cfg.known_issues.ends_with("etc/known_issues.json"),
        "{:?}",
        cfg.known_issues
    );

    let defaults = load(&[("etc/c.toml", "")], &[], ov()).unwrap();
    assert_eq!(defaults.alarms, AlarmRules::default());
    assert!(defaults.alarm_bell);

    for (bad, key) in [
        ("[alarms]\nstall_after = \"10\"", "stall_after"),
        ("[alarms]\nquestion_after = \"0s\"", "question_after"),
        ("[alarms]\nmemory_percent = 150", "memory_percent"),
        ("[projects.m]\npath = \"/m\"\nbudget = \"soon\"", "budget"),
    ] {
        let err = load(&[("etc/c.toml", bad)], &[], ov())
            .unwrap_err()
            .to_string();
        assert!(err.contains(key) && err.contains("c.toml"), "{err}");
    }
}

#[test]
fn a_missing_explicit_file_is_an_error_but_missing_defaults_are_not() {
    let ov = Overrides {
        config: Some("absent.toml".into()),
        ..Overrides::default()
    };
    let err = load(&[], &[], ov).unwrap_err().to_string();
    assert!(err.contains("absent.toml"), "{err}");
    assert!(load(&[], &[], Overrides::default()).is_ok());
}

/// The example, copied as it is, loads and names nothing of another machine (no project path,
/// host or user that is not here); every key is in it, explained.
#[test]
fn the_example_config_loads_verbatim_and_names_every_key() {
    let example = include_str!("../../assets/config.example.toml");
    let cfg = load(
        &[("xdg/luzia/config.toml", example)],
        &[("HOME", "$TMP/home")],
        Overrides::default(),
    )
    .unwrap();
    assert!(cfg.projects.is_empty() && cfg.hosts.is_empty() && cfg.notify.is_none());
    assert!(cfg.telegram.is_none());
    assert!(
        !example.contains("docs/"),
        "it names nothing of the source tree"
    );
    for key in [
        "jobs_dir",
        "notifications_log",
        "queue_dir",
        "read_only",
        "bell",
        "known_issues",
        "[alarms]",
        "[agent]",
        "command",
        "max_concurrent",
        "prompt_template",
        "env_pass",
        "[agent.env]",
        "[projects.musica]",
        "path",
        "user",
        "budget",
        "isolation",
        "[hosts.gpu2]",
        "ssh_options",
        "luzia",
        "[notify]",
        "events",
        "max_per_minute",
        "timeout_seconds",
        "[telegram]",
        "chat_id",
        "allowed_users",
        "api",
        "[theme]",
        "[keys]",
    ] {
        let named = example.lines().any(|l| {
            let l = l.trim_start_matches("# ");
            l.starts_with(&format!("{key} =")) || l == key
        });
        assert!(named, "{key}");
    }
    // Its commented-out examples, uncommented, are a valid file too.
    let uncommented: String = example
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest)
                if !rest.starts_with("prompt_template")
                    && ((rest.starts_with('[') && rest.ends_with(']') && !rest.contains(' '))
                        || rest.split(' ').nth(1) == Some("=")) =>
            {
                format!("{rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let parsed: FileConfig = toml::from_str(&uncommented).unwrap();
    assert!(parsed.jobs_dir.is_some() && parsed.queue_dir.is_some());
    assert!(!parsed.projects.is_empty() && parsed.notify.is_some());
    assert!(parsed.telegram.is_some());
    let gpu2 = &parsed.hosts["gpu2"];
    assert!(!gpu2.ssh_options.is_empty() && gpu2.luzia != DEFAULT_REMOTE_LUZIA);
}

#[test]
fn validation_errors() {
    let bad = [
        "[agent]\ncommand = []",
        "[agent]\nmax_concurrent = 0",
        "[projects.\"../x\"]\npath = \"/x\"",
        "[projects.rel]\npath = \"relative/dir\"",
        "read_only = \"yes\"",
    ];
    for body in bad {
        let ov = Overrides {
            config: Some("c.toml".into()),
            ..Overrides::default()
        };
        assert!(load(&[("c.toml", body)], &[], ov).is_err(), "{body}");
    }
}

#[test]
fn keys_are_read_per_mode_and_a_bad_shape_names_the_key_and_the_file() {
    let ov = || Overrides {
        config: Some("c.toml".into()),
        ..Overrides::default()
    };
    let body = "[keys]\nquit = [\"q\", \"ctrl-q\"]\n[keys.inbox]\nnext = \"ctrl-n\"\n";
    let cfg = load(&[("c.toml", body)], &[], ov()).unwrap();
    let bindings: Vec<(Option<&str>, &str, Vec<&str>)> = cfg
        .keys
        .bindings
        .iter()
        .map(|b| {
            let keys = b.keys.iter().map(String::as_str).collect();
            (b.mode.as_deref(), b.action.as_str(), keys)
        })
        .collect();
    assert_eq!(
        bindings,
        [
            (Some("inbox"), "next", vec!["ctrl-n"]),
            (None, "quit", vec!["q", "ctrl-q"]),
        ]
    );
    for bad in ["[keys]\nquit = 5", "[keys.inbox]\nnext = [\"tab\", 3]"] {
        let err = load(&[("c.toml", bad)], &[], ov()).unwrap_err().to_string();
        let key = if bad.contains("inbox") {
            "[keys.inbox] next"
        } else {
            "[keys] quit"
        };
        assert!(err.contains(key) && err.contains("c.toml"), "{err}");
    }
}

#[test]
fn agent_environments_merge_agent_then_project_and_bad_names_are_refused() {
    let ov = || Overrides {
        config: Some("c.toml".into()),
        ..Overrides::default()
    };
    let body = "[agent]\nenv_pass = [\"ANTHROPIC_API_KEY\"]\n[agent.env]\nMODE = \"ci\"\nLEVEL = \"1\"\n\
                [projects.p]\npath = \"/p\"\nenv_pass = [\"GIT_SSH\"]\n[projects.p.env]\nLEVEL = \"2\"\n\
                [projects.q]\npath = \"/q\"\n";
    let cfg = load(&[("c.toml", body)], &[], ov()).unwrap();
    let p = cfg.agent_env("p");
    assert_eq!(p.pass, ["ANTHROPIC_API_KEY", "GIT_SSH"]);
    let set: Vec<(&str, &str)> = p
        .set
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        set,
        [("LEVEL", "2"), ("MODE", "ci")],
        "the project's value wins"
    );
    assert_eq!(cfg.agent_env("q").pass, ["ANTHROPIC_API_KEY"]);
    assert_eq!(cfg.agent_env("unknown"), cfg.agent_env("q"));

    for (bad, says) in [
        (
            "[agent]\nenv_pass = [\"A-B\"]",
            "[agent] env: 'A-B' is not a variable name",
        ),
        ("[agent.env]\n\"1X\" = \"v\"", "[agent] env: '1X'"),
        (
            "[projects.p]\npath = \"/p\"\nenv_pass = [\"\"]",
            "[projects.p] env: ''",
        ),
        (
            "[projects.p]\npath = \"/p\"\n[projects.p.env]\nX = \"a\\u0000b\"",
            "NUL",
        ),
    ] {
        let err = load(&[("c.toml", bad)], &[], ov()).unwrap_err().to_string();
        assert!(err.contains(says) && err.contains("c.toml"), "{bad}: {err}");
    }
}

#[test]
fn claude_permission_settings_merge_agent_then_project_and_unknown_modes_are_refused() {
    let file = (
        "c.toml",
        "[agent]\npermission_mode = \"acceptEdits\"\nallowed_tools = [\"Read\"]\n\
         disallowed_tools = [\"WebFetch\"]\n\n[projects.a]\npath = \"/srv/a\"\n\
         permission_mode = \"plan\"\nallowed_tools = [\"Bash(npm test)\"]\n\n\
         [projects.b]\npath = \"/srv/b\"\n",
    );
    let ov = || Overrides {
        config: Some("c.toml".into()),
        jobs_dir: None,
    };
    let c = load(&[file], &[], ov()).unwrap();
    let a = c.permissions("a");
    assert_eq!(a.mode.as_deref(), Some("plan"));
    assert_eq!(a.allowed_tools, ["Read", "Bash(npm test)"]);
    assert_eq!(a.disallowed_tools, ["WebFetch"]);
    assert_eq!(c.permissions("b").mode.as_deref(), Some("acceptEdits"));
    let none = load(&[], &[], Overrides::default()).unwrap();
    assert_eq!(none.permissions("x"), Permissions::default());
    for (body, says) in [
        (
            "[agent]\npermission_mode = \"yolo\"\n",
            "[agent] permission_mode 'yolo' is not one of Claude Code's modes",
        ),
        (
            "[projects.a]\npath = \"/srv/a\"\npermission_mode = \"Default\"\n",
            "[projects.a] permission_mode 'Default'",
        ),
        ("[agent]\nallowed_tools = [\" \"]\n", "never an empty one"),
    ] {
        let err = load(&[("c.toml", body)], &[], ov())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says) && err.contains("c.toml"), "{err}");
    }
}

#[test]
fn hosts_are_read_with_their_defaults() {
    let ov = Overrides {
        config: Some("c.toml".into()),
        ..Overrides::default()
    };
    let body = "[hosts.gpu2]\nssh = \"ops@gpu2.example\"\nssh_options = [\"-p\", \"2222\"]\n\
                luzia = \"/usr/local/bin/luzia\"\njobs_dir = \"/srv/jobs\"\n\
                [hosts.\"build-1.eu\"]\nssh = \"build1\"\n";
    let cfg = load(&[("c.toml", body)], &[], ov).unwrap();
    assert_eq!(cfg.hosts.keys().collect::<Vec<_>>(), ["build-1.eu", "gpu2"]);
    assert_eq!(
        cfg.hosts["gpu2"],
        HostConfig {
            ssh: "ops@gpu2.example".into(),
            ssh_options: vec!["-p".into(), "2222".into()],
            luzia: "/usr/local/bin/luzia".into(),
            jobs_dir: Some("/srv/jobs".into()),
        }
    );
    assert_eq!(cfg.hosts["build-1.eu"], HostConfig::new("build1"));
    assert_eq!(cfg.hosts["build-1.eu"].luzia, "luzia");
    assert!(
        load(&[], &[], Overrides::default())
            .unwrap()
            .hosts
            .is_empty()
    );
}

#[test]
fn bad_hosts_name_the_table_the_key_and_the_file() {
    for (body, says) in [
        ("[hosts.gpu2]\nssh = \"a\"\nport = 22", "port"),
        ("[hosts.gpu2]\nssh_options = [\"-p\", \"22\"]", "ssh"),
        ("[hosts.gpu2]\nssh = \"  \"", "[hosts.gpu2] ssh is empty"),
        ("[hosts.gpu2]\nssh = \"-oProxyCommand=x\"", "ssh_options"),
        (
            "[hosts.gpu2]\nssh = \"a\"\nluzia = \"\"",
            "[hosts.gpu2] luzia is empty",
        ),
        (
            "[hosts.gpu2]\nssh = \"a\"\njobs_dir = \"\"",
            "[hosts.gpu2] jobs_dir is empty",
        ),
        (
            "[hosts.gpu2]\nssh = \"a\"\nssh_options = [\"a\\u0000b\"]",
            "ssh_options holds a NUL",
        ),
        ("[hosts.local]\nssh = \"a\"", "[hosts.local]"),
        ("[hosts.\"a@b\"]\nssh = \"a\"", "host name"),
        ("[hosts.\".x\"]\nssh = \"a\"", "host name"),
        ("[hosts.gpu2]\nssh = 22", "ssh"),
    ] {
        let ov = Overrides {
            config: Some("c.toml".into()),
            ..Overrides::default()
        };
        let err = load(&[("c.toml", body)], &[], ov).unwrap_err().to_string();
        assert!(
            err.contains(says) && err.contains("c.toml"),
            "{body}: {err}"
        );
    }
}

/// The defaults with and without the orchestrator's jobs root on this machine, and the queue of
/// a root given by a flag, the environment or the file.
#[test]
fn defaults_follow_the_orchestrators_root_and_the_queue_follows_its_jobs_root() {
    let system = |exists: bool| move |p: &Path| exists && p == Path::new(DEFAULT_JOBS_DIR);
    let home = [("HOME", "/home/ana")];
    let state = [("XDG_STATE_HOME", "/state")];
    let file = |body: &str| (body.to_owned(), Some(PathBuf::from("c.toml")));
    // env, file, flag, system root exists => jobs, queue, log, and their sources
    type Row<'a> = (
        &'a [(&'a str, &'a str)],
        Option<(String, Option<PathBuf>)>,
        Option<&'a str>,
        bool,
        [(&'a str, Source); 3],
    );
    let user = Source::User;
    let own = Source::JobsRoot;
    let rows: Vec<Row> = vec![
        (
            &home,
            None,
            None,
            false,
            [
                ("/home/ana/.local/state/luzia/jobs", user.clone()),
                ("/home/ana/.local/state/luzia/queue", user.clone()),
                (
                    "/home/ana/.local/state/luzia/notifications.log",
                    user.clone(),
                ),
            ],
        ),
        (
            &state,
            None,
            None,
            false,
            [
                ("/state/luzia/jobs", user.clone()),
                ("/state/luzia/queue", user.clone()),
                ("/state/luzia/notifications.log", user.clone()),
            ],
        ),
        (
            &home,
            None,
            None,
            true,
            [
                (DEFAULT_JOBS_DIR, Source::Default),
                (DEFAULT_QUEUE_DIR, Source::Default),
                (DEFAULT_NOTIFICATIONS_LOG, Source::Default),
            ],
        ),
        // No HOME at all: the orchestrator's places, as before.
        (
            &[],
            None,
            None,
            false,
            [
                (DEFAULT_JOBS_DIR, Source::Default),
                (DEFAULT_QUEUE_DIR, Source::Default),
                (DEFAULT_NOTIFICATIONS_LOG, Source::Default),
            ],
        ),
        // A root of its own keeps its queue and log in it, wherever the root came from.
        (
            &home,
            None,
            Some("/x"),
            true,
            [
                ("/x", Source::Flag),
                ("/x/.luzia/queue", own.clone()),
                ("/x/.luzia/notifications.log", own.clone()),
            ],
        ),
        (
            &[("LUZIA_JOBS_DIR", "/e"), ("HOME", "/h")],
            None,
            None,
            false,
            [
                ("/e", Source::Env("LUZIA_JOBS_DIR")),
                ("/e/.luzia/queue", own.clone()),
                ("/e/.luzia/notifications.log", own.clone()),
            ],
        ),
        (
            &home,
            Some(file("jobs_dir = \"/f\"\nqueue_dir = \"/q\"")),
            None,
            false,
            [
                ("/f", Source::File("c.toml".into())),
                ("/q", Source::File("c.toml".into())),
                ("/f/.luzia/notifications.log", own.clone()),
            ],
        ),
        // The orchestrator's root named outright keeps the orchestrator's queue; the per-user
        // one named outright keeps the per-user queue.
        (
            &home,
            None,
            Some(DEFAULT_JOBS_DIR),
            false,
            [
                (DEFAULT_JOBS_DIR, Source::Flag),
                (DEFAULT_QUEUE_DIR, Source::Default),
                (DEFAULT_NOTIFICATIONS_LOG, Source::Default),
            ],
        ),
        (
            &home,
            None,
            Some("/home/ana/.local/state/luzia/jobs"),
            true,
            [
                ("/home/ana/.local/state/luzia/jobs", Source::Flag),
                ("/home/ana/.local/state/luzia/queue", user.clone()),
                (
                    "/home/ana/.local/state/luzia/notifications.log",
                    user.clone(),
                ),
            ],
        ),
        (
            &[
                ("HOME", "/h"),
                ("LUZIA_QUEUE_DIR", "/lq"),
                ("LUZIA_NOTIFICATIONS_LOG", "/ln"),
            ],
            None,
            Some("/x"),
            false,
            [
                ("/x", Source::Flag),
                ("/lq", Source::Env("LUZIA_QUEUE_DIR")),
                ("/ln", Source::Env("LUZIA_NOTIFICATIONS_LOG")),
            ],
        ),
    ];
    for (env, file, flag, exists, want) in rows {
        let dir = tempfile::tempdir().unwrap();
        let config = match &file {
            Some((body, _)) => {
                let p = dir.path().join("c.toml");
                std::fs::write(&p, body).unwrap();
                Some(p)
            }
            // An empty file, so that no file of this machine is read.
            None => {
                let p = dir.path().join("empty.toml");
                std::fs::write(&p, "").unwrap();
                Some(p)
            }
        };
        let vars: HashMap<&str, PathBuf> =
            env.iter().map(|(k, v)| (*k, PathBuf::from(v))).collect();
        let ov = Overrides {
            config,
            jobs_dir: flag.map(PathBuf::from),
        };
        let cfg = Config::load_probed(&ov, &|k| vars.get(k).cloned(), &system(exists)).unwrap();
        let in_file = |s: &Source| match s {
            Source::File(p) => Source::File(p.strip_prefix(dir.path()).unwrap().to_owned()),
            other => other.clone(),
        };
        let got = [
            (cfg.jobs_dir.clone(), in_file(&cfg.jobs_dir_source)),
            (cfg.queue_dir.clone(), in_file(&cfg.queue_dir_source)),
            (
                cfg.notifications_log.clone(),
                in_file(&cfg.notifications_log_source),
            ),
        ];
        let want = want.map(|(p, s)| (PathBuf::from(p), s));
        assert_eq!(got, want, "{env:?} {file:?} {flag:?} {exists}");
    }
}

#[test]
fn the_file_to_edit_is_named_even_when_none_exists() {
    let cfg = load(&[], &[], Overrides::default()).unwrap();
    assert!(cfg.file.is_none());
    let said = cfg.file_to_edit();
    assert!(
        said.contains("xdg/luzia/config.toml") && said.contains("`luzia init`"),
        "{said}"
    );
}
