//! `luzia doctor` as a new user meets it: a fresh HOME, no config file, only what the
//! environment gives. Credentials are named, never shown; the exit code says whether a first
//! job can run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;

/// Values that must never be printed.
const KEY: &str = "sk-ant-api03-DOCTOR-NEVER-PRINTS-THIS";
const FOREIGN: &str = "foreign-secret-value-42";

/// A fresh machine for one user: HOME, XDG directories, the jobs root and queue below it, and a
/// `bin/` with a stand-in `claude` (when `with_claude`) before the system's PATH.
fn fresh(with_claude: bool) -> (tempfile::TempDir, assert_cmd::Command) {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    for d in ["home", "xdg-config", "xdg-state", "bin"] {
        std::fs::create_dir(p.join(d)).unwrap();
    }
    if with_claude {
        let claude = p.join("bin/claude");
        std::fs::write(&claude, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
    cmd.env_clear()
        .env("HOME", p.join("home"))
        .env("XDG_CONFIG_HOME", p.join("xdg-config"))
        .env("XDG_STATE_HOME", p.join("xdg-state"))
        .env("LUZIA_JOBS_DIR", p.join("xdg-state/luzia/jobs"))
        .env("LUZIA_QUEUE_DIR", p.join("xdg-state/luzia/queue"))
        .env("PATH", format!("{}:/usr/bin:/bin", p.join("bin").display()))
        .env("MY_SECRET_TOKEN", FOREIGN)
        .env("NO_COLOR", "1")
        .timeout(HANG_GUARD)
        .arg("doctor");
    (tmp, cmd)
}

fn line<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{out}"))
}

#[test]
fn without_credentials_doctor_names_them_and_exits_1() {
    let (tmp, mut cmd) = fresh(true);
    let out = cmd.output().unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let creds = line(&text, "problem  credentials");
    assert!(creds.contains("ANTHROPIC_API_KEY"), "{creds}");
    assert!(
        creds.contains("the agent will not be able to log in"),
        "{creds}"
    );
    assert!(
        text.contains("fix: export ANTHROPIC_API_KEY=<your key>"),
        "{text}"
    );
    assert!(
        line(&text, "ok       agent").contains("2.1.197 (Claude Code)"),
        "{text}"
    );
    assert!(
        line(&text, "ok       config").contains("none is needed"),
        "{text}"
    );
    // The directories do not exist yet: they will be created.
    let state = tmp.path().join("xdg-state");
    assert!(
        line(&text, "ok       jobs root").contains("will be created"),
        "{text}"
    );
    assert!(!state.join("luzia").exists(), "doctor creates nothing");
    assert!(
        text.contains("a job cannot run until each problem is fixed"),
        "{text}"
    );
    assert!(
        !text.contains(FOREIGN) && !text.contains("MY_SECRET_TOKEN"),
        "{text}"
    );
}

#[test]
fn with_a_key_doctor_names_it_never_shows_it_and_exits_0() {
    let (_tmp, mut cmd) = fresh(true);
    let out = cmd
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let creds = line(&text, "ok       credentials");
    assert!(
        creds.contains("Claude Code will log in with ANTHROPIC_API_KEY; set now: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL"),
        "{creds}"
    );
    assert!(
        line(&text, "ok       passed").contains("ANTHROPIC_*"),
        "{text}"
    );
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("127.0.0.1:9"), "{text}");
    assert!(!text.contains(FOREIGN), "{text}");
    assert!(text.contains("ready for a first job"), "{text}");
    // As JSON too, with no value in it.
    let (_tmp, mut cmd) = fresh(true);
    let out = cmd
        .env("ANTHROPIC_API_KEY", KEY)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ready"], true, "{v}");
    assert!(!v.to_string().contains(KEY));
}

#[test]
fn without_the_agent_program_doctor_says_how_to_install_it() {
    let (tmp, mut cmd) = fresh(false);
    let out = cmd
        .env("PATH", tmp.path().join("bin"))
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        line(&text, "problem  agent").contains("`claude` ([agent] command) is not on PATH"),
        "{text}"
    );
    assert!(
        text.contains("npm install -g @anthropic-ai/claude-code"),
        "{text}"
    );
    // git, tmux and ssh are not on this PATH either: warnings, not problems.
    for tool in ["git", "tmux", "ssh"] {
        assert!(
            line(&text, &format!("warning  {tool}")).contains("not on PATH"),
            "{text}"
        );
    }
}

#[test]
fn a_config_that_does_not_load_is_reported_not_fatal() {
    let (tmp, mut cmd) = fresh(true);
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, "jobs_dir = [").unwrap();
    let out = cmd
        .env("LUZIA_CONFIG", &file)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        line(&text, "problem  config").contains(&file.display().to_string()),
        "{text}"
    );
    assert!(text.contains("inotify"), "{text}");
}

/// As an ordinary user, a jobs root it cannot create (below a directory closed to it) is a
/// blocker naming the directory, with the ways to choose another; its own directories are fine.
#[test]
fn a_jobs_root_the_user_cannot_write_is_a_blocker() {
    if !root_or_skip("running doctor as another user needs root") {
        return;
    }
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::Builder::new()
        .prefix("luzia-doctor-user-")
        .tempdir()
        .unwrap();
    let base = tmp.path();
    for d in ["", "home", "bin", "closed"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
        std::fs::set_permissions(base.join(d), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(base.join("closed"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let user = common::user::User::create(&base.join("home"));
    user.give(&base.join("home"));
    let claude = base.join("bin/claude");
    std::fs::write(&claude, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let luzia = common::user::reachable_luzia(&base.join("bin"));
    let doctor = |jobs: &std::path::Path| {
        let mut cmd = std::process::Command::new(&luzia);
        cmd.env_clear()
            .env("HOME", base.join("home"))
            .env("XDG_CONFIG_HOME", base.join("home/.config"))
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", base.join("bin").display()),
            )
            .env("ANTHROPIC_API_KEY", KEY)
            .env("LUZIA_JOBS_DIR", jobs)
            .env("LUZIA_QUEUE_DIR", base.join("home/queue"))
            .uid(user.uid)
            .arg("doctor");
        assert_cmd::Command::from_std(cmd)
            .timeout(HANG_GUARD)
            .output()
            .unwrap()
    };
    let out = doctor(&base.join("closed/jobs"));
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let jobs = line(&text, "problem  jobs root");
    assert!(
        jobs.contains("cannot be created")
            && jobs.contains(&base.join("closed").display().to_string()),
        "{jobs}"
    );
    assert!(
        text.contains("--jobs-dir DIR, LUZIA_JOBS_DIR, or jobs_dir in the config"),
        "{text}"
    );
    assert!(
        line(&text, "ok       queue").contains("will be created"),
        "{text}"
    );
    // Its own: ready.
    let out = doctor(&base.join("home/jobs"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    drop(user);
}
