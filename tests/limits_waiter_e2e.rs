//! The usage limit with nothing looking: a fresh HOME with no config file, only `luzia` and a
//! fake `claude` on PATH (Claude Code 2.1.197's stream-json: refused by the limit with a reset a
//! few seconds ahead, then successful when resumed). The user runs `luzia run` and nothing
//! else: no cockpit, no `luzia notify`, no later `luzia run`. The job's supervisor leaves a
//! waiter behind (`luzia __limit-waiter`, a session of its own), which continues the job once
//! at the reset and ends. Three jobs stopped at once share one waiter; a killed waiter leaves
//! the job to the cockpit; a session that cannot be continued (its transcript gone) is said
//! once in the job's timeline, and not tried again. Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

mod limits_world;

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant, UNIX_EPOCH};

use common::{git_or_skip, kill_hard, pid_alive, wait_for};
use limits_world::{World, fake_claude, gate, text};
use serde_json::Value;

/// Room for the jobs to start and end on the limit before it resets, on a loaded machine.
const RESET_IN: u64 = 10;
/// The reset, its margin and the machine's load: long before the hang guard.
const WAIT: Duration = Duration::from_secs(60);

fn world(reset: u64) -> World {
    let world = World::new(|base| fake_claude(base, reset), Vec::new());
    assert!(!world.home.join(".config").exists(), "no config file");
    world
}

fn now() -> u64 {
    UNIX_EPOCH.elapsed().unwrap().as_secs()
}

fn jobs_dir(world: &World) -> PathBuf {
    world.home.join(".local/state/luzia/jobs")
}

fn queue_dir(world: &World) -> PathBuf {
    world.home.join(".local/state/luzia/queue")
}

/// The live waiters of this world: processes whose command line is `luzia ... __limit-waiter`
/// for its queue.
fn waiters(world: &World) -> Vec<u32> {
    common::processes_mentioning(&world.base)
        .into_iter()
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|w| w == b"__limit-waiter"))
        })
        .collect()
}

/// Processes of this world's jobs: supervisors and their agents.
fn supervisors(world: &World) -> Vec<u32> {
    common::processes_mentioning(&world.base)
        .into_iter()
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|w| w == b"supervise"))
        })
        .collect()
}

fn run(world: &World, task: &str) -> String {
    let out = world.luzia(&["run", task]);
    assert!(out.status.success(), "luzia run: {}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// Waits until `id` has ended `limited`, with the reset it was given, before that reset.
fn wait_limited(world: &World, id: &str, reset: u64) {
    let job = wait_for("the job to end", WAIT, || {
        world.job(id).filter(|j| !j["exit_code"].is_null())
    });
    assert_eq!(job["status"], "limited", "{job}");
    assert!(
        now() < reset,
        "the job ended after its reset: make RESET_IN longer"
    );
}

/// Waits until `id` has been continued and the continuation has completed; returns the
/// continuation's id and how long after the reset it began.
fn wait_continued(world: &World, id: &str, reset: u64) -> (String, Duration) {
    let next = wait_for("the continuation", WAIT, || {
        world.job(id)?["retried_by"]
            .as_array()?
            .first()?
            .as_str()
            .map(str::to_owned)
    });
    let done = wait_for("the continuation to end", WAIT, || {
        world.job(&next).filter(|j| !j["exit_code"].is_null())
    });
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resumes"], id, "{done}");
    let began = fs::metadata(jobs_dir(world).join(&next))
        .unwrap()
        .modified()
        .unwrap();
    let late = began
        .duration_since(UNIX_EPOCH + Duration::from_secs(reset))
        .expect("not continued before the reset");
    assert!(late >= Duration::from_secs(5), "the margin: {late:?}");
    (next, late)
}

/// Once the waiters have ended: each job continued once, and nothing of the waiter left.
fn continued_once_and_nothing_left(world: &World, ids: &[&str]) {
    wait_for("the waiter to end", WAIT, || {
        waiters(world).is_empty().then_some(())
    });
    for id in ids {
        let job = world.job(id).unwrap();
        assert_eq!(
            job["retried_by"].as_array().unwrap().len(),
            1,
            "once: {job}"
        );
    }
    let continuations = world
        .jobs()
        .iter()
        .filter(|j| !j["resumes"].is_null())
        .count();
    assert_eq!(continuations, ids.len());
    let limits = queue_dir(world).join("limits");
    let left: Vec<_> = fs::read_dir(&limits)
        .unwrap()
        .chain(fs::read_dir(limits.join("resume")).unwrap())
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "resume")
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        limits.display()
    );
}

/// `(resident KiB, of which its own (anonymous) KiB, CPU ticks so far)` of a process.
fn footprint(pid: u32) -> (u64, u64, u64) {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = |field: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // utime and stime: fields 14 and 15, the 12th and 13th after the command name.
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    (kib("VmRSS:"), kib("RssAnon:"), ticks)
}

#[test]
fn with_nothing_looking_a_limited_job_is_continued_once_at_the_reset() {
    if !git_or_skip() {
        return;
    }
    let reset = now() + RESET_IN;
    let world = world(reset);
    let id = run(&world, "write the docs");
    wait_limited(&world, &id, reset);
    wait_for("the supervisor to end", WAIT, || {
        supervisors(&world).is_empty().then_some(())
    });
    let waiter = wait_for("the waiter", WAIT, || waiters(&world).first().copied());
    // A session of its own: neither the terminal's hangup nor its Ctrl-C reach it.
    let stat = fs::read_to_string(format!("/proc/{waiter}/stat")).unwrap();
    let session: u32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()[3]
        .parse()
        .unwrap();
    assert_eq!(session, waiter, "the waiter leads its own session");
    let (_, _, before) = footprint(waiter);
    let asleep = Instant::now();
    wait_for("the reset's eve", WAIT, || {
        (now() + 1 >= reset).then_some(())
    });
    let (rss, own, after) = footprint(waiter);
    let slept = asleep.elapsed();
    let (next, late) = wait_continued(&world, &id, reset);
    eprintln!(
        "continued {:.1}s after the reset; the sleeping waiter: {rss} KiB resident ({own} KiB \
         its own), {} CPU ticks in {:.1}s of sleep",
        late.as_secs_f64(),
        after - before,
        slept.as_secs_f64()
    );
    assert!(
        late < Duration::from_secs(15),
        "continued {late:?} after the reset"
    );
    assert!(!pid_alive(waiter) || waiters(&world) == [waiter]);
    continued_once_and_nothing_left(&world, &[&id]);
    let claim = fs::read_to_string(jobs_dir(&world).join(&id).join("limit-resume.json")).unwrap();
    assert!(claim.contains("resumed after the usage limit"), "{claim}");
    assert!(!next.is_empty());
}

#[test]
fn three_jobs_stopped_at_once_share_one_waiter_and_are_each_continued_once() {
    if !git_or_skip() {
        return;
    }
    let reset = now() + RESET_IN + 5;
    let world = world(reset);
    // The three run before any stops: a task dispatched after the first stop would be held.
    fs::write(gate(&world.base), "").unwrap();
    let ids: Vec<String> = (1..=3).map(|n| run(&world, &format!("task {n}"))).collect();
    wait_for("the three agents to run", WAIT, || {
        ids.iter()
            .all(|id| world.job(id).is_some_and(|j| j["status"] == "running"))
            .then_some(())
    });
    fs::remove_file(gate(&world.base)).unwrap();
    for id in &ids {
        wait_limited(&world, id, reset);
    }
    wait_for("the supervisors to end", WAIT, || {
        supervisors(&world).is_empty().then_some(())
    });
    // Counted several times while they sleep: one, always the same.
    let first = waiters(&world);
    assert_eq!(first.len(), 1, "one waiter for the queue: {first:?}");
    for _ in 0..10 {
        assert_eq!(waiters(&world), first, "one waiter for the queue");
        std::thread::sleep(Duration::from_millis(50));
    }
    for id in &ids {
        let (_, late) = wait_continued(&world, id, reset);
        eprintln!("{id} continued {:.1}s after the reset", late.as_secs_f64());
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    continued_once_and_nothing_left(&world, &refs);
}

#[test]
fn a_killed_waiter_leaves_the_job_to_the_cockpit() {
    require_tmux!();
    if !git_or_skip() {
        return;
    }
    let reset = now() + RESET_IN;
    let world = world(reset);
    let id = run(&world, "write the docs");
    wait_limited(&world, &id, reset);
    let waiter = wait_for("the waiter", WAIT, || waiters(&world).first().copied());
    kill_hard(waiter);
    wait_for("the waiter to die", WAIT, || {
        (!pid_alive(waiter)).then_some(())
    });
    world.open_cockpit();
    wait_continued(&world, &id, reset);
    let job = world.job(&id).unwrap();
    assert_eq!(
        job["retried_by"].as_array().unwrap().len(),
        1,
        "once: {job}"
    );
}

/// The transcript of `id`'s session, as the fake `claude` saves it.
fn transcript(world: &World, id: &str) -> PathBuf {
    let meta: Value =
        serde_json::from_slice(&fs::read(jobs_dir(world).join(id).join("meta.json")).unwrap())
            .unwrap();
    let sid = meta["session_id"].as_str().unwrap();
    world
        .home
        .join(".claude/projects/-repo")
        .join(format!("{sid}.jsonl"))
}

/// The job is limited; `lose` takes away what its continuation needs; at the reset the
/// waiter's look finds it cannot be continued: said once, in the job, and not tried again.
fn said_once_and_not_tried_again(lose: impl FnOnce(&World, &str), because: &str) {
    let reset = now() + RESET_IN;
    let world = world(reset);
    let id = run(&world, "write the docs");
    wait_limited(&world, &id, reset);
    lose(&world, &id);
    let pending = queue_dir(&world).join("limits/resume").join(&id);
    assert!(pending.exists(), "a resume is pending");
    wait_for("the pending resume to be dropped", WAIT, || {
        (!pending.exists()).then_some(())
    });
    assert!(now() >= reset + 5, "dropped before its reset");
    wait_for("the waiter to end", WAIT, || {
        waiters(&world).is_empty().then_some(())
    });
    // Said once, in the job: its timeline, and the claim that keeps any other look from it.
    let detail = text(&world.run(&world.home, "luzia", &["jobs", &id]).stdout);
    assert_eq!(
        detail.matches("not resumed after the usage limit").count(),
        1,
        "{detail}"
    );
    assert!(detail.contains(because), "{detail}");
    let claim = fs::read_to_string(jobs_dir(&world).join(&id).join("limit-resume.json")).unwrap();
    assert!(
        claim.contains("not resumed after the usage limit"),
        "{claim}"
    );
    // Nothing was started to continue it; with the pending resume dropped, no look tries again,
    // and the hold has lapsed.
    let all: Vec<Value> =
        serde_json::from_slice(&world.run(&world.home, "luzia", &["jobs", "--json"]).stdout)
            .unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    let job = &all[0];
    assert_eq!(job["status"], "limited", "{job}");
    assert!(
        job["retried_by"].as_array().is_none_or(Vec::is_empty),
        "{job}"
    );
    assert!(!queue_dir(&world).join("limits/claude.json").exists());
}

#[test]
fn a_session_whose_transcript_is_gone_is_said_once_and_not_tried_again() {
    if !git_or_skip() {
        return;
    }
    said_once_and_not_tried_again(
        |world, id| fs::remove_file(transcript(world, id)).unwrap(),
        "transcript of its session",
    );
}

#[test]
fn a_session_whose_directory_is_gone_is_said_once_and_not_tried_again() {
    if !git_or_skip() {
        return;
    }
    said_once_and_not_tried_again(
        |world, _| fs::remove_dir_all(&world.repo).unwrap(),
        "does not exist",
    );
}
