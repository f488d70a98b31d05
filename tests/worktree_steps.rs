//! Worktrees that run, checks that prove a job done, and nothing left behind: real git
//! repositories and real `luzia run` jobs whose agent is `sh` reading the task as its script.
//! The untracked files a project lists reach the worktree; its setup runs before the agent (a
//! failing one stops the job there); its checks run after, recorded in meta.json, `jobs --json`
//! and the status; a merge of a job whose checks failed is refused with nothing changed, and
//! `--force` merges and says who; jobs touching the same files are flagged to each other; a
//! branch is pushed to a bare remote; `luzia gc` removes the worktrees, branches and refs of
//! jobs merged and discarded, and keeps a running one's. Every wait is for a condition.
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
    /// A git project with a tracked file and an ignored `.env`; `[projects.p]` with `extra`
    /// (TOML lines) besides its path and `isolation = "worktree"`.
    fn new(extra: &str) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-steps-")
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
        w.configure(extra);
        git(&w.project, &["init", "-q", "-b", "main"]);
        git(&w.project, &["config", "user.name", "op"]);
        git(&w.project, &["config", "user.email", "op@example.com"]);
        fs::write(w.project.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        fs::write(w.project.join(".gitignore"), ".env\n*.out\nlocal/\n").unwrap();
        git(&w.project, &["add", "."]);
        git(&w.project, &["commit", "-qm", "init"]);
        fs::write(w.project.join(".env"), "TOKEN=s3cret\n").unwrap();
        w
    }

    fn configure(&self, extra: &str) {
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let text = format!(
            "jobs_dir = {}\nqueue_dir = {}\nnotifications_log = {}\n\n[agent]\ncommand = [\"sh\"]\n\
             max_concurrent = 8\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n\
             isolation = \"worktree\"\n{extra}\n",
            q(&self.jobs),
            q(&self.base.join("queue")),
            q(&self.notes()),
            q(&self.project),
        );
        fs::write(&self.config, text).unwrap();
    }

    fn notes(&self) -> PathBuf {
        self.base.join("notes.log")
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

    fn refused(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert!(
            !out.status.success(),
            "luzia {args:?} should fail: {}",
            stdout_of(&out)
        );
        stderr_of(&out)
    }

    fn start(&self, script: &str) -> String {
        self.ok(&["run", "p", "--", script]).trim().to_owned()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    fn tree(&self, id: &str) -> PathBuf {
        self.dir(id).join("worktree")
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.dir(id).join("output.log")).unwrap_or_default()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    fn job_json(&self, id: &str) -> Value {
        let list: Value = serde_json::from_str(&self.ok(&["jobs", "--json"])).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} not listed: {list}"))
    }

    fn wait_done(&self, id: &str) -> Value {
        wait_for(&format!("{id} to end"), || {
            Some(()).filter(|()| self.log(id).lines().any(|x| x.starts_with("exit:")))
        });
        let pid = fs::read_to_string(self.dir(id).join("pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<u32>() {
            wait_for("the supervisor to exit", || {
                (!(pid_alive(pid) && cmdline_mentions(pid, &self.dir(id)))).then_some(())
            });
        }
        self.meta(id)
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

#[test]
fn a_listed_env_reaches_the_worktree_and_the_setup_runs_before_the_agent() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(
        "worktree_include = [\"local/\"]\n\
         setup = [\"printf '%s %s\\\\n' \\\"$LUZIA_JOB_ID\\\" \\\"$LUZIA_PORT\\\" > setup.out\"]",
    );
    fs::write(w.project.join(".worktreeinclude"), ".env\n").unwrap();
    fs::create_dir(w.project.join("local")).unwrap();
    fs::write(w.project.join("local/db.toml"), "url = 'x'\n").unwrap();
    // Not ignored: would be part of the change, so it is not copied although it matches.
    fs::write(w.project.join("notes.env"), "n\n").unwrap();
    fs::write(w.project.join(".worktreeinclude"), ".env\n*.env\n").unwrap();
    let id = w.start(
        "cat .env > seen.out\ncat setup.out >> seen.out\necho \"agent $LUZIA_PORT\" >> seen.out\n\
         test -f local/db.toml && echo db >> seen.out\necho edit >> a.txt\n",
    );
    let meta = w.wait_done(&id);
    assert_eq!(meta["exit_code"], 0, "{}", w.log(&id));
    let tree = w.tree(&id);
    let seen = fs::read_to_string(tree.join("seen.out")).unwrap();
    let port = meta["port"].as_u64().unwrap();
    assert_eq!(
        seen,
        format!("TOKEN=s3cret\n{id} {port}\nagent {port}\ndb\n"),
        "the setup ran first, both saw the job's id and port"
    );
    assert!(!tree.join("notes.env").exists(), "not ignored: not copied");
    // Not in git, not in the change.
    assert!(git(&tree, &["ls-files", ".env", "local"]).is_empty());
    let change: Value = serde_json::from_str(&w.ok(&["diff", &id, "--json"])).unwrap();
    let paths: Vec<&str> = change["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a.txt"]);
    let log = w.log(&id);
    assert!(log.contains("luzia: setup: printf"), "{log}");
    assert!(
        log.contains("luzia: the worktree received .env, local from the project's checkout"),
        "{log}"
    );
}

#[test]
fn a_failing_setup_stops_the_job_before_the_agent_with_the_reason() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("setup = [\"echo installing\", \"echo no network >&2; exit 3\"]");
    let marker = w.base.join("agent-ran");
    let id = w.start(&format!("touch {}\n", marker.display()));
    let meta = w.wait_done(&id);
    assert!(!marker.exists(), "the agent must not start");
    assert_eq!(meta["exit_code"], 127);
    let log = w.log(&id);
    assert!(
        log.contains("installing\n")
            && log.contains("no network\n")
            && log.contains(
                "luzia: the setup line `echo no network >&2; exit 3` failed (exit 3); the agent \
                 was not started"
            ),
        "{log}"
    );
    let j = w.job_json(&id);
    assert_eq!(j["status"], "failed");
    assert_eq!(
        j["setup_error"],
        "the setup line `echo no network >&2; exit 3` failed (exit 3)"
    );
    let described = w.ok(&["jobs", &id]);
    assert!(described.contains("setup"), "{described}");
    // Fixed, the job is retried and runs.
    w.configure("setup = [\"echo installing\"]");
    let again = w.ok(&["retry", &id]);
    let new_id = again.split_whitespace().last().unwrap().to_owned();
    let meta = w.wait_done(&new_id);
    assert_eq!(meta["exit_code"], 0, "{}", w.log(&new_id));
    assert!(marker.exists());
}

#[test]
fn checks_run_after_the_agent_and_a_failing_one_makes_the_job_checks_failed() {
    if !git_or_skip() {
        return;
    }
    let w = World::new(
        "checks = [\"test -f done.out\", \"echo lint ok\", \"echo 'assertion failed: 2 == 3' >&2; exit 4\"]",
    );
    let id = w.start("echo work >> a.txt\ntouch done.out\n");
    let meta = w.wait_done(&id);
    let checks = &meta["checks"];
    assert_eq!(checks["state"], "failed", "{meta}");
    let results = checks["results"].as_array().unwrap();
    let codes: Vec<i64> = results
        .iter()
        .map(|r| r["exit_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [0, 0, 4]);
    assert_eq!(
        results[2]["tail"],
        serde_json::json!(["assertion failed: 2 == 3"])
    );
    assert!(
        results
            .iter()
            .all(|r| r["seconds"].as_f64().unwrap() >= 0.0)
    );
    // The exit line is the agent's own; the status says the checks failed.
    assert_eq!(meta["exit_code"], 0);
    let j = w.job_json(&id);
    assert_eq!(j["status"], "checks_failed");
    assert_eq!(j["checks"]["state"], "failed");
    let log = w.log(&id);
    assert!(log.starts_with("luzia: check: test -f done.out\n"), "{log}");
    assert!(
        log.contains("lint ok\n")
            && log.contains("luzia: checks failed (1 of 3): echo 'assertion failed: 2 == 3' >&2; exit 4 (exit 4)\n\nexit:0"),
        "{log}"
    );
    let described = w.ok(&["jobs", &id]);
    assert!(
        described.contains("checks_failed")
            && described.contains("failed check")
            && described.contains("assertion failed: 2 == 3"),
        "{described}"
    );
    // The notification says so.
    let notes = fs::read_to_string(w.notes()).unwrap();
    assert!(
        notes.contains(&format!("Agent {id} finished (exit 0), checks failed")),
        "{notes}"
    );
    // Fixed in the config, `luzia checks` runs them again, and the job is completed.
    w.configure("checks = [\"test -f done.out\"]");
    let out = w.ok(&["checks", &id]);
    assert!(out.contains("passed (1 of 1)"), "{out}");
    assert_eq!(w.job_json(&id)["status"], "completed");
}

#[test]
fn checks_do_not_run_after_a_failed_agent_and_say_why() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("checks = [\"touch checked.out\"]");
    let id = w.start("exit 2\n");
    let meta = w.wait_done(&id);
    assert!(!w.tree(&id).join("checked.out").exists());
    assert_eq!(meta["checks"]["state"], "planned");
    assert_eq!(
        meta["checks"]["note"],
        "the agent did not end well (exit 2)"
    );
    assert_eq!(w.job_json(&id)["status"], "failed");
}

/// HEAD, the branches, the index and the tracked files of the project, byte for byte.
fn state(repo: &Path) -> (String, String, Vec<u8>, String) {
    (
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["for-each-ref", "refs/heads"]),
        fs::read(repo.join(".git/index")).unwrap(),
        fs::read_to_string(repo.join("a.txt")).unwrap(),
    )
}

#[test]
fn a_merge_of_a_job_whose_check_failed_is_refused_and_force_merges_and_says_who() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("checks = [\"grep -q fixed a.txt\"]");
    let id = w.start(
        "echo work >> a.txt\ngit add a.txt\ngit -c user.name=a -c user.email=a@a commit -qm work\n",
    );
    w.wait_done(&id);
    let before = state(&w.project);
    let said = w.refused(&["merge", &id]);
    assert!(
        said.contains(&format!(
            "job {id}'s checks failed (grep -q fixed a.txt (exit 1)): nothing was merged"
        )) && said.contains(&format!("luzia merge {id} --force")),
        "{said}"
    );
    assert_eq!(state(&w.project), before, "nothing changed");
    assert!(w.tree(&id).is_dir());
    let done = w.ok(&["merge", &id, "--force"]);
    assert!(
        done.contains("fast-forward") && done.contains("forced by "),
        "{done}"
    );
    assert_eq!(
        fs::read_to_string(w.project.join("a.txt")).unwrap(),
        "one\ntwo\nthree\nwork\n"
    );
    let forced = w.meta(&id)["review"]["forced"].as_str().unwrap().to_owned();
    assert!(
        forced.starts_with("by ")
            && forced.ends_with("checks failed: grep -q fixed a.txt (exit 1)"),
        "{forced}"
    );
    assert!(w.ok(&["jobs", &id]).contains("forced"));
}

#[test]
fn a_job_from_before_the_project_had_checks_is_not_merged_until_they_pass() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("");
    let id = w.start("echo fixed >> a.txt\n");
    w.wait_done(&id);
    w.configure("checks = [\"grep -q fixed a.txt\"]");
    let said = w.refused(&["merge", &id]);
    assert!(said.contains("checks have not passed"), "{said}");
    assert!(w.ok(&["checks", &id]).contains("passed (1 of 1)"));
    assert!(w.ok(&["merge", &id]).contains("fast-forward"));
}

fn refs_of(repo: &Path, id: &str) -> String {
    git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/luzia/{id}/"),
        ],
    )
}

fn branch(repo: &Path, id: &str) -> String {
    git(repo, &["branch", "--list", &format!("luzia/{id}")])
}

#[test]
fn gc_after_merge_and_discard_leaves_nothing_of_them_and_keeps_a_running_and_an_unmerged_job() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("");
    let merged = w.start("echo merged >> a.txt\n");
    w.wait_done(&merged);
    w.ok(&["merge", &merged]);
    let discarded = w.start("echo other > b.txt\n");
    w.wait_done(&discarded);
    w.ok(&["discard", &discarded]);
    let unmerged = w.start(
        "echo kept > c.txt\ngit add c.txt\ngit -c user.name=a -c user.email=a@a commit -qm c\n",
    );
    w.wait_done(&unmerged);
    let go = w.base.join("go");
    let running = w.start(&format!(
        "touch started.out\nwhile [ ! -e {} ]; do sleep 0.05; done\n",
        go.display()
    ));
    wait_for("the running job's agent", || {
        w.tree(&running).join("started.out").exists().then_some(())
    });
    for id in [&merged, &discarded] {
        assert!(
            !refs_of(&w.project, id).is_empty(),
            "the snapshots are kept until gc"
        );
    }
    assert!(!branch(&w.project, &merged).is_empty());
    // A dry run says what would go, and touches nothing.
    let before = (
        git(&w.project, &["for-each-ref"]),
        git(&w.project, &["worktree", "list"]),
    );
    let dry = w.ok(&["gc", "--older-than", "0s", "--dry-run"]);
    assert!(
        dry.contains("would move 2 jobs")
            && dry.contains("would remove of their repositories: 0 worktrees, 1 branch, 4 refs"),
        "{dry}"
    );
    assert!(
        dry.contains("1 unmerged") && dry.contains("1 unfinished"),
        "{dry}"
    );
    assert_eq!(
        (
            git(&w.project, &["for-each-ref"]),
            git(&w.project, &["worktree", "list"])
        ),
        before
    );
    let done = w.ok(&["gc", "--older-than", "0s"]);
    assert!(
        done.contains("moved 2 jobs") && done.contains("removed of their repositories"),
        "{done}"
    );
    for id in [&merged, &discarded] {
        assert!(refs_of(&w.project, id).is_empty(), "{id}");
        assert!(branch(&w.project, id).is_empty(), "{id}");
        assert!(!w.dir(id).exists());
    }
    let worktrees = git(&w.project, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 3, "{worktrees}");
    for id in [&running, &unmerged] {
        assert!(w.tree(id).is_dir(), "{id}");
        assert!(!branch(&w.project, id).is_empty(), "{id}");
        assert!(!refs_of(&w.project, id).is_empty(), "{id}");
    }
    fs::write(&go, "").unwrap();
    w.wait_done(&running);
}

#[test]
fn push_reaches_a_bare_remote_and_pr_records_the_address_the_command_printed() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("pr_command = \"echo opening {branch}; echo https://example.com/pr/7\"");
    let remote = w.base.join("remote.git");
    git(&w.base, &["init", "-q", "--bare", remote.to_str().unwrap()]);
    git(
        &w.project,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let id = w.start("echo pushed >> a.txt\n");
    w.wait_done(&id);
    let said = w.ok(&["push", &id]);
    assert!(
        said.contains(&format!("pushed luzia/{id} to origin")),
        "{said}"
    );
    assert!(said.contains("1 file left uncommitted"), "{said}");
    let tip = git(&remote, &["rev-parse", &format!("refs/heads/luzia/{id}")]);
    assert_eq!(tip, git(&w.project, &["rev-parse", &format!("luzia/{id}")]));
    assert_eq!(
        git(&remote, &["show", &format!("luzia/{id}:a.txt")]),
        "one\ntwo\nthree\npushed"
    );
    let pr = w.ok(&["pr", &id]);
    assert!(pr.contains("https://example.com/pr/7"), "{pr}");
    assert_eq!(w.meta(&id)["review"]["pr"], "https://example.com/pr/7");
    assert!(w.ok(&["jobs", &id]).contains("https://example.com/pr/7"));
    let none = w.refused(&["push", &id, "--remote", "nowhere"]);
    assert!(none.contains("has no remote named nowhere"), "{none}");
}

#[test]
fn two_jobs_editing_the_same_file_are_flagged_and_after_a_merge_the_other_says_it_conflicts() {
    if !git_or_skip() {
        return;
    }
    let w = World::new("");
    let first = w.start("sed -i 's/two/TWO/' a.txt\n");
    let second = w.start("sed -i 's/two/deux/' a.txt\n");
    let apart = w.start("echo apart > b.txt\n");
    for id in [&first, &second, &apart] {
        w.wait_done(id);
    }
    let shown = w.ok(&["jobs", &first]);
    assert!(
        shown.contains(&format!("overlap:   overlaps {second} (a.txt)")),
        "{shown}"
    );
    assert!(!w.ok(&["jobs", &apart]).contains("overlap"));
    let merged = w.ok(&["merge", &first]);
    assert!(
        merged.starts_with(&format!("overlaps {second} (a.txt)")),
        "said before merging: {merged}"
    );
    assert!(
        merged.contains(&format!("job {second} now conflicts in a.txt")),
        "{merged}"
    );
    let recorded = w.meta(&second)["review"]["merges"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        recorded.contains("conflicts") && recorded.contains(&first),
        "{recorded}"
    );
    assert!(w.ok(&["jobs", &second]).contains("conflicts in a.txt"));
}

/// From a fresh HOME, with only the config a person would write (no roots named, the per-user
/// defaults): setup, agent, checks, merge.
#[test]
fn from_a_fresh_home_a_project_with_setup_and_checks_runs_and_merges() {
    if !git_or_skip() {
        return;
    }
    if Path::new("/var/log/luz-orchestrator/jobs").exists() {
        skip("this machine has the orchestrator's jobs root, which would be the default");
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("luzia-home-")
        .tempdir()
        .unwrap();
    let home = tmp.path();
    let shop = home.join("shop");
    fs::create_dir_all(&shop).unwrap();
    git(&shop, &["init", "-q", "-b", "main"]);
    git(&shop, &["config", "user.name", "op"]);
    git(&shop, &["config", "user.email", "op@example.com"]);
    fs::write(shop.join("a.txt"), "one\n").unwrap();
    fs::write(shop.join(".gitignore"), "*.out\n").unwrap();
    git(&shop, &["add", "."]);
    git(&shop, &["commit", "-qm", "init"]);
    fs::create_dir_all(home.join(".config/luzia")).unwrap();
    fs::write(
        home.join(".config/luzia/config.toml"),
        format!(
            "[agent]\ncommand = [\"sh\"]\nprompt_template = \"{{task}}\"\n\n[projects.shop]\n\
             path = {:?}\nisolation = \"worktree\"\nsetup = [\"echo installed > deps.out\"]\n\
             checks = [\"test -f deps.out\", \"grep -q done a.txt\"]\n",
            shop.to_str().unwrap()
        ),
    )
    .unwrap();
    let luzia = |args: &[&str]| {
        let mut cmd = Command::new(LUZIA);
        cmd.env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("NO_COLOR", "1")
            .current_dir(home)
            .args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "luzia {args:?}: {}{}",
            stdout_of(&out),
            stderr_of(&out)
        );
        stdout_of(&out)
    };
    let id = luzia(&["run", "shop", "--", "echo done >> a.txt\n"])
        .trim()
        .to_owned();
    let job = wait_for("the job to end with its checks", || {
        let list: Value = serde_json::from_str(&luzia(&["jobs", "--json"])).unwrap();
        list.as_array()?
            .iter()
            .find(|j| j["id"] == id.as_str() && j["exit_code"].is_number())
            .cloned()
    });
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["checks"]["state"], "passed", "{job}");
    assert!(
        home.join(".local/state/luzia/jobs")
            .join(&id)
            .join("worktree/deps.out")
            .exists()
    );
    assert!(luzia(&["merge", &id]).contains("fast-forward"));
    assert_eq!(
        fs::read_to_string(shop.join("a.txt")).unwrap(),
        "one\ndone\n"
    );
    kill_processes_mentioning(home);
}
