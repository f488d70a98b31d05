//! The fleet over real OpenSSH: servers started by the tests on 127.0.0.1 (tests/common/sshd.rs),
//! each with its own keys, config and jobs root.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::sshd::Sshd;
use common::*;

/// The `ssh_options` and destination of the `[hosts.NAME]` table `toml` gives.
fn options_of(toml: &str, name: &str) -> (Vec<String>, String) {
    let value: toml::Table = toml::from_str(toml).expect("host_toml is TOML");
    let host = &value["hosts"][name];
    let options = host["ssh_options"]
        .as_array()
        .expect("ssh_options")
        .iter()
        .map(|o| o.as_str().expect("a string").to_owned())
        .collect();
    (options, host["ssh"].as_str().expect("ssh").to_owned())
}

fn ssh(options: &[String], destination: &str, remote: &str) -> std::process::Output {
    Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])
        .args(options)
        .arg(destination)
        .arg("--")
        .arg(remote)
        .stdin(Stdio::null())
        .output()
        .expect("run ssh")
}

#[test]
fn the_harness_server_runs_luzia_with_the_authorized_key_and_refuses_another() {
    let sb = Sandbox::new();
    let Some(sshd) = Sshd::start("smoke", &sb.root) else {
        return;
    };
    let luzia = Path::new(env!("CARGO_BIN_EXE_luzia"));
    let (options, dest) = options_of(&sshd.host_toml(luzia), "smoke");
    let remote = format!(
        "{} --version && printf '%s\\n' \"$LUZIA_JOBS_DIR\" \"$LUZIA_CONFIG\"",
        luzia.display()
    );
    let out = ssh(&options, &dest, &remote);
    assert!(
        out.status.success(),
        "ssh with host_toml's options failed: {}\nsshd's log:\n{}",
        stderr_of(&out),
        sshd.log()
    );
    let stdout = stdout_of(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!("luzia {}", env!("CARGO_PKG_VERSION")).as_str(),
            sb.root.to_str().unwrap(),
            sshd.config_path().to_str().unwrap(),
        ],
        "the remote session sees its own root and config"
    );

    let (wrong, dest) = options_of(&sshd.wrong_key_toml(), "smoke");
    let out = ssh(&wrong, &dest, "true");
    assert!(!out.status.success(), "a key not authorized logged in");
    assert!(
        stderr_of(&out).contains("Permission denied"),
        "ssh said: {}",
        stderr_of(&out)
    );
}

#[test]
fn a_killed_server_drops_its_sessions_and_comes_back_on_the_same_port() {
    let sb = Sandbox::new();
    let Some(mut sshd) = Sshd::start("restart", &sb.root) else {
        return;
    };
    let (options, dest) = options_of(
        &sshd.host_toml(Path::new(env!("CARGO_BIN_EXE_luzia"))),
        "restart",
    );
    let mut session = ChildGuard::new(
        Command::new("ssh")
            .args(["-o", "BatchMode=yes"])
            .args(&options)
            .arg(&dest)
            .arg("--")
            .arg("echo up; exec sleep 600")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ssh"),
    );
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(session.child().stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, "up\n", "sshd's log:\n{}", sshd.log());
    let port = sshd.port();

    sshd.kill();
    session.wait_within(HANG_GUARD, "the ssh client of a killed server");
    assert!(!sshd.is_running());

    sshd.restart();
    assert_eq!(sshd.port(), port);
    let out = ssh(&options, &dest, "echo again");
    assert_eq!(stdout_of(&out), "again\n", "{}", stderr_of(&out));
}

// ---------------------------------------------------------------------------------------------
// Two hosts, each a real sshd with its own jobs root, and this machine's own root.

use std::fs;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use luzia::config::HostConfig;
use luzia::fleet::link::{Link, LinkEvent, Timing};
use serde_json::{Value, json};

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");

/// How long a command over ssh may take before the test calls it hung: an ssh handshake and a
/// remote luzia per host, on a machine shared with other builds.
const FLEET_GUARD: Duration = Duration::from_secs(90);

/// This machine (a sandbox), hosts `a` and `b` (each a sandbox served by its own sshd), and a
/// config naming both; ssh's shared connections in a directory of the test's own.
struct Fleet {
    local: Sandbox,
    a: Sandbox,
    b: Sandbox,
    sshd_a: Sshd,
    sshd_b: Sshd,
    config: std::path::PathBuf,
    runtime: tempfile::TempDir,
}

impl Fleet {
    fn start() -> Option<Fleet> {
        let (local, a, b) = (Sandbox::new(), Sandbox::new(), Sandbox::new());
        let sshd_a = Sshd::start("a", &a.root)?;
        let sshd_b = Sshd::start("b", &b.root)?;
        let config = local.tmp.path().join("config.toml");
        let luzia = Path::new(LUZIA);
        fs::write(
            &config,
            format!("{}\n{}", sshd_a.host_toml(luzia), sshd_b.host_toml(luzia)),
        )
        .unwrap();
        let runtime = tempfile::Builder::new()
            .prefix("rt")
            .tempdir_in("/tmp")
            .unwrap();
        Some(Fleet {
            local,
            a,
            b,
            sshd_a,
            sshd_b,
            config,
            runtime,
        })
    }

    /// `luzia ARGS` on this machine with the fleet's config.
    fn luzia(&self, args: &[&str]) -> std::process::Output {
        self.local
            .luzia()
            .timeout(FLEET_GUARD)
            .arg("--config")
            .arg(&self.config)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .args(args)
            .output()
            .unwrap()
    }

    fn host(&self, name: &str) -> HostConfig {
        let table: toml::Table =
            toml::from_str(&fs::read_to_string(&self.config).unwrap()).unwrap();
        table["hosts"][name].clone().try_into().unwrap()
    }
}

fn job(sb: &Sandbox, id: &str, project: &str, started: &str) {
    let meta =
        json!({"id": id, "project": project, "task": format!("task of {id}"), "started": started});
    sb.write(id, "meta.json", meta.to_string());
    sb.write(id, "output.log", "done\nexit:0\n");
}

#[test]
fn jobs_of_every_host_come_in_one_table_with_their_host() {
    let Some(f) = Fleet::start() else { return };
    job(&f.local, "l-1", "here", "2026-01-01T10:00:00Z");
    job(&f.a, "a-1", "musica", "2026-01-01T12:00:00Z");
    job(&f.b, "b-1", "musica", "2026-01-01T11:00:00Z");
    job(&f.b, "b-2", "other", "2026-01-01T09:00:00Z");

    let out = f.luzia(&["jobs", "--all-hosts"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(
        lines,
        [
            vec!["HOST", "ID", "PROJECT"],
            vec!["a", "a-1", "musica"],
            vec!["b", "b-1", "musica"],
            vec!["local", "l-1", "here"],
            vec!["b", "b-2", "other"],
        ],
        "{text}"
    );

    let out = f.luzia(&["jobs", "--host", "b", "--json", "--project", "musica"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(
        (&list[0]["host"], &list[0]["id"]),
        (&json!("b"), &json!("b-1"))
    );
    assert_eq!(
        list[0]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .map(String::as_str),
        Some("host")
    );

    let out = f.luzia(&["jobs", "--host", "a", "a-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains("task of a-1"),
        "{}",
        stdout_of(&out)
    );

    let out = f.luzia(&["status", "--all-hosts"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(headings, ["== local ==", "== a ==", "== b =="], "{text}");

    let out = f.luzia(&["jobs", "--host", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains("no host 'nope'") && err.contains("config.toml"),
        "{err}"
    );
}

#[test]
fn a_question_on_host_b_is_listed_there_and_answered_there_exactly_once() {
    let Some(f) = Fleet::start() else { return };
    // The agent: alive for as long as the test may take on a busy machine.
    let agent = ChildGuard::new(
        Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let meta = json!({"id": "b-q", "project": "musica", "task": "ask", "started": now_rfc3339()});
    f.b.write("b-q", "meta.json", meta.to_string());
    f.b.write_pid("b-q", agent.id());
    f.b.write(
        "b-q",
        "clarification.json",
        json!({"id": "q1", "type": "choice", "question": "Which database?",
               "options": ["postgres", "sqlite"], "asked_at": now_rfc3339()})
        .to_string(),
    );
    job(&f.a, "a-1", "musica", "2026-01-01T12:00:00Z");

    let out = f.luzia(&["questions", "--all-hosts"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let row = text
        .lines()
        .find(|l| l.contains("b-q"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.trim_start().starts_with("b ") && row.contains("Which database?"),
        "{text}"
    );

    let out = f.luzia(&["questions", "--host", "b", "--json"]);
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        (&list[0]["host"], &list[0]["job_id"]),
        (&json!("b"), &json!("b-q"))
    );

    let host = f.host("b");
    // The commands above shared one connection in their own runtime directory; this process's
    // commands share another.
    let logins_before = f.sshd_b.log().matches("Accepted publickey").count();
    assert_eq!(logins_before, 1, "{}", f.sshd_b.log());
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let done = luzia::fleet::run("b", &host, &args(&["answer", "b-q", "sqlite"])).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&done.stdout),
        "answered b-q: sqlite\n"
    );
    let again = luzia::fleet::run("b", &host, &args(&["answer", "b-q", "postgres"]));
    let Err(luzia::fleet::RemoteError::Failed { said, .. }) = &again else {
        panic!("{again:?}")
    };
    assert!(said.contains("already answered"), "{said}");
    let response: Value = serde_json::from_str(
        &fs::read_to_string(f.b.job_dir("b-q").join("response.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (&response["question_id"], &response["answer"]),
        (&json!("q1"), &json!("sqlite"))
    );
    assert!(!f.a.root.join("b-q").exists() && !f.local.root.join("b-q").exists());

    // Both commands went over one connection: sshd accepted a single login.
    let logins = f.sshd_b.log().matches("Accepted publickey").count();
    assert_eq!(logins, logins_before + 1, "{}", f.sshd_b.log());
    let check = luzia::fleet::ssh::control(&host, "check").output().unwrap();
    assert!(check.status.success(), "{}", stderr_of(&check));
}

#[test]
fn a_host_with_a_wrong_key_says_so_by_name_and_the_others_still_print() {
    let Some(f) = Fleet::start() else { return };
    job(&f.a, "a-1", "musica", "2026-01-01T12:00:00Z");
    fs::write(
        &f.config,
        format!(
            "{}\n{}",
            f.sshd_a.host_toml(Path::new(LUZIA)),
            f.sshd_b.wrong_key_toml()
        ),
    )
    .unwrap();
    let out = f.luzia(&["jobs", "--all-hosts"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("host b") && err.contains("Permission denied"),
        "{err}"
    );
    assert!(err.contains("authorized_keys"), "{err}");
    assert!(!err.contains("host a"), "{err}");
    assert!(stdout_of(&out).contains("a-1"), "{}", stdout_of(&out));
}

/// A stand-in for `luzia watch --json` on the host: a hello, the (empty) state, then a
/// heartbeat every second until its output is closed.
fn watch_stand_in(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("watch-stand-in");
    fs::write(
        &path,
        "#!/bin/sh\n\
         printf '%s\\n' '{\"type\":\"hello\",\"protocol\":1,\"luzia\":\"0.1.0\",\"host\":\"b\",\"root\":\"/r\",\"projects\":[\"musica\"],\"heartbeat_secs\":2}'\n\
         printf '%s\\n' '{\"type\":\"synced\",\"jobs\":0}'\n\
         while printf '%s\\n' '{\"type\":\"heartbeat\",\"at\":\"2026-01-01T00:00:00Z\"}'; do sleep 1; done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn next_matching(
    rx: &mpsc::Receiver<LinkEvent>,
    what: &str,
    want: impl Fn(&LinkEvent) -> bool,
) -> LinkEvent {
    let deadline = Instant::now() + FLEET_GUARD;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if want(&e) => return e,
            Ok(e) => seen.push(format!("{e:?}")),
            Err(_) => panic!("hang guard: no {what} within {FLEET_GUARD:?}; saw {seen:#?}"),
        }
    }
}

#[test]
fn a_link_goes_down_with_its_host_comes_back_with_it_and_ends_with_its_drop() {
    let sb = Sandbox::new();
    let Some(mut sshd) = Sshd::start("b", &sb.root) else {
        return;
    };
    let stand_in = watch_stand_in(sshd.dir());
    let table: toml::Table = toml::from_str(&sshd.host_toml(&stand_in)).unwrap();
    let host: HostConfig = table["hosts"]["b"].clone().try_into().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let timing = Timing {
        first_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(500),
        hello_within: FLEET_GUARD,
        ..Timing::default()
    };
    let link = Link::start_with(
        "b".into(),
        host,
        Box::new(move |e| {
            let _ = tx.lock().unwrap().send(e);
        }),
        timing,
    );
    let LinkEvent::Hello(hello) = next_matching(&rx, "hello", |e| matches!(e, LinkEvent::Hello(_)))
    else {
        unreachable!()
    };
    assert_eq!(hello.projects, ["musica"]);
    next_matching(&rx, "synced", |e| matches!(e, LinkEvent::Synced));
    next_matching(&rx, "a heartbeat", |e| matches!(e, LinkEvent::Heartbeat));

    sshd.kill();
    let LinkEvent::Down { error } =
        next_matching(&rx, "down", |e| matches!(e, LinkEvent::Down { .. }))
    else {
        unreachable!()
    };
    assert!(error.contains("host b: the connection dropped"), "{error}");

    sshd.restart();
    next_matching(&rx, "hello again", |e| matches!(e, LinkEvent::Hello(_)));
    next_matching(&rx, "synced again", |e| matches!(e, LinkEvent::Synced));
    let key = sshd.client_key();
    assert!(!processes_mentioning(&key).is_empty(), "the link's ssh");
    assert!(
        !processes_mentioning(&stand_in).is_empty(),
        "the remote watch"
    );

    drop(link);
    assert!(
        processes_mentioning(&key).is_empty(),
        "an ssh outlived its link"
    );
    wait_for("the remote watch to end", Duration::from_secs(20), || {
        processes_mentioning(&stand_in).is_empty().then_some(())
    });
}
