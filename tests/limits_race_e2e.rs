//! Everything that looks at the usage limit's reset, at once: two cockpits (`luzia tui` in
//! tmux, each a queue's starter that may write), `luzia notify --watch`, the waiter the limited
//! job's supervisor left, and the queue's starter in the supervisors of other jobs that end at
//! the very moment the resume is due, with a `luzia run` given then too. In each of several
//! rounds, the job the limit stopped is continued exactly once, one `resumed` event is sent,
//! and the task held meanwhile starts once. Through the real binary, with a fake `claude` that
//! speaks Claude Code 2.1.197's stream-json. Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

mod limits_agents_world;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use limits_agents_world::{Default, World};

const ROUNDS: usize = 3;
/// How far ahead each limit resets: room for the job to end on it and the held task to be
/// queued on a loaded machine.
const RESET_IN: i64 = 12;
/// The jobs of the other agent that end as the resume falls due.
const ENDING_AT_THE_RESET: usize = 3;
const MARGIN: u64 = 5;

#[test]
fn every_looker_at_once_resumes_the_job_once_and_starts_the_held_task_once() {
    require_tmux!();
    let w = World::new(Default::Claude, 8);
    w.open_cockpit("one");
    w.open_cockpit("two");
    let _notifier = w.watcher();
    let mut delays = Vec::new();
    for round in 0..ROUNDS {
        let at = w.reset_in(RESET_IN);
        let task = format!("write the docs {round}");
        let first = w.ok(&["run", "p", &task]);
        w.wait_status(&first, "limited");
        let held_task = format!("PLAIN held {round}");
        let held = w.ok(&["run", "p", &held_task]);
        assert!(held.contains("held: claude limit until "), "{held}");

        // The other agent's jobs, all ending when the resume falls due: their supervisors are
        // the queue's starter then, beside the cockpits, the notifier and the waiter.
        w.close_gate();
        for i in 0..ENDING_AT_THE_RESET {
            let id = w.ok(&["run", "o", &format!("ending {round}.{i}")]);
            assert!(!id.starts_with("queued"), "{id}");
        }
        let due = UNIX_EPOCH + Duration::from_secs(at as u64 + MARGIN);
        assert!(
            SystemTime::now() < due,
            "round {round}: set up after the resume fell due; make RESET_IN longer"
        );
        // The one wait for a time rather than a state: the race is at the moment of the reset.
        if let Ok(left) = due.duration_since(SystemTime::now()) {
            std::thread::sleep(left);
        }
        w.open_gate();
        let another = w.ok(&["run", "o", &format!("given at the reset {round}")]);
        assert!(!another.starts_with("queued"), "{another}");

        w.wait_for("the continuation and the held task", || {
            !w.continuations(&first).is_empty() && !w.of_task(&held_task).is_empty()
        });
        let next = w.continuations(&first).remove(0);
        assert_eq!(w.wait_status(&next, "completed")["resumes"], first.as_str());
        let started = w.of_task(&held_task).remove(0);
        w.wait_status(started["id"].as_str().unwrap(), "completed");
        w.wait_for("the resumed event", || {
            w.events().iter().filter(|e| e["kind"] == "resumed").count() > round
        });
        let began = std::fs::metadata(w.jobs.join(&next))
            .unwrap()
            .modified()
            .unwrap();
        let late = began
            .duration_since(UNIX_EPOCH + Duration::from_secs(at as u64))
            .expect("not continued before the reset");
        assert!(late >= Duration::from_secs(MARGIN), "the margin: {late:?}");
        delays.push(late);
    }

    // Every looker has looked again since (the waiter has ended with nothing left ahead, and
    // every round's lookers looked through the next round): nothing was done twice.
    w.wait_for("the waiter to end", || {
        common::processes_mentioning(&w.queue)
            .into_iter()
            .all(|pid| !cmdline(pid).contains("__limit-waiter"))
    });
    let events = w.events();
    let of = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!(
        (of("limited"), of("resumed")),
        (ROUNDS, ROUNDS),
        "{events:#?}"
    );
    for round in 0..ROUNDS {
        // The job the limit stopped (its continuation has its task too).
        let first: Vec<_> = w
            .of_task(&format!("write the docs {round}"))
            .into_iter()
            .filter(|j| j["retry_of"].is_null())
            .collect();
        assert_eq!(first.len(), 1, "round {round}: {first:?}");
        let id = first[0]["id"].as_str().unwrap();
        assert_eq!(w.continuations(id).len(), 1, "round {round}: resumed once");
        assert_eq!(
            w.meta(id)["resumed_by"].as_array().map(Vec::len),
            Some(1),
            "round {round}"
        );
        assert_eq!(
            w.of_task(&format!("PLAIN held {round}")).len(),
            1,
            "round {round}: the held task started once"
        );
    }
    for name in ["one", "two"] {
        let screen = w.screen(name);
        assert!(
            screen.contains("STATUS"),
            "cockpit {name} still up:\n{screen}"
        );
    }
    let shown: Vec<String> = delays
        .iter()
        .map(|d| format!("{:.1}s", d.as_secs_f64()))
        .collect();
    eprintln!("{ROUNDS} rounds clean; continued after the reset: {shown:?}");
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}
