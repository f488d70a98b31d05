//! End-to-end: the cockpit started inside a git repository offers it for a new task, with no
//! project configured, and a task typed there runs at the repository's top as a job of the
//! project named after it. At 80x24 and 160x45, in the built `luzia tui` in tmux; the jobs root
//! given does not exist yet and is made by the cockpit.
//!
//! Without tmux (or git) these tests print a loud SKIPPED message and pass, unless CI asks for
//! them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::process::Command;

use tmux::{Cockpit, Opts, Sandbox};

#[test]
fn the_cockpit_offers_the_repository_it_starts_in_and_runs_a_task_there() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    for (width, height) in [(80, 24), (160, 45)] {
        let sb = Sandbox::new();
        let repo = sb.home.join("shop");
        let ok = Command::new("git")
            .args(["init", "-q"])
            .arg(&repo)
            .status()
            .unwrap();
        assert!(ok.success());
        fs::create_dir(repo.join("web")).unwrap();
        // The agent says where it ran; a project `musica` elsewhere is configured too.
        let config = sb.config_file(
            "first.toml",
            &format!(
                "[agent]\ncommand = [\"/bin/sh\", \"-c\", \"echo stand-in ran in $PWD\"]\n\
                 [projects.musica]\npath = {:?}\n",
                sb.home.to_str().unwrap()
            ),
        );
        let root = sb.tmp.path().join("not-yet/jobs");
        let opts = Opts {
            dir: Some(repo.join("web")),
            no_jobs_dir: true,
            ..Opts::default()
        }
        .size(width, height)
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .global_arg("--jobs-dir")
        .global_arg(root.to_str().unwrap());
        let ck = Cockpit::start(&sb, opts);
        ck.wait_text("no jobs under");
        assert!(root.is_dir(), "the cockpit made its jobs root");

        ck.key("n");
        ck.wait_text("new task for shop");
        ck.type_text("say where you are");
        ck.key("Enter");
        let top = repo.canonicalize().unwrap();
        let id = common::wait_for("the job's directory", tmux::TIMEOUT, || {
            common::job_ids(&root).into_iter().next()
        });
        let log = root.join(&id).join("output.log");
        common::wait_for("the agent's line", tmux::TIMEOUT, || {
            fs::read_to_string(&log)
                .ok()
                .filter(|l| l.contains(&format!("stand-in ran in {}", top.display())))
        });
        let meta = fs::read_to_string(root.join(&id).join("meta.json")).unwrap();
        assert!(meta.contains("\"project\": \"shop\""), "{meta}");
        ck.wait_for("the job, project shop, in the table", |s| {
            s.job_rows().iter().any(|r| r.contains("shop"))
        });
    }
}
