//! A harness for driving the built `luzia tui` in a real terminal: a private tmux server per
//! test, a sandbox holding the jobs root and empty XDG homes, and real child processes that are
//! always killed (also when a test panics).
//!
//! The cockpit runs inside a small shell wrapper in the tmux pane, so the test can see the
//! terminal after the cockpit has left: the wrapper records `stty -a` before and after, the
//! cockpit's pid and its exit code, and then keeps the pane open.
//!
//! Nothing here sleeps and hopes: every wait polls the screen (or a file) until a condition
//! holds, with a generous timeout that fails with the last screen printed.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use tempfile::TempDir;

/// How long a wait may take before the test fails. Generous: the machine may be loaded, and
/// this only guards against waiting forever; no test asserts anything about speed.
pub const TIMEOUT: Duration = Duration::from_secs(15);
/// How often the screen is captured while waiting.
pub const POLL: Duration = Duration::from_millis(50);
/// After an ESC, so the next key is not read as Alt+key.
pub const ESC_PAUSE: Duration = Duration::from_millis(100);

pub const BIN: &str = env!("CARGO_BIN_EXE_luzia");

/// Whether tmux can be used. Without it the tests are skipped loudly, unless
/// `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux is a failure.
pub fn tmux_available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("LUZIA_REQUIRE_TMUX").is_ok_and(|v| v == "1") {
        panic!("LUZIA_REQUIRE_TMUX=1 but tmux was not found: install tmux");
    }
    // Straight to the stderr handle, not eprintln!: the test harness captures the macros'
    // output of passing tests, and this must be seen.
    let _ = std::io::stderr().write_all(
        b"\n************************************************************************\n\
          SKIPPED: tmux not found; install tmux to run the end-to-end tests\n\
          ************************************************************************\n\n",
    );
    false
}

/// Returns from the test when tmux is missing (see [`tmux_available`]).
macro_rules! require_tmux {
    () => {
        if !$crate::tmux::tmux_available() {
            return;
        }
    };
}

/// Single-quotes `s` for sh.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// Now, as RFC 3339 in UTC, as a dispatcher writes `started`.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Waits until `path` exists and holds `want` (trimmed): what a job's script wrote where the
/// test reads it. Fails with what it holds after 30 s (a loaded machine; a passing run never
/// waits that long).
pub fn wait_file(path: &Path, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = fs::read_to_string(path).unwrap_or_default();
        if got.trim() == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {got:?}, not {want:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ----------------------------------------------------------------------------------------------
// The sandbox: files and processes
// ----------------------------------------------------------------------------------------------

/// A temporary directory with the jobs root, empty XDG homes, a HOME, and `ctl/` for the
/// wrapper's own files (kept outside the jobs root). Child processes started through it are
/// killed, with their whole process group, when it is dropped.
pub struct Sandbox {
    pub tmp: TempDir,
    pub root: PathBuf,
    pub state: PathBuf,
    pub config: PathBuf,
    pub home: PathBuf,
    pub ctl: PathBuf,
    children: RefCell<Vec<Child>>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-e2e-")
            .tempdir()
            .expect("tempdir");
        let sub = |name: &str| {
            let p = tmp.path().join(name);
            fs::create_dir(&p).unwrap();
            p
        };
        let root = sub("jobs");
        let state = sub("state");
        let config = sub("config");
        let home = sub("home");
        let ctl = sub("ctl");
        Sandbox {
            tmp,
            root,
            state,
            config,
            home,
            ctl,
            children: RefCell::new(Vec::new()),
        }
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// Writes `name` in job `id` atomically (temporary name, then rename), creating the job.
    pub fn write(&self, id: &str, name: &str, body: impl AsRef<[u8]>) {
        let dir = self.job_dir(id);
        fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(format!(".{name}.tmp"));
        fs::write(&tmp, body).unwrap();
        fs::rename(&tmp, dir.join(name)).unwrap();
    }

    /// Appends to `name` in job `id`, as a supervisor appends to output.log.
    pub fn append(&self, id: &str, name: &str, body: impl AsRef<[u8]>) {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.job_dir(id).join(name))
            .unwrap();
        f.write_all(body.as_ref()).unwrap();
    }

    /// meta.json with a project and a task; `started` when given.
    pub fn write_meta(&self, id: &str, project: &str, task: &str, started: Option<&str>) {
        let mut meta = serde_json::json!({
            "id": id, "project": project, "task": task, "type": "agent", "user": project,
        });
        if let Some(s) = started {
            meta["started"] = s.into();
        }
        self.write(id, "meta.json", meta.to_string());
    }

    /// A finished job: meta.json with fixed start and finish, and output ending in `exit:code`.
    pub fn finished_job(&self, id: &str, project: &str, task: &str, day: u32, code: i32) {
        let meta = serde_json::json!({
            "id": id, "project": project, "task": task,
            "started": format!("2026-01-{day:02}T10:00:00Z"),
            "finished": format!("2026-01-{day:02}T10:05:00Z"),
        });
        self.write(id, "meta.json", meta.to_string());
        self.write(
            id,
            "output.log",
            format!("{task}: working\n{task}: done\n\nexit:{code}\n"),
        );
    }

    /// A running job: meta.json (no `started` unless given, so nothing on its row moves) and
    /// the pid of a live `sleep` child.
    pub fn running_job(&self, id: &str, project: &str, task: &str, started: Option<&str>) -> u32 {
        let pid = self.spawn_sleep();
        self.write_meta(id, project, task, started);
        self.write(id, "pid", format!("{pid}\n"));
        pid
    }

    /// Starts `sleep 1000` in its own process group; it is killed when the sandbox drops.
    pub fn spawn_sleep(&self) -> u32 {
        let mut cmd = Command::new("sleep");
        cmd.arg("1000");
        self.spawn(cmd)
    }

    /// Runs `script` with `sh -c` in `dir`, in its own process group (so its `sleep`s die with
    /// it); killed when the sandbox drops.
    pub fn spawn_script(&self, dir: &Path, script: &str) -> u32 {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script).current_dir(dir);
        self.spawn(cmd)
    }

    fn spawn(&self, mut cmd: Command) -> u32 {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = cmd.spawn().expect("spawn a helper process");
        let pid = child.id();
        self.children.borrow_mut().push(child);
        pid
    }

    /// Kills one helper started by this sandbox (and its process group) and reaps it.
    pub fn kill_child(&self, pid: u32) {
        let mut children = self.children.borrow_mut();
        if let Some(i) = children.iter().position(|c| c.id() == pid) {
            let mut child = children.remove(i);
            kill_group(pid);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Touches a control file in `ctl/` (for scripts that wait on gates).
    pub fn touch_ctl(&self, name: &str) {
        fs::write(self.ctl.join(name), b"").unwrap();
    }

    /// Copies `from` into the jobs root: files, directories, and symlinks as symlinks.
    pub fn copy_into_root(&self, from: &Path) {
        crate::common::copy_tree(from, &self.root);
    }

    /// Runs `luzia --config CONFIG --jobs-dir ROOT ARGS` in the sandbox's clean environment and
    /// returns its standard output; a failure fails the test with luzia's message.
    pub fn luzia(&self, config: &Path, args: &[&str]) -> String {
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("LANG", "C.UTF-8")
            .arg("--config")
            .arg(config)
            .arg("--jobs-dir")
            .arg(&self.root)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "luzia {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Writes a config file in the sandbox and returns its path.
    pub fn config_file(&self, name: &str, body: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        fs::write(&p, body).unwrap();
        p
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for mut child in self.children.borrow_mut().drain(..) {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn kill_group(pid: u32) {
    if let Some(p) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(p, Signal::KILL);
    }
}

/// Whether `pid` names a live process (a zombie counts as gone).
pub fn process_alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may itself hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

pub fn send_signal(pid: u32, sig: Signal) {
    let p = Pid::from_raw(pid as i32).expect("a real pid");
    rustix::process::kill_process(p, sig).expect("send a signal to the cockpit");
}

// ----------------------------------------------------------------------------------------------
// A byte-exact snapshot of a directory tree
// ----------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
    Other(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub node: Node,
    pub mode: u32,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
}

/// Every path under `dir` (symlinks not followed) with its type, content or target, mode,
/// inode and modification/change times in nanoseconds.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
    let md = fs::symlink_metadata(dir).unwrap();
    out.insert(dir.strip_prefix(base).unwrap().to_owned(), entry(dir, &md));
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let md = fs::symlink_metadata(&path).unwrap();
        if md.is_dir() {
            walk(base, &path, out);
        } else {
            out.insert(
                path.strip_prefix(base).unwrap().to_owned(),
                entry(&path, &md),
            );
        }
    }
}

fn entry(path: &Path, md: &fs::Metadata) -> Entry {
    let ft = md.file_type();
    let node = if ft.is_symlink() {
        Node::Symlink(fs::read_link(path).unwrap())
    } else if ft.is_dir() {
        Node::Dir
    } else if ft.is_file() {
        Node::File(fs::read(path).unwrap())
    } else {
        Node::Other(md.mode())
    };
    Entry {
        node,
        mode: md.permissions().mode(),
        mtime_ns: md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128,
        ctime_ns: md.ctime() as i128 * 1_000_000_000 + md.ctime_nsec() as i128,
        ino: md.ino(),
    }
}

/// The paths that differ between two snapshots, described for a failure message.
pub fn snapshot_diff(a: &BTreeMap<PathBuf, Entry>, b: &BTreeMap<PathBuf, Entry>) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in a {
        match b.get(p) {
            None => out.push(format!("removed: {}", p.display())),
            Some(f) if f != e => out.push(format!(
                "changed: {} (before {:?}, after {:?})",
                p.display(),
                brief(e),
                brief(f)
            )),
            _ => {}
        }
    }
    for p in b.keys().filter(|p| !a.contains_key(*p)) {
        out.push(format!("added: {}", p.display()));
    }
    out
}

fn brief(e: &Entry) -> String {
    let node = match &e.node {
        Node::File(b) => format!("file of {} bytes", b.len()),
        other => format!("{other:?}"),
    };
    format!(
        "{node}, mode {:o}, mtime {}, ctime {}, ino {}",
        e.mode, e.mtime_ns, e.ctime_ns, e.ino
    )
}

// ----------------------------------------------------------------------------------------------
// The screen as text
// ----------------------------------------------------------------------------------------------

/// A bordered box on screen: the rows of its top and bottom borders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxRows {
    pub top: usize,
    pub bottom: usize,
}

/// One capture of the pane, as text (no escape codes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Screen {
    pub lines: Vec<String>,
}

impl Screen {
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.lines.iter().any(|l| l.contains(needle))
    }

    pub fn row(&self, i: usize) -> &str {
        self.lines.get(i).map_or("", String::as_str)
    }

    pub fn header(&self) -> &str {
        self.row(0)
    }

    /// The last row of the pane.
    pub fn footer(&self) -> &str {
        self.lines.last().map_or("", String::as_str)
    }

    /// Boxes whose left border is at column 0, top to bottom.
    pub fn boxes(&self) -> Vec<BoxRows> {
        let mut out = Vec::new();
        let mut top = None;
        for (i, l) in self.lines.iter().enumerate() {
            if l.starts_with('┌') {
                top = Some(i);
            } else if l.starts_with('└')
                && let Some(t) = top.take()
            {
                out.push(BoxRows { top: t, bottom: i });
            }
        }
        out
    }

    fn box_titled(&self, title: &str) -> Option<BoxRows> {
        let prefix = format!("┌ {title}");
        self.boxes()
            .into_iter()
            .find(|b| self.lines[b.top].starts_with(&prefix))
    }

    /// The jobs table (its title starts with "jobs").
    pub fn table_box(&self) -> Option<BoxRows> {
        self.box_titled("jobs")
    }

    /// The output pane: the second bordered box, its title starting with "output".
    pub fn output_box(&self) -> Option<BoxRows> {
        let boxes = self.boxes();
        let b = *boxes.get(1)?;
        self.lines[b.top].starts_with("┌ output").then_some(b)
    }

    pub fn output_title(&self) -> &str {
        self.output_box().map_or("", |b| self.row(b.top))
    }

    pub fn table_title(&self) -> &str {
        self.table_box().map_or("", |b| self.row(b.top))
    }

    /// The rows inside a box, without the side borders and trailing blanks.
    pub fn inner(&self, b: BoxRows) -> Vec<String> {
        self.lines[b.top + 1..b.bottom]
            .iter()
            .map(|l| {
                let chars: Vec<char> = l.chars().collect();
                let end = chars.len().saturating_sub(1).max(1);
                let inner: String = chars.get(1..end).unwrap_or(&[]).iter().collect();
                inner.trim_end().to_string()
            })
            .collect()
    }

    /// The lines shown in the output pane.
    pub fn output_lines(&self) -> Vec<String> {
        self.output_box().map_or(vec![], |b| self.inner(b))
    }

    /// The rows of the jobs table below its column header, blank rows left out.
    pub fn job_rows(&self) -> Vec<String> {
        let Some(b) = self.table_box() else {
            return vec![];
        };
        self.inner(b)
            .into_iter()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .collect()
    }

    /// The table row of job `id` (shown whole, or cut to its unique prefix where narrow).
    pub fn job_row(&self, id: &str) -> Option<String> {
        self.job_rows()
            .into_iter()
            .find(|r| r.split_whitespace().any(|w| shows_id(w, id)))
    }

    /// The job ids in the table, in order (the column after the status), whole: a narrow
    /// table's prefix is named by the one known id it starts.
    pub fn job_ids(&self, known: &[&str]) -> Vec<String> {
        self.job_rows()
            .iter()
            .filter_map(|r| {
                r.split_whitespace().find_map(|w| {
                    let mut ids = known.iter().filter(|id| shows_id(w, id));
                    match (ids.next(), ids.next()) {
                        (Some(id), None) => Some(id.to_string()),
                        _ => None,
                    }
                })
            })
            .collect()
    }
}

/// `word` is how the table shows `id`: whole, or a prefix at least as long as its time part
/// (a narrow table cuts ids to the shortest prefix no other listed job starts with).
pub fn shows_id(word: &str, id: &str) -> bool {
    let time = id.find('-').unwrap_or(id.len());
    word == id || (word.len() >= time && id.starts_with(word))
}

// ----------------------------------------------------------------------------------------------
// The cockpit in a private tmux server
// ----------------------------------------------------------------------------------------------

/// How to start the cockpit.
#[derive(Clone, Debug)]
pub struct Opts {
    pub width: u16,
    pub height: u16,
    /// Arguments after `tui`.
    pub args: Vec<String>,
    /// Arguments before the subcommand (e.g. `--config FILE`).
    pub global_args: Vec<String>,
    /// Extra environment for the cockpit.
    pub env: Vec<(String, String)>,
    pub term: String,
    /// Leave out `--jobs-dir` (for `--demo`, which brings its own).
    pub no_jobs_dir: bool,
    /// The subcommand run in the pane (`tui`, or e.g. `status` for `status --watch`).
    pub command: String,
    /// `ulimit -n` (soft and hard) for the cockpit.
    pub open_files: Option<u32>,
    /// The directory the cockpit is started in (default: the sandbox's `ctl/`).
    pub dir: Option<PathBuf>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            width: 160,
            height: 45,
            args: vec![],
            global_args: vec![],
            env: vec![],
            term: "xterm-256color".into(),
            no_jobs_dir: false,
            command: "tui".into(),
            open_files: None,
            dir: None,
        }
    }
}

impl Opts {
    pub fn size(mut self, width: u16, height: u16) -> Opts {
        self.width = width;
        self.height = height;
        self
    }

    pub fn arg(mut self, a: impl Into<String>) -> Opts {
        self.args.push(a.into());
        self
    }

    pub fn global_arg(mut self, a: impl Into<String>) -> Opts {
        self.global_args.push(a.into());
        self
    }

    /// Limits the open files of the cockpit (soft and hard), as a host may.
    pub fn open_files(mut self, n: u32) -> Opts {
        self.open_files = Some(n);
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Opts {
        self.env.push((k.into(), v.into()));
        self
    }
}

const SESSION: &str = "e2e";

/// `luzia tui` running in the only pane of a private tmux server. Dropping it kills the
/// cockpit (if still running) and the server.
pub struct Cockpit<'a> {
    pub sb: &'a Sandbox,
    socket: PathBuf,
    pub width: u16,
    pub height: u16,
    pid: Cell<Option<u32>>,
}

impl<'a> Cockpit<'a> {
    pub fn start(sb: &'a Sandbox, opts: Opts) -> Cockpit<'a> {
        let socket = sb.tmp.path().join("tmux.sock");
        let conf = sb.tmp.path().join("tmux.conf");
        // set-clipboard on: an OSC 52 that reached tmux would create a paste buffer we can see.
        // remain-on-exit: if the wrapper dies, its last screen stays for the failure message.
        fs::write(
            &conf,
            "set -g status off\nset -g set-clipboard on\nset -g remain-on-exit on\n\
             set -g history-limit 100\n",
        )
        .unwrap();
        // No config file from the host (not even /etc/luzia/config.toml): an empty one,
        // unless the test brings its own.
        let mut opts = opts;
        if !opts.global_args.iter().any(|a| a == "--config") {
            let empty = sb.ctl.join("empty-config.toml");
            fs::write(&empty, "").unwrap();
            opts.global_args
                .extend(["--config".to_string(), path_str(&empty).to_string()]);
        }
        let wrapper = sb.ctl.join("wrapper.sh");
        fs::write(&wrapper, wrapper_script(sb, &opts)).unwrap();

        let cockpit = Cockpit {
            sb,
            socket,
            width: opts.width,
            height: opts.height,
            pid: Cell::new(None),
        };
        let command = format!("exec /bin/sh {}", sh_quote(path_str(&wrapper)));
        let w = opts.width.to_string();
        let h = opts.height.to_string();
        let out = cockpit
            .tmux_command()
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", SESSION, "-x", &w, "-y", &h])
            .arg(command)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cockpit
    }

    /// tmux talking to this test's own server, with an environment that holds nothing of the
    /// host's but PATH (the server passes its environment on to the pane).
    fn tmux_command(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.sb.home)
            .env("LANG", "C.UTF-8")
            .arg("-S")
            .arg(&self.socket)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs a tmux command against this server; returns its stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = self.tmux_command().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format about the pane, e.g. `#{pane_title}`.
    pub fn display(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", SESSION, format])
            .trim_end_matches('\n')
            .to_owned()
    }

    pub fn screen(&self) -> Screen {
        let text = self.tmux(&["capture-pane", "-p", "-t", SESSION]);
        Screen {
            lines: text.lines().map(str::to_owned).collect(),
        }
    }

    /// The screen with its escape codes (colours and attributes).
    pub fn screen_escaped(&self) -> Vec<String> {
        self.tmux(&["capture-pane", "-p", "-e", "-t", SESSION])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Polls the screen until `pred` holds; fails with the last screen after [`TIMEOUT`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&Screen) -> bool) -> Screen {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > TIMEOUT {
                panic!(
                    "timed out after {TIMEOUT:?} waiting for: {what}\n--- last screen ---\n{}\n---",
                    s.text()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Like [`Cockpit::wait_for`], and the screen is the same on two captures in a row: no
    /// frame was half drawn when it was read (tmux does not hold frames back for synchronized
    /// output, so a capture can land between two writes of one frame).
    pub fn wait_stable(&self, what: &str, pred: impl Fn(&Screen) -> bool) -> Screen {
        let start = Instant::now();
        let mut prev: Option<Screen> = None;
        loop {
            let s = self.screen();
            if pred(&s) && prev.as_ref() == Some(&s) {
                return s;
            }
            if start.elapsed() > TIMEOUT {
                panic!(
                    "timed out after {TIMEOUT:?} waiting for a steady screen with: {what}\n\
                     --- last screen ---\n{}\n---",
                    s.text()
                );
            }
            prev = Some(s);
            std::thread::sleep(POLL);
        }
    }

    pub fn wait_text(&self, text: &str) -> Screen {
        self.wait_for(&format!("{text:?} on screen"), |s| s.contains(text))
    }

    /// Waits for the main screen: header, the jobs box and the output box.
    pub fn wait_ready(&self) -> Screen {
        self.wait_for("the cockpit's main screen", |s| {
            s.header().contains("luzia") && s.table_box().is_some() && s.output_box().is_some()
        })
    }

    /// Waits until job `id`'s row satisfies `pred`.
    pub fn wait_row(&self, id: &str, what: &str, pred: impl Fn(&str) -> bool) -> Screen {
        self.wait_for(&format!("the row of {id}: {what}"), |s| {
            s.job_row(id).is_some_and(|r| pred(&r))
        })
    }

    /// Sends tmux key names (`j`, `Enter`, `Tab`, `Up`, `PageUp`, `F1`, `C-c`...).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    pub fn key(&self, key: &str) {
        self.keys(&[key]);
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        // -H: as hexadecimal bytes, so characters tmux would parse (like `;`) arrive as typed.
        let hex: Vec<String> = text.bytes().map(|b| format!("{b:02x}")).collect();
        let mut args = vec!["send-keys", "-t", SESSION, "-H"];
        args.extend(hex.iter().map(String::as_str));
        self.tmux(&args);
    }

    /// ESC alone, then a pause so that the next key is not read as Alt+key.
    pub fn esc(&self) {
        self.key("Escape");
        std::thread::sleep(ESC_PAUSE);
    }

    fn ctl(&self, name: &str) -> PathBuf {
        self.sb.ctl.join(name)
    }

    /// Waits for a file the wrapper writes; returns its content.
    fn wait_file(&self, name: &str, what: &str) -> String {
        let path = self.ctl(name);
        let start = Instant::now();
        loop {
            if let Ok(s) = fs::read_to_string(&path) {
                return s;
            }
            if start.elapsed() > TIMEOUT {
                panic!(
                    "timed out after {TIMEOUT:?} waiting for {what}\n--- last screen ---\n{}\n---",
                    self.screen().text()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The cockpit's pid (written by the wrapper just before it execs luzia).
    pub fn pid(&self) -> u32 {
        if let Some(p) = self.pid.get() {
            return p;
        }
        let pid: u32 = self
            .wait_file("luzia.pid", "the cockpit's pid file")
            .trim()
            .parse()
            .expect("a pid");
        self.pid.set(Some(pid));
        pid
    }

    /// Whether the cockpit has exited (the wrapper wrote its exit code).
    pub fn exited(&self) -> bool {
        self.ctl("luzia.rc").exists()
    }

    /// Waits until the cockpit exits; returns its exit code.
    pub fn wait_exit(&self) -> i32 {
        self.pid();
        self.wait_file("luzia.rc", "the cockpit to exit")
            .trim()
            .parse()
            .expect("an exit code")
    }

    /// `stty -a` in the pane before the cockpit started and after it exited.
    pub fn stty(&self) -> (String, String) {
        let read = |n: &str| fs::read_to_string(self.ctl(n)).unwrap_or_default();
        (read("stty.before"), read("stty.after"))
    }
}

impl Drop for Cockpit<'_> {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Ok(out) = self
                .tmux_command()
                .args(["capture-pane", "-p", "-t", SESSION])
                .output()
        {
            eprintln!(
                "--- screen when the test failed ---\n{}\n---",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        let pid = self.pid.get().or_else(|| {
            fs::read_to_string(self.ctl("luzia.pid"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        });
        if let Some(pid) = pid
            && !self.exited()
            && process_alive(pid)
            && let Some(p) = Pid::from_raw(pid as i32)
        {
            let _ = rustix::process::kill_process(p, Signal::KILL);
        }
        let _ = self
            .tmux_command()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A proc root with plenty of memory free and no load, in the sandbox.
fn quiet_proc(sb: &Sandbox) -> PathBuf {
    let dir = sb.ctl.join("proc");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("meminfo"),
        "MemTotal: 16000000 kB\nMemFree: 12000000 kB\nMemAvailable: 14000000 kB\n",
    )
    .unwrap();
    fs::write(dir.join("loadavg"), "0.10 0.10 0.10 1/100 1\n").unwrap();
    fs::write(
        dir.join("stat"),
        "cpu  1 0 1 100 0 0 0 0 0 0\ncpu0 1 0 1 100 0 0 0 0 0 0\n",
    )
    .unwrap();
    dir
}

/// The script the pane runs: an isolated environment, `stty -a` before and after, the
/// cockpit's pid and exit code, then it keeps the pane open.
fn wrapper_script(sb: &Sandbox, opts: &Opts) -> String {
    let q = |p: &Path| sh_quote(path_str(p));
    let mut s = String::from("#!/bin/sh\n");
    // A Ctrl-C typed at a program in cooked mode (`status --watch`) signals the whole
    // foreground group: the wrapper survives it to record the exit code (a handler, unlike an
    // ignored signal, is not inherited by what it runs).
    s += "trap : INT\n";
    s += &format!("cd {} || exit 1\n", q(&sb.ctl));
    s += "unset LUZIA_JOBS_DIR LUZIA_CONFIG LUZIA_WATCH LUZIA_LOG LUZIA_NOTIFICATIONS_LOG \
          LUZIA_QUEUE_DIR NO_COLOR COLORTERM TMUX TMUX_PANE\n";
    s += &format!("export TERM={}\n", sh_quote(&opts.term));
    s += &format!("export HOME={}\n", q(&sb.home));
    s += &format!("export XDG_STATE_HOME={}\n", q(&sb.state));
    s += &format!("export XDG_CONFIG_HOME={}\n", q(&sb.config));
    s += "export LANG=C.UTF-8 TZ=UTC\n";
    // The machine's real load would put a system alert in the header of any test that happens
    // to run while it is busy: the cockpit reads a quiet proc of its own (a test may override).
    s += &format!("export LUZIA_PROC={}\n", q(&quiet_proc(sb)));
    for (k, v) in &opts.env {
        s += &format!("export {k}={}\n", sh_quote(v));
    }
    if let Some(n) = opts.open_files {
        s += &format!("ulimit -n {n} || exit 1\n");
    }
    s += "stty -a > stty.before\n";
    s += "echo BEFORE-COCKPIT\n";
    let mut cmd = vec![sh_quote(BIN)];
    cmd.extend(opts.global_args.iter().map(|a| sh_quote(a)));
    cmd.push(sh_quote(&opts.command));
    cmd.extend(opts.args.iter().map(|a| sh_quote(a)));
    if !opts.no_jobs_dir {
        cmd.push("--jobs-dir".into());
        cmd.push(q(&sb.root));
    }
    // The inner sh writes its own pid and becomes luzia, in the pane's foreground (in
    // `opts.dir` when given; the wrapper's own files stay in `ctl/`).
    let cd = match &opts.dir {
        Some(dir) => {
            s += &format!("export E2E_START_DIR={}\n", q(dir));
            "cd \"$E2E_START_DIR\" && "
        }
        None => "",
    };
    s += &format!(
        "/bin/sh -c 'echo $$ > luzia.pid.tmp && mv luzia.pid.tmp luzia.pid && {cd}exec \"$@\"' luzia {}\n",
        cmd.join(" ")
    );
    s += "rc=$?\n";
    s += "stty -a > stty.after\n";
    s += "echo \"AFTER-COCKPIT rc=$rc\"\n";
    s += "echo $rc > luzia.rc.tmp && mv luzia.rc.tmp luzia.rc\n";
    s += "exec sleep 100000\n";
    s
}

// ----------------------------------------------------------------------------------------------
// Longer waits, table cells, and the demo's agents
// ----------------------------------------------------------------------------------------------

impl Cockpit<'_> {
    /// Like [`Cockpit::wait_for`], with a timeout of its own: for what takes time to happen by
    /// design (an alarm raised after a silence, a demo agent reaching its end).
    pub fn wait_for_up_to(
        &self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&Screen) -> bool,
    ) -> Screen {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > timeout {
                panic!(
                    "timed out after {timeout:?} waiting for: {what}\n--- last screen ---\n{}\n---",
                    s.text()
                );
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Screen {
    /// The rows above the jobs table: the header and whatever the cockpit puts under it.
    pub fn header_rows(&self) -> Vec<&str> {
        let end = self.table_box().map_or(0, |b| b.top);
        self.lines[..end].iter().map(String::as_str).collect()
    }

    /// The cell of job `id`'s row in the column headed `heading` (case-insensitive): from
    /// where the heading starts to where the next heading starts, or to the row's end.
    pub fn cell(&self, id: &str, heading: &str) -> Option<String> {
        let b = self.table_box()?;
        let head: Vec<char> = self.inner(b).first()?.chars().collect();
        let mut starts = Vec::new();
        for (i, c) in head.iter().enumerate() {
            if !c.is_whitespace() && (i == 0 || head[i - 1].is_whitespace()) {
                starts.push(i);
            }
        }
        let word = |start: usize| -> String {
            head[start..]
                .iter()
                .take_while(|c| !c.is_whitespace())
                .collect()
        };
        let k = starts
            .iter()
            .position(|&s| word(s).eq_ignore_ascii_case(heading))?;
        let row: Vec<char> = self.job_row(id)?.chars().collect();
        let from = starts[k].min(row.len());
        let to = starts.get(k + 1).map_or(row.len(), |&e| e.min(row.len()));
        Some(row[from..to].iter().collect::<String>().trim().to_string())
    }

    /// Text segments of every row (split at the box borders `│`), trimmed, that start with
    /// `prefix`.
    pub fn segments_starting(&self, prefix: &str) -> Vec<String> {
        self.lines
            .iter()
            .flat_map(|l| l.split('│'))
            .map(str::trim)
            .filter(|seg| seg.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }
}

/// `luzia tui --demo` with its temporary directory inside the sandbox. Dropping it stops every
/// supervisor the demo started (SIGTERM, which each passes on to its agent; SIGKILL for any
/// still there after a while), so no demo agent outlives the test.
pub struct DemoRun {
    pub tmp: PathBuf,
}

impl DemoRun {
    pub fn new(sb: &Sandbox) -> DemoRun {
        let tmp = sb.tmp.path().join("tmp");
        fs::create_dir_all(&tmp).unwrap();
        DemoRun { tmp }
    }

    /// Options that start the demo with `TMPDIR` in the sandbox.
    pub fn opts(&self) -> Opts {
        Opts {
            no_jobs_dir: true,
            ..Opts::default()
        }
        .arg("--demo")
        .env("TMPDIR", path_str(&self.tmp))
    }

    /// The demo's jobs root, once the demo has created it.
    pub fn jobs_dir(&self) -> Option<PathBuf> {
        fs::read_dir(&self.tmp)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("luzia-demo-"))
            .map(|e| e.path().join("jobs"))
    }

    /// The id of the demo job whose task is `task`, waiting for the demo to create it.
    pub fn job_with_task(&self, task: &str) -> String {
        let start = Instant::now();
        loop {
            let found = self.jobs_dir().and_then(|jobs| {
                fs::read_dir(jobs).ok()?.flatten().find_map(|e| {
                    // A job still being made (`.partial-ID`) is renamed into place once whole.
                    if !luzia::jobs::model::id::is_valid(&e.file_name().to_string_lossy()) {
                        return None;
                    }
                    let meta = fs::read(e.path().join("meta.json")).ok()?;
                    let meta: serde_json::Value = serde_json::from_slice(&meta).ok()?;
                    (meta["task"] == task).then(|| e.file_name().to_string_lossy().into_owned())
                })
            });
            if let Some(id) = found {
                return id;
            }
            assert!(
                start.elapsed() < TIMEOUT,
                "timed out after {TIMEOUT:?} waiting for the demo job {task:?}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// The live supervisors of the demo's jobs: pids from `pid` files whose process is a
    /// `luzia supervise` of that very job (a recycled pid is left alone).
    pub fn supervisors(&self) -> Vec<u32> {
        let Some(jobs) = self.jobs_dir() else {
            return vec![];
        };
        let mut pids = Vec::new();
        for job in fs::read_dir(jobs).into_iter().flatten().flatten() {
            let Some(pid) = fs::read_to_string(job.path().join("pid"))
                .ok()
                .and_then(|p| p.trim().parse::<u32>().ok())
            else {
                continue;
            };
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if process_alive(pid)
                && cmdline.contains("supervise")
                && cmdline.contains(path_str(&job.path()))
            {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for DemoRun {
    fn drop(&mut self) {
        let pids = self.supervisors();
        for &pid in &pids {
            if let Some(p) = Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(p, Signal::TERM);
            }
        }
        let start = Instant::now();
        while pids.iter().any(|&p| process_alive(p)) && start.elapsed() < TIMEOUT {
            std::thread::sleep(POLL);
        }
        for &pid in &pids {
            if process_alive(pid)
                && let Some(p) = Pid::from_raw(pid as i32)
            {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
        }
    }
}

/// Stops every supervisor the demo started under `tmp` (each passes SIGTERM on to its agent).
pub struct DemoAgents(pub PathBuf);

impl DemoAgents {
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        for demo in fs::read_dir(&self.0).into_iter().flatten().flatten() {
            for job in fs::read_dir(demo.path().join("jobs"))
                .into_iter()
                .flatten()
                .flatten()
            {
                if let Ok(p) = fs::read_to_string(job.path().join("pid"))
                    && let Ok(pid) = p.trim().parse::<u32>()
                    && pid < 4_000_000
                {
                    pids.push(pid);
                }
            }
        }
        pids
    }

    pub fn jobs_dir(&self) -> PathBuf {
        let demo = fs::read_dir(&self.0)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("luzia-demo-"));
        demo.expect("the demo directory").path().join("jobs")
    }
}

impl Drop for DemoAgents {
    fn drop(&mut self) {
        let pids = self.pids();
        for &pid in &pids {
            if process_alive(pid) {
                send_signal(pid, Signal::TERM);
            }
        }
        // Their last writes (the exit line, meta.json) must land before the sandbox goes, or
        // they recreate pieces of it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|&p| process_alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
