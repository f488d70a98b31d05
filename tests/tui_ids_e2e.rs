//! The ids the cockpit shows are ids the command line takes: at 80 columns the table shows each
//! job's shortest unique prefix, and `luzia logs` given that prefix prints that job's log.
//!
//! Without tmux the tests print a loud SKIPPED message and pass, unless `LUZIA_REQUIRE_TMUX=1`
//! (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use tmux::{Cockpit, Opts, Sandbox, shows_id};

#[test]
fn the_id_the_narrow_table_shows_is_one_logs_takes() {
    require_tmux!();
    let sb = Sandbox::new();
    let ids = ["211041-f3a9", "211041-07bc", "093000-aaaa"];
    for (day, id) in ids.iter().enumerate() {
        sb.finished_job(id, "musica", &format!("task {id}"), day as u32 + 1, 0);
    }
    let config = sb.config_file("config.toml", "");
    let ck = Cockpit::start(&sb, Opts::default().size(80, 24));
    let screen = ck.wait_for("every job's row", |s| s.job_rows().len() == ids.len());
    ck.key("q");
    for id in ids {
        let shown = screen
            .job_rows()
            .iter()
            .flat_map(|r| r.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .find(|w| shows_id(w, id))
            .unwrap_or_else(|| panic!("{id} on screen:\n{}", screen.text()));
        assert!(
            shown.len() < id.len(),
            "at 80 columns the table shows a prefix of {id}, not {shown}:\n{}",
            screen.text()
        );
        let log = sb.luzia(&config, &["logs", &shown]);
        assert_eq!(
            log,
            format!("task {id}: working\ntask {id}: done\n\nexit:0\n"),
            "`luzia logs {shown}`"
        );
    }
}
