//! A new user's first minute: a fresh HOME, no config file, not root. `luzia jobs` says there
//! is nothing yet and what to do; `luzia run "task"` inside a git repository starts a job under
//! `$XDG_STATE_HOME/luzia/jobs` (the default `~/.local/state`) with the repository as its
//! project; retry and `-C DIR` work with no config entry; outside a repository the error names
//! the next step; `luzia init` writes a config that every command then works with; a jobs root
//! given with `--jobs-dir` has a queue of its own.
//!
//! The user is a throwaway system user made with `useradd` (removed at the end), so these tests
//! need root (without it they say SKIPPED loudly and pass). The agent is a stand-in `claude` on
//! PATH that prints a line and exits 0. Every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::user::{User, reachable_luzia};
use serde_json::Value;
use tempfile::TempDir;

const GUARD: Duration = Duration::from_secs(60);

/// The stand-in agent: says where it ran, and ends well.
const CLAUDE: &str = "#!/bin/sh\necho \"stand-in claude ran in $(pwd)\"\nexit 0\n";

/// A fresh HOME for a new user, a git repository `shop` in it, the stand-in agent on PATH.
struct Fresh {
    base: PathBuf,
    luzia: PathBuf,
    user: User,
    _tmp: TempDir,
}

struct Ran {
    code: Option<i32>,
    out: String,
    err: String,
}

impl Ran {
    fn ok(self) -> String {
        assert_eq!(self.code, Some(0), "{}{}", self.out, self.err);
        self.out
    }
}

impl Fresh {
    /// `None` (after saying SKIPPED) where it cannot run: not root, no git, or this machine
    /// has the orchestrator's jobs root (then it, not the per-user one, is the default).
    fn new() -> Option<Fresh> {
        if !common::root_or_skip("a fresh non-root user needs root to make (useradd)")
            || !common::git_or_skip()
        {
            return None;
        }
        if Path::new("/var/log/luz-orchestrator/jobs").exists() {
            common::skip("this machine has the orchestrator's jobs root: it is the default here");
            return None;
        }
        let tmp = tempfile::Builder::new()
            .prefix("luzia-first-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["home", "bin"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let claude = base.join("bin/claude");
        fs::write(&claude, CLAUDE).unwrap();
        fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
        let luzia = reachable_luzia(&base);
        let user = User::create(&base.join("home"));
        user.give(&base.join("home"));
        let fresh = Fresh {
            base,
            luzia,
            user,
            _tmp: tmp,
        };
        let repo = fresh.home().join("shop");
        fresh.as_user(
            "git",
            &["init", "-q", repo.to_str().unwrap()],
            &fresh.home(),
        );
        fs::create_dir(repo.join("web")).unwrap();
        fresh.user.give(&repo.join("web"));
        Some(fresh)
    }

    fn home(&self) -> PathBuf {
        self.base.join("home")
    }

    fn repo(&self) -> PathBuf {
        self.home().join("shop")
    }

    fn state(&self) -> PathBuf {
        self.home().join(".local/state/luzia")
    }

    /// `program args` as the user, in `dir`, with a new user's environment and nothing else.
    fn as_user(&self, program: &str, args: &[&str], dir: &Path) -> Ran {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.home())
            .env("USER", &self.user.name)
            .env("LOGNAME", &self.user.name)
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.base.join("bin").display()
                ),
            )
            .current_dir(dir)
            .uid(self.user.uid)
            .gid(self.user.uid_group())
            .args(args);
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(GUARD)
            .output()
            .unwrap();
        Ran {
            code: out.status.code(),
            out: common::stdout_of(&out),
            err: common::stderr_of(&out),
        }
    }

    fn luzia(&self, args: &[&str], dir: &Path) -> Ran {
        self.as_user(self.luzia.to_str().unwrap(), args, dir)
    }

    /// `luzia jobs ID --json` once the job has ended.
    fn finished(&self, id: &str, extra: &[&str]) -> Value {
        common::wait_for(&format!("{id} to end"), GUARD, || {
            let args = [extra, &["jobs", id, "--json"]].concat();
            let job: Value = serde_json::from_str(&self.luzia(&args, &self.home()).ok()).unwrap();
            (!job["exit_code"].is_null()).then_some(job)
        })
    }

    fn output(&self, root: &Path, id: &str) -> String {
        fs::read_to_string(root.join(id).join("output.log")).unwrap_or_default()
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.base);
    }
}

trait Group {
    fn uid_group(&self) -> u32;
}

impl Group for User {
    /// The user's primary group, as `useradd --system` made it.
    fn uid_group(&self) -> u32 {
        let out = Command::new("id")
            .arg("-g")
            .arg(&self.name)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

#[test]
fn a_new_user_runs_a_first_job_in_the_repository_they_stand_in() {
    let Some(w) = Fresh::new() else { return };
    let jobs = w.state().join("jobs");

    // Nothing yet: an empty state with the next step, and nothing made.
    for cmd in ["jobs", "status", "questions"] {
        let said = w.luzia(&[cmd], &w.home()).ok();
        assert!(
            said.contains(&format!("no jobs yet in {}", jobs.display()))
                && said.contains("luzia run \"task\""),
            "{cmd}: {said}"
        );
    }
    assert_eq!(w.luzia(&["jobs", "--json"], &w.home()).ok().trim(), "[]");
    assert!(!w.state().exists(), "reading made nothing");

    // Outside a repository: what to do instead.
    let outside = w.luzia(&["run", "fix the tests"], &w.home());
    assert_eq!(outside.code, Some(1), "{}", outside.err);
    for step in ["not inside a git repository", "cd", "-C DIR", "luzia init"] {
        assert!(outside.err.contains(step), "{step}: {}", outside.err);
    }

    // Inside it (from a subdirectory): a job of the project `shop`, run at the top.
    let id = w
        .luzia(&["run", "fix the tests"], &w.repo().join("web"))
        .ok();
    let id = id.trim();
    let job = w.finished(id, &[]);
    assert_eq!(job["status"], "completed", "{job}\n{}", w.output(&jobs, id));
    assert_eq!(job["project"], "shop");
    let top = w.repo().canonicalize().unwrap();
    assert!(
        w.output(&jobs, id)
            .contains(&format!("stand-in claude ran in {}", top.display())),
        "{}",
        w.output(&jobs, id)
    );
    assert!(jobs.join(id).is_dir());
    // Private to the user, and the per-user queue beside the jobs.
    let state = fs::metadata(w.state()).unwrap();
    assert_eq!((state.uid(), state.mode() & 0o777), (w.user.uid, 0o700));
    assert!(w.state().join("queue").is_dir());

    // Retried from anywhere, with no config entry: same project, same place.
    let again = w.luzia(&["retry", id], &w.home()).ok();
    let again = again.trim();
    let retried = w.finished(again, &[]);
    assert_eq!(retried["status"], "completed", "{retried}");
    assert_eq!(retried["project"], "shop");
    assert_eq!(retried["retry_of"], id);
    assert!(w.output(&jobs, again).contains(&top.display().to_string()));

    // -C DIR names the repository from elsewhere; every word is the task.
    let repo = w.repo();
    let c = w
        .luzia(
            &["run", "-C", repo.to_str().unwrap(), "shop", "again"],
            &w.home(),
        )
        .ok();
    let c_job = w.finished(c.trim(), &[]);
    assert_eq!(
        (&c_job["project"], &c_job["task"]),
        (&"shop".into(), &"shop again".into())
    );

    let listed = w.luzia(&["jobs"], &w.home()).ok();
    assert!(listed.contains(id) && listed.contains("shop"), "{listed}");
}

#[test]
fn a_jobs_root_given_with_a_flag_is_made_on_first_write_and_has_its_own_queue() {
    let Some(w) = Fresh::new() else { return };
    let root = w.home().join("elsewhere/jobs");
    let flag = ["--jobs-dir", root.to_str().unwrap()];
    let said = w.luzia(&[&flag[..], &["jobs"]].concat(), &w.home()).ok();
    assert!(
        said.contains(&format!("no jobs yet in {}", root.display())),
        "{said}"
    );
    assert!(!root.exists());

    let id = w
        .luzia(
            &[&flag[..], &["run", "--queue", "wait your turn"]].concat(),
            &w.repo(),
        )
        .ok();
    assert!(id.starts_with("queued "), "{id}");
    // The queue is the root's own, not the system's (which this user could not write).
    let pending = root.join(".luzia/queue/pending/normal");
    assert_eq!(
        fs::read_dir(&pending).unwrap().count(),
        1,
        "{}",
        pending.display()
    );
    assert!(!w.state().join("queue").exists());
    let listing = w.luzia(&[&flag[..], &["queue"]].concat(), &w.home()).ok();
    assert!(
        listing.contains("wait your turn") && listing.contains("shop"),
        "{listing}"
    );
    // The root's scan passes over its `.luzia/`.
    let all = w
        .luzia(&[&flag[..], &["jobs", "--json"]].concat(), &w.home())
        .ok();
    assert_eq!(all.trim(), "[]");

    // Started once a slot is free, from anywhere: the queued task kept its repository.
    let started = w
        .luzia(
            &[&flag[..], &["run", "-C", w.repo().to_str().unwrap(), "now"]].concat(),
            &w.home(),
        )
        .ok();
    w.finished(started.trim(), &flag);
    let queued = common::wait_for("the queued task to become a job", GUARD, || {
        let all: Vec<Value> = serde_json::from_str(
            &w.luzia(&[&flag[..], &["jobs", "--json"]].concat(), &w.home())
                .ok(),
        )
        .unwrap();
        all.into_iter().find(|j| j["task"] == "wait your turn")
    });
    let id = queued["id"].as_str().unwrap().to_owned();
    let job = w.finished(&id, &flag);
    assert_eq!(
        (&job["status"], &job["project"]),
        (&"completed".into(), &"shop".into()),
        "{job}"
    );
    let mode = fs::metadata(&root).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn luzia_init_writes_a_config_every_command_then_works_with() {
    let Some(w) = Fresh::new() else { return };
    let file = w.home().join(".config/luzia/config.toml");
    let printed = w.luzia(&["init", "--print"], &w.repo()).ok();
    assert!(!file.exists(), "--print writes nothing");
    let wrote = w.luzia(&["init"], &w.repo()).ok();
    assert!(wrote.contains(&file.display().to_string()), "{wrote}");
    assert!(wrote.contains("claude ("), "the stand-in is found: {wrote}");
    let text = fs::read_to_string(&file).unwrap();
    assert_eq!(text, printed);
    assert!(text.contains("[projects.shop]"), "{text}");

    let refused = w.luzia(&["init"], &w.repo());
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.err.contains("exists") && refused.err.contains("--force"),
        "{}",
        refused.err
    );
    w.luzia(&["init", "--force"], &w.repo()).ok();

    for cmd in [
        &["jobs"][..],
        &["status"],
        &["questions"],
        &["queue"],
        &["jobs", "--project", "shop"],
    ] {
        w.luzia(cmd, &w.home()).ok();
    }
    // The named form from anywhere, and the repository under its configured name.
    let named = w.luzia(&["run", "shop", "named", "task"], &w.home()).ok();
    let job = w.finished(named.trim(), &[]);
    assert_eq!(
        (&job["project"], &job["task"]),
        (&"shop".into(), &"named task".into())
    );
    let here = w.luzia(&["run", "from inside"], &w.repo()).ok();
    assert_eq!(w.finished(here.trim(), &[])["status"], "completed");
    // A project the config names, given alone, asks for its task.
    let alone = w.luzia(&["run", "shop"], &w.home());
    assert!(
        alone.err.contains("is a configured project"),
        "{}",
        alone.err
    );
    let unknown = w.luzia(&["run", "shpo", "task"], &w.home());
    assert!(
        unknown.err.contains("unknown project 'shpo' (known: shop)")
            && unknown.err.contains(&file.display().to_string()),
        "{}",
        unknown.err
    );
}
