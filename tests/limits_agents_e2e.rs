//! The usage limit is an account's: while Claude Code's stands, the queue holds the tasks that
//! run Claude Code, whichever way they chose it (the default agent, `[projects.X] agent`,
//! `luzia run --agent`), and starts the others. Through the real binary, with a fake `claude`
//! that speaks Claude Code 2.1.197's stream-json and a plain command as the other agent
//! (`[agents.other]`). Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

mod limits_agents_world;

use limits_agents_world::{Default, World, line_with};

/// Far enough ahead that no reset passes during the test.
const RESET_IN: i64 = 300;

/// Starts a job of project `project` that the limit stops; returns its id.
fn limited_job(w: &World, project: &str) -> String {
    let first = w.ok(&["run", project, "write the docs"]);
    let job = w.wait_status(&first, "limited");
    assert!(job["resets_at"].is_string(), "{job}");
    first
}

#[test]
fn claude_s_limit_holds_claude_s_tasks_and_starts_the_other_agent_s() {
    let w = World::new(Default::Claude, 4);
    w.reset_in(RESET_IN);
    let first = limited_job(&w, "p");

    // Another agent, chosen by the flag or by its project: started at once.
    let chosen = w.ok(&["run", "p", "--agent", "other", "other by the flag"]);
    assert!(!chosen.starts_with("queued"), "{chosen}");
    let by_project = w.ok(&["run", "o", "other by its project"]);
    assert!(!by_project.starts_with("queued"), "{by_project}");
    w.wait_status(&chosen, "completed");
    w.wait_status(&by_project, "completed");

    // One queued behind the limit's tasks is started by the queue's next look; Claude Code's
    // stays held, and each row of the queue says what holds it.
    let claude_task = w.ok(&["run", "p", "PLAIN claude task"]);
    assert!(
        claude_task.starts_with("queued ") && claude_task.contains("held: claude limit until "),
        "{claude_task}"
    );
    let queued_other = w.ok(&["run", "--queue", "p", "--agent", "other", "other queued"]);
    assert!(queued_other.starts_with("queued "), "{queued_other}");
    assert!(
        !queued_other.contains("held"),
        "the other agent is not held: {queued_other}"
    );
    let listed = w.ok(&["queue"]);
    assert!(listed.contains("other queued"), "{listed}");
    let held = line_with(&listed, "held: ").unwrap_or_else(|| panic!("{listed}"));
    assert!(
        held.contains("held: claude limit until ") && held.contains("1 task"),
        "{listed}"
    );
    // The next dispatch looks at the queue first: the other agent's task starts, Claude Code's
    // does not.
    let third = w.ok(&["run", "o", "other again"]);
    assert!(!third.starts_with("queued"), "{third}");
    w.wait_for("the queued task of the other agent to start", || {
        w.of_task("other queued").len() == 1
    });
    let started = w.of_task("other queued");
    w.wait_status(started[0]["id"].as_str().unwrap(), "completed");
    assert!(
        w.of_task("PLAIN claude task").is_empty(),
        "Claude Code's task started while its limit stands"
    );
    let listed = w.ok(&["queue"]);
    assert!(
        listed.contains("PLAIN claude task") && !listed.contains("other queued"),
        "{listed}"
    );
    assert!(w.continuations(&first).is_empty());
}

#[test]
fn a_project_that_runs_claude_is_held_whatever_the_default_agent() {
    let w = World::new(Default::Other, 4);
    w.reset_in(RESET_IN);
    // Project c runs Claude Code by its `agent`; the default is the other agent.
    limited_job(&w, "c");

    let held = w.ok(&["run", "c", "PLAIN claude task"]);
    assert!(
        held.starts_with("queued ") && held.contains("held: claude limit until "),
        "{held}"
    );
    let chosen = w.ok(&["run", "p", "--agent", "claude", "PLAIN chosen claude"]);
    assert!(chosen.contains("held: claude limit until "), "{chosen}");
    let plain = w.ok(&["run", "p", "the default agent's task"]);
    assert!(!plain.starts_with("queued"), "{plain}");
    w.wait_status(&plain, "completed");
    let listed = w.ok(&["queue"]);
    assert!(
        line_with(&listed, "held: claude limit until ").is_some_and(|l| l.contains("2 tasks")),
        "{listed}"
    );
    assert!(w.of_task("PLAIN claude task").is_empty());
    assert!(w.of_task("PLAIN chosen claude").is_empty());
}

/// The cockpit says per row what holds it: Claude Code's task says the limit, the other
/// agent's (queued behind a full slot) its place.
#[test]
fn the_cockpit_says_held_only_on_the_rows_the_limit_holds() {
    require_tmux!();
    let w = World::new(Default::Claude, 2);
    w.reset_in(RESET_IN);
    limited_job(&w, "p");
    // Both slots taken by the other agent's jobs, waiting at the gate.
    w.close_gate();
    let busy: Vec<String> = (0..2)
        .map(|i| w.ok(&["run", "o", &format!("busy {i}")]))
        .collect();
    for id in &busy {
        assert!(!id.starts_with("queued"), "{id}");
    }
    let claude_task = w.ok(&["run", "p", "PLAIN claude task"]);
    assert!(claude_task.contains("held: claude"), "{claude_task}");
    let other = w.ok(&["run", "o", "other waits for a slot"]);
    assert!(
        other.starts_with("queued ") && other.contains("slots is taken"),
        "{other}"
    );
    w.open_cockpit("one");
    let last = w.wait_screen("one", "the queued rows", |s| {
        line_with(s, "PLAIN claude task").is_some_and(|l| l.contains("held: claude limit"))
            && line_with(s, "other waits for a slot").is_some()
    });
    let row = line_with(&last, "other waits for a slot").unwrap();
    assert!(!row.contains("held"), "{last}");
    assert!(row.contains("in queue"), "{last}");
    // The header counts the tasks the limit holds (compact where an alarm takes the room).
    let header = last.lines().next().unwrap_or_default();
    assert!(
        header.contains("limit ") && header.contains("· 1 held"),
        "{last}"
    );
    w.open_gate();
}
