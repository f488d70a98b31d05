//! An agent is not trusted with luzia's files. It runs as a project's unprivileged user and owns
//! its job directory: it may replace any file there with a symbolic link, a FIFO or anything
//! else, and root's luzia must then neither write outside the job nor hang. Each test here is
//! one such attack, made by a real agent (a throwaway user, `sh` reading the task as its
//! script) against the real binary running as root: a root-only 0600 victim file stays as it
//! was, every command ends within its deadline, and the queue keeps moving.
//!
//! The tests that switch users need root (without it they say SKIPPED loudly and pass); the
//! ones about the operator's own paths (the config, a project, the index) run as anyone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::user::User;
use common::*;
use serde_json::Value;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
/// How long a job may take to start, ask or end on a loaded machine (a hang guard).
const GUARD: Duration = Duration::from_secs(60);
/// How long one luzia command may take before it counts as blocked.
const DEADLINE: Duration = Duration::from_secs(20);
/// What the victim holds; no byte of it may change.
const SECRET: &[u8] = b"root's own, mode 0600\n";

/// What a luzia command did: how it ended and what it said.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A world others may read: a jobs root, a project, a queue, the config, and a root-only victim
/// file. Dropping it kills every process it started.
struct World {
    base: PathBuf,
    _tmp: TempDir,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-hostile-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["jobs", "proj", "home", "xdg", "cache"] {
            fs::create_dir(base.join(d)).unwrap();
            fs::set_permissions(base.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let victim = base.join("victim");
        fs::write(&victim, SECRET).unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
        World { base, _tmp: tmp }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    fn victim(&self) -> PathBuf {
        self.path("victim")
    }

    /// The victim is as it was: not a byte written to it, its mode unchanged.
    fn victim_untouched(&self) {
        let victim = self.victim();
        assert_eq!(
            String::from_utf8_lossy(&fs::read(&victim).unwrap()),
            String::from_utf8_lossy(SECRET),
            "luzia wrote into {} through a planted link",
            victim.display()
        );
        assert_eq!(
            fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    /// The config: the agent is `sh` reading its task as a script, as `user` when given, with
    /// `max` slots.
    fn configure(&self, user: Option<&User>, max: usize) {
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let user = user.map_or(String::new(), |u| format!("user = {:?}\n", u.name));
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
             command = [\"sh\", \"-s\"]\nmax_concurrent = {max}\nprompt_template = \"{{task}}\"\n\n\
             [projects.p]\npath = {}\n{user}",
            q(&self.path("jobs")),
            q(&self.path("notifications.log")),
            q(&self.path("queue")),
            q(&self.path("proj")),
        );
        fs::write(self.path("config.toml"), text).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .arg("--config")
            .arg(self.path("config.toml"))
            .args(args);
        cmd
    }

    /// Runs luzia with `args`; a command still running after [`DEADLINE`] is killed and the
    /// test fails: it blocked.
    fn run(&self, args: &[&str]) -> Ran {
        within_deadline(self.command(args), &format!("luzia {}", args.join(" ")))
    }

    /// Dispatches `script` as the agent's task; returns the job id.
    fn dispatch(&self, script: &str) -> String {
        let r = self.run(&["run", "p", script]);
        assert_eq!(r.code, Some(0), "{r:?}");
        r.stdout.trim().to_owned()
    }

    fn job_dir(&self, id: &str) -> PathBuf {
        self.path("jobs").join(id)
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.job_dir(id).join("meta.json")).unwrap_or_default())
            .unwrap_or(Value::Null)
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.job_dir(id).join("output.log")).unwrap_or_default()
    }

    /// Waits until the agent of job `id` says (by the file `planted` in its job directory) that
    /// its trap is set.
    fn wait_planted(&self, id: &str) {
        let planted = self.job_dir(id).join("planted");
        wait_for(&format!("{id}'s agent to plant its files"), GUARD, || {
            assert!(
                self.meta(id)["exit_code"].is_null(),
                "the agent ended before planting:\n{}",
                self.log(id)
            );
            planted.exists().then_some(())
        });
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
    }
}

/// Runs `cmd` to its end and returns what it did; past [`DEADLINE`] it is killed and the test
/// fails, saying that `what` blocked.
fn within_deadline(mut cmd: Command, what: &str) -> Ran {
    let mut child = ChildGuard::new(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.child().stdout.take().unwrap()));
    let err = drain(Box::new(child.child().stderr.take().unwrap()));
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.child().try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill_and_reap();
            panic!(
                "{what} blocked: still running after {DEADLINE:?} (stderr so far: {})",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A world whose agents run as a throwaway user, or `None` (the test is skipped) without root.
fn hostile_world(max: usize) -> Option<(World, User)> {
    if !root_or_skip("a hostile agent is a real unprivileged user: useradd, and luzia as root") {
        return None;
    }
    let w = World::new();
    let user = User::create(&w.path("home"));
    for d in ["proj", "home"] {
        user.give(&w.path(d));
    }
    w.configure(Some(&user), max);
    Some((w, user))
}

/// The agent's prelude: into its job directory, a pending question `q1` in place.
const ASKING: &str = r#"set -e
cd "$LUZIA_JOB_DIR"
printf '{"id": "q1", "type": "text", "question": "Go on?"}' > .q && mv .q clarification.json
"#;

/// The agent's end: says its trap is set, then waits to be killed.
const PLANTED: &str = r#"
touch planted
exec sleep 600
"#;

/// A stale answer (to another question) in the way of the next answer: `luzia answer` sets it
/// aside into history.jsonl, which the agent has made a link to a root-only file.
#[test]
fn an_answer_writes_nothing_through_a_history_link() {
    let Some((w, _user)) = hostile_world(4) else {
        return;
    };
    let script = format!(
        "{ASKING}printf '{{\"question_id\": \"q0\", \"answer\": \"old\"}}' > .r && mv .r response.json\n\
         rm -f history.jsonl && ln -s {victim:?} history.jsonl{PLANTED}",
        victim = w.victim()
    );
    let id = w.dispatch(&script);
    w.wait_planted(&id);

    let r = w.run(&["answer", &id, "yes"]);
    w.victim_untouched();
    assert_ne!(r.code, Some(0), "nothing could be recorded: {r:?}");
    assert!(
        r.stderr.contains("history.jsonl") && r.stderr.contains("symbolic link"),
        "the error names the file and what it is: {r:?}"
    );
}

/// The same, with history.jsonl a FIFO: the answer, holding the job's lock, must not wait for
/// a reader that never comes.
#[test]
fn an_answer_does_not_block_on_a_history_fifo() {
    let Some((w, _user)) = hostile_world(4) else {
        return;
    };
    let script = format!(
        "{ASKING}printf '{{\"question_id\": \"q0\", \"answer\": \"old\"}}' > .r && mv .r response.json\n\
         rm -f history.jsonl && mkfifo history.jsonl{PLANTED}"
    );
    let id = w.dispatch(&script);
    w.wait_planted(&id);

    let r = w.run(&["answer", &id, "yes"]);
    assert_ne!(r.code, Some(0), "nothing could be recorded: {r:?}");
    assert!(
        r.stderr.contains("history.jsonl") && r.stderr.contains("FIFO"),
        "the error names the file and what it is: {r:?}"
    );
    // The lock was let go: a second answer is not held up either.
    let again = w.run(&["answer", &id, "yes"]);
    assert_ne!(again.code, Some(0), "{again:?}");
}

/// The agent replaces `.reserve` (the room kept for its last words) with a FIFO and exits. Its
/// supervisor must still record the exit in meta.json, send the notification, free its slot,
/// and the task queued behind it (one slot) must start.
#[test]
fn a_reserve_fifo_neither_hangs_the_supervisor_nor_stalls_the_queue() {
    let Some((w, _user)) = hostile_world(1) else {
        return;
    };
    let go = w.path("go");
    let script = format!(
        "set -e\ncd \"$LUZIA_JOB_DIR\"\nrm -f .reserve && mkfifo .reserve\ntouch planted\n\
         while [ ! -e {go:?} ]; do sleep 0.05; done\nexit 3\n"
    );
    let first = w.dispatch(&script);
    w.wait_planted(&first);
    let r = w.run(&["run", "p", "echo second"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.starts_with("queued "), "one slot, taken: {r:?}");
    fs::write(&go, b"").unwrap();

    let meta = wait_for("the first job's exit in meta.json", GUARD, || {
        let m = w.meta(&first);
        (!m["exit_code"].is_null()).then_some(m)
    });
    assert_eq!(meta["exit_code"], 3, "{meta}");
    assert!(w.log(&first).ends_with("\nexit:3\n"), "{}", w.log(&first));
    wait_for("the first job's notification", GUARD, || {
        fs::read_to_string(w.path("notifications.log"))
            .unwrap_or_default()
            .contains(&format!("Agent {first} finished (exit 3)"))
            .then_some(())
    });
    // The queue moved: the second task became a job and ran to its end.
    let second = wait_for("the queued task to run", GUARD, || {
        job_ids(&w.path("jobs"))
            .into_iter()
            .find(|id| *id != first && w.meta(id)["task"] == "echo second")
    });
    let meta = wait_for("the second job to end", GUARD, || {
        let m = w.meta(&second);
        (!m["exit_code"].is_null()).then_some(m)
    });
    assert_eq!(meta["exit_code"], 0, "{meta}\n{}", w.log(&second));
}

/// The index of settled jobs is the operator's (in the cache directory); a FIFO put there must
/// not hang a listing: the index is passed over and the jobs read from their files.
#[test]
fn a_listing_does_not_block_on_an_index_fifo() {
    let w = World::new();
    w.configure(None, 4);
    let root = w.path("jobs");
    // Enough jobs for a listing to load the index.
    for i in 0..luzia::jobs::model::scan::INDEX_MIN {
        let dir = root.join(format!("120000-{i:04}"));
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
        fs::write(dir.join("output.log"), "done\n\nexit:0\n").unwrap();
    }
    let index = luzia::jobs::model::index::path_for(&w.path("cache"), &root);
    fs::create_dir_all(index.parent().unwrap()).unwrap();
    mkfifo(&index);

    let r = w.run(&["jobs", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let jobs: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(jobs.len(), luzia::jobs::model::scan::INDEX_MIN);
}

/// `--config FIFO` is refused at once, saying what the path is; so are a directory and a loop
/// of links. A link to a config is followed (a dotfiles manager's), a FIFO behind it is not.
#[test]
fn a_config_path_that_is_no_file_is_named_for_what_it_is() {
    let w = World::new();
    w.configure(None, 4);
    let fifo = w.path("fifo.toml");
    mkfifo(&fifo);
    let dir = w.path("dir.toml");
    fs::create_dir(&dir).unwrap();
    let looped = w.path("loop.toml");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let to_fifo = w.path("link-to-fifo.toml");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    let to_config = w.path("link.toml");
    std::os::unix::fs::symlink(w.path("config.toml"), &to_config).unwrap();

    for (path, says) in [
        (&fifo, "is a FIFO, not a regular file"),
        (&dir, "is a directory, not a regular file"),
        (&looped, "is a loop of symbolic links"),
        (&to_fifo, "is a FIFO, not a regular file"),
    ] {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", w.path("xdg"))
            .arg("--config")
            .arg(path)
            .args(["jobs", "--json"]);
        let r = within_deadline(cmd, &format!("luzia --config {}", path.display()));
        assert_eq!(r.code, Some(1), "{r:?}");
        assert!(
            r.stderr.contains(&path.display().to_string()) && r.stderr.contains(says),
            "{} {says}: {r:?}",
            path.display()
        );
    }
    let mut cmd = Command::new(LUZIA);
    for var in common::LUZIA_VARS {
        cmd.env_remove(var);
    }
    cmd.env("XDG_CONFIG_HOME", w.path("xdg"))
        .arg("--config")
        .arg(&to_config)
        .args(["jobs", "--json"]);
    let r = within_deadline(cmd, "luzia --config LINK");
    assert_eq!(r.code, Some(0), "a link to a config is followed: {r:?}");
}

/// A project path that is not a directory is named for what it is, not "does not exist".
#[test]
fn a_project_path_that_is_no_directory_is_named_for_what_it_is() {
    let w = World::new();
    let proj = w.path("proj");
    fs::remove_dir(&proj).unwrap();
    for (make, says) in [
        (
            &(|p: &Path| std::os::unix::fs::symlink(p, p).unwrap()) as &dyn Fn(&Path),
            "is a loop of symbolic links",
        ),
        (
            &|p: &Path| fs::write(p, "").unwrap(),
            "is a file, not a directory",
        ),
    ] {
        let _ = fs::remove_file(&proj);
        make(&proj);
        w.configure(None, 4);
        let r = w.run(&["run", "p", "echo hello"]);
        assert_ne!(r.code, Some(0), "{r:?}");
        assert!(
            r.stderr.contains(&proj.display().to_string())
                && r.stderr.contains(says)
                && !r.stderr.contains("does not exist"),
            "{says}: {r:?}"
        );
    }
}

/// An answer stopped by a signal at any moment leaves no temporary file: the answer is written
/// unnamed and given its name whole. A watcher kills `luzia answer` the moment a temporary
/// name shows in the job directory.
#[test]
fn an_answer_stopped_by_a_signal_leaves_no_temporary_file() {
    let w = World::new();
    w.configure(None, 4);
    let id = "120000-sigs";
    let dir = w.job_dir(id);
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
    let agent = sleeper();
    fs::write(dir.join("pid"), format!("{}\n", agent.id())).unwrap();
    let temporary = |dir: &Path| {
        fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect::<Vec<_>>()
    };
    for round in 0..20 {
        let _ = fs::remove_file(dir.join("response.json"));
        fs::write(
            dir.join("clarification.json"),
            format!(r#"{{"id": "q{round}", "type": "text", "question": "Go on?"}}"#),
        )
        .unwrap();
        let mut child = ChildGuard::new(
            w.command(&["answer", id, "yes"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + DEADLINE;
        loop {
            if !temporary(&dir).is_empty() {
                let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                let _ = child.child().wait();
                break;
            }
            if child.child().try_wait().unwrap().is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "luzia answer blocked");
        }
        assert_eq!(
            temporary(&dir),
            Vec::<String>::new(),
            "round {round}: a temporary file outlived the signal"
        );
    }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}
