//! A luzia set up to run one ACP agent (`[agent] kind`, `[agents.KIND] command`, its
//! environment in `[agent] env`) against a scripted model API, on a project of a temporary
//! directory, and the steps every ACP suite takes with it: the job waiting at the gate of the
//! command its model asks to run, that gate approved, denied or the job killed at it, and a
//! reply continuing the session. The agent's own home is made by the suite, inside
//! [`World::base`], as a user would set it up.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fake_chat::FakeChat;
use super::fake_responses::FakeResponses;
use super::gemini::{self, FakeGemini};
use super::http;

/// Generous: a real agent starts in a second or two, more on a loaded machine.
pub const WAIT: Duration = Duration::from_secs(90);

/// What the model asks to run, one command for each way its gate is settled: each writes its
/// word into the project's `marker.txt` ([`World::marker`]), so a test sees whether it ran.
pub const APPROVED: &str = "echo approved > marker.txt";
pub const DENIED: &str = "echo denied > marker.txt";
pub const KILLED: &str = "echo killed > marker.txt";

/// The scripted model API a world's agent talks to, as far as the shared steps need it.
pub trait Api {
    /// Adds an answer of plain text to the end of the script.
    fn push_text(&self, text: &str);
    /// The bodies of the agent's turns so far.
    fn requests(&self) -> Vec<Value>;
}

impl Api for FakeResponses {
    fn push_text(&self, text: &str) {
        self.push(vec![http::Reply::text(text)]);
    }
    fn requests(&self) -> Vec<Value> {
        FakeResponses::requests(self)
    }
}

impl Api for FakeChat {
    fn push_text(&self, text: &str) {
        self.push(vec![http::Reply::text(text)]);
    }
    fn requests(&self) -> Vec<Value> {
        FakeChat::requests(self)
    }
}

impl Api for FakeGemini {
    fn push_text(&self, text: &str) {
        self.push(vec![gemini::Reply::text(text)]);
    }
    fn requests(&self) -> Vec<Value> {
        FakeGemini::requests(self)
    }
}

pub struct World<A> {
    _tmp: tempfile::TempDir,
    /// Everything of the test: `jobs/`, `proj/` (the project), the agent's home.
    pub base: PathBuf,
    pub jobs: PathBuf,
    /// The agent's HOME, inside `base`.
    pub home: PathBuf,
    /// The model API the agent is pointed at.
    pub api: A,
}

impl<A> Drop for World<A> {
    fn drop(&mut self) {
        // An agent left waiting by a failed assertion must not outlive the test.
        super::kill_processes_mentioning(&self.base);
    }
}

/// How the agent is started and what it is given: its command line, its HOME and the rest of
/// its environment.
pub struct Agent {
    pub kind: &'static str,
    pub command: Vec<String>,
    pub home: PathBuf,
    pub env: Vec<(String, String)>,
}

/// A job that ended: its `luzia jobs ID --json`, its `meta.json` and the session it recorded.
pub struct Ended {
    pub job: Value,
    pub meta: Value,
    pub session: String,
}

impl<A: Api> World<A> {
    /// A world whose agent talks to `api`, as `setup` makes it (given the base directory,
    /// where it makes the agent's home, and the API); its jobs in `jobs`, else `base/jobs`.
    pub fn new(api: A, jobs: Option<&Path>, setup: impl FnOnce(&Path, &A) -> Agent) -> World<A> {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_owned();
        let jobs = jobs.map_or_else(|| base.join("jobs"), Path::to_owned);
        for d in ["jobs", "queue", "xdg", "proj"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let agent = setup(&base, &api);
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let p = |p: &Path| q(p.to_str().unwrap());
        let env: Vec<String> = std::iter::once(format!("HOME = {}", p(&agent.home)))
            .chain(agent.env.iter().map(|(k, v)| format!("{k} = {}", q(v))))
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
            home: agent.home,
            api,
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

    /// Where the commands the model asks to run ([`APPROVED`], ...) write.
    pub fn marker(&self) -> PathBuf {
        self.project().join("marker.txt")
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

    /// Waits for the job's gate for [`APPROVED`] and checks the job meanwhile: live, its log
    /// already says each of `live` (and no command's end), and nothing has run. Returns the gate.
    pub fn wait_command_gate(&self, id: &str, live: &[&str]) -> Value {
        let gate = self.wait_gate(id);
        // Some agents add the command's description to its title (Qwen Code: `... (Write the
        // marker)`).
        let name = gate["gate"].as_str().unwrap_or_default();
        assert!(name.starts_with(&format!("execute: {APPROVED}")), "{gate}");
        let log = self.log(id);
        for said in live {
            assert!(log.contains(said), "{said:?} not in:\n{log}");
        }
        assert!(!log.contains("exit:"), "{log}");
        assert!(
            !self.marker().exists(),
            "nothing runs before it is approved"
        );
        gate
    }

    /// Approves the job's gate for [`APPROVED`] and checks that the command ran, the approval
    /// is in the log and the job completed with the model's last words, `The marker is
    /// written.`, in a session it recorded.
    pub fn approve_to_end(&self, id: &str) -> Ended {
        self.ok(&["approve", id]);
        let job = self.wait_finished(id);
        assert_eq!(job["status"], "completed", "{job}\n{}", self.log(id));
        assert_eq!(fs::read_to_string(self.marker()).unwrap(), "approved\n");
        let log = self.log(id);
        assert!(log.contains("  ✓ approved by "), "{log}");
        assert!(
            log.contains("The marker is written.\n── success · "),
            "{log}"
        );
        let meta = self.meta(id);
        let session = meta["session_id"].as_str().unwrap().to_owned();
        Ended { job, meta, session }
    }

    /// `luzia reply` to the job `ended` (which ran [`APPROVED`]), the model answering `Still
    /// the same session.`: the new job completes in the same session, its log headed as
    /// `── {agent} session SESSION (continued)`, with the answer and none of the replayed
    /// history, and the model is given the old turns with the new one. Returns the new job.
    pub fn reply_continues(&self, id: &str, ended: &Ended, agent: &str) -> Ended {
        self.api.push_text("Still the same session.");
        let next = self.reply(id, "Is the marker there?");
        let job = self.wait_finished(&next);
        assert_eq!(job["status"], "completed", "{job}\n{}", self.log(&next));
        let meta = self.meta(&next);
        assert_eq!(
            (meta["session_id"].as_str(), meta["resumes"].as_str()),
            (Some(ended.session.as_str()), Some(id))
        );
        let log = self.log(&next);
        let session = &ended.session;
        assert!(
            log.contains(&format!("── {agent} session {session} (continued)")),
            "{log}"
        );
        assert!(log.contains("Still the same session."), "{log}");
        assert!(
            !log.contains("The marker is written.") && !log.contains("▶"),
            "the replayed history is kept out: {log}"
        );
        // The reply's requests, wherever they came among the agent's own (Qwen Code asks the
        // model about the session after a turn), each with the old session's task: the session
        // was continued. Not its tool call: Qwen Code 0.15.10 writes its session's records
        // asynchronously and may lose the last ones when it exits on a loaded machine.
        let task = self.meta(id)["task"].as_str().unwrap().to_owned();
        let asked: Vec<String> = self
            .api
            .requests()
            .iter()
            .map(Value::to_string)
            .filter(|r| r.contains("Is the marker there?"))
            .collect();
        assert!(!asked.is_empty(), "the reply's question reached the model");
        assert!(
            asked.iter().all(|r| r.contains(&task)),
            "the model was given the old session ({task}) with the new question: {asked:?}"
        );
        Ended {
            job,
            meta,
            session: session.clone(),
        }
    }

    /// Denies the job's gate for [`DENIED`] with a reason, and checks that nothing ran, the
    /// job completed, and its log says the reason stays with the operator. Returns the job
    /// and its log.
    pub fn deny_at_gate(&self, id: &str) -> (Value, String) {
        self.wait_gate(id);
        let said = self.ok(&["deny", id, "--reason", "not today"]);
        assert!(said.contains("denied"), "{said}");
        let job = self.wait_finished(id);
        assert!(!self.marker().exists(), "denied: nothing ran");
        assert_eq!(job["status"], "completed", "{job}\n{}", self.log(id));
        let log = self.log(id);
        assert!(
            log.contains(": not today (the agent is told only that it was rejected)"),
            "{log}"
        );
        (job, log)
    }

    /// Kills the job waiting at its gate, and checks that it ends killed, with its gate
    /// withdrawn (so recorded), nothing pending, no marker written and nothing of it running.
    pub fn kill_at_gate(&self, id: &str) {
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
        assert!(!self.marker().exists(), "killed at its gate: nothing ran");
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
