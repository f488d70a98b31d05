//! A real OpenSSH server for the fleet tests: `/usr/sbin/sshd -D -e -f CFG` on 127.0.0.1 and a
//! free port, with its own host key, one authorized client key and one key that is not, and an
//! environment (`SetEnv`) that gives the remote luzia its own jobs root and config. Everything
//! lives in a temporary directory the server owns; dropping it kills the server and every
//! session it started, so no test leaves a process or a listening port behind.
//!
//! Without sshd the tests skip loudly; where CI asks for them (`LUZIA_REQUIRE_SSHD=1`, set by
//! `.ci/run`) they fail instead.

#![allow(dead_code)]

use std::fs;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{all_pids, pid_alive, proc_stat};

/// The server binary: sshd refuses to re-execute itself unless started by absolute path.
pub const SSHD: &str = "/usr/sbin/sshd";

/// How long a server may take to accept connections after it was started.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// How many fresh ports are tried when another process takes the chosen one first.
const PORT_ATTEMPTS: usize = 5;

/// One running sshd with its keys, config and log.
pub struct Sshd {
    name: String,
    dir: TempDir,
    port: u16,
    user: String,
    jobs_root: PathBuf,
    child: Option<Child>,
}

impl Sshd {
    /// Starts a server for host `name` whose sessions see `jobs_root` as their jobs root.
    /// `None` (after saying so loudly) where sshd or ssh-keygen is missing, unless
    /// `LUZIA_REQUIRE_SSHD=1`, which fails the test instead.
    pub fn start(name: &str, jobs_root: &Path) -> Option<Sshd> {
        if let Some(why) = missing_tools() {
            skip_sshd(&why);
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("luzia-sshd-{name}-"))
            .tempdir()
            .expect("a tempdir for sshd");
        let user = current_user();
        let mut sshd = Sshd {
            name: name.to_owned(),
            dir,
            port: 0,
            user,
            jobs_root: jobs_root.to_owned(),
            child: None,
        };
        sshd.prepare();
        sshd.launch_on_a_free_port();
        Some(sshd)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    /// The server's own directory (keys, config, log, the remote config file).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The jobs root the remote luzia sees (`LUZIA_JOBS_DIR` in its sessions).
    pub fn jobs_root(&self) -> &Path {
        &self.jobs_root
    }

    /// The remote luzia's config file (`LUZIA_CONFIG` in its sessions); starts empty, a test may
    /// write projects into it.
    pub fn config_path(&self) -> PathBuf {
        self.dir().join("remote-config.toml")
    }

    /// The authorized client key (private half).
    pub fn client_key(&self) -> PathBuf {
        self.dir().join("client_key")
    }

    /// A client key that is not in authorized_keys.
    pub fn wrong_key(&self) -> PathBuf {
        self.dir().join("wrong_key")
    }

    /// The known_hosts file the client options write to.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir().join("known_hosts")
    }

    /// Where sshd writes its log (`-e`, appended across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir().join("sshd.log")
    }

    /// The ssh destination: the current user on 127.0.0.1.
    pub fn destination(&self) -> String {
        format!("{}@127.0.0.1", self.user)
    }

    /// The ssh options (before the destination) that reach this server with `key`, ignoring the
    /// user's own ssh config and known hosts.
    pub fn ssh_options_with(&self, key: &Path) -> Vec<String> {
        vec![
            "-F".into(),
            "/dev/null".into(),
            "-p".into(),
            self.port.to_string(),
            "-i".into(),
            key.display().to_string(),
            "-o".into(),
            "IdentitiesOnly=yes".into(),
            "-o".into(),
            format!("UserKnownHostsFile={}", self.known_hosts().display()),
            "-o".into(),
            "GlobalKnownHostsFile=/dev/null".into(),
            "-o".into(),
            "StrictHostKeyChecking=accept-new".into(),
        ]
    }

    /// The options with the authorized key.
    pub fn ssh_options(&self) -> Vec<String> {
        self.ssh_options_with(&self.client_key())
    }

    /// The `[hosts.NAME]` table that reaches this server with the authorized key and runs
    /// `luzia_bin` there.
    pub fn host_toml(&self, luzia_bin: &Path) -> String {
        self.toml_with(&self.client_key(), luzia_bin)
    }

    /// The same table with a key the server does not accept.
    pub fn wrong_key_toml(&self) -> String {
        self.toml_with(&self.wrong_key(), Path::new(env!("CARGO_BIN_EXE_luzia")))
    }

    fn toml_with(&self, key: &Path, luzia_bin: &Path) -> String {
        let options: Vec<String> = self
            .ssh_options_with(key)
            .iter()
            .map(|o| toml_string(o))
            .collect();
        format!(
            "[hosts.{}]\nssh = {}\nssh_options = [{}]\nluzia = {}\n",
            self.name,
            toml_string(&self.destination()),
            options.join(", "),
            toml_string(&luzia_bin.display().to_string()),
        )
    }

    /// What sshd has logged so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// SIGKILL to the server and every session it started: their connections drop at once, as
    /// when a host goes away. Returns once none of them is alive.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Each session is its own process group (sshd calls setsid), so the tree is walked by
        // parent id. Stopping it first means nothing in it can fork or be orphaned (and so
        // lose its ancestry) before every member is found.
        let tree = stop_tree(child.id());
        tree.iter()
            .for_each(|&p| signal(p, rustix::process::Signal::KILL));
        let _ = child.kill();
        let _ = child.wait();
        let deadline = Instant::now() + START_DEADLINE;
        while let Some(p) = tree.iter().find(|&&p| pid_alive(p)) {
            assert!(
                Instant::now() < deadline,
                "sshd {}: process {p} survived SIGKILL",
                self.name
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same port with the same keys and config.
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            match self.launch(self.port) {
                Ok(()) => return,
                // The old listener's port may take a moment to be free again.
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(why) => panic!(
                    "sshd {} did not restart on port {}: {why}",
                    self.name, self.port
                ),
            }
        }
    }

    /// Whether the server process is running.
    pub fn is_running(&self) -> bool {
        self.child.as_ref().is_some_and(|c| pid_alive(c.id()))
    }

    fn prepare(&self) {
        // Debian's sshd insists on its privilege separation directory.
        fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        for key in ["host_key", "client_key", "wrong_key"] {
            keygen(&self.dir().join(key));
        }
        fs::copy(
            self.dir().join("client_key.pub"),
            self.dir().join("authorized_keys"),
        )
        .expect("write authorized_keys");
        fs::write(self.config_path(), "").expect("write the remote config");
        fs::write(self.dir().join("sshd_config"), self.sshd_config()).expect("write sshd_config");
    }

    fn sshd_config(&self) -> String {
        let d = self.dir();
        let quote = |p: PathBuf| format!("\"{}\"", p.display());
        // HOME is the server's own directory: a session's shell then reads none of the machine
        // user's rc files, which may take locks (pyenv's rehash) that a SIGKILLed session leaves
        // behind, stalling every later session.
        format!(
            "ListenAddress 127.0.0.1\n\
             Port {port}\n\
             HostKey {host_key}\n\
             PidFile {pid}\n\
             AuthorizedKeysFile {auth}\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             PermitRootLogin prohibit-password\n\
             AllowUsers {user}\n\
             UseDNS no\n\
             PrintMotd no\n\
             PrintLastLog no\n\
             MaxStartups 100\n\
             MaxSessions 100\n\
             LogLevel VERBOSE\n\
             SetEnv \"HOME={home}\" \"LUZIA_JOBS_DIR={jobs}\" \"LUZIA_CONFIG={config}\" NO_COLOR=1 TZ=UTC\n",
            port = self.port,
            host_key = quote(d.join("host_key")),
            pid = quote(d.join("sshd.pid")),
            auth = quote(d.join("authorized_keys")),
            user = self.user,
            home = d.display(),
            jobs = self.jobs_root.display(),
            config = self.config_path().display(),
        )
    }

    fn launch_on_a_free_port(&mut self) {
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            self.port = free_port();
            fs::write(self.dir().join("sshd_config"), self.sshd_config()).expect("sshd_config");
            match self.launch(self.port) {
                Ok(()) => return,
                Err(why) => last = why,
            }
        }
        panic!(
            "sshd {} did not start after {PORT_ATTEMPTS} ports: {last}",
            self.name
        );
    }

    /// Starts sshd and waits until it accepts connections; `Err` says why it did not (its log).
    fn launch(&mut self, port: u16) -> Result<(), String> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the sshd log");
        let mut child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(self.dir().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {SSHD}: {e}"))?;
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("sshd exited ({status}); its log:\n{}", self.log()));
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "sshd did not accept on port {port} within {START_DEADLINE:?}; its log:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A luzia older than the hidden `--source`/`--by` of `answer`, `approve` and `deny`, as a
/// script in `dir` on the remote's side: to a command line with either option it says what such
/// a luzia's clap says to an option it does not know, word for word, and exits 2 having done
/// nothing; every other command line it hands to `luzia`, which is what that older luzia would
/// have done with it. It records each command line it is given in `record`.
pub fn older_luzia(dir: &Path, luzia: &Path, record: &Path) -> PathBuf {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> {record}
for a in "$@"; do
    case "$a" in
        --) break ;;
        --source|--source=*|--by|--by=*)
            flag=${{a%%=*}}
            printf "error: unexpected argument '%s' found\n\n  tip: to pass '%s' as a value, use '-- %s'\n\nUsage: luzia %s [OPTIONS] <ID>\n\nFor more information, try '--help'.\n" "$flag" "$flag" "$flag" "$1" >&2
            exit 2 ;;
    esac
done
exec {luzia} "$@"
"#,
        record = quote(record),
        luzia = quote(luzia),
    );
    let path = dir.join("luzia-older");
    fs::write(&path, script).expect("write the older luzia");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    path
}

/// Why the server cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    if !Path::new(SSHD).exists() {
        return Some(format!(
            "{SSHD} is not installed: the fleet tests need a real OpenSSH server (apt-get install openssh-server)"
        ));
    }
    for tool in ["ssh", "ssh-keygen"] {
        let ok = Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success() || !o.stderr.is_empty());
        if !ok {
            return Some(format!(
                "{tool} is not installed: the fleet tests need OpenSSH (apt-get install openssh-client)"
            ));
        }
    }
    None
}

/// Says loudly that a fleet test cannot run; fails instead where `LUZIA_REQUIRE_SSHD=1`.
pub fn skip_sshd(why: &str) {
    if std::env::var("LUZIA_REQUIRE_SSHD").is_ok_and(|v| v == "1") {
        panic!("LUZIA_REQUIRE_SSHD=1 but this test cannot run: {why}");
    }
    eprintln!("\n{0}\nSKIPPED: {why}\n{0}\n", "*".repeat(72));
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("run id -un");
    assert!(out.status.success(), "id -un failed");
    String::from_utf8(out.stdout)
        .expect("a user name in UTF-8")
        .trim()
        .to_owned()
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "luzia-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("run ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A port nobody listens on right now; another process may take it before sshd does, which
/// `launch_on_a_free_port` answers by trying another.
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// `pid` and all its descendants, each stopped (SIGSTOP), found again until no new one appears.
fn stop_tree(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    loop {
        tree.iter()
            .for_each(|&p| signal(p, rustix::process::Signal::STOP));
        let pids = all_pids();
        let before = tree.len();
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            for &p in &pids {
                if !tree.contains(&p) && proc_stat(p).is_some_and(|(_, ppid, _)| ppid == parent) {
                    tree.push(p);
                }
            }
            i += 1;
        }
        if tree.len() == before {
            return tree;
        }
    }
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    use rustix::process::{Pid, kill_process};
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(p, sig);
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
