//! Every command that prints, with its standard output on a full disk (`/dev/full`, ENOSPC) and
//! on a pipe whose reader is gone (EPIPE, as `luzia jobs | head -1` leaves it): a full disk is an
//! error that says standard output could not be written, with exit code 1; a closed pipe is a
//! quiet, normal end, as for other Unix tools. Nothing panics (exit 101) either way, nor when
//! it is standard error that cannot be written: the command ends as it would have.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::process::{Output, Stdio};
use std::time::Duration;

use common::*;

/// The commands that print, with what they need from the sample jobs.
const PRINTING: &[&[&str]] = &[
    &["completions", "bash"],
    &["completions", "zsh"],
    &["completions", "fish"],
    &["man"],
    &["--help"],
    &["--version"],
    &["help"],
    &["help", "jobs"],
    &["jobs", "--help"],
    &["jobs"],
    &["jobs", "--json"],
    &["jobs", "--timing"],
    &["jobs", "142315-a1b2"],
    &["jobs", "142315-a1b2", "--json"],
    &["logs", "142315-a1b2"],
    &["logs", "-f", "142315-a1b2"],
    &["status"],
    &["status", "--alerts"],
    &["status", "--watch"],
    &["questions"],
    &["questions", "--json"],
    &["queue"],
    &["gc", "--older-than", "1d", "--dry-run"],
    &["doctor"],
    &["init", "--print"],
    &["watch", "--json"],
];

/// Runs `luzia ARGS` with stdout on `stdout`, stdin closed; fails if it takes longer than
/// [`HANG_GUARD`].
fn run(sb: &Sandbox, args: &[&str], stdout: Stdio) -> Output {
    let mut cmd = sb.luzia_std();
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
    let child = ChildGuard::new(cmd.spawn().expect("spawn luzia"));
    wait_output(child, HANG_GUARD, &format!("luzia {}", args.join(" ")))
}

fn wait_output(mut child: ChildGuard, limit: Duration, what: &str) -> Output {
    let status = child.wait_within(limit, what);
    let mut stderr = Vec::new();
    if let Some(mut e) = child.child().stderr.take() {
        std::io::Read::read_to_end(&mut e, &mut stderr).unwrap();
    }
    Output {
        status,
        stdout: Vec::new(),
        stderr,
    }
}

#[test]
fn a_full_disk_on_stdout_is_an_error_that_says_so_and_never_a_panic() {
    let sb = Sandbox::with_samples();
    let mut wrong = Vec::new();
    for args in PRINTING {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = run(&sb, args, Stdio::from(full));
        let err = stderr_of(&out);
        let code = out.status.code();
        if code != Some(1)
            || err.contains("panicked")
            || !err.contains("luzia: error: cannot write to standard output")
            || !err.contains("No space left on device")
        {
            wrong.push(format!(
                "luzia {}: exit {code:?}, stderr:\n{err}",
                args.join(" ")
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n---\n"));
}

#[test]
fn a_closed_pipe_on_stdout_ends_quietly_and_never_in_a_panic() {
    let sb = Sandbox::with_samples();
    let mut wrong = Vec::new();
    for args in PRINTING {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = run(&sb, args, Stdio::from(writer));
        let err = stderr_of(&out);
        let code = out.status.code();
        if code != Some(0) || !err.is_empty() {
            wrong.push(format!(
                "luzia {}: exit {code:?}, stderr:\n{err}",
                args.join(" ")
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n---\n"));
}

#[test]
fn a_stderr_that_cannot_be_written_changes_no_exit_code() {
    let sb = Sandbox::with_samples();
    let mut wrong = Vec::new();
    // Each says something on stderr: a job without output, jobs whose files cannot be read, a
    // job that does not exist, a usage error.
    for (args, want) in [
        (&["logs", "154000-void"][..], 0),
        (&["jobs"][..], 0),
        (&["logs", "999999-none"][..], 1),
        (&["jobs", "--no-such-option"][..], 2),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let mut cmd = sb.luzia_std();
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(full);
        let mut child = ChildGuard::new(cmd.spawn().expect("spawn luzia"));
        let status = child.wait_within(HANG_GUARD, &format!("luzia {}", args.join(" ")));
        if status.code() != Some(want) {
            wrong.push(format!(
                "luzia {}: exit {:?}, not {want}",
                args.join(" "),
                status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}
