"""The fleet benchmark's hosts: real sshd processes on 127.0.0.1, each with its own keys, config,
port and jobs root, and real agents started with `luzia run` in each root.

The tests have the same harness in Rust (tests/common/sshd.rs); this is its Python equivalent
for benches/fleet.py, which needs no cargo build to start hosts. Python 3 standard library only.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

SSHD = "/usr/sbin/sshd"

# The options the cockpit's links give ssh (src/fleet/ssh.rs), so that a bench's own ssh shares
# the cockpit's connection when it names the same ControlPath directory.
LINK_OPTIONS = ["-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPersist=60",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2",
                "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "luzia-bench", "-f",
                    path], check=True, stdin=subprocess.DEVNULL)


class Login:
    """Who the hosts' sshd log in: a throwaway system user whose shell is /bin/sh (what a
    remote command costs is then ssh's and luzia's, not a login shell's start-up files), or
    an existing user (`--login root`)."""

    def __init__(self, name, home):
        self.created = False
        if name:
            self.name = name
            return
        self.name = f"luzia-fb{os.getpid()}"
        os.makedirs(home, exist_ok=True)
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh",
                        "--home-dir", home, self.name], check=True, capture_output=True)
        self.created = True
        # useradd locks the new account ("!"), and sshd without PAM refuses a locked one; "*"
        # means no password works, which is all a key login needs.
        subprocess.run(["usermod", "-p", "*", self.name], check=True, capture_output=True)
        uid = int(subprocess.run(["id", "-u", self.name], check=True, capture_output=True,
                                 text=True).stdout)
        os.chown(home, uid, -1)

    def remove(self):
        if self.created:
            subprocess.run(["userdel", self.name], capture_output=True)
            self.created = False


class Sshd:
    """`/usr/sbin/sshd -D -e -f CFG` on 127.0.0.1 and a free port, in `work`: its own host key,
    a client key in its authorized_keys, and `SetEnv` so the luzia it runs sees `jobs_root`."""

    def __init__(self, name, work, jobs_root, luzia_config, login, clean):
        self.name, self.work, self.jobs_root, self.login = name, work, jobs_root, login
        self.clean = clean
        os.makedirs(work, exist_ok=True)
        os.chmod(work, 0o755)
        self.host_key = os.path.join(work, "host_key")
        self.client_key = os.path.join(work, "client_key")
        keygen(self.host_key)
        keygen(self.client_key)
        self.authorized = os.path.join(work, "authorized_keys")
        shutil.copy(self.client_key + ".pub", self.authorized)
        os.chmod(self.authorized, 0o644)
        self.known_hosts = os.path.join(work, "known_hosts")
        self.port = free_port()
        self.config = os.path.join(work, "sshd_config")
        with open(self.config, "w") as f:
            f.write(f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
                    f"PidFile none\nAuthorizedKeysFile {self.authorized}\nStrictModes no\n"
                    "UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
                    f"AllowUsers {login.name}\nLogLevel ERROR\n"
                    f"SetEnv LUZIA_JOBS_DIR={jobs_root} LUZIA_CONFIG={luzia_config}\n")
        # sshd refuses to start without its privilege separation directory.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = open(os.path.join(work, "sshd.log"), "ab")
        self.proc = clean.proc(subprocess.Popen(
            [SSHD, "-D", "-e", "-f", self.config], stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=self.log, start_new_session=True))
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd for {name} did not start: see {self.log.name}")
                time.sleep(0.02)

    @property
    def destination(self):
        return f"{self.login.name}@127.0.0.1"

    def ssh_options(self):
        """The host's `ssh_options`: no user or system ssh config, this port and key."""
        return ["-F", "/dev/null", "-p", str(self.port), "-i", self.client_key,
                "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=accept-new"]

    def host_toml(self, luzia_bin):
        opts = ", ".join(json.dumps(o) for o in self.ssh_options())
        return (f"[hosts.{self.name}]\nssh = {json.dumps(self.destination)}\n"
                f"ssh_options = [{opts}]\nluzia = {json.dumps(luzia_bin)}\n"
                f"jobs_dir = {json.dumps(self.jobs_root)}\n")

    def ssh_argv(self, control_dir, remote):
        """What the cockpit runs for this host: its link options, the ControlPath under
        `control_dir`, the host's options, the destination, `--` and the remote command."""
        return (["ssh", *LINK_OPTIONS, "-o", f"ControlPath={control_dir}/%C",
                 *self.ssh_options(), "-T", self.destination, "--", *remote])

    def stop(self):
        self.clean.stop(self.proc, grace=1.0)
        self.log.close()


# --------------------------------------------------------------------------------------------
# A jobs root with real agents


AGENT = ["sh", "-c", "exec sleep 1000000"]


def write_root(base, name):
    """A config, project and queue for a host's luzia, and its empty jobs root."""
    d = os.path.join(base, name)
    jobs = os.path.join(d, "jobs")
    for p in (jobs, os.path.join(d, "project"), os.path.join(d, "queue")):
        os.makedirs(p, exist_ok=True)
    config = os.path.join(d, "config.toml")
    with open(config, "w") as f:
        f.write(f"jobs_dir = {json.dumps(jobs)}\n"
                f"notifications_log = {json.dumps(os.path.join(d, 'notifications.log'))}\n"
                f"queue_dir = {json.dumps(os.path.join(d, 'queue'))}\n"
                f"[agent]\ncommand = {json.dumps(AGENT)}\nmax_concurrent = 100000\n"
                f"[projects.{name}]\npath = {json.dumps(os.path.join(d, 'project'))}\n")
    for p in (d, jobs):
        os.chmod(p, 0o755)
    return {"dir": d, "jobs": jobs, "config": config, "project": name}


def dispatch(binary, root, n, env, what="idle agent"):
    """Starts `n` agents with `luzia run`; returns their job ids in the order started."""
    ids = []
    for i in range(n):
        r = subprocess.run([binary, "--config", root["config"], "run", root["project"],
                            f"{what} {i}"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"luzia run failed ({r.returncode}): {r.stderr.strip()}")
        m = re.search(r"\b(\d{6}-[0-9a-f]{4,})\b", r.stdout + r.stderr)
        if not m:
            raise RuntimeError(f"no job id in luzia run's output: {r.stdout!r} {r.stderr!r}")
        ids.append(m.group(1))
    return ids


def wait_running(root, ids, timeout=120):
    """Waits until every job has its agent recorded in process.json."""
    deadline = time.monotonic() + timeout
    for jid in ids:
        path = os.path.join(root["jobs"], jid, "process.json")
        while True:
            try:
                with open(path) as f:
                    if "agent" in json.load(f):
                        break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path}: the agent never started")
            time.sleep(0.05)


def start_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2:].split()[19])


def stop_agents(jobs_root):
    """SIGKILL to each job's supervisor and agent named in its process.json, when that pid still
    has the start time recorded there (never a later process that took the number)."""
    killed = 0
    try:
        names = os.listdir(jobs_root)
    except FileNotFoundError:
        return 0
    for jid in names:
        try:
            with open(os.path.join(jobs_root, jid, "process.json")) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        for who in ("agent", "supervisor"):
            p = rec.get(who) or {}
            try:
                if start_ticks(p["pid"]) == p["start_ticks"]:
                    os.kill(p["pid"], signal.SIGKILL)
                    killed += 1
            except (KeyError, OSError, ValueError, TypeError):
                pass
    return killed


def write_progress(job_dir, step, total):
    """Replaces progress.json the way `luzia progress` does (temporary file, fsync, rename);
    returns the time the rename returned: the moment the change is there for any reader (the
    fsync before it, tens of ms on a busy disk at times, is the writer's, not the reader's)."""
    body = json.dumps({"step": step, "total_steps": total, "step_name": f"M{step}",
                       "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    tmp = os.path.join(job_dir, f".progress.json.bench.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(job_dir, "progress.json"))
    return time.monotonic()


# --------------------------------------------------------------------------------------------
# Bytes on a TCP connection


SS_FIELD = re.compile(r"\b(bytes_acked|bytes_received|segs_out|segs_in):(\d+)")
COUNTERS = ("bytes_acked", "bytes_received", "segs_out", "segs_in")


def tcp_sockets(port):
    """The client ends of the established connections to 127.0.0.1:`port`, by local port:
    {local port: {bytes_acked, bytes_received, segs_out, segs_in}} from `ss -tin`."""
    out = subprocess.run(["ss", "-tinH", "state", "established", "dport", "=", f":{port}"],
                         capture_output=True, text=True, check=True).stdout
    socks, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():  # the socket's line; its counters follow indented
            current = line.split()[2].rsplit(":", 1)[1]
            socks[current] = dict.fromkeys(COUNTERS, 0)
        elif current is not None:
            for k, v in SS_FIELD.findall(line):
                socks[current][k] = int(v)
    return socks
