//! The AGENT column in the real cockpit at 160x45: two jobs that ran different kinds of agent
//! (Claude Code and Codex, named as the dispatcher names them: a program or its path) each say
//! which; once one of them is gone from the root, one kind is left and the column with it.
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
