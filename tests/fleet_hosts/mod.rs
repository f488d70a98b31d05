//! The fleet end-to-end tests' hosts: each a real `sshd` on 127.0.0.1 (tests/common/sshd.rs)
//! with its own jobs root and config, whose jobs are started by `luzia run` there (the agent is
//! `sh` reading the task as its script); the cockpit's config naming them; and the table row of
//! a host's job.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::sshd::Sshd;
use crate::tmux::{self, Cockpit, Opts, Sandbox, Screen};

/// ssh's own connection attempts, on a loaded machine.
pub const CONNECT: Duration = Duration::from_secs(30);

/// One remote host: its sshd, its jobs root and its own config (projects, agent).
pub struct Host {
    pub name: String,
    pub dir: PathBuf,
    pub root: PathBuf,
    pub config: PathBuf,
    pub sshd: Sshd,
}

impl Host {
    /// A host named `name` under the sandbox; `None` (skipped loudly) without sshd.
    pub fn start(sb: &Sandbox, name: &str) -> Option<Host> {
        let dir = sb.tmp.path().join(format!("host-{name}"));
        let root = dir.join("jobs");
        let project = dir.join("project");
        for d in [&root, &project] {
            fs::create_dir_all(d).unwrap();
        }
        let sshd = Sshd::start(name, &root)?;
        let config = sshd.config_path();
        fs::write(
            &config,
            format!(
                "queue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n[agent]\n\
                 command = [\"sh\"]\nprompt_template = \"{{task}}\"\n\n\
                 [projects.api]\npath = {project:?}\n",
                queue = dir.join("queue"),
                notes = dir.join("notifications.log"),
            ),
        )
        .unwrap();
        Some(Host {
            name: name.to_owned(),
            dir,
            root,
            config,
            sshd,
        })
    }

    /// Starts a job on this host with `luzia run` on its root: `script` is the agent's task,
    /// run by `sh` in the job directory. Returns the job's id.
    pub fn run(&self, sb: &Sandbox, script: &str) -> String {
        let out = Command::new(tmux::BIN)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &sb.home)
            .env("XDG_STATE_HOME", &sb.state)
            .env("LANG", "C.UTF-8")
            .arg("--config")
            .arg(&self.config)
            .arg("--jobs-dir")
            .arg(&self.root)
            .args(["run", "api", script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "luzia run on {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// A job here asking which database, whose answer its agent writes to the returned file.
    pub fn asking(&self, sb: &Sandbox) -> (String, PathBuf) {
        let answer = self.dir.join("answer");
        let id = self.run(
            sb,
            &format!(
                "{} ask 'Which database?' --option production --option staging > {}; exec sleep 1000",
                tmux::sh_quote(tmux::BIN),
                tmux::sh_quote(answer.to_str().unwrap())
            ),
        );
        (id, answer)
    }

    /// The one exchange of job `id`'s history, answered `staging`: its response.
    pub fn recorded_response(&self, id: &str) -> serde_json::Value {
        let history = fs::read_to_string(self.job_dir(id).join("history.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = history
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{history}");
        assert_eq!(lines[0]["response"]["answer"], "staging", "{history}");
        lines[0]["response"].clone()
    }
}

/// Picks the second option (`staging`) of the question on screen and waits for the agent to
/// read it and the cockpit to say so.
pub fn answer_staging(ck: &Cockpit<'_>, answer: &Path) {
    ck.key("i");
    ck.wait_text("Which database?");
    ck.keys(&["2", "Enter"]);
    tmux::wait_file(answer, "staging");
    ck.wait_for("the answer confirmed", |s| s.contains("answered"));
}

/// A host stops the supervisors (and so the agents) of every job on its root when dropped,
/// before its sshd goes: a test that fails half-way leaves nothing running.
impl Drop for Host {
    fn drop(&mut self) {
        let pids: Vec<u32> = fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|job| fs::read_to_string(job.path().join("pid")).ok())
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        for &pid in &pids {
            if tmux::process_alive(pid) {
                tmux::send_signal(pid, rustix::process::Signal::TERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|&p| tmux::process_alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        common::kill_processes_mentioning(&self.root);
    }
}

/// The cockpit's config: every host's table (with `luzia` as given) and a queue of its own.
pub fn cockpit_config(sb: &Sandbox, tables: &[String]) -> PathBuf {
    let mut body = format!(
        "queue_dir = {:?}\nnotifications_log = {:?}\n\n",
        sb.tmp.path().join("queue"),
        sb.tmp.path().join("notifications.log"),
    );
    for t in tables {
        body.push_str(t);
        body.push('\n');
    }
    sb.config_file("cockpit.toml", &body)
}

/// Options for a cockpit showing every host, with ssh's control sockets in the sandbox.
pub fn opts(sb: &Sandbox, config: &Path) -> Opts {
    let run = sb.tmp.path().join("run");
    fs::create_dir_all(&run).unwrap();
    fs::set_permissions(&run, fs::Permissions::from_mode(0o700)).unwrap();
    Opts::default()
        .global_arg("--config")
        .global_arg(config.to_str().unwrap())
        .arg("--all-hosts")
        .env("XDG_RUNTIME_DIR", run.to_str().unwrap())
}

/// The table row showing job `id` of host `host` (its id alone, with the host in its column,
/// or as the cockpit keys it, `<id>@<host>`).
pub fn row(s: &Screen, id: &str, host: &str) -> Option<String> {
    let key = format!("{id}@{host}");
    s.job_rows().into_iter().find(|r| {
        r.split_whitespace()
            .any(|w| w == key || (tmux::shows_id(w, id) && r.contains(host)))
    })
}
