//! Errors and exit codes: bad ids, unknown jobs, a missing jobs root, bad config files, and
//! usage errors. Usage errors exit 2; everything else that fails exits 1 and says what to fix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use common::*;

#[test]
fn a_path_as_job_id_is_refused_with_exit_2() {
    let sb = Sandbox::with_samples();
    for args in [
        &["logs", "../../etc/passwd"][..],
        &["logs", "../142315-a1b2"],
        &["jobs", "../../etc/passwd"],
        &["logs", "-n", "3", "a/b"],
    ] {
        let out = sb.luzia().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr_of(&out);
        assert!(err.contains("is not a valid job id"), "{args:?}: {err}");
        assert_eq!(stdout_of(&out), "", "{args:?}");
    }
    // The refused id is shown escaped: no raw control bytes reach the terminal.
    let out = sb
        .luzia()
        .args(["logs", "x\x1b]0;pwned\x07"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!out.stderr.contains(&0x1b) && !out.stderr.contains(&0x07));
}

#[test]
fn an_unknown_job_exits_1_naming_the_id_and_the_root() {
    let sb = Sandbox::with_samples();
    for sub in ["logs", "jobs"] {
        let out = sb.luzia().args([sub, "999999-nope"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{sub}");
        let err = stderr_of(&out);
        assert!(err.contains("'999999-nope'"), "{sub}: {err}");
        assert!(err.contains(&sb.root.display().to_string()), "{sub}: {err}");
        assert_eq!(stdout_of(&out), "");
    }
}

/// A jobs root that does not exist yet is an empty fleet for a listing, which says what to do
/// first; a command about one job has nothing to act on and says how to point elsewhere.
#[test]
fn a_missing_jobs_root_is_listed_empty_and_a_job_in_it_exits_1() {
    let sb = Sandbox::new();
    let missing = sb.tmp.path().join("no-such-root");
    let run = |args: &[&str]| {
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
        isolate_assert(&mut cmd, &sb.xdg);
        cmd.arg("--jobs-dir")
            .arg(&missing)
            .args(args)
            .output()
            .unwrap()
    };
    let listed = run(&["jobs"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr_of(&listed));
    let said = stdout_of(&listed);
    assert!(
        said.contains(&format!("no jobs yet in {}", missing.display()))
            && said.contains("luzia run"),
        "{said}"
    );
    let json = run(&["jobs", "--json"]);
    assert_eq!(
        (json.status.code(), stdout_of(&json).trim()),
        (Some(0), "[]")
    );
    assert!(!missing.exists(), "a listing makes nothing");
    for args in [&["jobs", "142315-a1b2"][..], &["logs", "142315-a1b2"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr_of(&out);
        assert!(
            err.contains(&missing.display().to_string()),
            "{args:?}: {err}"
        );
        assert!(err.contains("--jobs-dir"), "{args:?}: {err}");
        assert!(err.contains("LUZIA_JOBS_DIR"), "{args:?}: {err}");
        assert_eq!(stdout_of(&out), "", "{args:?}");
    }
}

#[test]
fn a_jobs_root_that_is_a_file_exits_1() {
    let sb = Sandbox::new();
    let file = sb.tmp.path().join("file");
    std::fs::write(&file, "not a dir").unwrap();
    let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
    isolate_assert(&mut cmd, &sb.xdg);
    let out = cmd
        .arg("--jobs-dir")
        .arg(&file)
        .arg("jobs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn an_unknown_config_key_exits_1_naming_the_key_and_the_file() {
    let sb = Sandbox::with_samples();
    let cases = [
        ("jobs_dri = \"/x\"\n", "jobs_dri"),
        (
            "[agent]\ncommand = [\"claude\"]\nmax_concurent = 3\n",
            "max_concurent",
        ),
        ("[theme]\ncolours = \"auto\"\n", "colours"),
    ];
    for (i, (body, key)) in cases.iter().enumerate() {
        let path = sb.tmp.path().join(format!("config-{i}.toml"));
        std::fs::write(&path, body).unwrap();
        let out = sb
            .luzia()
            .arg("--config")
            .arg(&path)
            .arg("jobs")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{body}");
        let err = stderr_of(&out);
        assert!(err.contains(key), "{key}: {err}");
        assert!(err.contains(&path.display().to_string()), "{key}: {err}");
        assert_eq!(stdout_of(&out), "", "nothing listed with a bad config");
    }
}

#[test]
fn a_bad_keys_table_stops_the_cockpit_before_it_starts_saying_what_is_accepted() {
    let sb = Sandbox::with_samples();
    let cases = [
        (
            "[keys]\nqiut = \"x\"\n",
            &["[keys] has no action 'qiut'", "quit"][..],
        ),
        (
            "[keys.inbox]\nnext = \"hyper-n\"\n",
            &["[keys.inbox] next", "'hyper-n' is not a key", "ctrl-"],
        ),
        (
            "[keys.inbx]\nnext = \"x\"\n",
            &["no mode 'inbx'", "input_bar"],
        ),
    ];
    for (i, (body, says)) in cases.iter().enumerate() {
        let path = sb.tmp.path().join(format!("keys-{i}.toml"));
        std::fs::write(&path, body).unwrap();
        let out = sb
            .luzia()
            .arg("--config")
            .arg(&path)
            .arg("tui")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{body}");
        let err = stderr_of(&out);
        assert!(err.contains(&path.display().to_string()), "{body}: {err}");
        for s in *says {
            assert!(err.contains(s), "{body}: {err}");
        }
        assert_eq!(stdout_of(&out), "", "the screen is never taken");
    }
    // A value that is no key at all is the file's shape: every command refuses it.
    let path = sb.tmp.path().join("keys-shape.toml");
    std::fs::write(&path, "[keys]\nquit = 5\n").unwrap();
    let out = sb
        .luzia()
        .arg("--config")
        .arg(&path)
        .arg("jobs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains("[keys] quit") && err.contains("list of keys"),
        "{err}"
    );
    assert!(err.contains(&path.display().to_string()), "{err}");
}

#[test]
fn the_config_in_xdg_config_home_is_read_and_checked() {
    // Proves the isolation works both ways: the sandbox's config home is the one read.
    let sb = Sandbox::with_samples();
    let path = sb.xdg.join("luzia/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "read_onyl = true\n").unwrap();
    let out = sb.luzia().arg("jobs").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("read_onyl"), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
}

#[test]
fn a_missing_or_invalid_config_file_exits_1() {
    let sb = Sandbox::with_samples();
    let absent = sb.tmp.path().join("absent.toml");
    let out = sb
        .luzia()
        .arg("--config")
        .arg(&absent)
        .arg("jobs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains(&absent.display().to_string()));

    let bad = sb.tmp.path().join("bad.toml");
    std::fs::write(&bad, "[agent]\nmax_concurrent = 0\n").unwrap();
    let out = sb
        .luzia()
        .arg("--config")
        .arg(&bad)
        .arg("jobs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("max_concurrent"), "{err}");
    assert!(err.contains(&bad.display().to_string()), "{err}");
}

#[test]
fn jobs_dir_flag_wins_over_the_environment_and_the_config() {
    let sb = Sandbox::with_samples();
    let cfg = sb.tmp.path().join("c.toml");
    std::fs::write(&cfg, "jobs_dir = \"/nonexistent/from-config\"\n").unwrap();
    let out = sb
        .luzia()
        .env("LUZIA_JOBS_DIR", "/nonexistent/from-env")
        .arg("--config")
        .arg(&cfg)
        .args(["jobs", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let items: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(items.len(), 12);
}

#[test]
fn usage_errors_exit_2() {
    let sb = Sandbox::with_samples();
    for args in [
        &["frobnicate"][..],
        &["jobs", "--status", "sleeping"],
        &["jobs", "--limit", "many"],
        &["logs"],
        &["logs", "142315-a1b2", "-n", "-3"],
    ] {
        let out = sb.luzia().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert_eq!(stdout_of(&out), "", "{args:?}");
    }
    let out = sb.luzia().arg("frobnicate").output().unwrap();
    assert!(stderr_of(&out).contains("frobnicate"));
    let out = sb
        .luzia()
        .args(["jobs", "--status", "sleeping"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(err.contains("unknown status 'sleeping'"), "{err}");
    assert!(err.contains("needs_input"), "{err}");
}
