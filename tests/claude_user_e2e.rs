//! The real Claude Code CLI run as a project's user: luzia runs as root with its DEFAULT agent
//! command, project `p` has `user = ...`, and the agent (Claude Code, its MCP server `luzia
//! mcp`, the commands it runs) runs as that user against a scripted fake Messages API. A
//! permission request is a gate the operator (root) approves; the command then runs as the
//! user. `luzia reply` continues the same session, as the same user, from the transcript in the
//! user's HOME.
//!
//! Needs root (a throwaway user is created with `useradd` and removed at the end) and the CLI;
//! without either it says SKIPPED loudly and passes (in CI, where both must be, it fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::claude::{FakeApi, Reply, all_text, clis_or_skip, tool_results};
use common::user::{User, reachable, reachable_luzia};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(90);

/// A world every user may enter: the project and HOME are the user's; `bin/` holds `claude`
/// (and luzia, when where it was built is closed to others). Dropping it kills every process
/// it started, then removes the user.
struct World {
    base: PathBuf,
    bin: PathBuf,
    luzia: PathBuf,
    user: User,
    _tmp: TempDir,
}

impl Drop for World {
    fn drop(&mut self) {
        // Supervisors (root) name the job directory; agents carry it in their environment.
        // The user's own leftovers go when `user` is dropped, after this.
        common::kill_processes_mentioning(&self.base);
    }
}

impl World {
    fn new(claude: &Path, api: &FakeApi) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-claude-user-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        for d in ["", "jobs", "queue", "xdg", "home", "proj", "bin"] {
            fs::create_dir_all(base.join(d)).unwrap();
            fs::set_permissions(base.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let user = User::create(&base.join("home"));
        user.give(&base.join("home"));
        user.give(&base.join("proj"));
        let bin = base.join("bin");
        // Named `claude` and on PATH: the default command's program, as the user finds it.
        reachable(claude, &bin, "claude");
        let luzia = reachable_luzia(&bin);
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        // No HOME of the test's: the user's own (from /etc/passwd, the `home` above) is the one
        // luzia gives the agent, where Claude Code keeps the session `reply` resumes.
        let env: Vec<String> = api
            .agent_env(&base.join("home"))
            .into_iter()
            .filter(|(k, _)| k != "HOME")
            .map(|(k, v)| format!("{k} = {}", Value::from(v)))
            .collect();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\nenv = {{ {} }}\n\n\
             [projects.p]\npath = {}\nuser = {:?}\n",
            q(&base.join("jobs")),
            q(&base.join("notes.log")),
            q(&base.join("queue")),
            env.join(", "),
            q(&base.join("proj")),
            user.name,
        );
        fs::write(base.join("config.toml"), config).unwrap();
        World {
            base,
            bin,
            luzia,
            user,
            _tmp: tmp,
        }
    }

    /// luzia as the operator (root), from where the user can run it too: the agent's MCP
    /// server and its PATH are the running luzia's own binary.
    fn luzia(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.luzia);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        let path = std::env::join_paths(
            std::iter::once(self.bin.clone())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args);
        assert_cmd::Command::from_std(cmd)
            .timeout(WAIT)
            .output()
            .unwrap()
    }

    /// A command that starts a job (`run`, `reply`): the new job's id.
    fn started(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            common::stderr_of(&out)
        );
        common::stdout_of(&out).trim().to_owned()
    }

    fn ok(&self, args: &[&str]) {
        let out = self.luzia(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}{}",
            common::stdout_of(&out),
            common::stderr_of(&out)
        );
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.base.join("jobs").join(id)
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.dir(id).join("output.log")).unwrap_or_default()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    /// Waits until the job's pending request is a permission gate; returns it.
    fn wait_gate(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        let is_gate = |q: &Value| q.get("approval").is_some_and(|a| !a.is_null());
        let pending = common::claude::wait_pending(
            luzia,
            || self.log(id),
            id,
            "permission gate",
            WAIT,
            is_gate,
        );
        pending["approval"].clone()
    }

    fn wait_finished(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        common::claude::wait_finished(luzia, || self.log(id), id, WAIT)
    }

    /// The uid of every live process of job `id` other than its supervisor (the agent, its MCP
    /// server, what they run), found by the job directory on its command line or in its
    /// environment.
    fn agent_side_uids(&self, id: &str) -> Vec<(u32, String, u32)> {
        let supervisor: u32 = fs::read_to_string(self.dir(id).join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        common::processes_mentioning(&self.dir(id))
            .into_iter()
            .filter(|&pid| pid != supervisor)
            .filter_map(|pid| {
                let uid = fs::metadata(format!("/proc/{pid}")).ok()?.uid();
                Some((pid, common::proc_comm(pid)?, uid))
            })
            .collect()
    }

    fn owner(&self, path: &Path) -> u32 {
        fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .uid()
    }
}

/// The transcripts Claude Code keeps of session `session` under `home`.
fn transcripts(home: &Path, session: &str) -> Vec<PathBuf> {
    let Ok(projects) = fs::read_dir(home.join(".claude/projects")) else {
        return Vec::new();
    };
    projects
        .filter_map(Result::ok)
        .map(|p| p.path().join(format!("{session}.jsonl")))
        .filter(|t| t.is_file())
        .collect()
}

/// Approves job `id`'s permission request for `command` (as root, the operator), after
/// checking that nothing ran before the decision and that the job's processes are the user's.
fn approve(w: &World, id: &str, command: &str, made: &Path) {
    let gate = w.wait_gate(id);
    assert_eq!(gate["gate"], format!("Bash: {command}"), "{gate}");
    assert!(!made.exists(), "nothing runs before the decision");
    let processes = w.agent_side_uids(id);
    assert!(
        processes.len() >= 2 && processes.iter().all(|&(_, _, uid)| uid == w.user.uid),
        "Claude Code and its MCP server run as {} ({}): {processes:?}",
        w.user.name,
        w.user.uid
    );
    w.ok(&["approve", id]);
}

#[test]
fn claude_runs_as_the_project_user_asks_and_continues_its_session_as_that_user() {
    if !common::root_or_skip("switching users needs root (useradd, and luzia as root)") {
        return;
    }
    for claude in clis_or_skip("claude_runs_as_the_project_user") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "touch made-by-agent", "description": "Leave a mark"}),
            ),
            Reply::text("The mark is there."),
        ]);
        let w = World::new(&claude, &api);
        let proj = w.base.join("proj");

        let first = w.started(&["run", "p", "Leave a mark. Remember the word HERON."]);
        approve(
            &w,
            &first,
            "touch made-by-agent",
            &proj.join("made-by-agent"),
        );
        let job = w.wait_finished(&first);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&first));
        assert_eq!(w.owner(&proj.join("made-by-agent")), w.user.uid);
        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        assert!(results.iter().all(|(_, err)| !err), "{results:?}");

        let meta = w.meta(&first);
        assert_eq!(meta["user"], w.user.name.as_str(), "{meta}");
        let session = meta["session_id"].as_str().unwrap_or_default().to_owned();
        assert!(!session.is_empty(), "no session id: {meta}");
        let usage = &meta["usage"];
        assert!(
            usage["turns"].as_u64().is_some_and(|t| t >= 2)
                && usage["output_tokens"].as_u64().is_some_and(|t| t > 0),
            "usage: {meta}"
        );
        // The session is kept where `--resume` looks for it: the user's HOME, as the user's.
        let kept = transcripts(&w.base.join("home"), &session);
        assert_eq!(kept.len(), 1, "the transcript of {session}: {kept:?}");
        assert_eq!(w.owner(&kept[0]), w.user.uid);

        api.push(vec![
            Reply::tool(
                "Bash",
                json!({"command": "touch made-by-reply", "description": "Leave a second mark"}),
            ),
            Reply::text("The second mark is there."),
        ]);
        let second = w.started(&["reply", &first, "Leave a second mark, then say the word."]);
        approve(
            &w,
            &second,
            "touch made-by-reply",
            &proj.join("made-by-reply"),
        );
        let job = w.wait_finished(&second);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&second));
        assert_eq!(w.owner(&proj.join("made-by-reply")), w.user.uid);

        let turns = api.wait_for_requests(4, WAIT);
        let seen = all_text(&turns[2]);
        for earlier in [
            "Remember the word HERON.",
            "touch made-by-agent",
            "The mark is there.",
            "Leave a second mark, then say the word.",
        ] {
            assert!(
                seen.contains(earlier),
                "{earlier:?} not sent with the reply: {seen}"
            );
        }
        let meta = w.meta(&second);
        assert_eq!(meta["session_id"], session.as_str(), "{meta}");
        assert_eq!(meta["resumes"], first.as_str(), "{meta}");
        assert_eq!(meta["user"], w.user.name.as_str(), "{meta}");
        assert_eq!(w.owner(&w.dir(&second)), w.user.uid);
    }
}
