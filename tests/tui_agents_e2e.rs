//! The AGENT column in the real cockpit at 160x45: two jobs that ran different kinds of agent
//! (Claude Code and Codex, named as the dispatcher names them: a program or its path) each say
//! which; once one of them is gone from the root, one kind is left and the column with it. The
//! input bar picks the agent a task runs, and the AGENT column and meta.json say it ran.
//!
//! Without tmux the tests print a loud SKIPPED message and pass, unless `LUZIA_REQUIRE_TMUX=1`
//! (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use tmux::{Cockpit, Opts, Sandbox};

fn job(sb: &Sandbox, id: &str, agent: &str, task: &str) {
    let meta = serde_json::json!({
        "id": id, "project": "musica", "task": task, "agent": agent,
        "started": "2026-01-02T10:00:00Z", "finished": "2026-01-02T10:05:00Z",
    });
    sb.write(id, "meta.json", meta.to_string());
    sb.write(id, "output.log", format!("{task}: done\n\nexit:0\n"));
}

#[test]
fn two_kinds_of_agent_in_view_get_an_agent_column_and_one_kind_none() {
    require_tmux!();
    let sb = Sandbox::new();
    job(&sb, "100000-clau", "claude", "Write the release notes");
    job(
        &sb,
        "110000-codx",
        "/opt/codex/bin/codex",
        "Port the importer",
    );
    let ck = Cockpit::start(&sb, Opts::default().size(160, 45));
    let screen = ck.wait_stable("both jobs with their agents", |s| {
        s.job_rows().len() == 2 && s.contains("AGENT")
    });
    let header = screen
        .lines
        .iter()
        .find(|l| l.contains("STATUS"))
        .unwrap()
        .clone();
    // In characters: the status symbols take more bytes than the header's letters.
    let column = header[..header.find("AGENT").unwrap()].chars().count();
    for (id, kind) in [("100000-clau", "claude"), ("110000-codx", "codex")] {
        let row = screen
            .lines
            .iter()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id}:\n{}", screen.text()));
        let under: String = row.chars().skip(column).take(kind.len()).collect();
        assert_eq!(
            under,
            kind,
            "{id} ran {kind}, under AGENT:\n{}",
            screen.text()
        );
    }

    std::fs::remove_dir_all(sb.job_dir("110000-codx")).unwrap();
    let screen = ck.wait_stable("one job left", |s| s.job_rows().len() == 1);
    assert!(
        !screen.contains("AGENT") && !screen.contains("claude "),
        "one kind of agent in view: no column\n{}",
        screen.text()
    );
    ck.key("q");
}

/// An executable script at `path`.
fn script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The agent picked in the real cockpit's input bar is the one the task runs: the project's own
/// (`[agent] command`, a plain script) for the first task, and one picked by name (`[agents.scribe]`,
/// a program called `aider`) for the second; meta.json records each, and the AGENT column says
/// which kind each job ran.
#[test]
fn the_input_bar_picks_the_agent_a_task_runs() {
    require_tmux!();
    let sb = Sandbox::new();
    let base = sb.tmp.path();
    let (bin, project) = (base.join("bin"), base.join("proj"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let (own, scribe) = (bin.join("work.sh"), bin.join("aider"));
    script(&own, "cat > /dev/null; echo done by the project agent");
    script(&scribe, "cat > /dev/null; echo done by the scribe");
    let q = |p: &std::path::Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
    let config = sb.config_file(
        "agents.toml",
        &format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [{}]\n\n\
             [agents.scribe]\ncommand = [{}]\n\n[projects.p]\npath = {}\n",
            q(&sb.root),
            q(&base.join("notifications.log")),
            q(&base.join("queue")),
            q(&own),
            q(&scribe),
            q(&project),
        ),
    );
    let opts = Opts::default()
        .size(160, 45)
        .global_arg("--config")
        .global_arg(config.to_str().unwrap());
    let ck = Cockpit::start(&sb, opts);
    ck.wait_ready();

    ck.key("n");
    ck.wait_text("new task for p · agent work.sh (the project's) (ctrl-t: another agent)");
    ck.type_text("First task");
    ck.key("Enter");
    // The bar closes once the dispatch has come back (opened before, it would close then).
    ck.wait_for("the first job, the bar closed", |s| {
        s.contains("First task") && !s.contains("new task for")
    });

    ck.key("n");
    ck.wait_text("agent work.sh (the project's)");
    ck.key("M-t"); // backwards: the last agent by name
    ck.wait_text("new task for p · agent scribe (ctrl-t: another agent)");
    ck.type_text("Second task");
    ck.key("Enter");

    let screen = ck.wait_stable("both jobs done, with their agents", |s| {
        s.contains("AGENT")
            && s.job_rows()
                .iter()
                .filter(|r| r.contains("completed"))
                .count()
                == 2
    });
    let mut ran = std::collections::BTreeMap::new();
    for id in common::job_ids(&sb.root) {
        let Ok(meta) = std::fs::read(sb.root.join(&id).join("meta.json")) else {
            continue;
        };
        let meta: serde_json::Value = serde_json::from_slice(&meta).unwrap();
        ran.insert(meta["task"].as_str().unwrap().to_owned(), (id, meta));
    }
    let (first, first_meta) = &ran["First task"];
    let (second, second_meta) = &ran["Second task"];
    assert_eq!(first_meta["agent"], own.to_str().unwrap(), "{first_meta}");
    assert_eq!(
        second_meta["agent"],
        scribe.to_str().unwrap(),
        "{second_meta}"
    );

    let header = screen
        .lines
        .iter()
        .find(|l| l.contains("STATUS"))
        .unwrap()
        .clone();
    let column = header[..header.find("AGENT").unwrap()].chars().count();
    for (id, kind) in [(first, "command"), (second, "aider")] {
        let row = screen
            .lines
            .iter()
            .find(|l| l.contains(id.as_str()))
            .unwrap_or_else(|| panic!("{id}:\n{}", screen.text()));
        let under: String = row.chars().skip(column).take(kind.len()).collect();
        assert_eq!(under, kind, "{id} ran {kind}:\n{}", screen.text());
    }
    ck.key("q");
}
