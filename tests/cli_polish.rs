//! The plain CLI's small courtesies: a mistyped command is named as such, with the command it
//! was likely meant to be; answers are signed with the operator's name even when `$USER` is
//! unset; the completions complete what is on disk; the manual page has every section a
//! manual page should.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use common::*;

/// Writes a config with the projects `names` (each at the sandbox's own directory).
fn configure_projects(sb: &Sandbox, names: &[&str]) {
    let path = sb.xdg.join("luzia/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut toml = String::new();
    for name in names {
        toml.push_str(&format!(
            "[projects.{name}]\npath = {:?}\n",
            sb.tmp.path().display().to_string()
        ));
    }
    std::fs::write(&path, toml).unwrap();
}

// ---------------------------------------------------------------------------------------------
// "Did you mean"
// ---------------------------------------------------------------------------------------------

#[test]
fn a_mistyped_command_is_refused_with_the_command_it_was_likely_meant_to_be() {
    let sb = Sandbox::with_samples();
    for args in [
        &["stauts"][..],
        &["stauts", "--alerts"],
        &["lgos", "142315-a1b2"],
    ] {
        let out = sb.luzia().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr_of(&out);
        let meant = if args[0] == "stauts" {
            "status"
        } else {
            "logs"
        };
        assert!(
            err.contains(&format!(
                "unknown command '{}': did you mean '{meant}'?",
                args[0]
            )),
            "{args:?}: {err}"
        );
        assert_eq!(stdout_of(&out), "");
    }
}

#[test]
fn a_lone_unknown_word_is_an_unknown_command() {
    let sb = Sandbox::with_samples();
    let out = sb.luzia().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("unknown command 'frobnicate'"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn a_configured_project_keeps_the_shorthand_even_when_it_looks_like_a_typo() {
    let sb = Sandbox::with_samples();
    configure_projects(&sb, &["stauts"]);
    let out = sb.luzia().arg("stauts").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("usage: luzia stauts TASK"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Who signs
// ---------------------------------------------------------------------------------------------

/// The name /etc/passwd gives the uid the tests run as.
fn own_name() -> String {
    let uid = rustix::process::getuid().as_raw().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == uid)
        .map(|f| f[0].to_owned())
        .expect("the test's uid has a line in /etc/passwd")
}

#[test]
fn without_user_in_the_environment_a_stop_is_signed_with_the_uids_name() {
    let sb = Sandbox::new();
    let sleep = sleeper();
    let id = "120000-abcd";
    sb.write(
        id,
        "meta.json",
        r#"{"project": "p", "task": "sleep", "started": "2026-01-09T14:23:15Z", "status": "running"}"#,
    );
    sb.write(id, "output.log", "working\n");
    sb.write_pid(id, sleep.id());
    let out = sb
        .luzia()
        .env_remove("USER")
        .env_remove("LOGNAME")
        .args(["kill", id, "--grace", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stop: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.job_dir(id).join("stop.json")).unwrap()).unwrap();
    let by = stop["requested_by"].as_str().unwrap();
    assert!(
        by.starts_with(&format!("{}@", own_name())),
        "signed {by}, not unknown@"
    );
}
