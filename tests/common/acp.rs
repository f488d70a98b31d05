//! A luzia set up to run one ACP agent (`[agent] kind`, `[agents.KIND] command`, its
//! environment in `[agent] env`) on a project of a temporary directory, and the waits an end to
//! end test of it needs: a job's pending gate, its end, its files. The agent's own home is made
//! by the test, inside [`World::base`], as a user would set it up.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Generous: a real agent starts in a second or two, more on a loaded machine.
pub const WAIT: Duration = Duration::from_secs(90);

pub struct World {
    _tmp: tempfile::TempDir,
    /// Everything of the test: `jobs/`, `proj/` (the project), the agent's home.
    pub base: PathBuf,
    pub jobs: PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        // An agent left waiting by a failed assertion must not outlive the test.
        super::kill_processes_mentioning(&self.base);
    }
}

/// How the agent is started and what it is given: its command line and its environment.
pub struct Agent {
    pub kind: &'static str,
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl World {
    /// A world whose agent `setup` makes (given the base directory, where it may make a home).
    pub fn new(jobs: Option<&Path>, setup: impl FnOnce(&Path) -> Agent) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_owned();
        let jobs = jobs.map_or_else(|| base.join("jobs"), Path::to_owned);
        for d in ["jobs", "queue", "xdg", "proj"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let agent = setup(&base);
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let p = |p: &Path| q(p.to_str().unwrap());
        let env: Vec<String> = agent
            .env
            .iter()
            .map(|(k, v)| format!("{k} = {}", q(v)))
            .collect();
        let command: Vec<String> = agent.command.iter().map(|a| q(a)).collect();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\nkind = {}\n\
             env = {{ {} }}\n\n[agents.{}]\ncommand = [{}]\n\n[projects.p]\npath = {}\n",
            p(&jobs),
            p(&base.join("notes.log")),
            p(&base.join("queue")),
            q(agent.kind),
            env.join(", "),
            agent.kind,
            command.join(", "),
            p(&base.join("proj")),
        );
        fs::write(base.join("config.toml"), config).unwrap();
        World {
            _tmp: tmp,
            base,
            jobs,
        }
    }

    pub fn luzia(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in super::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("NO_COLOR", "1")
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args)
            .output()
            .unwrap()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.luzia(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            super::stderr_of(&out)
        );
        super::stdout_of(&out)
    }

    /// `luzia run p TASK`: the new job's id.
    pub fn run(&self, task: &str) -> String {
        self.ok(&["run", "p", task]).trim().to_owned()
    }

    /// `luzia reply ID TEXT`: the new job's id.
    pub fn reply(&self, id: &str, text: &str) -> String {
        self.ok(&["reply", id, text]).trim().to_owned()
    }

    pub fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    pub fn project(&self) -> PathBuf {
        self.base.join("proj")
    }

    pub fn log(&self, id: &str) -> String {
        fs::read_to_string(self.dir(id).join("output.log")).unwrap_or_default()
    }

    pub fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    /// Waits for the job's pending gate (`questions --json`); returns it.
    pub fn wait_gate(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        let pending = super::claude::wait_pending(
            luzia,
            || self.log(id),
            id,
            "gate",
            WAIT,
            |q| q.get("approval").is_some_and(|a| !a.is_null()),
        );
        pending["approval"].clone()
    }

    pub fn wait_finished(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        super::claude::wait_finished(luzia, || self.log(id), id, WAIT)
    }

    /// Kills the job waiting at its gate, and checks that it ends killed, with its gate
    /// withdrawn (so recorded), nothing pending, no marker written and nothing of it running.
    pub fn kill_at_gate(&self, id: &str, marker: &Path) {
        self.wait_gate(id);
        let supervisor: u32 = fs::read_to_string(self.dir(id).join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        self.ok(&["kill", id]);
        let job = self.wait_finished(id);
        assert_eq!(job["status"], "killed", "{job}\n{}", self.log(id));
        assert!(job["waiting"].is_null(), "{job}");
        assert!(!self.dir(id).join("approval.json").exists());
        let questions = self.ok(&["questions", "--json"]);
        assert!(!questions.contains(id), "{questions}");
        let history = fs::read_to_string(self.dir(id).join("history.jsonl")).unwrap();
        assert!(
            history.contains("\"withdrawn\":\"the job was stopped\""),
            "{history}"
        );
        assert!(!marker.exists(), "killed at its gate: nothing ran");
        wait_until("the supervisor to end", || !super::pid_alive(supervisor));
        assert!(
            super::processes_mentioning(&self.base).is_empty(),
            "nothing of the job is left running"
        );
    }
}

/// Waits until `probe` holds; fails saying `what` after the deadline.
pub fn wait_until(what: &str, probe: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !probe() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
