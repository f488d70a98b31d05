//! End-to-end: what the cockpit says must be true. The built `luzia tui` in a real terminal
//! (tmux), next to the plain CLI, with real `sh` agents run by real supervisors:
//!
//! - a task waiting in the queue is a `queued` row with its place, in a cockpit started before
//!   and after it was queued, and leaves the queue's rows when it starts; the header's count is
//!   what `luzia queue` lists;
//! - an agent that handles SIGTERM by tidying up and exiting 0, stopped with `K` in the cockpit
//!   or with `luzia kill`, is `killed` everywhere (cockpit, `jobs --json`, meta.json, the
//!   notifications log, the timeline), with who stopped it, and can be retried;
//! - a settled job changed after the cockpit indexed it (meta.json rewritten in place, a stop
//!   recorded, output after the exit line, the directory removed) shows what its files say in
//!   the next cockpit, while the unchanged jobs come from the index; a read-only cockpit reads
//!   the index and writes nothing.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use tmux::{BIN, Cockpit, Opts, POLL, Sandbox, Screen, TIMEOUT};

// ----------------------------------------------------------------------------------------------
// A configured fleet: a project, an agent, a queue and a notifications log in the sandbox
// ----------------------------------------------------------------------------------------------

/// Stops every process that mentions the sandbox (detached supervisors name their job
/// directory and config; agents carry `LUZIA_JOB_DIR`) when the test ends, also on a panic.
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.0);
    }
}

struct Fleet {
    config: PathBuf,
    notes: PathBuf,
    queue: PathBuf,
    /// The agents wait for this file (`release`) before they end.
    ctl: PathBuf,
}

/// Waits until the agent of a job is past its start (it touches `ctl/ready-<job id>`).
const HOLD_AGENT: &str = r#"cat >/dev/null; : > "$1/ready-$LUZIA_JOB_ID"; echo working;
while [ ! -e "$1/release" ]; do sleep 0.05; done; echo done"#;

/// Tidies up on SIGTERM and exits 0, as Claude Code does when it is stopped.
const TIDY_AGENT: &str = r#"trap 'echo tidying up; exit 0' TERM; cat >/dev/null;
: > "$1/ready-$LUZIA_JOB_ID"; echo working; while :; do sleep 0.1; done"#;

impl Fleet {
    fn new(sb: &Sandbox, agent_script: &str, max_concurrent: usize) -> Fleet {
        let base = sb.tmp.path();
        let project = base.join("proj");
        fs::create_dir_all(&project).unwrap();
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let fleet = Fleet {
            config: base.join("fleet.toml"),
            notes: base.join("notifications.log"),
            queue: base.join("queue"),
            ctl: sb.ctl.clone(),
        };
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
             command = [\"sh\", \"-c\", {}, \"sh\", {}]\nmax_concurrent = {max_concurrent}\n\
             prompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n",
            q(&sb.root),
            q(&fleet.notes),
            q(&fleet.queue),
            serde_json::to_string(agent_script).unwrap(),
            q(&fleet.ctl),
            q(&project),
        );
        fs::write(&fleet.config, text).unwrap();
        fleet
    }

    /// The cockpit on this fleet's config, as operator `tester`.
    fn opts(&self) -> Opts {
        Opts::default()
            .global_arg("--config")
            .global_arg(self.config.to_str().unwrap())
            .env("USER", "tester")
    }

    /// `luzia ARGS` on this fleet's config, as operator `tester`: (exit code, stdout, stderr).
    fn luzia(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new(BIN);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        let out = cmd
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .env("USER", "tester")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run luzia");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `luzia run p TASK` that starts at once: the job id.
    fn start(&self, task: &str) -> String {
        let (code, out, err) = self.luzia(&["run", "p", task]);
        assert_eq!(code, 0, "luzia run: {err}");
        let id = out.trim().to_owned();
        assert!(
            !id.is_empty() && !id.contains(' '),
            "expected a job id: {out:?}"
        );
        wait_until(&format!("the agent of {id} to start"), || {
            self.ctl.join(format!("ready-{id}")).exists()
        });
        id
    }

    /// `luzia run p TASK --queue`: the queue id.
    fn enqueue(&self, task: &str) -> String {
        let (code, out, err) = self.luzia(&["run", "p", task, "--queue"]);
        assert_eq!(code, 0, "luzia run --queue: {err}");
        out.strip_prefix("queued ")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("expected `queued ID ...`: {out:?}"))
            .to_owned()
    }

    /// The ids `luzia queue` lists, in order.
    fn queue_ids(&self) -> Vec<String> {
        let (code, out, err) = self.luzia(&["queue"]);
        assert_eq!(code, 0, "luzia queue: {err}");
        out.lines()
            .filter(|l| *l != "the queue is empty")
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .collect()
    }

    fn job_json(&self, id: &str) -> Value {
        let (code, out, err) = self.luzia(&["jobs", id, "--json"]);
        assert_eq!(code, 0, "luzia jobs {id} --json: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn release(&self) {
        fs::write(self.ctl.join("release"), "").unwrap();
    }
}

/// Polls until `cond` holds (for conditions on disk, not on screen).
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < TIMEOUT,
            "timed out after {TIMEOUT:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// The header's count of queued tasks (`○ N queued` or, when short of room, `○ N queue`).
fn queued_count(s: &Screen) -> Option<usize> {
    let words: Vec<&str> = s.header().split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1] == "queued" || w[1] == "queue")
        .and_then(|w| w[0].parse().ok())
}

/// Ends a cockpit and waits for its tmux server to be gone, so that another can start on the
/// same sandbox.
fn end(sb: &Sandbox, ck: Cockpit) {
    drop(ck);
    let socket = sb.tmp.path().join("tmux.sock");
    wait_until("the tmux server to go", || {
        common::processes_mentioning(&socket).is_empty()
    });
}

/// Selects the row of `id` with the text filter (`/`, the id, Enter).
fn select(ck: &Cockpit, id: &str) {
    ck.key("/");
    ck.type_text(id);
    ck.key("Enter");
    ck.wait_for(&format!("{id} alone in the table"), |s| {
        s.job_rows().len() == 1 && s.job_row(id).is_some()
    });
}

// ----------------------------------------------------------------------------------------------
// 1. Queued tasks are rows
// ----------------------------------------------------------------------------------------------

#[test]
fn a_task_queued_before_the_cockpit_starts_is_a_queued_row_until_it_starts() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let fleet = Fleet::new(&sb, HOLD_AGENT, 1);
    let first = fleet.start("first holds the slot");
    let qid = fleet.enqueue("second waits");
    assert_eq!(fleet.queue_ids(), std::slice::from_ref(&qid));

    let ck = Cockpit::start(&sb, fleet.opts());
    let s = ck.wait_row(&qid, "queued, next in the queue", |r| {
        r.contains("queued") && r.contains("next in queue") && r.contains("second waits")
    });
    assert_eq!(queued_count(&s), Some(1), "header: {}", s.header());
    assert!(s.job_row(&first).is_some_and(|r| r.contains("running")));

    // The slot frees: the task starts as a job of its own and leaves the queue's rows.
    fleet.release();
    let s = ck.wait_for("the queued row gone and the task started", |s| {
        s.job_row(&qid).is_none()
            && queued_count(s) == Some(0)
            && s.job_rows().iter().any(|r| {
                r.contains("second waits") && (r.contains("running") || r.contains("completed"))
            })
    });
    assert!(
        fleet.queue_ids().is_empty(),
        "luzia queue agrees: {}",
        s.text()
    );
}

#[test]
fn tasks_queued_while_the_cockpit_runs_appear_in_their_places() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let fleet = Fleet::new(&sb, HOLD_AGENT, 1);
    let first = fleet.start("first holds the slot");
    let ck = Cockpit::start(&sb, fleet.opts());
    let s = ck.wait_row(&first, "running", |r| r.contains("running"));
    assert_eq!(queued_count(&s), Some(0), "header: {}", s.header());

    let second = fleet.enqueue("second waits");
    let third = fleet.enqueue("third waits longer");
    let s = ck.wait_for("both queued rows, in queue order", |s| {
        s.job_row(&second)
            .is_some_and(|r| r.contains("queued") && r.contains("next in queue"))
            && s.job_row(&third)
                .is_some_and(|r| r.contains("queued") && r.contains("#2 in queue"))
    });
    let rows = s.job_rows();
    let at = |id: &str| rows.iter().position(|r| r.contains(id)).unwrap();
    assert!(at(&second) < at(&third), "queue order: {}", s.text());
    assert_eq!(queued_count(&s), Some(fleet.queue_ids().len()));
    assert_eq!(queued_count(&s), Some(2), "header: {}", s.header());

    // A queued row is not a job: no kill, no retry, no log.
    select(&ck, &third);
    ck.key("K");
    let s = ck.wait_text("is queued");
    assert!(!s.contains("Kill job"), "{}", s.text());
    ck.key("r");
    ck.wait_text("is queued");
    ck.esc();

    // The first one ends: the second starts (and, released, ends), then the third.
    fleet.release();
    let s = ck.wait_for("the queue empty in the cockpit", |s| {
        queued_count(s) == Some(0) && s.job_row(&second).is_none() && s.job_row(&third).is_none()
    });
    assert!(fleet.queue_ids().is_empty(), "{}", s.text());
}

/// Nothing runs, so nothing makes the cockpit tick: the queue is watched. A wall display
/// (read-only) shows the task waiting; a cockpit that may dispatch starts it in the free slot.
#[test]
fn an_idle_cockpit_sees_a_task_queued_from_the_cli() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let fleet = Fleet::new(&sb, HOLD_AGENT, 1);
    // The queue root exists (as after any dispatch); nothing is queued or running.
    fs::create_dir_all(&fleet.queue).unwrap();
    let wall = Cockpit::start(&sb, fleet.opts().arg("--read-only"));
    wall.wait_ready();
    let qid = fleet.enqueue("queued while nothing runs");
    wall.wait_row(&qid, "queued, next", |r| {
        r.contains("queued") && r.contains("next in queue")
    });
    assert_eq!(
        fleet.queue_ids(),
        std::slice::from_ref(&qid),
        "a wall display starts nothing"
    );
    end(&sb, wall);

    let ck = Cockpit::start(&sb, fleet.opts());
    ck.wait_for("the task started in the free slot", |s| {
        s.job_row(&qid).is_none()
            && s.job_rows()
                .iter()
                .any(|r| r.contains("queued while nothing runs") && r.contains("running"))
    });
    assert!(fleet.queue_ids().is_empty());
}

// ----------------------------------------------------------------------------------------------
// 2. A requested stop is a kill, whatever the agent's exit code
// ----------------------------------------------------------------------------------------------

/// `jobs ID --json`, meta.json and the notifications log all say `killed`, by `tester` from
/// `source`, with the agent's own exit code 0 kept.
fn assert_killed_everywhere(fleet: &Fleet, sb: &Sandbox, id: &str, source: &str) {
    let job = fleet.job_json(id);
    assert_eq!(job["status"], "killed", "{job}");
    assert_eq!(job["exit_code"], 0, "the agent's own code is kept: {job}");
    assert_eq!(job["stop"]["source"], source, "{job}");
    let by = job["stop"]["requested_by"].as_str().unwrap_or_default();
    assert!(by.starts_with("tester@"), "{job}");
    assert!(job["stop"]["requested_at"].is_string(), "{job}");

    // The supervisor records it when the agent has ended.
    let meta_path = sb.job_dir(id).join("meta.json");
    wait_until("meta.json to record the stop", || {
        fs::read_to_string(&meta_path).is_ok_and(|m| m.contains("\"stop\""))
    });
    let meta: Value = serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    assert_eq!(meta["status"], "killed", "{meta}");
    assert_eq!(meta["exit_code"], 0, "{meta}");
    assert_eq!(meta["stop"]["source"], source, "{meta}");
    wait_until("the notification line", || {
        fs::read_to_string(&fleet.notes)
            .is_ok_and(|n| n.lines().any(|l| l.contains(id) && l.contains("killed")))
    });
    let notes = fs::read_to_string(&fleet.notes).unwrap();
    let line = notes.lines().find(|l| l.contains(id)).unwrap();
    assert!(
        line.contains(&format!("Agent {id} finished (exit 0), killed by tester@"))
            && line.ends_with(&format!("({source})")),
        "{line}"
    );

    // `luzia jobs ID` says who stopped it, and so does its timeline.
    let (code, text, err) = fleet.luzia(&["jobs", id]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("killed"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("stopped:") && l.contains("tester@")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("stop") && l.contains("requested by tester@")),
        "{text}"
    );
    assert!(text.contains("finished: killed (exit 0)"), "{text}");
}

#[test]
fn k_in_the_cockpit_kills_an_agent_that_exits_0_and_it_can_be_retried() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let fleet = Fleet::new(&sb, TIDY_AGENT, 4);
    let id = fleet.start("tidy up when stopped");
    let ck = Cockpit::start(&sb, fleet.opts());
    ck.wait_row(&id, "running", |r| r.contains("running"));
    select(&ck, &id);

    ck.key("K");
    ck.wait_text("Kill job");
    ck.key("y");
    let s = ck.wait_row(&id, "killed", |r| r.contains("killed"));
    assert!(
        !s.job_row(&id).unwrap().contains("completed"),
        "{}",
        s.text()
    );
    assert!(
        fs::read_to_string(sb.job_dir(&id).join("output.log"))
            .unwrap()
            .contains("tidying up\n\nexit:0\n"),
        "the agent tidied up and exited 0"
    );
    assert_killed_everywhere(&fleet, &sb, &id, "tui");

    // The detail view says who stopped it.
    ck.key("Enter");
    let s = ck.wait_text("requested by tester@");
    assert!(
        s.lines
            .iter()
            .any(|l| l.contains("stopped") && l.contains("tester@") && l.contains("(tui)")),
        "{}",
        s.text()
    );
    ck.esc();

    // Retry still works on it.
    ck.key("r");
    ck.wait_text("started ");
    wait_until("a job with retry_of", || {
        common::job_ids(&sb.root).iter().any(|job| {
            fs::read_to_string(sb.root.join(job).join("meta.json"))
                .is_ok_and(|m| m.contains(&format!("\"retry_of\": \"{id}\"")))
        })
    });
}

#[test]
fn luzia_kill_of_an_agent_that_exits_0_shows_killed_in_a_running_cockpit() {
    require_tmux!();
    let sb = Sandbox::new();
    let _reaper = Reaper(sb.tmp.path().to_owned());
    let fleet = Fleet::new(&sb, TIDY_AGENT, 4);
    let id = fleet.start("tidy up when stopped");
    let ck = Cockpit::start(&sb, fleet.opts());
    ck.wait_row(&id, "running", |r| r.contains("running"));

    let (code, out, err) = fleet.luzia(&["kill", &id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("killed {id} (exit:0)\n"));
    ck.wait_row(&id, "killed", |r| r.contains("killed"));
    assert_killed_everywhere(&fleet, &sb, &id, "cli");

    // A cockpit started afterwards reads it the same way.
    end(&sb, ck);
    let ck = Cockpit::start(&sb, fleet.opts());
    ck.wait_row(&id, "killed", |r| r.contains("killed"));
    let (code, out, err) = fleet.luzia(&["retry", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.trim().is_empty());
}

// ----------------------------------------------------------------------------------------------
// 3. The index of settled jobs is never trusted over the disk
// ----------------------------------------------------------------------------------------------

/// The newest change time of anything under `dir`.
fn newest_ctime(dir: &Path) -> std::time::SystemTime {
    use std::os::unix::fs::MetadataExt;
    let mut newest = std::time::UNIX_EPOCH;
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let md = fs::symlink_metadata(&path).unwrap();
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::new(md.ctime() as u64, md.ctime_nsec() as u32);
        newest = newest.max(at);
        if md.is_dir() {
            newest = newest.max(newest_ctime(&path));
        }
    }
    newest
}

/// How many times the cockpit's log says `what`.
fn logged(sb: &Sandbox, what: &str) -> usize {
    fs::read_to_string(sb.state.join("luzia/cockpit.log"))
        .unwrap_or_default()
        .matches(what)
        .count()
}

/// Filters the 300 jobs to those whose task says "Render": the three changed ones.
fn the_changed_jobs(ck: &Cockpit) -> Screen {
    ck.wait_text("jobs 1/300");
    ck.key("/");
    ck.type_text("Render");
    ck.wait_for("the three changed jobs alone", |s| s.job_rows().len() == 3)
}

fn row_says(s: &Screen, id: &str, what: &str) {
    let row = s.job_row(id).unwrap_or_default();
    assert!(
        row.contains(what),
        "{id} does not say {what}:\n{}",
        s.text()
    );
}

#[test]
fn a_settled_job_changed_since_the_index_was_written_shows_what_its_files_say() {
    require_tmux!();
    let sb = Sandbox::new();
    // Enough settled jobs for the cockpit to read them through its index, and three to change.
    for i in 0..297 {
        sb.finished_job(
            &format!("1{i:05}-done"),
            "archive",
            &format!("Old task {i}"),
            9,
            0,
        );
    }
    for (id, task) in [
        ("200000-zeta", "Render zeta"),
        ("200001-kappa", "Render kappa"),
        ("200002-sigma", "Render sigma"),
        ("200003-omega", "Render omega"),
    ] {
        sb.finished_job(id, "musica", task, 10, 0);
    }
    // A job is taken into the index only once its last change is 5 s old.
    wait_until("the jobs to be 6 s old", || {
        newest_ctime(&sb.root).elapsed().unwrap_or_default() > std::time::Duration::from_secs(6)
    });
    let debug = || Opts::default().env("LUZIA_LOG", "debug");
    let ck = Cockpit::start(&sb, debug());
    ck.wait_text("jobs 1/301");
    wait_until("the index to be written", || {
        logged(&sb, "jobs index written kept=0 taken=301 left=0") == 1
    });
    end(&sb, ck);

    // Since then: a task rewritten in place, a stop recorded, output after the exit line, a
    // job removed.
    let meta = sb.job_dir("200000-zeta").join("meta.json");
    let rewritten = fs::read_to_string(&meta).unwrap().replace("zeta", "ZETA");
    fs::write(&meta, rewritten).unwrap();
    sb.write(
        "200001-kappa",
        "stop.json",
        r#"{"requested_by": "ana@host", "source": "cli"}"#,
    );
    sb.append("200002-sigma", "output.log", "one more line\n");
    fs::remove_dir_all(sb.job_dir("200003-omega")).unwrap();

    let ck = Cockpit::start(&sb, debug());
    let s = the_changed_jobs(&ck);
    row_says(&s, "200000-zeta", "Render ZETA");
    row_says(&s, "200001-kappa", "killed");
    row_says(&s, "200002-sigma", "died");
    // The other 297 came from the index: it was used, and not for the changed ones.
    assert_eq!(logged(&sb, "from_index=297 "), 1, "the index was not read");
    // The changed jobs are too fresh to be taken in: this cockpit's refresh keeps the rest.
    wait_until("the index to be written again", || {
        logged(&sb, "jobs index written kept=297 taken=0 left=3") == 1
    });
    end(&sb, ck);

    // A read-only cockpit reads the index too, and writes nothing, though the index lacks the
    // changed jobs.
    let home = || tmux::snapshot(&sb.home);
    let before = home();
    let ck = Cockpit::start(&sb, Opts::default().arg("--read-only"));
    row_says(&the_changed_jobs(&ck), "200001-kappa", "killed");
    // Esc alone, then a pause: read together, Esc and q are Alt-q.
    ck.esc();
    ck.key("q");
    assert_eq!(ck.wait_exit(), 0);
    let diff = tmux::snapshot_diff(&before, &home());
    assert!(diff.is_empty(), "read-only wrote:\n{}", diff.join("\n"));
}
