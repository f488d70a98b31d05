//! A new user's first job, from nothing: a fresh HOME with no config file, no XDG variables,
//! only the installed `luzia`, the real Claude Code CLI on PATH and the two variables a server
//! gives it (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, here the fake Messages API the tests
//! start). Inside a fresh git repository, `luzia run "task"` must complete with the agent's real
//! output, `luzia tui` must show it and `luzia logs <prefix>` (the id as a narrow cockpit shows
//! it) must print it. Once as a non-root user, once as root; with every Claude Code version the
//! environment names (the one on PATH, and `LUZIA_TEST_CLAUDE_NEWEST` when set, as CI sets it).
//!
//! Needs root (a throwaway user), git, tmux and the CLI; without one it says SKIPPED loudly and
//! passes (in CI, where all must be, it fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::claude::{FakeApi, Reply, clis_or_skip};
use common::user::{User, reachable, reachable_luzia};
use common::{git_or_skip, kill_processes_mentioning, root_or_skip, wait_for};
use serde_json::Value;
use tempfile::TempDir;

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(120);
/// What the model says: the job's output must show it.
const ANSWER: &str = "Hello from the first job: the repository is ready.";

/// A machine as a new user finds it: a HOME with nothing in it, a git repository of their own,
/// `bin/` with `luzia` and `claude`. Dropping it stops what it started (and removes the user).
struct World {
    base: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    bin: PathBuf,
    user: Option<User>,
    api: FakeApi,
    _tmp: TempDir,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.tmux_socket(), "kill-server"])
            .stderr(Stdio::null())
            .status();
        kill_processes_mentioning(&self.base);
    }
}

impl World {
    fn new(claude: &Path, as_user: bool) -> World {
        World::with_script(claude, as_user, vec![Reply::text(ANSWER)])
    }

    /// The same, the model answering with `script`.
    fn with_script(claude: &Path, as_user: bool, script: Vec<Reply>) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-first-use-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["", "home", "repo", "bin"] {
            fs::create_dir_all(base.join(d)).unwrap();
            fs::set_permissions(base.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let (home, repo, bin) = (base.join("home"), base.join("repo"), base.join("bin"));
        let user = as_user.then(|| {
            let user = User::create(&home);
            user.give(&home);
            user.give(&repo);
            user
        });
        reachable(claude, &bin, "claude");
        let luzia = reachable_luzia(&bin);
        if luzia.parent() != Some(bin.as_path()) {
            std::os::unix::fs::symlink(&luzia, bin.join("luzia")).unwrap();
        }
        let api = FakeApi::start(script);
        let world = World {
            base,
            home,
            repo,
            bin,
            user,
            api,
            _tmp: tmp,
        };
        // The user's own repository, made by the user.
        let init = world.run_in(&world.repo, "git", &["init", "-q", "."]);
        assert!(init.status.success(), "git init: {}", text(&init.stderr));
        fs::write(world.repo.join("README"), "a project\n").unwrap();
        if let Some(u) = &world.user {
            u.give(&world.repo.join("README"));
        }
        world
    }

    fn tmux_socket(&self) -> String {
        format!(
            "luzia-first-use-{}",
            self.base.file_name().unwrap().to_string_lossy()
        )
    }

    /// The whole environment a new user's shell has: nothing of the test's.
    fn env(&self) -> Vec<(String, String)> {
        let name = self.user.as_ref().map_or("root".into(), |u| u.name.clone());
        vec![
            ("HOME".into(), self.home.display().to_string()),
            ("USER".into(), name.clone()),
            ("LOGNAME".into(), name),
            ("SHELL".into(), "/bin/sh".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "xterm-256color".into()),
            (
                "PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            ),
            ("ANTHROPIC_API_KEY".into(), "sk-ant-first-use-key".into()),
            ("ANTHROPIC_BASE_URL".into(), self.api.base_url()),
        ]
    }

    /// `program args` as the user (or root), in `dir`, with only [`World::env`].
    fn command_in(&self, dir: &Path, program: &str, args: &[&str]) -> Command {
        let mut cmd = match &self.user {
            Some(u) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", u.uid))
                    .arg(format!("--regid={}", gid_of(u.uid)))
                    .args(["--clear-groups", "--"])
                    .arg(program);
                c
            }
            None => Command::new(program),
        };
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .envs(self.env())
            .stdin(Stdio::null());
        cmd
    }

    fn run_in(&self, dir: &Path, program: &str, args: &[&str]) -> Output {
        self.command_in(dir, program, args).output().unwrap()
    }

    fn luzia(&self, args: &[&str]) -> Output {
        self.run_in(&self.repo, "luzia", args)
    }

    /// `luzia jobs --json`'s one job, once it is settled.
    fn settled_job(&self, id: &str) -> Value {
        wait_for("the first job to end", WAIT, || {
            let out = self.luzia(&["jobs", "--json"]);
            let jobs: Value = serde_json::from_slice(&out.stdout).ok()?;
            let job = jobs.as_array()?.iter().find(|j| j["id"] == id)?.clone();
            (!job["exit_code"].is_null()).then_some(job)
        })
    }

    /// The screen of `luzia tui` in a real terminal, once `ready` holds for it.
    fn cockpit_screen(&self, ready: impl Fn(&str) -> bool) -> String {
        let socket = self.tmux_socket();
        let inner = format!(
            "{} ; sleep 600",
            self.command_shell(&["tui"])
                .into_iter()
                .map(|w| tmux::sh_quote(&w))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let started = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "160", "-y", "45", "-c"])
            .arg(&self.repo)
            .arg(inner)
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(started.success(), "tmux new-session");
        let mut last = String::new();
        let deadline = std::time::Instant::now() + WAIT;
        while std::time::Instant::now() < deadline {
            let out = Command::new("tmux")
                .args(["-L", &socket, "capture-pane", "-p"])
                .output()
                .unwrap();
            last = text(&out.stdout);
            if ready(&last) {
                return last;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the cockpit never showed the first job; last screen:\n{last}");
    }

    /// `luzia ARGS` as a command line for the pane's shell: `env -i` with [`World::env`], as the
    /// user where there is one.
    fn command_shell(&self, args: &[&str]) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        if let Some(u) = &self.user {
            words.extend([
                "setpriv".into(),
                format!("--reuid={}", u.uid),
                format!("--regid={}", gid_of(u.uid)),
                "--clear-groups".into(),
                "--".into(),
            ]);
        }
        words.extend(["env".into(), "-i".into()]);
        words.extend(self.env().into_iter().map(|(k, v)| format!("{k}={v}")));
        words.push("luzia".into());
        words.extend(args.iter().map(|a| a.to_string()));
        words
    }
}

fn gid_of(uid: u32) -> u32 {
    let out = Command::new("id")
        .args(["-g", &uid.to_string()])
        .output()
        .unwrap();
    text(&out.stdout).trim().parse().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn first_use(test: &str, as_user: bool) {
    require_tmux!();
    if !root_or_skip(test) || !git_or_skip() {
        return;
    }
    for claude in clis_or_skip(test) {
        let world = World::new(&claude, as_user);
        first_job(&world, &claude);
    }
}

/// The three commands of the README, and what each must show.
fn first_job(world: &World, claude: &Path) {
    let version = text(
        &Command::new(claude)
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    );
    let at = format!("with Claude Code {}", version.trim());

    let run = world.luzia(&["run", "Say hello to the new user"]);
    assert!(
        run.status.success(),
        "{at}: `luzia run` failed in a fresh HOME: {}{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let id = text(&run.stdout)
        .split_whitespace()
        .find(|w| w.contains('-') && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("{at}: no job id in {:?}", text(&run.stdout)))
        .to_owned();

    let job = world.settled_job(&id);
    assert_eq!(job["status"], "completed", "{at}: {job}");
    assert_eq!(job["project"], "repo", "{at}: the project is the directory");
    // The per-user default root, made private to the user.
    let root = world.home.join(".local/state/luzia/jobs");
    let dir = root.join(&id);
    assert!(dir.join("meta.json").is_file(), "{at}: {}", dir.display());
    let meta = fs::metadata(&root).unwrap();
    assert_eq!(meta.mode() & 0o077, 0, "{at}: the jobs root is private");
    if let Some(u) = &world.user {
        assert_eq!(meta.uid(), u.uid, "{at}: the jobs root is the user's");
    }
    let requests = world.api.requests();
    assert!(!requests.is_empty(), "{at}: the agent never asked the API");

    // The id as a narrow cockpit shows it: its shortest unique prefix.
    let prefix = &id[..6];
    let logs = world.luzia(&["logs", prefix]);
    assert!(
        logs.status.success() && text(&logs.stdout).contains(ANSWER),
        "{at}: `luzia logs {prefix}`: {}{}",
        text(&logs.stdout),
        text(&logs.stderr)
    );

    let screen = world.cockpit_screen(|s| s.contains(&id) && s.contains(ANSWER));
    assert!(!screen.contains("Not logged in"), "{at}:\n{screen}");
}

#[test]
fn a_new_user_runs_a_first_job_with_nothing_but_the_credentials() {
    first_use(
        "a_new_user_runs_a_first_job_with_nothing_but_the_credentials",
        true,
    );
}

#[test]
fn root_runs_a_first_job_with_nothing_but_the_credentials() {
    first_use(
        "root_runs_a_first_job_with_nothing_but_the_credentials",
        false,
    );
}

// ----------------------------------------------------------------------------------------------
// The acceptance run: a whole Claude Code session driven from the CLI, as root, from nothing.

/// What the denial says; the model must receive it word for word.
const REASON: &str = "not now: the release build is still being copied";
/// What the model says after the question, and in the reply job.
const AFTER: &str = "Migrating staging; the build stays.";
const REPLIED: &str = "Still the same session: staging is migrated.";

fn acceptance_script() -> Vec<Reply> {
    let questions = serde_json::json!({"questions": [
        {"question": "Which database should the migration run on?", "header": "Database",
         "multiSelect": false, "options": [
            {"label": "staging", "description": "The copy refreshed every night"},
            {"label": "production", "description": "Live customer data"}]}]});
    vec![
        Reply::tool(
            "Bash",
            serde_json::json!({"command": "rm -rf build", "description": "Remove the build directory"}),
        ),
        Reply::tool("AskUserQuestion", questions),
        Reply::text(AFTER),
        Reply::text(REPLIED),
    ]
}

impl World {
    fn job_log(&self, id: &str) -> String {
        let dir = self.home.join(".local/state/luzia/jobs").join(id);
        fs::read_to_string(dir.join("output.log")).unwrap_or_default()
    }

    fn job_json(&self, id: &str) -> Value {
        serde_json::from_slice(&self.luzia(&["jobs", id, "--json"]).stdout).unwrap_or_default()
    }

    /// `luzia ARGS`, which must succeed: its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert!(
            out.status.success(),
            "`luzia {}`: {}{}",
            args.join(" "),
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Waits until job `id` has a pending request that satisfies `want`.
    fn pending(&self, id: &str, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        common::claude::wait_pending(luzia, || self.job_log(id), id, what, WAIT, want)
    }
}

/// Live readable output, a permission request denied and a question answered from the CLI,
/// the session's id and cost, and `luzia reply` continuing the session.
fn whole_session(world: &World, at: &str) {
    fs::create_dir_all(world.repo.join("build")).unwrap();
    fs::write(world.repo.join("build/out.o"), "x").unwrap();
    let run = world.ok(&["run", "Clean the build, then migrate the database."]);
    let id = run.trim().to_owned();

    // Waiting at the gate, the job already reads as prose: the session, then the call.
    let gate = world.pending(&id, "permission gate", |q| {
        q.get("approval").is_some_and(|a| !a.is_null())
    });
    assert_eq!(
        gate["approval"]["gate"], "Bash: rm -rf build",
        "{at}: {gate}"
    );
    let live = world.ok(&["logs", &id]);
    assert!(
        live.contains("── Claude Code session ") && live.contains("▶ Bash  rm -rf build"),
        "{at}: the output while it waits:\n{live}"
    );
    assert!(!live.contains("{\"type\""), "{at}: raw JSON shown:\n{live}");
    assert_eq!(world.job_json(&id)["status"], "waiting", "{at}");
    world.ok(&["deny", &id, "--reason", REASON]);

    let question = world.pending(&id, "question", |q| {
        q["question"]["question"] == "Which database should the migration run on?"
    });
    assert_eq!(
        question["question"]["options"],
        serde_json::json!(["staging", "production"]),
        "{at}"
    );
    world.ok(&["answer", &id, "staging"]);

    let job = world.settled_job(&id);
    assert_eq!(
        job["status"],
        "completed",
        "{at}: {job}\n{}",
        world.job_log(&id)
    );
    let told: Vec<(String, bool)> = world
        .api
        .requests()
        .iter()
        .flat_map(common::claude::tool_results)
        .collect();
    assert!(
        told.iter().any(|(t, err)| *err && t.contains(REASON)),
        "{at}: the denial's reason reaches the model: {told:?}"
    );
    assert!(
        told.iter().any(|(t, err)| !err && t.contains("staging")),
        "{at}: the answer reaches the model: {told:?}"
    );
    assert!(
        world.repo.join("build/out.o").exists(),
        "{at}: denied, kept"
    );
    let session = job["session_id"].as_str().unwrap_or_default().to_owned();
    let cost = job["usage"]["cost_usd"].as_f64().unwrap_or_default();
    assert!(
        !session.is_empty() && cost > 0.0,
        "{at}: session and cost: {job}"
    );
    let detail = world.ok(&["jobs", &id]);
    assert!(
        detail.contains(&session) && detail.contains("cost"),
        "{at}: {detail}"
    );
    assert!(world.ok(&["logs", &id]).contains(AFTER), "{at}");

    // The reply continues that session, with what was said before.
    let reply = world.ok(&["reply", &id, "Is the migration done?"]);
    let next = reply.trim().to_owned();
    let replied = world.settled_job(&next);
    assert_eq!(
        replied["status"],
        "completed",
        "{at}: {replied}\n{}",
        world.job_log(&next)
    );
    assert_eq!(replied["session_id"], session.as_str(), "{at}: {replied}");
    assert_eq!(replied["resumes"], id.as_str(), "{at}: {replied}");
    let last = world.api.requests().pop().unwrap();
    let said = common::claude::all_text(&last);
    assert!(
        said.contains(AFTER) && said.contains("Is the migration done?"),
        "{at}: the reply's request carries the session: {said}"
    );
    assert!(world.ok(&["logs", &next]).contains(REPLIED), "{at}");
}

#[test]
fn root_drives_a_whole_claude_session_from_the_cli_with_nothing_but_the_credentials() {
    let test = "root_drives_a_whole_claude_session_from_the_cli";
    if !root_or_skip(test) || !git_or_skip() {
        return;
    }
    for claude in clis_or_skip(test) {
        let began = std::time::Instant::now();
        let world = World::with_script(&claude, false, acceptance_script());
        let version = common::claude::version_of(&claude).unwrap_or_default();
        whole_session(&world, &format!("with Claude Code {version}"));
        eprintln!(
            "{test}: Claude Code {version} took {:.1}s",
            began.elapsed().as_secs_f64()
        );
    }
}
