"""Running one agent's jobs with a real luzia and reading what its supervisors hold.

Each job's `pid` file names its supervisor; the agent is everything under it (a node program
may start more processes of its own: Gemini CLI relaunches itself, codex-acp's wrapper runs its
native binary). Memory is read from /proc/PID/smaps_rollup: `Pss`, and `Pss_Anon`, what a
supervisor has of its own whatever the number of supervisors sharing luzia's executable.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

# Luzia's own variables, which would point it elsewhere than the benchmark's config.
LUZIA_VARS = ("LUZIA_JOBS_DIR", "LUZIA_CONFIG", "LUZIA_NOTIFICATIONS_LOG", "LUZIA_QUEUE_DIR",
              "LUZIA_JOB_DIR", "LUZIA_JOB_ID")
# A real agent on two loaded cores, five at once, takes tens of seconds to reach its gate.
WAIT_S = 240


@dataclass
class Sample:
    """One job, in KiB: its supervisor's PSS and anonymous PSS, the PSS of its agent's
    processes, and the supervisor's threads."""
    pss: int
    anon: int
    agent_pss: int
    agent_procs: int
    threads: int


def rollup(pid):
    """`Pss` and `Pss_Anon` of the process, in KiB (0 for a process gone)."""
    got = {"Pss": 0, "Pss_Anon": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key = line.split(":")[0]
                if key in got:
                    got[key] = int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return got["Pss"], got["Pss_Anon"]


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def children_of():
    """Every process's children, from /proc/*/stat."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The name (in parentheses) may hold spaces: the parent is the second field after it.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid, children):
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            # A zombie has ended; it waits only for its parent to read it.
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Luzia:
    """A luzia with a config of its own in a temporary directory, running one agent's jobs."""

    def __init__(self, luzia, agent, n):
        self.luzia = luzia
        self.base = tempfile.mkdtemp(prefix=f"luzia-bench-acp-{agent.kind or 'plain'}-")
        for d in ("jobs", "queue", "proj", "xdg"):
            os.makedirs(os.path.join(self.base, d))
        self.config = os.path.join(self.base, "config.toml")
        with open(self.config, "w") as f:
            f.write(self._config(agent, n))
        self.env = {k: v for k, v in os.environ.items() if k not in LUZIA_VARS}
        self.env["XDG_CONFIG_HOME"] = os.path.join(self.base, "xdg")

    def _config(self, agent, n):
        q = json.dumps
        text = (f"jobs_dir = {q(self.base + '/jobs')}\n"
                f"notifications_log = {q(self.base + '/notes.log')}\n"
                f"queue_dir = {q(self.base + '/queue')}\n\n[agent]\nmax_concurrent = {n}\n")
        if agent.kind is None:
            text += f"command = {q(agent.command)}\n"
        else:
            env = ", ".join(f"{k} = {q(v)}" for k, v in agent.env.items())
            text += (f"kind = {q(agent.kind)}\nenv = {{ {env} }}\n\n"
                     f"[agents.{agent.kind}]\ncommand = {q(agent.command)}\n")
        return text + f"\n[projects.p]\npath = {q(self.base + '/proj')}\n"

    def __call__(self, *args):
        return subprocess.run([self.luzia, "--config", self.config, *args], env=self.env,
                              capture_output=True, text=True)

    def job_file(self, job, name):
        return os.path.join(self.base, "jobs", job, name)


class Failed(Exception):
    """A job that did not get where it is measured; the message says which and why."""


def ended(lz, job):
    """Whether the job's supervisor is gone (or never wrote its pid)."""
    try:
        return not alive(int(open(lz.job_file(job, "pid")).read()))
    except (OSError, ValueError):
        return False


def wait_all(lz, ids, name):
    """Waits until every job shows `name`; raises saying which did not (one that ended, or
    any after the deadline), with its log."""
    deadline = time.time() + WAIT_S
    while True:
        missing = [i for i in ids if not os.path.exists(lz.job_file(i, name))]
        if not missing:
            return
        gone = [i for i in missing if ended(lz, i)]
        if gone or time.time() > deadline:
            first = (gone or missing)[0]
            log = open(lz.job_file(first, "output.log"), errors="replace").read()
            why = "ended" if gone else f"after {WAIT_S} s"
            raise Failed(f"job {first} never showed {name} ({why}; {len(missing)} of "
                         f"{len(ids)} missing) in {lz.base}; its output.log ends:\n{log[-2000:]}")
        time.sleep(0.2)


def sample(pid, children):
    pss, anon = rollup(pid)
    procs = descendants(pid, children)
    return Sample(pss, anon, sum(rollup(p)[0] for p in procs), len(procs), threads(pid))


def measure(luzia, agent, n, settle_s):
    """Starts `n` jobs of `agent`, waits until each is where it is measured (at its gate),
    lets them settle, reads each supervisor and its agent, kills the jobs and waits until
    nothing of them runs. Returns the samples.

    The first job runs alone until it gets there: an agent's first use of its HOME (opencode
    makes and migrates its database) is not raced by the others."""
    lz = Luzia(luzia, agent, n)
    ids = []
    try:
        start(lz, agent, ids)
        wait_all(lz, ids, agent.wait_for)
        for _ in range(n - 1):
            start(lz, agent, ids)
        wait_all(lz, ids, agent.wait_for)
        time.sleep(settle_s)
        supervisors = [int(open(lz.job_file(i, "pid")).read()) for i in ids]
        children = children_of()
        samples = [sample(p, children) for p in supervisors]
    finally:
        stop(lz, ids)
    shutil.rmtree(lz.base, ignore_errors=True)
    return samples


def start(lz, agent, ids):
    out = lz("run", "p", "Write the marker.")
    if out.returncode != 0:
        raise Failed(f"luzia run failed for {agent.name}: {out.stderr}")
    ids.append(out.stdout.strip())


def stop(lz, ids):
    """Kills the jobs and waits until nothing of them runs (supervisors and agents)."""
    children = children_of()
    started = set()
    for i in ids:
        try:
            pid = int(open(lz.job_file(i, "pid")).read())
        except (OSError, ValueError):
            continue
        started.add(pid)
        started.update(descendants(pid, children))
    for i in ids:
        lz("kill", i)
    wait_gone(started)


def wait_gone(pids):
    """Waits for the processes the jobs were (supervisors and agents) to end; any left after
    the deadline is killed by its pid, so that the next agent is measured alone."""
    deadline = time.time() + 60
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    for p in pids:
        if alive(p):
            print(f"  process {p} outlived its job's kill; killing it", file=sys.stderr)
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
