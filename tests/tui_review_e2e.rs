//! End-to-end: reviewing what a job changed, in the real cockpit (tmux) over a real git
//! repository and real jobs started with `luzia run` (the agent is `sh` reading the task as its
//! script). `d` shows the diff of a finished snapshot job, coloured and with an escape sequence
//! of the changed file never reaching the terminal; `M` on a worktree job merges its branch
//! (the project's branch then has the file); `X` discards one (its branch and its worktree gone);
//! a read-only cockpit shows diffs and never merges; the demo has a job whose diff opens.
//!
//! Without tmux or git these tests print a loud SKIPPED message and pass, unless CI asks for
//! them (`LUZIA_REQUIRE_TMUX=1`, `LUZIA_REQUIRE_GIT=1`), where a missing one fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};

use common::git;
use tmux::{Cockpit, DemoAgents, Opts, Sandbox};

/// A project `musica` that is a git repository on `main` with one commit, whose jobs are kept
/// apart by `isolation`; returns the config and the project's directory.
fn world(sb: &Sandbox, isolation: &str) -> (PathBuf, PathBuf) {
    let project = sb.tmp.path().join("project");
    fs::create_dir_all(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    fs::write(project.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    git(&project, &["add", "."]);
    git(&project, &["commit", "-qm", "init"]);
    let config = sb.config_file(
        "review.toml",
        &format!(
            "queue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n[agent]\n\
             command = [\"sh\"]\nprompt_template = \"{{task}}\"\n\n\
             [projects.musica]\npath = {project:?}\nisolation = \"{isolation}\"\n",
            queue = sb.tmp.path().join("queue"),
            notes = sb.tmp.path().join("notifications.log"),
        ),
    );
    (config, project)
}

fn luzia(sb: &Sandbox, config: &Path, args: &[&str]) -> String {
    sb.luzia(config, args).trim().to_owned()
}

fn cockpit<'a>(sb: &'a Sandbox, config: &Path) -> Cockpit<'a> {
    Cockpit::start(
        sb,
        Opts::default()
            .size(160, 40)
            .global_arg("--config")
            .global_arg(config.to_str().unwrap()),
    )
}

/// The job's row once it has completed with its change recorded (`· N file(s)`).
fn wait_recorded(ck: &Cockpit, id: &str) {
    ck.wait_row(id, "completed, its change recorded", |r| {
        r.contains("completed") && r.contains(" file")
    });
}

/// meta.json's `review` of the job.
fn review(sb: &Sandbox, id: &str) -> serde_json::Value {
    let meta = fs::read_to_string(sb.job_dir(id).join("meta.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    meta["review"].clone()
}

#[test]
fn d_shows_the_diff_of_a_finished_snapshot_job() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let (cfg, _project) = world(&sb, "snapshot");
    // An edit, and a new file whose text carries a title change and a screen clear.
    let id = luzia(
        &sb,
        &cfg,
        &[
            "run",
            "musica",
            "--",
            "echo four >> a.txt; printf 'hostile \\033]0;%sned\\007\\033[2Jline\\n' pw > new.txt",
        ],
    );
    let ck = cockpit(&sb, &cfg);
    wait_recorded(&ck, &id);
    let s = ck.screen();
    let row = s.job_row(&id).unwrap();
    assert!(row.contains("+2 -0 · 2 files"), "the CHANGES column: {row}");

    ck.key("d");
    let s = ck.wait_text("diff --git a/new.txt b/new.txt");
    for want in [
        "2 files changed",
        "a.txt",
        "+four",
        "+hostile line",
        "snapshot",
        "project musica",
    ] {
        assert!(s.contains(want), "{want:?} not in:\n{}", s.text());
    }
    assert!(
        !s.contains("pwned"),
        "the OSC title is dropped:\n{}",
        s.text()
    );
    assert_ne!(
        ck.display("#{pane_title}"),
        "pwned",
        "nor reached the terminal"
    );
    // Coloured: the added line green, the hunk cyan (tmux says colour 2 and 6 of the palette).
    let escaped = ck.screen_escaped().join("\n");
    let coloured = |colour: u8, text: &str| {
        escaped.contains(&format!("\x1b[38;5;{colour}m{text}"))
            || escaped.contains(&format!("\x1b[3{colour}m{text}"))
    };
    assert!(coloured(2, "+four"), "{escaped}");
    assert!(coloured(6, "@@"), "{escaped}");

    // A snapshot job's change is in the project already: M says so, and nothing happens.
    ck.key("q");
    ck.wait_for("the main screen again", |s| s.table_box().is_some());
    ck.key("M");
    let s = ck.wait_text("ran in the project itself");
    assert!(!s.contains("y merge"), "no confirmation: {}", s.text());
}

#[test]
fn m_merges_a_worktree_jobs_branch_into_the_project() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let (cfg, project) = world(&sb, "worktree");
    let id = luzia(
        &sb,
        &cfg,
        &["run", "musica", "--", "echo 'the feature' > feature.txt"],
    );
    let ck = cockpit(&sb, &cfg);
    wait_recorded(&ck, &id);
    let branch = format!("luzia/{id}");

    ck.key("M");
    let s = ck.wait_text("y merge");
    for want in [&format!("Merge the change of job {id}?"), &branch] {
        assert!(s.contains(want), "{want:?} not in:\n{}", s.text());
    }
    // Any key but yes declines, and nothing is merged.
    ck.key("n");
    ck.wait_for("the confirmation closed", |s| !s.contains("y merge"));
    assert!(
        git(&project, &["ls-tree", "--name-only", "main"])
            .lines()
            .all(|f| f != "feature.txt")
    );

    ck.key("M");
    ck.wait_text("y merge");
    ck.key("y");
    let s = ck.wait_text(&format!("merged {branch}"));
    assert!(s.contains("into main"), "{}", s.text());
    ck.wait_row(&id, "its row read again", |r| r.contains("· merged"));
    assert_eq!(
        git(&project, &["show", "main:feature.txt"]),
        "the feature",
        "the project's branch has the job's file"
    );
}

#[test]
fn x_discards_a_worktree_job_its_branch_and_its_worktree() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let (cfg, project) = world(&sb, "worktree");
    let id = luzia(
        &sb,
        &cfg,
        &["run", "musica", "--", "echo 'not wanted' > draft.txt"],
    );
    let ck = cockpit(&sb, &cfg);
    wait_recorded(&ck, &id);
    let branch = format!("luzia/{id}");
    let worktree = PathBuf::from(review(&sb, &id)["worktree"].as_str().unwrap());
    assert!(worktree.is_dir(), "{}", worktree.display());

    ck.key("X");
    let s = ck.wait_text("y discard");
    assert!(
        s.contains("remove the worktree") && s.contains(&branch),
        "{}",
        s.text()
    );
    ck.key("y");
    ck.wait_row(&id, "discarded", |r| r.contains("· discarded"));
    let branches = git(&project, &["branch", "--list", &branch]);
    assert!(branches.is_empty(), "the branch is gone: {branches}");
    assert!(
        !worktree.exists(),
        "the worktree is gone: {}",
        worktree.display()
    );
    assert_eq!(git(&project, &["ls-tree", "--name-only", "main"]), "a.txt");
}

#[test]
fn read_only_shows_the_diff_and_never_merges_or_discards() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let (cfg, project) = world(&sb, "worktree");
    let id = luzia(
        &sb,
        &cfg,
        &["run", "musica", "--", "echo 'kept' > kept.txt"],
    );
    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .size(160, 40)
            .global_arg("--config")
            .global_arg(cfg.to_str().unwrap())
            .arg("--read-only"),
    );
    wait_recorded(&ck, &id);
    let branch = format!("luzia/{id}");
    ck.key("d");
    let s = ck.wait_text("diff --git a/kept.txt b/kept.txt");
    assert!(s.contains(&format!("branch {branch}")), "{}", s.text());
    // Not from the view, not from the table.
    ck.key("M");
    ck.wait_text("read-only: this cockpit cannot merge changes");
    ck.key("X");
    ck.wait_text("read-only: this cockpit cannot discard changes");
    let s = ck.screen();
    assert!(
        !s.contains("y merge") && !s.contains("y discard"),
        "{}",
        s.text()
    );
    // The branch and its worktree are still there.
    git(
        &project,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
    );
    let worktree = review(&sb, &id)["worktree"].as_str().unwrap().to_owned();
    assert!(Path::new(&worktree).is_dir(), "{worktree}");
    assert_eq!(git(&project, &["ls-tree", "--name-only", "main"]), "a.txt");
}

/// `luzia tui --demo`: its job with a change to review opens a real diff.
#[test]
fn the_demo_has_a_job_whose_diff_opens() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let tmp = sb.tmp.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let _agents = DemoAgents(tmp.clone());
    let opts = Opts {
        no_jobs_dir: true,
        ..Opts::default()
    }
    .size(160, 40)
    .arg("--demo")
    .env("TMPDIR", tmp.to_str().unwrap());
    let ck = Cockpit::start(&sb, opts);
    let id = "091500-diff";
    ck.wait_row(id, "its change in CHANGES", |r| r.contains(" file"));
    // Select it with the filter, then open its diff.
    ck.key("/");
    ck.type_text(id);
    ck.key("Enter");
    ck.wait_for("the demo's diff job alone", |s| s.job_rows().len() == 1);
    ck.key("d");
    let s = ck.wait_text("diff --git");
    assert!(
        s.contains("files changed") || s.contains("1 file changed"),
        "{}",
        s.text()
    );
    assert!(s.contains("webshop"), "{}", s.text());
    assert!(!s.contains("reading the change"), "{}", s.text());
}

#[test]
fn the_checks_column_and_overlapping_jobs_in_the_cockpit() {
    require_tmux!();
    if !common::git_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let (cfg, _project) = world(&sb, "worktree");
    let text = fs::read_to_string(&cfg).unwrap();
    fs::write(
        &cfg,
        format!("{text}checks = [\"true\", \"test -f ok.out\", \"true\"]\n"),
    )
    .unwrap();
    let ck = Cockpit::start(
        &sb,
        Opts::default()
            .size(160, 45)
            .global_arg("--config")
            .global_arg(cfg.to_str().unwrap()),
    );
    let passed = luzia(
        &sb,
        &cfg,
        &["run", "musica", "--", "echo a >> a.txt\ntouch ok.out\n"],
    );
    let failed = luzia(&sb, &cfg, &["run", "musica", "--", "echo b >> a.txt\n"]);
    // A row is told by the id in its third word: another job's id may be in its alert.
    let row = |s: &tmux::Screen, id: &str| {
        s.text()
            .lines()
            .find(|r| r.split_whitespace().nth(2) == Some(id))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let screen = ck.wait_for("the failed checks and the passed ones", |s| {
        row(s, &failed).contains("checks_failed")
            && row(s, &failed).contains("✗ 1/3")
            && row(s, &passed).contains("completed")
            && row(s, &passed).contains("✓ 3/3")
    });
    assert!(screen.text().contains("CHECKS"), "{}", screen.text());
    // Both changed a.txt, neither is merged: each is flagged with the other.
    ck.wait_for("each flagged as overlapping the other", |s| {
        row(s, &passed).contains(&format!("overlaps {failed}"))
            && row(s, &failed).contains(&format!("overlaps {passed}"))
    });
}
