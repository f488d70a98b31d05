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
