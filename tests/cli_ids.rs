//! Job ids as the cockpit shows them: every command that takes a job id takes a unique prefix
//! of it, as git does; an exact id always wins; a shared prefix is refused with the candidates
//! and nothing done; a prefix that names nothing says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use common::*;

fn meta(project: &str, task: &str) -> String {
    format!(
        r#"{{"project": "{project}", "task": "{task}", "started": "2026-01-09T14:23:15Z", "status": "running"}}"#
    )
}

/// Two finished jobs that share the prefix `211041-` and one that does not.
fn three_jobs() -> Sandbox {
    let sb = Sandbox::new();
    for (id, project, task) in [
        ("211041-f3a9", "musica", "fix the flaky test"),
        ("211041-07bc", "web", "write the release notes"),
        ("093000-aaaa", "musica", "bump the deps"),
    ] {
        sb.write(id, "meta.json", meta(project, task));
        sb.write(id, "output.log", format!("done {id}\nexit:0\n"));
    }
    sb
}

#[test]
fn a_unique_prefix_works_wherever_an_id_does() {
    let sb = three_jobs();
    let out = sb.luzia().args(["logs", "211041-f"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "done 211041-f3a9\nexit:0\n");
    let out = sb.luzia().args(["jobs", "09", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["id"], "093000-aaaa");
    let out = sb.luzia().args(["diff", "211041-0"]).output().unwrap();
    assert!(
        !stderr_of(&out).contains("no job"),
        "diff resolved the prefix: {}",
        stderr_of(&out)
    );
}

#[test]
fn a_shared_prefix_is_refused_with_its_candidates() {
    let sb = three_jobs();
    let out = sb.luzia().args(["logs", "211041"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_of(&out), "", "nothing printed of either log");
    let err = stderr_of(&out);
    assert!(err.contains("'211041' is the start of 2 job ids"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("211041-07bc") && l.contains("web") && l.contains("write the")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("211041-f3a9") && l.contains("musica") && l.contains("fix the")),
        "{err}"
    );
    assert!(!err.contains("093000"), "{err}");
}

#[test]
fn many_candidates_end_with_how_many_more() {
    let sb = Sandbox::new();
    for n in 0..13 {
        let id = format!("120000-{n:04x}");
        sb.write(&id, "meta.json", meta("p", "t"));
    }
    let out = sb.luzia().args(["jobs", "12"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert_eq!(err.matches("120000-").count(), 10, "{err}");
    assert!(err.contains("and 3 more"), "{err}");
}

#[test]
fn kill_of_a_shared_prefix_kills_nothing() {
    let sb = Sandbox::new();
    let mut first = sleeper();
    let mut second = sleeper();
    for (id, child) in [("211041-f3a9", &first), ("211041-07bc", &second)] {
        sb.write(id, "meta.json", meta("p", "sleep"));
        sb.write(id, "output.log", "working\n");
        sb.write_pid(id, child.id());
    }
    let out = sb
        .luzia()
        .args(["kill", "211041", "--grace", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("start of 2 job ids"));
    for (id, child) in [("211041-f3a9", &mut first), ("211041-07bc", &mut second)] {
        assert!(child.child().try_wait().unwrap().is_none(), "{id} lives");
        assert!(!sb.job_dir(id).join("stop.json").exists(), "{id}: no stop");
    }
}

#[test]
fn an_exact_id_wins_over_the_longer_ids_it_starts() {
    let sb = three_jobs();
    sb.write("211041", "meta.json", meta("short", "the short one"));
    sb.write("211041", "output.log", "short\nexit:0\n");
    let out = sb.luzia().args(["logs", "211041"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "short\nexit:0\n");
}

#[test]
fn a_prefix_of_nothing_says_so_and_names_the_listing() {
    let sb = three_jobs();
    let out = sb.luzia().args(["answer", "77", "yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("no job '77'"), "{err}");
    assert!(err.contains("luzia jobs"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Queue ids
// ---------------------------------------------------------------------------------------------

/// Writes a waiting task into the queue at `queue`, as `luzia run` queues one.
fn queued(queue: &std::path::Path, n: u32, id: &str) {
    let dir = queue.join("pending/normal");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("5_20260109T153045.00000{n}_p_{id}.json")),
        format!(r#"{{"id": "{id}", "project": "p", "prompt": "task {id}"}}"#),
    )
    .unwrap();
}

#[test]
fn queue_cancel_takes_a_unique_prefix_and_refuses_a_shared_one() {
    let sb = Sandbox::new();
    let queue = sb.tmp.path().join("queue");
    queued(&queue, 1, "a1b2c3d4");
    queued(&queue, 2, "a1ffffff");
    queued(&queue, 3, "0badcafe");
    let cancel = |id: &str| {
        sb.luzia()
            .env("LUZIA_QUEUE_DIR", &queue)
            .args(["queue", "cancel", id])
            .output()
            .unwrap()
    };
    let out = cancel("a1");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("'a1' is the start of 2 queued ids"), "{err}");
    assert!(
        err.contains("a1b2c3d4") && err.contains("a1ffffff"),
        "{err}"
    );
    let out = cancel("a1b");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "cancelled a1b2c3d4 (p: task a1b2c3d4)\n");
    let out = cancel("a1");
    assert_eq!(out.status.code(), Some(0), "one left that starts so");
    assert!(stdout_of(&out).starts_with("cancelled a1ffffff"));
    let out = cancel("zz");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("no queued task"),
        "{}",
        stderr_of(&out)
    );
}
