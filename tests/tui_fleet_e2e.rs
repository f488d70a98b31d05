//! End-to-end: several hosts in one cockpit, over real OpenSSH. Each host is a real `sshd` on
//! 127.0.0.1 (tests/common/sshd.rs) with its own keys, config and jobs root; its jobs are started
//! with `luzia run` on that root (the agent is `sh` reading the task as its script), so real
//! supervisors and agents write them. The cockpit shows every host with a HOST column; a question
//! raised on one host is answered from the cockpit and lands there exactly once; a host whose
//! sshd is killed goes stale while the other goes on, and comes back when it is restarted; a host
//! with a wrong key shows ssh's error; the output pane follows a remote log; and a read-only
//! cockpit runs no writing command on any host.
//!
//! Without tmux or sshd these tests print a loud SKIPPED message and pass, unless CI asks for
//! them (`LUZIA_REQUIRE_TMUX=1`, `LUZIA_REQUIRE_SSHD=1`), where a missing one fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
mod fleet_hosts;
#[macro_use]
mod tmux;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fleet_hosts::{CONNECT, Host, answer_staging, cockpit_config, opts, row};
use tmux::{Cockpit, Sandbox, sh_quote, wait_file};

/// Reconnecting after a restart waits out the link's backoff (1, 2, 4 … s) on a loaded machine.
const RECONNECT: Duration = Duration::from_secs(60);

/// Two hosts, started and each with a job; `None` when sshd is missing (skipped loudly).
fn two_hosts(sb: &Sandbox) -> Option<(Host, Host)> {
    Some((Host::start(sb, "alpha")?, Host::start(sb, "beta")?))
}

/// Both hosts and the local root in one table with a HOST column; a question raised on beta
/// is answered from the cockpit and lands on beta exactly once.
#[test]
fn a_question_on_one_host_is_answered_from_the_cockpit_exactly_once_there() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some((alpha, beta)) = two_hosts(&sb) else {
        return;
    };
    sb.finished_job("090000-here", "api", "a local job", 3, 0);
    let on_alpha = alpha.run(&sb, "echo building on alpha; exec sleep 1000");
    let (on_beta, answer) = beta.asking(&sb);
    let config = cockpit_config(
        &sb,
        &[
            alpha.sshd.host_toml(Path::new(tmux::BIN)),
            beta.sshd.host_toml(Path::new(tmux::BIN)),
        ],
    );
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "every host's jobs, with a HOST column", |s| {
        s.text().contains("HOST")
            && row(s, &on_alpha, "alpha").is_some()
            && row(s, &on_beta, "beta").is_some()
            && s.job_row("090000-here").is_some()
    });
    ck.wait_for_up_to(CONNECT, "beta's job waiting", |s| {
        row(s, &on_beta, "beta").is_some_and(|r| r.contains("waiting"))
    });

    answer_staging(&ck, &answer);

    // Once: one exchange in beta's history, by the remote luzia; nothing left pending.
    beta.recorded_response(&on_beta);
    let dir = beta.job_dir(&on_beta);
    for gone in ["clarification.json", "response.json"] {
        assert!(!dir.join(gone).exists(), "{gone} left behind on beta");
    }
    // Nothing of it on alpha or here.
    assert!(!alpha.job_dir(&on_alpha).join("history.jsonl").exists());
    ck.wait_for("beta's job running again", |s| {
        row(s, &on_beta, "beta").is_some_and(|r| r.contains("running"))
    });
}

/// A host whose sshd dies keeps its rows, marked stale; the other host's new job still shows;
/// restarted, the host reconnects and its rows are live again.
#[test]
fn a_dropped_host_goes_stale_the_other_goes_on_and_it_comes_back() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some((mut alpha, beta)) = two_hosts(&sb) else {
        return;
    };
    let on_alpha = alpha.run(&sb, "echo alpha works; exec sleep 1000");
    let on_beta = beta.run(&sb, "echo beta works; exec sleep 1000");
    let config = cockpit_config(
        &sb,
        &[
            alpha.sshd.host_toml(Path::new(tmux::BIN)),
            beta.sshd.host_toml(Path::new(tmux::BIN)),
        ],
    );
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "both hosts' jobs running", |s| {
        row(s, &on_alpha, "alpha").is_some_and(|r| r.contains("running") && !r.contains("stale"))
            && row(s, &on_beta, "beta").is_some_and(|r| r.contains("running"))
    });

    alpha.sshd.kill();
    ck.wait_for_up_to(CONNECT, "alpha's job kept, marked stale", |s| {
        row(s, &on_alpha, "alpha").is_some_and(|r| r.contains("stale"))
    });
    let later = beta.run(&sb, "echo beta goes on; exec sleep 1000");
    ck.wait_for_up_to(CONNECT, "beta's new job while alpha is down", |s| {
        row(s, &later, "beta").is_some()
            && row(s, &on_beta, "beta").is_some_and(|r| !r.contains("stale"))
            && row(s, &on_alpha, "alpha").is_some_and(|r| r.contains("stale"))
    });

    alpha.sshd.restart();
    ck.wait_for_up_to(RECONNECT, "alpha reconnected, its job live again", |s| {
        row(s, &on_alpha, "alpha").is_some_and(|r| !r.contains("stale") && r.contains("running"))
    });
}

/// A host whose key the server refuses shows ssh's error as its row; the other host is shown.
#[test]
fn a_host_with_a_wrong_key_shows_its_error() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some((alpha, beta)) = two_hosts(&sb) else {
        return;
    };
    let on_beta = beta.run(&sb, "echo beta works; exec sleep 1000");
    let config = cockpit_config(
        &sb,
        &[
            alpha.sshd.wrong_key_toml(),
            beta.sshd.host_toml(Path::new(tmux::BIN)),
        ],
    );
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "alpha's ssh error and beta's job", |s| {
        s.job_rows()
            .iter()
            .any(|r| r.contains("alpha") && r.contains("Permission denied"))
            && row(s, &on_beta, "beta").is_some()
    });
}

/// The output pane of a remote job follows its log over ssh: what it printed, then what it
/// prints next.
#[test]
fn the_output_pane_follows_a_remote_log() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some(beta) = Host::start(&sb, "beta") else {
        return;
    };
    let go = beta.dir.join("go");
    let go = sh_quote(go.to_str().unwrap());
    let id = beta.run(
        &sb,
        &format!(
            "echo first remote line; while [ ! -e {go} ]; do sleep 0.05; done; \
             echo second remote line; exec sleep 1000"
        ),
    );
    let config = cockpit_config(&sb, &[beta.sshd.host_toml(Path::new(tmux::BIN))]);
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "beta's job", |s| row(s, &id, "beta").is_some());
    // The only job is the one selected; its output comes over ssh.
    ck.wait_for_up_to(CONNECT, "the remote log's first line", |s| {
        s.output_lines()
            .iter()
            .any(|l| l.contains("first remote line"))
    });
    fs::write(beta.dir.join("go"), "").unwrap();
    ck.wait_for("the line printed after it was opened", |s| {
        s.output_lines()
            .iter()
            .any(|l| l.contains("second remote line"))
    });
    assert!(following(&id), "`luzia logs -f {id}` runs on beta");

    // The job goes on, quietly; the follower there ends with the cockpit.
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    common::wait_for(
        "the remote follower to end with the pane",
        Duration::from_secs(20),
        || (!following(&id)).then_some(()),
    );
}

/// Whether a `luzia logs -f ID` is running (on the test's hosts, which are this machine).
fn following(id: &str) -> bool {
    common::all_pids().into_iter().any(|pid| {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        words.contains(&&b"logs"[..]) && words.contains(&id.as_bytes())
    })
}

/// A read-only cockpit shows another host's question but runs no writing command there: the
/// host's `luzia` records every command it is asked to run, and only reads are among them.
#[test]
fn read_only_runs_no_writing_command_on_any_host() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some(beta) = Host::start(&sb, "beta") else {
        return;
    };
    let (id, answer) = beta.asking(&sb);
    let bin = sh_quote(tmux::BIN);
    let record = beta.dir.join("commands");
    let wrapper = beta.dir.join("luzia-recording");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {}\nexec {bin} \"$@\"\n",
            sh_quote(record.to_str().unwrap())
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let config = cockpit_config(&sb, &[beta.sshd.host_toml(&wrapper)]);
    let ck = Cockpit::start(&sb, opts(&sb, &config).arg("--read-only"));
    ck.wait_for_up_to(CONNECT, "beta's job waiting", |s| {
        row(s, &id, "beta").is_some_and(|r| r.contains("waiting"))
    });
    ck.key("i");
    ck.wait_text("Which database?");
    ck.keys(&["2", "Enter"]);
    ck.wait_text("read-only");
    ck.esc();
    ck.key("K");
    ck.key("y");
    // Whatever the keys asked for has been refused by now: the cockpit answers in order.
    ck.wait_text("read-only");

    let commands = fs::read_to_string(&record).unwrap_or_default();
    assert!(
        commands.lines().any(|l| l.starts_with("watch")),
        "the link ran through the wrapper: {commands:?}"
    );
    for line in commands.lines() {
        let verb = line.split_whitespace().next().unwrap_or("");
        assert!(
            ["watch", "logs", "diff", "jobs"].contains(&verb),
            "a read-only cockpit ran `luzia {line}` on beta"
        );
    }
    let dir = beta.job_dir(&id);
    assert!(!answer.exists() || fs::read_to_string(&answer).unwrap().is_empty());
    assert!(!dir.join("response.json").exists());
    assert!(!dir.join("history.jsonl").exists());
}

/// `--host` naming no configured host is refused before the screen is taken, naming the hosts
/// there are and the config file.
#[test]
fn an_unknown_host_is_refused_naming_the_configured_ones() {
    let sb = Sandbox::new();
    let config = cockpit_config(
        &sb,
        &["[hosts.gpu2]\nssh = \"ops@gpu2.example\"\n".to_owned()],
    );
    let out = Command::new(tmux::BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("XDG_STATE_HOME", &sb.state)
        .arg("--config")
        .arg(&config)
        .arg("--jobs-dir")
        .arg(&sb.root)
        .args(["tui", "--host", "gpu9"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--host gpu9"), "{stderr}");
    assert!(stderr.contains("gpu2"), "{stderr}");
    assert!(stderr.contains(config.to_str().unwrap()), "{stderr}");
}

/// `n` picks the host, then the task goes there: started by beta's luzia on beta's root, and
/// shown as beta's job; `K` kills it there.
#[test]
fn a_task_typed_in_the_cockpit_is_started_on_the_host_picked() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some(beta) = Host::start(&sb, "beta") else {
        return;
    };
    let first = beta.run(&sb, "echo beta works; exec sleep 1000");
    // A project here too, so that there is a host to pick.
    let here = sb.tmp.path().join("here");
    fs::create_dir_all(&here).unwrap();
    let config = cockpit_config(
        &sb,
        &[
            format!("[projects.here]\npath = {here:?}\n"),
            beta.sshd.host_toml(Path::new(tmux::BIN)),
        ],
    );
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "beta's job", |s| row(s, &first, "beta").is_some());
    ck.key("n");
    // The picker offers the selected job's host first: beta.
    ck.wait_for("the host picker with beta's projects", |s| {
        s.contains("new task on host") && s.contains("api")
    });
    ck.key("Enter");
    ck.wait_text("new task for api on beta");
    ck.type_text("echo typed in the cockpit; exec sleep 1000");
    ck.key("Enter");

    let started = common::wait_for("the task on beta's root", Duration::from_secs(30), || {
        fs::read_dir(&beta.root).ok()?.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // Not the `.partial-<id>` a dispatch makes the job in, before it is renamed.
            let meta = fs::read_to_string(e.path().join("meta.json")).ok()?;
            (!name.starts_with('.') && meta.contains("typed in the cockpit")).then_some(name)
        })
    });
    // Selected, as a task started here is: the dispatch named it with its host.
    ck.wait_for_up_to(CONNECT, "the new job as beta's, selected", |s| {
        row(s, &started, "beta").is_some() && s.output_title().contains(&started)
    });
    assert!(
        fs::read_dir(&sb.root).unwrap().next().is_none(),
        "nothing was started here"
    );

    // Killed from here, by beta's luzia: the stop request is on beta's root, made by its CLI.
    ck.key("K");
    ck.wait_text("Kill job");
    ck.key("y");
    ck.wait_for_up_to(CONNECT, "the job killed on beta", |s| {
        row(s, &started, "beta").is_some_and(|r| r.contains("killed"))
    });
    let stop = fs::read_to_string(beta.job_dir(&started).join("stop.json")).unwrap();
    let stop: serde_json::Value = serde_json::from_str(&stop).unwrap();
    assert_eq!(stop["source"], "cli", "{stop}");
    let log = fs::read_to_string(beta.job_dir(&started).join("output.log")).unwrap();
    assert!(
        log.trim_end()
            .lines()
            .last()
            .unwrap_or("")
            .starts_with("exit:"),
        "{log}"
    );
}

/// `d` on another host's job shows its change as that host's git computes it (`luzia diff
/// --json` there).
#[test]
fn d_shows_the_diff_of_a_job_on_another_host() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let Some(beta) = Host::start(&sb, "beta") else {
        return;
    };
    let project = beta.dir.join("project");
    common::git(&project, &["init", "-q", "-b", "main"]);
    fs::write(project.join("a.txt"), "one\ntwo\n").unwrap();
    common::git(&project, &["add", "."]);
    common::git(&project, &["commit", "-qm", "init"]);
    let mut cfg = fs::read_to_string(&beta.config).unwrap();
    cfg.push_str("isolation = \"snapshot\"\n");
    fs::write(&beta.config, cfg).unwrap();
    let id = beta.run(&sb, "echo three-on-beta >> a.txt");
    let config = cockpit_config(&sb, &[beta.sshd.host_toml(Path::new(tmux::BIN))]);
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    ck.wait_for_up_to(CONNECT, "beta's job completed with its change", |s| {
        row(s, &id, "beta").is_some_and(|r| r.contains("completed") && r.contains(" file"))
    });
    ck.key("d");
    let s = ck.wait_for_up_to(CONNECT, "beta's diff", |s| {
        s.contains("diff --git a/a.txt b/a.txt")
    });
    assert!(s.contains("+three-on-beta"), "{}", s.text());
}

/// A host that connects but never answers (its luzia hangs) delays nobody: the other host's
/// jobs are on screen, and its question answered there, well before the hung host's link gives
/// up waiting for its hello (30 s).
#[test]
fn a_hung_host_never_delays_the_other_host_or_the_screen() {
    require_tmux!();
    let sb = Sandbox::new();
    let Some((alpha, beta)) = two_hosts(&sb) else {
        return;
    };
    let hung = alpha.dir.join("luzia-hung");
    fs::write(&hung, "#!/bin/sh\nexec sleep 1000\n").unwrap();
    fs::set_permissions(&hung, fs::Permissions::from_mode(0o755)).unwrap();
    let answer = beta.dir.join("answer");
    let bin = sh_quote(tmux::BIN);
    let on_beta = beta.run(
        &sb,
        &format!(
            "{bin} ask 'Which region?' --option north --option south > {}; exec sleep 1000",
            sh_quote(answer.to_str().unwrap())
        ),
    );
    let config = cockpit_config(
        &sb,
        &[
            alpha.sshd.host_toml(&hung),
            beta.sshd.host_toml(Path::new(tmux::BIN)),
        ],
    );
    let ck = Cockpit::start(&sb, opts(&sb, &config));
    // Well inside the hung host's hello deadline: nothing here waited for it.
    let before_alpha_gives_up = Duration::from_secs(20);
    ck.wait_for_up_to(before_alpha_gives_up, "beta's job waiting", |s| {
        row(s, &on_beta, "beta").is_some_and(|r| r.contains("waiting"))
    });
    ck.key("i");
    ck.wait_text("Which region?");
    ck.keys(&["2", "Enter"]);
    wait_file(&answer, "south");
}
