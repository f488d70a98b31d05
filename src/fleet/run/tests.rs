use std::os::unix::process::ExitStatusExt;

use super::*;

fn status(code: i32) -> ExitStatus {
    ExitStatus::from_raw(code << 8)
}

fn host() -> HostConfig {
    HostConfig {
        luzia: "/opt/luzia".into(),
        ..HostConfig::new("ops@gpu2.example")
    }
}

fn said(code: i32, stderr: &str) -> String {
    classify("gpu2", &host(), "answer", status(code), stderr.as_bytes())
        .expect("an error")
        .to_string()
}

#[test]
fn success_is_no_error() {
    assert!(classify("gpu2", &host(), "jobs", status(0), b"warning\n").is_none());
}

#[test]
fn each_failure_says_the_host_what_was_said_and_what_to_do() {
    let refused = said(
        255,
        "Warning: something\nops@gpu2.example: Permission denied (publickey).\n",
    );
    for part in [
        "host gpu2 (ops@gpu2.example) cannot be reached",
        "Permission denied (publickey)",
        "authorized_keys",
        "[hosts.gpu2]",
    ] {
        assert!(refused.contains(part), "{refused}");
    }
    let down = said(
        255,
        "ssh: connect to host gpu2.example port 22: Connection refused\n",
    );
    assert!(
        down.contains("Connection refused") && down.contains("BatchMode"),
        "{down}"
    );
    let unknown = said(255, "Host key verification failed.\n");
    assert!(
        unknown.contains("run `ssh ops@gpu2.example` once"),
        "{unknown}"
    );
    let silent = said(255, "");
    assert!(silent.contains("ssh ended"), "{silent}");

    let missing = said(127, "sh: 1: /opt/luzia: not found\n");
    for part in [
        "no luzia at '/opt/luzia'",
        "not found",
        VERSION,
        "[hosts.gpu2]",
    ] {
        assert!(missing.contains(part), "{missing}");
    }
    let old = said(
        2,
        "error: unrecognized subcommand 'answer'\n\nUsage: luzia <COMMAND>\n",
    );
    assert!(
        old.contains("has no `answer`") && old.contains(VERSION),
        "{old}"
    );

    let failed = classify(
        "gpu2",
        &host(),
        "answer",
        status(3),
        b"error: job x has no question\n",
    );
    let Some(RemoteError::Failed { code, said, .. }) = &failed else {
        panic!("{failed:?}");
    };
    assert_eq!((*code, said.as_str()), (3, "error: job x has no question"));
    let text = failed.unwrap().to_string();
    assert!(text.contains("`luzia answer` failed (exit 3)"), "{text}");
}

#[test]
fn the_last_line_is_plain_and_short() {
    assert_eq!(
        last_line(b"a\n\x1b[31mb\x1b[0m\n  \n").as_deref(),
        Some("b")
    );
    assert_eq!(last_line(b"\n \n"), None);
    assert!(
        last_line("x".repeat(1000).as_bytes())
            .unwrap()
            .chars()
            .count()
            <= 301
    );
}
