//! A job's change, recorded with real git repositories and real `luzia run` jobs whose agent is
//! `sh` reading the task as its script: snapshots exact with uncommitted, committed, deleted
//! and binary files, and the user's index, stash and branches untouched; what happened in the
//! project meanwhile noted; worktree jobs in parallel, each seeing only its own change; merge
//! (fast-forward, a merge commit, a conflict refused with nothing touched), discard, and the
//! bad cases, each with its message. Every wait is for a condition, with a hang guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
const GUARD: Duration = Duration::from_secs(60);

struct World {
    base: PathBuf,
    jobs: PathBuf,
    project: PathBuf,
    config: PathBuf,
    xdg: PathBuf,
    _tmp: TempDir,
}

impl World {
    /// A git project with two commits' worth of files, and `isolation` in its config (or none).
    fn new(isolation: Option<&str>) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-review-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let w = World {
            jobs: base.join("jobs"),
            project: base.join("proj"),
            config: base.join("config.toml"),
            xdg: base.join("xdg"),
            base,
            _tmp: tmp,
        };
        for d in [&w.jobs, &w.project, &w.xdg] {
            fs::create_dir(d).unwrap();
        }
        w.configure(isolation);
        git(&w.project, &["init", "-q", "-b", "main"]);
        git(&w.project, &["config", "user.name", "op"]);
        git(&w.project, &["config", "user.email", "op@example.com"]);
        fs::write(w.project.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        fs::write(w.project.join("gone.txt"), "bye\n").unwrap();
        fs::write(w.project.join(".gitignore"), "*.log\n").unwrap();
        git(&w.project, &["add", "."]);
        git(&w.project, &["commit", "-qm", "init"]);
        w
    }

    fn configure(&self, isolation: Option<&str>) {
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let iso = isolation.map_or(String::new(), |i| format!("isolation = \"{i}\"\n"));
        let text = format!(
            "jobs_dir = {}\nqueue_dir = {}\nnotifications_log = {}\n\n[agent]\ncommand = [\"sh\"]\n\
             max_concurrent = 8\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n{iso}",
            q(&self.jobs),
            q(&self.base.join("queue")),
            q(&self.base.join("notes.log")),
            q(&self.project),
        );
        fs::write(&self.config, text).unwrap();
    }

    fn luzia(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(LUZIA);
        for var in LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", &self.xdg)
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .arg("--config")
            .arg(&self.config)
            .args(args);
        assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert!(
            out.status.success(),
            "luzia {args:?}: {}{}",
            stdout_of(&out),
            stderr_of(&out)
        );
        stdout_of(&out)
    }

    /// The refusal's message (the command must fail).
    fn refused(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert!(
            !out.status.success(),
            "luzia {args:?} should fail: {}",
            stdout_of(&out)
        );
        stderr_of(&out)
    }

    /// Starts the task (a shell script run in the project) and returns the job id.
    fn start(&self, script: &str) -> String {
        self.ok(&["run", "p", "--", script]).trim().to_owned()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    fn wait_done(&self, id: &str) -> Value {
        let log = self.dir(id).join("output.log");
        wait_for(&format!("{id} to end"), || {
            fs::read_to_string(&log)
                .ok()
                .filter(|l| l.lines().any(|x| x.starts_with("exit:")))
        });
        let pid = fs::read_to_string(self.dir(id).join("pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<u32>() {
            wait_for("the supervisor to exit", || {
                (!(pid_alive(pid) && cmdline_mentions(pid, &self.dir(id)))).then_some(())
            });
        }
        self.meta(id)
    }

    fn wait_started(&self, id: &str, marker: &Path) {
        wait_for(&format!("{id}'s agent to start"), || {
            marker.exists().then_some(())
        });
    }

    fn diff_json(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["diff", id, "--json"])).unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// `files` of a change as `(path, kind, added, removed, binary)`.
fn files(change: &Value) -> Vec<(String, String, u64, u64, bool)> {
    change["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["kind"].as_str().unwrap().to_owned(),
                f["added"].as_u64().unwrap(),
                f["removed"].as_u64().unwrap(),
                f["binary"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn f(
    path: &str,
    kind: &str,
    added: u64,
    removed: u64,
    binary: bool,
) -> (String, String, u64, u64, bool) {
    (path.to_owned(), kind.to_owned(), added, removed, binary)
}

/// What a person's repository is made of, byte for byte: HEAD, the branches, the stash, the
/// index file.
fn state(repo: &Path) -> (String, String, String, Vec<u8>) {
    (
        git(repo, &["rev-parse", "HEAD"]),
        git(
            repo,
            &["for-each-ref", "refs/heads", "refs/tags", "refs/stash"],
        ),
        git(repo, &["stash", "list"]),
        fs::read(repo.join(".git/index")).unwrap(),
    )
}

#[test]
fn a_snapshot_is_exact_and_touches_nothing_of_the_users() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    // The operator's own uncommitted work, before the job: not part of the job's change.
    fs::write(w.project.join("a.txt"), "one\ntwo\nthree\nmine\n").unwrap();
    git(&w.project, &["stash", "create"]);
    let before = state(&w.project);
    let id = w.start(
        "printf 'agent\\n' >> a.txt\nrm gone.txt\nprintf '\\000\\001\\002png' > logo.png\n\
         printf 'x\\ny\\n' > new.txt\nprintf 'noise\\n' > build.log\n",
    );
    let meta = w.wait_done(&id);
    let review = &meta["review"];
    assert_eq!(review["isolation"], "snapshot", "{meta}");
    assert_eq!(
        review["changes"],
        serde_json::json!({"files": 4, "added": 3, "removed": 1})
    );
    let change = w.diff_json(&id);
    assert_eq!(
        files(&change),
        [
            f("a.txt", "modified", 1, 0, false),
            f("gone.txt", "deleted", 0, 1, false),
            f("logo.png", "added", 0, 0, true),
            f("new.txt", "added", 2, 0, false),
        ]
    );
    let patch = change["patch"].as_str().unwrap();
    assert!(
        patch.contains("+agent\n") && !patch.contains("+mine"),
        "{patch}"
    );
    assert!(
        patch.contains("Binary files /dev/null and b/logo.png differ"),
        "{patch}"
    );
    assert_eq!(change["notes"], serde_json::json!([]));
    // The index, HEAD, branches and stash as they were; the agent's edits still uncommitted.
    assert_eq!(state(&w.project), before);
    let status = git(&w.project, &["status", "--porcelain"]);
    assert_eq!(status, " M a.txt\n D gone.txt\n?? logo.png\n?? new.txt");
    let refs = git(
        &w.project,
        &["for-each-ref", "--format=%(refname)", "refs/luzia"],
    );
    assert_eq!(
        refs,
        format!("refs/luzia/{id}/after\nrefs/luzia/{id}/before")
    );
    // The plain output: the files with their counts, then the patch as git printed it.
    let plain = w.ok(&["diff", &id]);
    assert!(
        plain.starts_with("M a.txt  +1 -0\nD gone.txt  +0 -1\nA logo.png  binary\n"),
        "{plain}"
    );
    assert!(
        plain.contains("+3 -1 · 4 files\n\ndiff --git a/a.txt b/a.txt\n"),
        "{plain}"
    );
    assert!(plain.ends_with(patch), "{plain}");
    let stat = w.ok(&["diff", &id, "--stat"]);
    assert!(
        !stat.contains("diff --git") && stat.ends_with("+3 -1 · 4 files\n"),
        "{stat}"
    );
    // `luzia jobs ID` shows the review facts.
    let described = w.ok(&["jobs", &id]);
    assert!(
        described.contains("snapshot") && described.contains("+3 -1 · 4 files"),
        "{described}"
    );
}

#[test]
fn commits_the_agent_makes_are_part_of_its_change() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("snapshot"));
    let id = w.start(
        "printf 'c\\n' > committed.txt\ngit add committed.txt\n\
         git -c user.name=a -c user.email=a@a commit -qm agent\nprintf 'u\\n' > loose.txt\n",
    );
    let meta = w.wait_done(&id);
    let change = w.diff_json(&id);
    assert_eq!(
        files(&change),
        [
            f("committed.txt", "added", 1, 0, false),
            f("loose.txt", "added", 1, 0, false)
        ]
    );
    assert!(
        meta["review"]["note"]
            .as_str()
            .unwrap()
            .contains("HEAD moved while the job ran"),
        "{meta}"
    );
}

#[test]
fn an_empty_repository_is_snapshotted_too() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    fs::remove_dir_all(w.project.join(".git")).unwrap();
    git(&w.project, &["init", "-q", "-b", "main"]);
    let id = w.start("printf 'n\\n' > first.txt\n");
    w.wait_done(&id);
    let change = w.diff_json(&id);
    assert_eq!(files(&change), [f("first.txt", "added", 1, 0, false)]);
    assert!(
        git(&w.project, &["for-each-ref", "refs/heads"]).is_empty(),
        "no branch made"
    );
}

#[test]
fn a_running_job_shows_its_change_so_far_and_what_the_operator_did_meanwhile_is_noted() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    let (started, release) = (w.path("started"), w.path("release"));
    let id = w.start(&format!(
        "printf 'early\\n' > early.txt\ntouch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n\
         printf 'late\\n' > late.txt\n",
        started.display(),
        release.display()
    ));
    w.wait_started(&id, &started);
    let so_far = w.diff_json(&id);
    assert_eq!(files(&so_far), [f("early.txt", "added", 1, 0, false)]);
    assert!(
        so_far["notes"][0]
            .as_str()
            .unwrap()
            .contains("still running"),
        "{so_far}"
    );
    for verb in ["merge", "discard"] {
        let e = w.refused(&[verb, &id]);
        assert!(
            e.contains("isolation = \"snapshot\"") || e.contains("still running"),
            "{e}"
        );
    }
    // The operator commits in the project while the job runs.
    fs::write(w.project.join("op.txt"), "op\n").unwrap();
    git(&w.project, &["add", "op.txt"]);
    git(&w.project, &["commit", "-qm", "operator"]);
    fs::write(&release, "").unwrap();
    let meta = w.wait_done(&id);
    let change = w.diff_json(&id);
    let notes = change["notes"].to_string();
    assert!(
        notes.contains("HEAD moved while the job ran"),
        "{notes} {meta}"
    );
    assert!(files(&change).iter().any(|c| c.0 == "late.txt"));
    // And once it ended, HEAD moving again is said too.
    fs::write(w.project.join("op2.txt"), "op\n").unwrap();
    git(&w.project, &["add", "op2.txt"]);
    git(&w.project, &["commit", "-qm", "operator again"]);
    let notes = w.diff_json(&id)["notes"].to_string();
    assert!(notes.contains("has moved since the job ended"), "{notes}");
}

#[test]
fn two_snapshot_jobs_at_once_are_told_of_each_other() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    let release = w.path("release");
    let script = |name: &str| {
        format!(
            "touch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nprintf 'x\\n' > {name}.txt\n",
            w.path(name).display(),
            release.display()
        )
    };
    let one = w.start(&script("one"));
    w.wait_started(&one, &w.path("one"));
    let two = w.start(&script("two"));
    w.wait_started(&two, &w.path("two"));
    fs::write(&release, "").unwrap();
    let (m1, m2) = (w.wait_done(&one), w.wait_done(&two));
    assert!(
        m1["review"]["note"].as_str().unwrap().contains(&two),
        "{m1}"
    );
    assert!(
        m2["review"]["note"].as_str().unwrap().contains(&one),
        "{m2}"
    );
}

/// Two worktree jobs on one project, each writing a file of its own and editing a.txt's first
/// line its own way, both running at the same time.
#[test]
fn worktree_jobs_in_parallel_each_see_only_their_own_change() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let release = w.path("release");
    let script = |name: &str| {
        format!(
            "touch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nls > seen-by-{name}.txt\n\
             sed -i 's/one/by-{name}/' a.txt\n",
            w.path(name).display(),
            release.display()
        )
    };
    let one = w.start(&script("one"));
    let two = w.start(&script("two"));
    w.wait_started(&one, &w.path("one"));
    w.wait_started(&two, &w.path("two"));
    for verb in ["merge", "discard"] {
        let e = w.refused(&[verb, &one]);
        assert!(e.contains(&format!("job {one} is still running")), "{e}");
    }
    fs::write(&release, "").unwrap();
    let (m1, m2) = (w.wait_done(&one), w.wait_done(&two));
    for (id, m, name) in [(&one, &m1, "one"), (&two, &m2, "two")] {
        let r = &m["review"];
        assert_eq!(r["isolation"], "worktree");
        assert_eq!(r["branch"], format!("luzia/{id}"));
        assert_eq!(r["worktree"], w.dir(id).join("worktree").to_str().unwrap());
        assert_eq!(m["cwd"], r["worktree"], "the agent ran in its worktree");
        let change = w.diff_json(id);
        assert_eq!(
            files(&change),
            [
                f("a.txt", "modified", 1, 1, false),
                f(&format!("seen-by-{name}.txt"), "added", 3, 0, false)
            ]
        );
        let seen = fs::read_to_string(
            w.dir(id)
                .join("worktree")
                .join(format!("seen-by-{name}.txt")),
        )
        .unwrap();
        assert_eq!(
            seen,
            format!("a.txt\ngone.txt\nseen-by-{name}.txt\n"),
            "no trace of the other job"
        );
    }
    // The project itself is untouched.
    assert_eq!(git(&w.project, &["status", "--porcelain"]), "");
    assert_eq!(
        fs::read_to_string(w.project.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
}

/// A finished worktree job that committed `file` (and left `loose` uncommitted, when given).
fn worktree_job(w: &World, file: &str, body: &str, loose: Option<&str>) -> String {
    let mut script = format!(
        "printf '{body}' > {file}\ngit add {file}\ngit -c user.name=a -c user.email=a@a commit -qm 'agent: {file}'\n"
    );
    if let Some(l) = loose {
        script.push_str(&format!("printf 'loose\\n' > {l}\n"));
    }
    let id = w.start(&script);
    w.wait_done(&id);
    id
}

#[test]
fn merge_fast_forwards_and_commits_leftover_work_first() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "feature.txt", "f\\n", Some("loose.txt"));
    let head = git(&w.project, &["rev-parse", "HEAD"]);
    let said = w.ok(&["merge", &id]);
    assert!(
        said.contains(&format!(
            "luzia/{id} (2 commits, 2 files) into main: fast-forward"
        )),
        "{said}"
    );
    assert!(said.contains("1 file left uncommitted"), "{said}");
    assert_eq!(git(&w.project, &["rev-parse", "HEAD^^"]), head);
    assert_eq!(
        fs::read_to_string(w.project.join("loose.txt")).unwrap(),
        "loose\n"
    );
    assert_eq!(git(&w.project, &["status", "--porcelain"]), "");
    // Merged, the worktree has nothing left to give: removed, the branch kept.
    let wt = w.dir(&id).join("worktree");
    assert!(!wt.exists(), "{said}");
    assert!(said.contains(&format!("removed the worktree {}", wt.display())));
    assert!(!git(&w.project, &["worktree", "list"]).contains(wt.to_str().unwrap()));
    assert!(!git(&w.project, &["branch", "--list", &format!("luzia/{id}")]).is_empty());
    assert!(
        w.meta(&id)["review"]["outcome"]
            .as_str()
            .unwrap()
            .starts_with("merged into main")
    );
    // Merging again has nothing to do.
    assert!(w.ok(&["merge", &id]).contains("already in main"));
}

#[test]
fn merge_makes_a_merge_commit_when_the_project_moved_on() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "feature.txt", "f\\n", None);
    fs::write(w.project.join("other.txt"), "o\n").unwrap();
    git(&w.project, &["add", "other.txt"]);
    git(&w.project, &["commit", "-qm", "meanwhile"]);
    let ours = git(&w.project, &["rev-parse", "HEAD"]);
    let preview = w.ok(&["merge", &id]);
    assert!(preview.contains("with a merge commit"), "{preview}");
    let parents = git(&w.project, &["log", "-1", "--format=%P"]);
    let tip = git(&w.project, &["rev-parse", &format!("luzia/{id}")]);
    assert_eq!(parents, format!("{ours} {tip}"));
    assert!(w.project.join("feature.txt").exists() && w.project.join("other.txt").exists());
    assert_eq!(
        git(&w.project, &["log", "-1", "--format=%an"]),
        "op",
        "the merge is the user's"
    );
}

#[test]
fn a_conflict_is_refused_with_the_files_named_and_nothing_touched() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "a.txt", "theirs\\n", None);
    fs::write(w.project.join("a.txt"), "ours\n").unwrap();
    git(&w.project, &["commit", "-qam", "ours"]);
    fs::write(w.project.join("untracked.txt"), "u\n").unwrap();
    let before = state(&w.project);
    let files_before = fs::read(w.project.join("a.txt")).unwrap();
    let e = w.refused(&["merge", &id]);
    assert!(
        e.contains("would conflict in a.txt") && e.contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(state(&w.project), before);
    assert_eq!(fs::read(w.project.join("a.txt")).unwrap(), files_before);
    assert_eq!(
        git(&w.project, &["status", "--porcelain"]),
        "?? untracked.txt"
    );
}

#[test]
fn merge_refuses_a_dirty_tree_and_a_detached_head() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "feature.txt", "f\\n", None);
    fs::write(w.project.join("a.txt"), "dirty\n").unwrap();
    let e = w.refused(&["merge", &id]);
    assert!(
        e.contains("has uncommitted changes (a.txt)") && e.contains("commit or stash"),
        "{e}"
    );
    git(&w.project, &["checkout", "-q", "a.txt"]);
    git(&w.project, &["checkout", "-q", "--detach"]);
    let e = w.refused(&["merge", &id]);
    assert!(
        e.contains("detached HEAD") && e.contains("git switch"),
        "{e}"
    );
}

#[test]
fn discard_removes_the_worktree_and_branch_and_keeps_the_change_readable() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "feature.txt", "f\\n", None);
    let said = w.ok(&["discard", &id]);
    assert!(
        said.starts_with("discarded: removed the worktree"),
        "{said}"
    );
    assert!(!w.dir(&id).join("worktree").exists());
    assert_eq!(
        git(&w.project, &["branch", "--list", &format!("luzia/{id}")]),
        ""
    );
    assert_eq!(
        git(&w.project, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(
        files(&w.diff_json(&id)),
        [f("feature.txt", "added", 1, 0, false)]
    );
    assert_eq!(w.meta(&id)["review"]["outcome"], "discarded");
    let e = w.refused(&["merge", &id]);
    assert!(e.contains("no longer exists"), "{e}");
}

#[test]
fn a_worktree_deleted_by_hand_is_said_and_discard_still_cleans_up() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(Some("worktree"));
    let id = worktree_job(&w, "feature.txt", "f\\n", None);
    fs::remove_dir_all(w.dir(&id).join("worktree")).unwrap();
    let notes = w.diff_json(&id)["notes"].to_string();
    assert!(notes.contains("was removed since the job ended"), "{notes}");
    // The branch still holds the committed work: it can be merged.
    assert!(w.ok(&["merge", &id]).contains("fast-forward"));
    let said = w.ok(&["discard", &id]);
    assert!(said.contains("already removed"), "{said}");
    assert_eq!(
        git(&w.project, &["branch", "--list", &format!("luzia/{id}")]),
        ""
    );
}

#[test]
fn a_project_that_is_not_a_repository() {
    if !git_or_skip() {
        return;
    }
    // Not configured: no isolation, no review record, said so by `diff`.
    let w = World::new(None);
    fs::remove_dir_all(w.project.join(".git")).unwrap();
    let id = w.start("printf 'x\\n' > x.txt\n");
    let meta = w.wait_done(&id);
    assert!(meta.get("review").is_none(), "{meta}");
    let e = w.refused(&["diff", &id]);
    assert!(
        e.contains("recorded no change") && e.contains("isolation"),
        "{e}"
    );
    // Asked for a snapshot: the job runs, unrecorded, and says why.
    w.configure(Some("snapshot"));
    let id = w.start("printf 'y\\n' > y.txt\n");
    let meta = w.wait_done(&id);
    assert_eq!(meta["exit_code"], 0, "{meta}");
    assert!(w.project.join("y.txt").exists());
    let error = meta["review"]["error"].as_str().unwrap();
    assert!(
        error.contains("is not in a git repository") && error.contains("git init"),
        "{error}"
    );
    let log = fs::read_to_string(w.dir(&id).join("output.log")).unwrap();
    assert!(
        log.contains("cannot take a snapshot") && log.contains("not be recorded"),
        "{log}"
    );
    assert!(
        w.refused(&["diff", &id])
            .contains("is not in a git repository")
    );
    // Asked for a worktree: the job does not start (the task is kept), and says why.
    w.configure(Some("worktree"));
    let id = w.start("printf 'z\\n' > z.txt\n");
    let meta = w.wait_done(&id);
    assert_eq!(meta["exit_code"], 127, "{meta}");
    assert!(!w.project.join("z.txt").exists());
    let log = fs::read_to_string(w.dir(&id).join("output.log")).unwrap();
    assert!(
        log.contains("cannot give the job its own worktree") && log.contains("retry"),
        "{log}"
    );
}

#[test]
fn git_missing_is_said() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    let id = w.start("printf 'x\\n' > x.txt\n");
    w.wait_done(&id);
    let empty = w.path("empty-path");
    fs::create_dir(&empty).unwrap();
    let mut cmd = Command::new(LUZIA);
    for var in LUZIA_VARS {
        cmd.env_remove(var);
    }
    let out = cmd
        .env("XDG_CONFIG_HOME", &w.xdg)
        .env("PATH", &empty)
        .arg("--config")
        .arg(&w.config)
        .args(["diff", &id])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("git is not installed"),
        "{}",
        stderr_of(&out)
    );
}

/// A job directory made by hand for `luzia supervise`: a worktree job whose branch name is
/// taken already.
#[test]
fn a_branch_name_taken_stops_the_job_before_it_starts() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(None);
    let id = "120000-beef";
    let dir = w.dir(id);
    fs::create_dir(&dir).unwrap();
    git(&w.project, &["branch", &format!("luzia/{id}")]);
    let meta = serde_json::json!({
        "id": id, "project": "p", "task": "t", "argv": ["sh", "-c", "touch ran"],
        "cwd": dir.join("worktree"), "status": "running",
        "review": {"isolation": "worktree", "repo": w.project, "worktree": dir.join("worktree"),
                   "branch": format!("luzia/{id}")}
    });
    fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    fs::write(dir.join("prompt.txt"), "t").unwrap();
    let out = w.luzia(&["supervise", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr_of(&out));
    let log = fs::read_to_string(dir.join("output.log")).unwrap();
    assert!(
        log.contains(&format!("a branch luzia/{id} already exists")),
        "{log}"
    );
    assert!(!dir.join("worktree/ran").exists());
    let error = w.meta(id)["review"]["error"].as_str().unwrap().to_owned();
    assert!(error.contains("already exists"), "{error}");
}

/// With `user = ...` and luzia running as root, everything git writes for the job (the
/// worktree, its files, the refs, the objects, a merge) is the user's, never root's in the
/// user's repository.
#[test]
fn a_project_with_a_user_gets_a_worktree_that_user_owns() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !git_or_skip() || !root_or_skip("running jobs as a project's user needs root") {
        return;
    }
    let w = World::new(Some("worktree"));
    fs::set_permissions(&w.base, fs::Permissions::from_mode(0o755)).unwrap();
    let home = w.path("home");
    fs::create_dir(&home).unwrap();
    let user = user::User::create(&home);
    user.give(&home);
    let chown = Command::new("chown")
        .arg("-R")
        .arg(&user.name)
        .arg(&w.project)
        .status()
        .unwrap();
    assert!(chown.success());
    let text = fs::read_to_string(&w.config).unwrap();
    fs::write(&w.config, format!("{text}user = \"{}\"\n", user.name)).unwrap();
    let id = worktree_job(&w, "feature.txt", "f\\n", Some("loose.txt"));
    let meta = w.meta(&id);
    assert_eq!(meta["exit_code"], 0, "{meta}");
    let wt = w.dir(&id).join("worktree");
    for p in [
        wt.clone(),
        wt.join("feature.txt"),
        wt.join("loose.txt"),
        wt.join("a.txt"),
    ] {
        assert_eq!(fs::metadata(&p).unwrap().uid(), user.uid, "{}", p.display());
    }
    let refs = w.project.join(".git/refs/luzia").join(&id);
    for p in [
        refs.join("before"),
        refs.join("after"),
        w.project.join(".git/worktrees"),
    ] {
        assert_eq!(fs::metadata(&p).unwrap().uid(), user.uid, "{}", p.display());
    }
    assert_eq!(files(&w.diff_json(&id)).len(), 2);
    assert!(w.ok(&["merge", &id]).contains("fast-forward"));
    assert_eq!(
        fs::metadata(w.project.join("loose.txt")).unwrap().uid(),
        user.uid
    );
    let objects = Command::new("find")
        .arg(w.project.join(".git"))
        .args(["-not", "-user", &user.name])
        .output()
        .unwrap();
    assert_eq!(
        stdout_of(&objects),
        "",
        "nothing in the repository is root's"
    );
    assert!(w.ok(&["discard", &id]).starts_with("discarded"));
}
