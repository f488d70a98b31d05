//! Faults, with real processes and a real small disk: pids reused by other processes, pid 1 in a
//! pid file, a supervisor killed with SIGKILL, an agent that leaves a writer behind, a disk that
//! fills up under the agent, and `luzia run` on a full disk. Each test says what went wrong
//! before luzia guarded against it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long anything may take before the test calls it hung.
const GUARD: Duration = Duration::from_secs(30);

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    common::wait_for(what, GUARD, probe)
}

/// A project, a jobs root (optionally on a small tmpfs of its own), a notifications log and a
/// queue outside it, and a config naming them with `agent` as the agent command. Dropping it
/// kills whatever it started and unmounts its disk.
struct World {
    base: PathBuf,
    jobs: PathBuf,
    config: PathBuf,
    xdg: PathBuf,
    mounted: bool,
    _tmp: TempDir,
}

impl World {
    fn new(agent: &[&str]) -> World {
        World::make(agent, None).expect("a world without a disk of its own")
    }

    /// A world whose jobs root is a tmpfs of `size` (`mount -o size=`); `None`, with the reason
    /// printed, where mounting is not permitted.
    fn on_small_disk(agent: &[&str], size: &str) -> Option<World> {
        World::make(agent, Some(size))
    }

    fn make(agent: &[&str], disk: Option<&str>) -> Option<World> {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-faults-")
            .tempdir()
            .unwrap();
        let base = tmp.path().to_owned();
        let jobs = base.join("jobs");
        for d in [&jobs, &base.join("proj"), &base.join("xdg")] {
            fs::create_dir(d).unwrap();
        }
        let mut w = World {
            config: base.join("config.toml"),
            xdg: base.join("xdg"),
            jobs,
            base,
            mounted: false,
            _tmp: tmp,
        };
        if let Some(size) = disk {
            let out = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(&w.jobs)
                .output();
            match out {
                Ok(o) if o.status.success() => w.mounted = true,
                other => {
                    common::skip(&format!(
                        "cannot mount a tmpfs on {} (this test needs root): {other:?}",
                        w.jobs.display()
                    ));
                    return None;
                }
            }
        }
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let argv: Vec<String> = agent.iter().map(|a| q(a)).collect();
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [{}]\n\
             max_concurrent = 4\nprompt_template = \"{{task}}\"\n\n[projects.p]\npath = {}\n",
            q(w.jobs.to_str().unwrap()),
            q(w.base.join("notifications.log").to_str().unwrap()),
            q(w.base.join("queue").to_str().unwrap()),
            argv.join(", "),
            q(w.base.join("proj").to_str().unwrap()),
        );
        fs::write(&w.config, text).unwrap();
        Some(w)
    }

    fn luzia(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", &self.xdg)
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn start(&self, task: &str) -> String {
        let out = self.luzia(&["run", "p", "--", task]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        stdout_of(&out).trim().to_owned()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    fn job(&self, id: &str) -> Value {
        let out = self.luzia(&["jobs", id, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn meta(&self, id: &str) -> Value {
        serde_json::from_slice(&fs::read(self.dir(id).join("meta.json")).unwrap()).unwrap()
    }

    fn log(&self, id: &str) -> String {
        String::from_utf8_lossy(&fs::read(self.dir(id).join("output.log")).unwrap_or_default())
            .into_owned()
    }

    /// The supervisor's pid, once its `pid` file is complete.
    fn supervisor(&self, id: &str) -> u32 {
        let path = self.dir(id).join("pid");
        wait_for(&format!("{}", path.display()), || {
            fs::read_to_string(&path)
                .ok()?
                .strip_suffix('\n')?
                .parse()
                .ok()
        })
    }

    /// The agent's pid: the supervisor's child, once it runs `program`.
    fn agent(&self, id: &str, program: &str) -> u32 {
        let sup = self.supervisor(id);
        wait_for(&format!("the agent of {id}"), || {
            children_of(sup)
                .into_iter()
                .find(|&c| proc_comm(c).as_deref() == Some(program))
        })
    }

    /// Waits until the supervisor has recorded its agent in `.luzia/process.json`.
    fn wait_agent_recorded(&self, id: &str) {
        let record = self.dir(id).join(".luzia/process.json");
        wait_for("the agent in process.json", || {
            let v: Value = serde_json::from_slice(&fs::read(&record).ok()?).ok()?;
            v["agent"]["pid"].as_u64()
        });
    }

    /// Waits for the exit line and for the supervisor to be gone.
    fn wait_done(&self, id: &str) -> Value {
        let sup = self.supervisor(id);
        let job = wait_for(&format!("{id} to finish"), || {
            let j = self.job(id);
            (!j["exit_code"].is_null()).then_some(j)
        });
        wait_for("the supervisor to exit", || (!pid_alive(sup)).then_some(()));
        job
    }
}

impl Drop for World {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.base);
        if self.mounted {
            let _ = Command::new("umount").arg("-l").arg(&self.jobs).status();
        }
    }
}

/// The last line of a log that is not empty.
fn last_line(log: &str) -> &str {
    log.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// Job directories (and half-made ones) under a root.
fn entries(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------------
// Process identity (before: `kill(pid, 0)` was all there was to liveness, and `luzia kill`
// signalled whatever held the pid)
// ---------------------------------------------------------------------------------------------

#[test]
fn a_pid_file_naming_pid_1_is_not_a_running_job() {
    let sb = Sandbox::new();
    let started = (chrono::Utc::now() - chrono::Duration::days(3)).to_rfc3339();
    sb.write(
        "j1",
        "meta.json",
        json!({"id": "j1", "project": "p", "task": "t", "started": started}).to_string(),
    );
    sb.write("j1", "output.log", "working\n");
    sb.write("j1", "pid", "1\n");
    // Before: `running`, for days.
    assert_eq!(sb.jobs_json(&[])[0]["status"], "died");
    // Checked only now that the job reads as dead: before, kill sent SIGTERM to pid 1's group.
    let out = sb.luzia().args(["kill", "j1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("pid 1 now belongs to another process, which was left alone"),
        "{}",
        stderr_of(&out)
    );
    assert!(!sb.job_dir("j1").join("stop.json").exists());
}

#[test]
fn a_reused_pid_is_neither_alive_for_the_job_nor_killed_by_it() {
    let sb = Sandbox::new();
    // The bystander has the pid the job's agent once had; it started after the job.
    let bystander = sleeper();
    let started = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
    let meta = json!({"id": "orch", "project": "p", "task": "t", "started": started,
        "pid": bystander.id().to_string()});
    sb.write("orch", "meta.json", meta.to_string());
    sb.write("orch", "output.log", "working\n");
    // A job of luzia's whose recorded start is not the bystander's.
    sb.write(
        "mine",
        "meta.json",
        json!({"id": "mine", "project": "p", "task": "t", "argv": ["x"]}).to_string(),
    );
    sb.write("mine", "pid", format!("{}\n", bystander.id()));
    record_process(&sb.job_dir("mine"), bystander.id());
    let record = sb.job_dir("mine").join("process.json");
    let mut v: Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    v["supervisor"]["start_ticks"] = json!(v["supervisor"]["start_ticks"].as_u64().unwrap() - 1);
    fs::write(&record, v.to_string()).unwrap();
    let jobs = by_id(&sb.jobs_json(&[]));
    // Before: both `running`, and `luzia kill` stopped the bystander.
    assert_eq!(jobs["orch"]["status"], "died", "{}", jobs["orch"]);
    assert_eq!(jobs["mine"]["status"], "died", "{}", jobs["mine"]);
    for id in ["orch", "mine"] {
        let out = sb.luzia().args(["kill", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{id}");
        assert!(
            stderr_of(&out).contains("now belongs to another process"),
            "{id}: {}",
            stderr_of(&out)
        );
    }
    assert!(pid_alive(bystander.id()), "the bystander was left alone");
}

// ---------------------------------------------------------------------------------------------
// The agent dies with its supervisor (before: a SIGKILLed supervisor left the agent running
// while the job read `died`, and `luzia kill` refused: "its process is gone")
// ---------------------------------------------------------------------------------------------

#[test]
fn the_agent_dies_with_its_supervisor_and_kill_stops_what_it_left() {
    // The agent leaves a background child in its group, then becomes `sleep 301` itself.
    let w = World::new(&[
        "sh",
        "-c",
        r#"sleep 300 & echo $! > "$LUZIA_JOB_DIR/bg"; exec sleep 301"#,
    ]);
    let id = w.start("hold on");
    let sup = w.supervisor(&id);
    let agent = w.agent(&id, "sleep");
    w.wait_agent_recorded(&id);
    let bg_file = w.dir(&id).join("bg");
    let bg: u32 = wait_for("the background child", || {
        fs::read_to_string(&bg_file).ok()?.trim().parse().ok()
    });
    kill_hard(sup);
    wait_for("the agent to die with its supervisor", || {
        (!pid_alive(agent)).then_some(())
    });
    let job = wait_for("the job to read as died", || {
        let j = w.job(&id);
        (j["status"] == "died").then_some(j)
    });
    assert_eq!(job["exit_code"], Value::Null);
    assert!(pid_alive(bg), "what the agent started lives on");
    let out = w.luzia(&["kill", &id, "--grace", "5s"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("exit:-15"), "{}", stdout_of(&out));
    assert!(!pid_alive(bg), "kill reached it");
    let after = w.job(&id);
    assert_eq!(after["status"], "killed", "{after}");
    assert_eq!(after["exit_code"], -15);
    assert_eq!(w.meta(&id)["exit_code"], -15, "meta.json says so too");
    assert_eq!(last_line(&w.log(&id)), "exit:-15");
}

#[test]
fn a_supervisor_that_dies_while_stopping_its_agent_is_taken_over_by_kill() {
    // A leftover that ignores SIGTERM, and an agent that notes the SIGTERM passed on to it.
    let w = World::new(&[
        "sh",
        "-c",
        r#"sh -c 'trap "" TERM; while :; do sleep 0.1; done' &
echo $! > "$LUZIA_JOB_DIR/bg"
trap ': > "$LUZIA_JOB_DIR/term"' TERM
while :; do sleep 0.1; done"#,
    ]);
    let id = w.start("hold on");
    let sup = w.supervisor(&id);
    w.wait_agent_recorded(&id);
    let bg: u32 = wait_for("the background child", || {
        fs::read_to_string(w.dir(&id).join("bg"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    let kill = std::thread::spawn({
        let (config, xdg) = (w.config.clone(), w.xdg.clone());
        let id = id.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_luzia"))
                .env_remove("LUZIA_JOBS_DIR")
                .env("XDG_CONFIG_HOME", xdg)
                .arg("--config")
                .arg(config)
                .args(["kill", &id, "--grace", "2s"])
                .output()
                .unwrap()
        }
    });
    wait_for("the stop to reach the agent", || {
        w.dir(&id).join("term").exists().then_some(())
    });
    kill_hard(sup);
    let out = kill.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("exit:-9"), "{}", stdout_of(&out));
    assert!(
        !pid_alive(bg),
        "the leftover that ignored SIGTERM was killed"
    );
    let job = w.job(&id);
    assert_eq!(job["status"], "killed", "{job}");
    assert_eq!(w.meta(&id)["exit_code"], -9);
    assert_eq!(last_line(&w.log(&id)), "exit:-9");
}

// ---------------------------------------------------------------------------------------------
// The exit line is the last line (before: a background child writing after it turned
// `completed` into `died`)
// ---------------------------------------------------------------------------------------------

#[test]
fn a_background_writer_finishes_before_the_exit_line() {
    let w = World::new(&["sh", "-c", "(sleep 0.5; echo late) & echo early; exit 0"]);
    let id = w.start("leave a writer behind");
    w.wait_done(&id);
    wait_for("the late line", || {
        w.log(&id).contains("late").then_some(())
    });
    let log = w.log(&id);
    assert_eq!(last_line(&log), "exit:0", "{log:?}");
    assert!(log.find("late") < log.find("exit:0"), "{log:?}");
    assert_eq!(w.job(&id)["status"], "completed");
    assert_eq!(w.meta(&id)["exit_code"], 0);
}

#[test]
fn a_leftover_that_never_ends_is_stopped_before_the_exit_line() {
    let w = World::new(&[
        "sh",
        "-c",
        r#"sh -c 'while :; do echo tick; sleep 0.2; done' & echo $! > "$LUZIA_JOB_DIR/bg"; exit 0"#,
    ]);
    let id = w.start("leave a server running");
    let job = w.wait_done(&id);
    assert_eq!(job["status"], "completed", "{job}");
    let bg: u32 = fs::read_to_string(w.dir(&id).join("bg"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!pid_alive(bg), "stopped");
    let log = w.log(&id);
    assert!(
        log.contains(
            "left processes running in its group after it exited; they were stopped with SIGTERM"
        ),
        "{log:?}"
    );
    assert_eq!(last_line(&log), "exit:0", "{log:?}");
    // Nothing writes after it.
    let len = log.len();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(w.log(&id).len(), len);
}

// ---------------------------------------------------------------------------------------------
// A full disk (before: the supervisor could not write the exit line, so a job that succeeded
// read `died` for ever and meta.json had no exit_code; `luzia run` left an empty job directory
// that listed as `unknown` for ever)
// ---------------------------------------------------------------------------------------------

#[test]
fn an_agent_that_fills_the_disk_still_gets_its_exit_line_and_exit_code() {
    // `yes` fills output.log to the last byte; the agent then ends well.
    let agent = [
        "sh",
        "-c",
        "echo start; yes filling the disk; echo done; exit 0",
    ];
    let Some(w) = World::on_small_disk(&agent, "1m") else {
        return;
    };
    let id = w.start("fill the disk");
    let job = w.wait_done(&id);
    assert_eq!(job["status"], "completed", "{job}");
    let log = w.log(&id);
    assert!(log.len() > 512 * 1024, "the disk was filled: {}", log.len());
    assert_eq!(last_line(&log), "exit:0");
    assert_eq!(w.meta(&id)["exit_code"], 0);
    assert!(w.meta(&id)["finished"].is_string());
    assert!(
        !w.dir(&id).join(".reserve").exists(),
        "the reserve is used up"
    );
}

#[test]
fn run_on_a_full_disk_says_what_failed_and_leaves_no_job() {
    let Some(w) = World::on_small_disk(&["true"], "256k") else {
        return;
    };
    let mut filler = fs::File::create(w.jobs.join("filler")).unwrap();
    let block = vec![b'x'; 4096];
    while filler.write_all(&block).is_ok() {}
    drop(filler);
    let before = entries(&w.jobs);
    let out = w.luzia(&["run", "p", "--", "anything"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    // Before: an empty job directory, listed as `unknown` for ever.
    assert_eq!(entries(&w.jobs), before, "no job, and no half-made one");
    let err = stderr_of(&out);
    assert!(
        err.contains("cannot write prompt.txt of a new job in")
            && err.contains("No space left on device")
            && err.contains(w.jobs.to_str().unwrap())
            && err.contains("nothing was left behind"),
        "{err}"
    );
    let listed = w.luzia(&["jobs", "--json"]);
    assert_eq!(stdout_of(&listed).trim(), "[]");
}
