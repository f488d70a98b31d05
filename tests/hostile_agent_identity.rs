//! A hostile agent cannot make root's `luzia kill` act outside its job. The agent runs as a
//! project's user, which owns its job directory (protocol.md, "Switching users"), so it can
//! rename any entry there, including the root-owned `output.log` it has just written into.
//! Each attack is made by the agent script itself, from inside its job, as an attacker would:
//!
//! - it forges the record of which process is the job's (`process.json`, `pid`, `meta.json`,
//!   luzia's private `.luzia/` moved away and replaced), naming a root process that is not the
//!   job's: that process must live, and the real agent must be stopped;
//! - with its supervisor gone, what it left running plants `output.log` as a link to a
//!   root-only file, or as a FIFO: no byte may reach the file, and `luzia kill` must not block;
//! - a supervisor stopped with SIGSTOP must not keep `luzia kill` from stopping the agent.
//!
//! Creating the user needs root: without it each test says SKIPPED and passes. Every wait has a
//! deadline; every luzia command runs with one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::user::{User, reachable_luzia};
use common::*;
use tempfile::TempDir;

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");
/// How long any one step may take before the test calls it hung.
const GUARD: Duration = Duration::from_secs(60);
/// How long `luzia kill` may take: its grace (2 s), the wait for SIGKILL to show and for the
/// exit line, with room for a loaded machine. Today's `kill` on a FIFO blocks for ever.
const KILL_DEADLINE: Duration = Duration::from_secs(40);

/// The agent. The task says what to do: `MODE VICTIM` (a pid, or a path). It records its pid
/// in `agent.pid`, makes its attack, says so in `attacked`, then waits to be stopped.
/// Everything it does it does as the project's user, in its own job directory.
const AGENT: &str = r#"read mode victim
cd "$LUZIA_JOB_DIR" || exit 3
echo $$ > agent.pid
ticks() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }
boot=$(cat /proc/sys/kernel/random/boot_id)
forged() {
  p="{\"pid\":$victim,\"start_ticks\":$(ticks "$victim"),\"boot_id\":\"$boot\"}"
  printf '{"supervisor":%s,"agent":%s,"job":"%s"}\n' "$p" "$p" "$LUZIA_JOB_ID"
}
case $mode in
process.json)
  # Its own output is a root-owned file: renamed, it passes for the supervisor's record. With
  # no pid file, the agent it names (a group leader) is what a stop goes to.
  forged; exec >/dev/null 2>&1
  rm -f pid; mv output.log process.json ;;
pid)
  printf '%s\n' "$victim"; exec >/dev/null 2>&1
  rm -f process.json; mv output.log pid ;;
meta.json)
  printf '{"id":"%s","project":"p","task":"t","pid":%s,"started":"%s"}\n' \
    "$LUZIA_JOB_ID" "$victim" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  exec >/dev/null 2>&1
  rm -f process.json pid; mv output.log meta.json ;;
hidden)
  # luzia's private directory cannot be written, but it can be renamed within the job
  # directory: moved aside, and a directory of the agent's own put in its place.
  forged; exec >/dev/null 2>&1
  mv .luzia .aside; mkdir .luzia; mv output.log .luzia/process.json; rm -f process.json pid ;;
link|fifo)
  # Left running in the agent's group: once the agent is gone (its supervisor killed), it
  # plants output.log, where `luzia kill` writes the exit line nobody else will write.
  a=$$
  ( exec >/dev/null 2>&1
    while :; do
      case $(cut -d' ' -f3 "/proc/$a/stat" 2>/dev/null) in ''|Z|X) break ;; esac
      sleep 0.05
    done
    rm -f output.log
    if [ "$mode" = link ]; then ln -s "$victim" output.log; else mkfifo output.log; fi
    touch planted
    exec sleep 600 ) &
  echo $! > leftover.pid ;;
esac
touch attacked
exec sleep 600
"#;

/// A world other users can reach: a project, a jobs root, the config, a root-only victim
/// file. Dropping it kills every process it started.
struct World {
    base: PathBuf,
    user: User,
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
        for d in ["jobs", "proj", "home", "xdg"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        let luzia = reachable_luzia(&base);
        let user = User::create(&base.join("home"));
        for d in ["proj", "home"] {
            user.give(&base.join(d));
        }
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\n\
             command = [\"sh\", \"-c\", {}, \"sh\", {}]\nprompt_template = \"{{task}}\"\n\n\
             [projects.p]\npath = {}\nuser = {:?}\n",
            q(&base.join("jobs")),
            q(&base.join("notifications.log")),
            q(&base.join("queue")),
            serde_json::to_string(AGENT).unwrap(),
            q(&luzia),
            q(&base.join("proj")),
            user.name,
        );
        fs::write(base.join("config.toml"), config).unwrap();
        let victim = base.join("victim");
        fs::write(&victim, "root's own\n").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
        World {
            base,
            user,
            _tmp: tmp,
        }
    }

    fn victim(&self) -> PathBuf {
        self.base.join("victim")
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.base.join("jobs").join(id)
    }

    /// `luzia ARGS`, as root, killed and failed if it takes longer than `within`.
    fn luzia(&self, args: &[&str], within: Duration) -> (Option<i32>, String, String) {
        let mut cmd = Command::new(LUZIA);
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .current_dir(&self.base)
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args);
        let started = Instant::now();
        let out = assert_cmd::Command::from_std(cmd)
            .timeout(within)
            .output()
            .unwrap();
        assert!(
            started.elapsed() < within,
            "luzia {args:?} was still running after {within:?} (it blocked)"
        );
        (out.status.code(), stdout_of(&out), stderr_of(&out))
    }

    /// Dispatches the agent with `task` and waits until it has made its attack; returns the job
    /// id and the agent's pid.
    fn attack(&self, task: &str) -> (String, u32) {
        let (code, out, err) = self.luzia(&["run", "p", task], GUARD);
        assert_eq!(code, Some(0), "{err}");
        let id = out.trim().to_owned();
        let dir = self.dir(&id);
        wait_for(&format!("the agent of {id} to attack"), GUARD, || {
            dir.join("attacked").exists().then_some(())
        });
        let agent = read_pid(&dir.join("agent.pid"));
        assert!(pid_alive(agent));
        (id, agent)
    }

    /// `luzia jobs ID --json`.
    fn job(&self, id: &str) -> serde_json::Value {
        let (code, out, err) = self.luzia(&["jobs", id, "--json"], GUARD);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&out).unwrap()
    }

    /// `luzia kill ID`, which must end within its deadline.
    fn kill(&self, id: &str) -> (Option<i32>, String, String) {
        self.luzia(&["kill", id, "--grace", "2s"], KILL_DEADLINE)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
        let _ = &self.user;
    }
}

fn read_pid(path: &Path) -> u32 {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// A root process that is not the job's, leading its own process group (as daemons do):
/// whatever the agent writes, it must survive.
fn bystander() -> ChildGuard {
    use std::os::unix::process::CommandExt;
    let child = Command::new("sleep").arg("600").process_group(0).spawn();
    ChildGuard::new(child.unwrap())
}

fn wait_gone(pid: u32, what: &str) {
    wait_for(what, GUARD, || (!pid_alive(pid)).then_some(()));
}

/// The agent forges the record of its processes the way `mode` says (see [`AGENT`]), naming a
/// root process that is not the job's; `luzia kill` must leave that process alone and stop the
/// real agent.
fn forged_identity(mode: &str) {
    if !root_or_skip("the agent runs as a project's user, which needs root (useradd)") {
        return;
    }
    let w = World::new();
    let mut bystander = bystander();
    let (id, agent) = w.attack(&format!("{mode} {}", bystander.id()));
    let (code, out, err) = w.kill(&id);
    assert!(
        bystander.child().try_wait().unwrap().is_none(),
        "{mode}: luzia kill signalled a process that is not the job's\n{out}{err}"
    );
    wait_gone(agent, &format!("{mode}: the real agent to be stopped"));
    // The agent renamed its log away, so the supervisor's exit line went with it: luzia
    // says so (exit 1), and the job reads as killed all the same.
    assert!(
        code == Some(0) || err.contains("it reads as killed"),
        "{mode}: {code:?} {out}{err}"
    );
    assert_eq!(w.job(&id)["status"], "killed", "{mode}");
    bystander.kill_and_reap();
}

#[test]
fn a_log_renamed_to_process_json_names_no_process() {
    forged_identity("process.json");
}

#[test]
fn a_log_renamed_to_pid_names_no_process() {
    forged_identity("pid");
}

#[test]
fn a_log_renamed_to_meta_json_names_no_process() {
    forged_identity("meta.json");
}

/// Not an attack on the old files, but on what stops them: luzia's private directory moved
/// aside within the job directory and replaced by one of the agent's.
#[test]
fn a_private_directory_moved_aside_and_replaced_names_no_process() {
    forged_identity("hidden");
}

#[test]
fn kill_stops_the_agent_of_a_supervisor_stopped_with_sigstop() {
    if !root_or_skip("the agent runs as a project's user, which needs root (useradd)") {
        return;
    }
    let w = World::new();
    let (id, agent) = w.attack("idle -");
    // Written by the supervisor before the directory was given to the agent's user.
    let supervisor = read_pid(&w.dir(&id).join("pid"));
    signal(supervisor, rustix::process::Signal::STOP);
    wait_for("the supervisor to stop", GUARD, || {
        proc_stat(supervisor)
            .is_some_and(|(state, _, _)| state == b'T')
            .then_some(())
    });
    let (code, out, err) = w.kill(&id);
    assert_eq!(code, Some(0), "{out}{err}");
    wait_gone(agent, "the agent to be stopped");
    let log = fs::read_to_string(w.dir(&id).join("output.log")).unwrap();
    let last = log.lines().rfind(|l| !l.is_empty());
    assert!(
        matches!(last, Some("exit:-15" | "exit:-9")),
        "no exit line: {log:?}"
    );
}

#[test]
fn a_planted_link_for_output_log_takes_no_byte_outside_the_job() {
    planted_output_log("link");
}

#[test]
fn a_planted_fifo_for_output_log_blocks_no_command() {
    planted_output_log("fifo");
}

/// With its supervisor killed, what the agent left running plants output.log (`mode`: a link to
/// a root-only file, or a FIFO); `luzia kill` stops it, writes nothing through the plant, and
/// does not block on it.
fn planted_output_log(mode: &str) {
    if !root_or_skip("the agent runs as a project's user, which needs root (useradd)") {
        return;
    }
    let w = World::new();
    let victim = w.victim();
    let (id, agent) = w.attack(&format!("{mode} {}", victim.display()));
    let dir = w.dir(&id);
    let leftover = read_pid(&dir.join("leftover.pid"));
    // The supervisor is killed outright: its agent dies with it, what the agent left
    // running lives on and plants output.log.
    signal(read_pid(&dir.join("pid")), rustix::process::Signal::KILL);
    wait_gone(agent, "the agent to die with its supervisor");
    wait_for(&format!("{mode}: output.log planted"), GUARD, || {
        dir.join("planted").exists().then_some(())
    });
    let (code, out, err) = w.kill(&id);
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "root's own\n",
        "{mode}: luzia kill wrote through the planted output.log\n{out}{err}"
    );
    wait_gone(
        leftover,
        &format!("{mode}: what the agent left to be stopped"),
    );
    // The stop is made; only the exit line could not be written, and luzia says why.
    assert_eq!(code, Some(1), "{mode}: {out}{err}");
    let why = if mode == "link" {
        "is a symbolic link"
    } else {
        "is a FIFO"
    };
    assert!(
        err.contains(why) && err.contains("output.log"),
        "{mode}: {err}"
    );
    let md = fs::symlink_metadata(dir.join("output.log")).unwrap();
    assert!(
        !md.is_file(),
        "{mode}: the planted entry was left as it was"
    );
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    let p = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(p, sig).unwrap();
}
