//! Shared helpers for the CLI integration tests: an isolated sandbox (jobs root + empty config
//! home), job directories written by hand, real child processes that are always killed and
//! reaped (also when a test panics), and a `luzia logs -f` driver that reads its output live.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// How long any one luzia process may take before the test calls it hung. Generous on purpose:
/// the machine is shared; this only guards against a test that never ends.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// The sample job directories shipped with the crate.
pub fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/sample-jobs")
}

/// A temporary directory holding `jobs/` (the jobs root) and `xdg/` (an empty config home), so
/// neither the host's config nor its jobs can leak into a test.
pub struct Sandbox {
    pub tmp: TempDir,
    pub root: PathBuf,
    pub xdg: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("jobs");
        let xdg = tmp.path().join("xdg");
        fs::create_dir(&root).unwrap();
        fs::create_dir(&xdg).unwrap();
        Sandbox { tmp, root, xdg }
    }

    /// A sandbox whose jobs root is a copy of assets/sample-jobs (symlinks kept as symlinks).
    pub fn with_samples() -> Sandbox {
        let sb = Sandbox::new();
        copy_tree(&samples_dir(), &sb.root);
        sb
    }

    /// `luzia` with the environment isolated and `--jobs-dir` pointing at this sandbox.
    pub fn luzia(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").expect("the luzia binary");
        isolate_assert(&mut cmd, &self.xdg);
        cmd.arg("--jobs-dir").arg(&self.root);
        cmd
    }

    /// The same, as a std `Command` for processes the test drives itself.
    pub fn luzia_std(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        cmd.env_remove("LUZIA_JOBS_DIR")
            .env_remove("LUZIA_CONFIG")
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .arg("--jobs-dir")
            .arg(&self.root);
        cmd
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// Writes `name` inside job `id` (creating the job directory).
    pub fn write(&self, id: &str, name: &str, body: impl AsRef<[u8]>) {
        let dir = self.job_dir(id);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), body).unwrap();
    }

    /// Writes `pid` into job `id` with its start time beside it in `process.json`, as luzia's
    /// supervisor records itself: a live process of the test stands for a job that started
    /// long before it did (without the record, a process younger than its job is not the job's).
    pub fn write_pid(&self, id: &str, pid: u32) {
        self.write(id, "pid", format!("{pid}\n"));
        record_process(&self.job_dir(id), pid);
    }

    /// Runs `luzia jobs --json` and returns the array, checking it succeeded.
    pub fn jobs_json(&self, extra: &[&str]) -> Vec<Value> {
        let out = self
            .luzia()
            .arg("jobs")
            .arg("--json")
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "luzia jobs --json failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        match serde_json::from_slice(&out.stdout) {
            Ok(Value::Array(items)) => items,
            other => panic!(
                "expected a JSON array, got {other:?} from {}",
                String::from_utf8_lossy(&out.stdout)
            ),
        }
    }
}

/// The environment every test runs luzia with: no host jobs root, no host config, no colours,
/// and a fixed time zone so naive timestamps read the same everywhere.
pub fn isolate_assert(cmd: &mut assert_cmd::Command, xdg: &Path) {
    cmd.env_remove("LUZIA_JOBS_DIR")
        .env_remove("LUZIA_CONFIG")
        .env("XDG_CONFIG_HOME", xdg)
        .env("NO_COLOR", "1")
        .env("TZ", "UTC")
        .timeout(HANG_GUARD);
}

/// Copies a directory tree, recreating symbolic links as links (never following them).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = fs::symlink_metadata(&src).unwrap().file_type();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The elements of a `jobs --json` array by id (each id must appear once).
pub fn by_id(items: &[Value]) -> BTreeMap<String, Value> {
    let mut map = BTreeMap::new();
    for item in items {
        let id = item["id"].as_str().expect("id is a string").to_owned();
        assert!(
            map.insert(id.clone(), item.clone()).is_none(),
            "{id} listed twice"
        );
    }
    map
}

pub fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A child process that is killed and reaped when dropped, also when the test panics.
pub struct ChildGuard {
    child: Child,
}

impl ChildGuard {
    pub fn new(child: Child) -> ChildGuard {
        ChildGuard { child }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Kills the process and reaps it, so its pid is gone for good.
    pub fn kill_and_reap(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to end by itself; past `limit` it is killed and the test fails.
    pub fn wait_within(&mut self, limit: Duration, what: &str) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() >= deadline {
                self.kill_and_reap();
                panic!("{what} did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// A live process whose pid a job can claim: `sleep 60`.
pub fn sleeper() -> ChildGuard {
    ChildGuard::new(
        Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sleep"),
    )
}

/// The pid of a process that has exited and been reaped.
pub fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A shell script run with `sh -c`, its variables given through the environment (never
/// interpolated into the script).
pub fn shell(script: &str, vars: &[(&str, &Path)]) -> ChildGuard {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    ChildGuard::new(cmd.spawn().expect("spawn sh"))
}

/// `luzia logs ID -f ...` running as a child, its stdout read line by line on a thread and its
/// stderr collected on another.
pub struct Follow {
    child: ChildGuard,
    lines_rx: mpsc::Receiver<String>,
    stderr: Option<JoinHandle<()>>,
    err_text: Arc<Mutex<String>>,
    /// Every stdout line received so far, in order, without the `\n`.
    pub lines: Vec<String>,
}

impl Follow {
    pub fn spawn(sb: &Sandbox, id: &str, extra: &[&str]) -> Follow {
        Follow::spawn_with_env(sb, id, extra, &[])
    }

    /// The same, with more environment variables set.
    pub fn spawn_with_env(sb: &Sandbox, id: &str, extra: &[&str], env: &[(&str, &str)]) -> Follow {
        let mut child = sb
            .luzia_std()
            .envs(env.iter().copied())
            .arg("logs")
            .arg(id)
            .arg("-f")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn luzia logs -f");
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, lines_rx) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        let err_text = Arc::new(Mutex::new(String::new()));
        let shared = Arc::clone(&err_text);
        let stderr = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => shared
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        });
        Follow {
            child: ChildGuard::new(child),
            lines_rx,
            stderr: Some(stderr),
            err_text,
            lines: Vec::new(),
        }
    }

    /// Reads stdout until a line equal to `want` arrives (the hang guard fails the test).
    pub fn wait_for_line(&mut self, want: &str) {
        let deadline = Instant::now() + HANG_GUARD;
        while !self.lines.iter().any(|l| l == want) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines_rx.recv_timeout(left) {
                Ok(line) => self.lines.push(line),
                Err(e) => panic!(
                    "waiting for line {want:?} ({e:?}); got so far: {:?}",
                    self.lines
                ),
            }
        }
    }

    /// Waits until stderr holds `needle` (the hang guard fails the test).
    pub fn wait_for_stderr(&mut self, needle: &str) {
        let deadline = Instant::now() + HANG_GUARD;
        while !self.err_text.lock().unwrap().contains(needle) {
            if Instant::now() >= deadline {
                panic!(
                    "stderr never said {needle:?}: {:?}",
                    self.err_text.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for luzia to exit by itself, then returns its status, every stdout line, and its
    /// stderr.
    pub fn finish(mut self) -> (ExitStatus, Vec<String>, String) {
        let status = self.child.wait_within(HANG_GUARD, "luzia logs -f");
        // The process is gone, so the reader thread sees EOF and drops its sender.
        loop {
            match self.lines_rx.recv_timeout(HANG_GUARD) {
                Ok(line) => self.lines.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("stdout never closed"),
            }
        }
        self.stderr.take().unwrap().join().unwrap();
        let stderr = self.err_text.lock().unwrap().clone();
        (status, std::mem::take(&mut self.lines), stderr)
    }
}

/// Sends each line of `stdout` (without its `\n`) until it ends or nobody listens.
pub fn read_lines(stdout: ChildStdout, tx: mpsc::Sender<String>) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                    return;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Processes seen through /proc: detached supervisors (their own session, reparented away from
// the test) and the agents they start are not our children, so no `Child` can reap them; these
// find them by what they mention and kill them.

/// `(state, ppid, pgrp)` of a process from `/proc/PID/stat`; `None` when there is none.
pub fn proc_stat(pid: u32) -> Option<(u8, u32, u32)> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ppid pgrp ...`: comm may hold spaces and parentheses.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// `process.json` naming `pid` (live) as the job's supervisor, with its start time (field 22 of
/// `/proc/PID/stat`) and this boot's id.
pub fn record_process(dir: &Path, pid: u32) {
    let stat = fs::read(format!("/proc/{pid}/stat")).expect("a live process");
    let close = stat.iter().rposition(|&b| b == b')').unwrap();
    let rest = std::str::from_utf8(&stat[close + 1..]).unwrap();
    let start: u64 = rest
        .split_whitespace()
        .nth(22 - 3)
        .unwrap()
        .parse()
        .unwrap();
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let record = serde_json::json!({"supervisor": {"pid": pid, "start_ticks": start,
        "boot_id": boot.trim()}});
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("process.json"), record.to_string()).unwrap();
}

/// The process's name (`/proc/PID/comm`), e.g. `sleep`.
pub fn proc_comm(pid: u32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

/// Exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(state, _, _)| state != b'Z' && state != b'X')
}

/// Every process id listed in /proc.
pub fn all_pids() -> Vec<u32> {
    fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The live children of `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&c| proc_stat(c).is_some_and(|(s, ppid, _)| ppid == pid && s != b'Z'))
        .collect()
}

/// Whether `bytes` holds `path` as a whole path or a path prefix: followed by the end, a NUL
/// (the separator of cmdline and environ) or `/`, so `/tmp/a` does not match `/tmp/ab`.
pub fn mentions(bytes: &[u8], path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let needle = path.as_os_str().as_bytes();
    if needle.is_empty() || bytes.len() < needle.len() {
        return false;
    }
    (0..=bytes.len() - needle.len()).any(|i| {
        bytes[i..].starts_with(needle)
            && matches!(bytes.get(i + needle.len()), None | Some(b'\0') | Some(b'/'))
    })
}

/// Whether process `pid` has `path` on its command line.
pub fn cmdline_mentions(pid: u32, path: &Path) -> bool {
    fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|b| mentions(&b, path))
}

/// Live processes (other than this one) whose command line or environment mentions `path`.
pub fn processes_mentioning(path: &Path) -> Vec<u32> {
    let me = std::process::id();
    all_pids()
        .into_iter()
        .filter(|&pid| pid != me && pid_alive(pid))
        .filter(|&pid| {
            ["cmdline", "environ"]
                .iter()
                .any(|f| fs::read(format!("/proc/{pid}/{f}")).is_ok_and(|b| mentions(&b, path)))
        })
        .collect()
}

/// SIGKILL to `pid`, and to its process group when it leads one.
pub fn kill_hard(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process, kill_process_group};
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if proc_stat(pid).is_some_and(|(_, _, pgrp)| pgrp == pid) {
        let _ = kill_process_group(p, Signal::KILL);
    }
    let _ = kill_process(p, Signal::KILL);
}

/// Kills every process that mentions `path` (supervisors name their job directory and config,
/// agents carry LUZIA_JOB_DIR), again and again until none is left: a supervisor being killed
/// may just have started another one from the queue.
pub fn kill_processes_mentioning(path: &Path) {
    let deadline = Instant::now() + HANG_GUARD;
    let mut quiet_rounds = 0;
    while quiet_rounds < 3 && Instant::now() < deadline {
        let found = processes_mentioning(path);
        if found.is_empty() {
            quiet_rounds += 1;
        } else {
            quiet_rounds = 0;
            found.into_iter().for_each(kill_hard);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Says loudly that a test cannot run here and why; where CI asks for every test to run
/// (`LUZIA_REQUIRE_ROOT=1`, set by `.ci/run`), fails instead of skipping.
#[allow(dead_code)]
pub fn skip(why: &str) {
    if std::env::var("LUZIA_REQUIRE_ROOT").is_ok_and(|v| v == "1") {
        panic!("LUZIA_REQUIRE_ROOT=1 but this test cannot run: {why}");
    }
    eprintln!("\n{0}\nSKIPPED: {why}\n{0}\n", "*".repeat(72));
}

/// Whether this process is root; when not, says why the test cannot run (see [`skip`]).
#[allow(dead_code)]
pub fn root_or_skip(why: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    skip(why);
    false
}

/// Whether `git` can be run; when not, says so loudly and the test skips, except where CI asks
/// for it (`LUZIA_REQUIRE_GIT=1`, set by `.ci/run`), which fails instead.
#[allow(dead_code)]
pub fn git_or_skip() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    let why = "git is not installed: the review tests need real repositories";
    if std::env::var("LUZIA_REQUIRE_GIT").is_ok_and(|v| v == "1") {
        panic!("LUZIA_REQUIRE_GIT=1 but this test cannot run: {why}");
    }
    eprintln!("\n{0}\nSKIPPED: {why}\n{0}\n", "*".repeat(72));
    false
}

/// The ids of the whole jobs under the jobs root `root`, sorted. A job still being made lives
/// in a hidden `.partial-ID` until it is renamed into place, and is no job yet: a test that took
/// it for one would wait on a directory that is gone a moment later.
#[allow(dead_code)]
pub fn job_ids(root: &Path) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| luzia::jobs::model::id::is_valid(name))
        .collect();
    ids.sort();
    ids
}

/// Polls `probe` every 25 ms until it gives a value, and returns it; a test that waits longer
/// than `within` for `what` fails (a hang guard, never a timing assertion).
#[allow(dead_code)]
pub fn wait_for<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "hang guard: waited {within:?} for {what}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Runs `git -C dir ARGS` as a fixed author and committer (so commits need no user config) and
/// returns its standard output, trimmed; a failure fails the test with git's message.
#[allow(dead_code)]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "op")
        .env("GIT_AUTHOR_EMAIL", "op@example.com")
        .env("GIT_COMMITTER_NAME", "op")
        .env("GIT_COMMITTER_EMAIL", "op@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

/// The variables through which the environment running the tests could reach the luzia under
/// test: each test's command removes them and says what it means instead.
#[allow(dead_code)]
pub const LUZIA_VARS: [&str; 6] = [
    "LUZIA_JOBS_DIR",
    "LUZIA_CONFIG",
    "LUZIA_NOTIFICATIONS_LOG",
    "LUZIA_QUEUE_DIR",
    "LUZIA_JOB_DIR",
    "LUZIA_JOB_ID",
];

pub mod acp;
pub mod agents;
pub mod bridge;
pub mod claude;
pub mod fake_chat;
pub mod fake_responses;
pub mod gemini;
pub mod http;
pub mod limited_claude;
pub mod sshd;
pub mod telegram;
pub mod user;
