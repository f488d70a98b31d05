#!/usr/bin/env python3
"""End-to-end benchmarks of the cockpit (`luzia tui`), run against the release binary.

    cargo build --release && python3 benches/cockpit.py [first-frame] [latency] [idle] [bytes] [memory]

With no names, all five run (about seven minutes on 2 cores; the first run also writes a 2 GiB
log once).

  first-frame  10,000 jobs: time to the first full frame, from the cockpit's own log line and
               from outside (spawn in a pty until the screen shows `jobs 1/10000`); warm page
               cache (on all cores, and pinned to one), and cold (after
               `echo 3 > /proc/sys/vm/drop_caches`) when that is allowed.
  latency      a line appended to the selected job's output.log until it is on the screen,
               next to `tail -f` on the same file.
  idle         CPU used by an idle cockpit over 60 s (1,000 jobs; some running, and all
               finished), next to `htop -d 15`, all in a private tmux server.
  bytes        bytes the cockpit writes to its terminal per second: idle, and while the selected
               job's log grows by 20 lines a second.
  memory       VmRSS and VmHWM with 10,000 jobs and a 2 GiB output.log selected.

The cockpit always runs with a terminal of 160x45, TERM=xterm-256color, and XDG_STATE_HOME,
XDG_CONFIG_HOME and HOME inside the benchmark's own temporary directory. Every process the
script starts is stopped on the way out (also on Ctrl-C), and every temporary directory is
removed, except the 2 GiB log, which is kept under the system's temporary directory to be
reused. Python 3 standard library only; tmux and htop must be installed (htop is installed with
apt-get when missing and the script runs as root).
"""

import argparse
import codecs
import fcntl
import hashlib
import json
import os
import random
import re
import select
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unicodedata
from datetime import datetime, timedelta, timezone

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(REPO, "target", "release", "luzia")
COLS, ROWS = 160, 45
ALL = ["first-frame", "latency", "idle", "bytes", "memory"]
BIG_LOG = os.path.join(tempfile.gettempdir(), "luzia-bench-2GiB-output.log")
BIG_LOG_SIZE = 2 * 1024**3
BIG_LOG_END = b"BIGLOG-END"


# --------------------------------------------------------------------------------------------
# Everything started here is recorded, and stopped on every way out.


class Cleanup:
    def __init__(self):
        self.procs = []  # subprocess.Popen, each the leader of its own session
        self.dirs = []
        self.tmux_sockets = []

    def proc(self, p):
        self.procs.append(p)
        return p

    def mkdtemp(self, what):
        d = tempfile.mkdtemp(prefix=f"luzia-bench-{what}-")
        self.dirs.append(d)
        return d

    def stop(self, p, grace=3.0):
        """SIGTERM to the process; if it is still there after `grace` s, SIGKILL to its process
        group (the session it leads, which holds only what it started)."""
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        if p in self.procs:
            self.procs.remove(p)

    def rmdir(self, d):
        shutil.rmtree(d, ignore_errors=True)
        if d in self.dirs:
            self.dirs.remove(d)

    def all(self):
        for sock in list(self.tmux_sockets):
            subprocess.run(["tmux", "-L", sock, "kill-server"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.tmux_sockets.remove(sock)
        for p in list(self.procs):
            self.stop(p, grace=1.0)
        for d in list(self.dirs):
            self.rmdir(d)


CLEAN = Cleanup()


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


# --------------------------------------------------------------------------------------------
# Statistics


def pct(values, q):
    """The q-th percentile (0..100), linear interpolation between the closest ranks."""
    v = sorted(values)
    if not v:
        return float("nan")
    if len(v) == 1:
        return v[0]
    k = (len(v) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


# --------------------------------------------------------------------------------------------
# Job directories


PROJECTS = ["musica", "overbits", "librec", "admin", "dss", "assistant"]
TASKS = [
    "Run tests and report results",
    "Fix the failing migration in the billing module",
    "Review the open pull request and summarise the risks",
    "Upgrade the dependencies and make the build pass again",
    "Write documentation for the deployment scripts",
    "Rebuild the search index and check the result counts",
    "Refactor the playlist module into smaller files",
    "Type-check the frontend and fix the errors",
    "Find why the nightly export is slow and propose a fix",
    "Clean up the stale feature flags in the admin panel",
]
WORDS = ("the a to of and in is for on with this that test build file module function error "
         "warning passed failed check value config index query table user request response "
         "cache server client update schema migration step result found line read write "
         "import export report summary crate package version release commit branch").split()
TEMPLATES = [
    "Reading {path}",
    "Running cargo test --workspace",
    "   Compiling {crate} v{v}",
    "test {mod}::tests::{fn} ... ok",
    "test {mod}::tests::{fn} ... FAILED",
    "test result: ok. {n} passed; 0 failed; {m} ignored; finished in {s}s",
    "Editing {path}: replaced {n} lines",
    "warning: unused variable `{fn}` in {path}:{n}",
    "error[E0308]: mismatched types at {path}:{n}:{m}",
    "Searching the repository for callers of `{fn}`",
    "I'll start by {sentence}.",
    "Now {sentence}, then {sentence}.",
    "[{ts}] INFO step {m}/{k}: {sentence}",
    "$ npm run build -- --mode production",
    "All checks passed; writing the summary",
    "  {path} | {n} +++++---",
    "",
]


def sentence(rng, lo=4, hi=14):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def log_line(rng):
    t = rng.choice(TEMPLATES)
    return t.format(
        path="src/" + "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) + ".rs",
        crate=rng.choice(WORDS) + "-" + rng.choice(WORDS),
        v=f"{rng.randint(0, 3)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
        mod=rng.choice(WORDS), fn=rng.choice(WORDS) + "_" + rng.choice(WORDS),
        n=rng.randint(1, 400), m=rng.randint(0, 9), k=rng.randint(5, 12),
        s=f"{rng.random() * 40:.2f}", sentence=sentence(rng),
        ts=f"2026-01-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
    )


_CORPUS = None


def corpus():
    """About 4 MiB of agent-like text lines, the same every run."""
    global _CORPUS
    if _CORPUS is None:
        rng = random.Random(20260109)
        lines = []
        size = 0
        while size < 4 * 1024 * 1024:
            line = log_line(rng) + "\n"
            lines.append(line)
            size += len(line)
        _CORPUS = "".join(lines).encode()
    return _CORPUS


def text_slice(rng, size):
    """`size` bytes (or a little less) of whole lines from the corpus."""
    c = corpus()
    start = rng.randrange(0, len(c) - size - 1)
    start = c.find(b"\n", start) + 1
    end = c.rfind(b"\n", start, start + size) + 1
    return c[start:end] if end > start else c[start:start + size] + b"\n"


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_root(root, finished, running, live_pid, selected_log=None, seed=1):
    """Writes `finished` + `running` job directories under `root`, as the orchestrator does.

    Finished jobs end with an exit line; running ones have a pid file naming `live_pid` (a
    process that stays alive for the benchmark). The running job started last is the newest,
    so the default sort selects it: its id is returned. With `selected_log`, that job's
    output.log is a hard link to that file instead of generated text.
    """
    rng = random.Random(seed)
    now = datetime.now(timezone.utc)
    os.makedirs(root, exist_ok=True)
    codes = [0] * 80 + [1] * 10 + [2] * 3 + [-9] * 3 + [100] * 2 + [143] * 2
    total = finished + running
    selected = None
    for i in range(total):
        is_running = i >= finished
        if is_running:
            newest = i == total - 1
            age = 5 if newest else rng.uniform(60, 3 * 3600)
        else:
            age = rng.uniform(3600, 30 * 86400)
        started = now - timedelta(seconds=age)
        job_id = f"{started.strftime('%H%M%S')}-{i:04x}"
        d = os.path.join(root, job_id)
        os.mkdir(d)
        project = rng.choice(PROJECTS)
        task = rng.choice(TASKS)
        meta = {"id": job_id, "project": project, "task": task, "type": "agent",
                "user": project, "pid": str(live_pid if is_running else rng.randint(3000, 90000)),
                "started": iso(started), "status": "running", "debug": False}
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)
        with open(os.path.join(d, "prompt.txt"), "wb") as f:
            f.write((task + "\n\n").encode() + text_slice(rng, rng.randint(200, 2000)))
        with open(os.path.join(d, "run.sh"), "w") as f:
            f.write("#!/bin/sh\ncd /workspace/%s && exec claude --dangerously-skip-permissions "
                    "--print --verbose -p < %s/prompt.txt\n" % (project, d))
        with open(os.path.join(d, "pid"), "w") as f:
            f.write(meta["pid"] + "\n")
        # Log sizes: log-normal, median about 8 KiB, from 300 bytes to 256 KiB.
        size = int(min(256 * 1024, max(300, rng.lognormvariate(9.0, 1.2))))
        log = os.path.join(d, "output.log")
        if is_running and newest and selected_log:
            os.link(selected_log, log)
        else:
            with open(log, "wb") as f:
                f.write(text_slice(rng, size))
                if not is_running:
                    f.write(b"\nexit:%d\n" % rng.choice(codes))
        if is_running and rng.random() < 0.5:
            with open(os.path.join(d, "progress.json"), "w") as f:
                step = rng.randint(1, 5)
                json.dump({"step": step, "total_steps": 5, "step_name": sentence(rng, 1, 3),
                           "updated_at": iso(now)}, f)
        if is_running and newest:
            selected = job_id
    return selected


def live_process():
    """A process that stays alive while the benchmark needs a running job's pid."""
    return CLEAN.proc(subprocess.Popen(["sleep", "100000"], start_new_session=True,
                                       stdin=subprocess.DEVNULL))


def cockpit_env(home):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_STATE_HOME": os.path.join(home, "state"),
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LUZIA_LOG": "info",
    }
    os.makedirs(env["XDG_STATE_HOME"], exist_ok=True)
    os.makedirs(env["XDG_CONFIG_HOME"], exist_ok=True)
    return env


def cockpit_log(env):
    return os.path.join(env["XDG_STATE_HOME"], "luzia", "cockpit.log")


# --------------------------------------------------------------------------------------------
# A small terminal: enough of ECMA-48 to know what the screen shows. ratatui sends only the
# cells that changed, so a title or a line is rarely in the byte stream in one piece.


class Screen:
    TOKEN = re.compile(
        r"\x1b\[([0-?]*)[ -/]*([@-~])"        # CSI
        r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
        r"|\x1b[PX^_][^\x1b]*\x1b\\"          # DCS, SOS, PM, APC
        r"|\x1b[ -/]*[0-OQ-WYZ\\`a-~]"         # other escapes (not the openers above)
        r"|([\x00-\x1a\x1c-\x1f\x7f])"         # C0 controls
        r"|([^\x00-\x1f\x1b\x7f]+)")           # text

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.r = self.c = 0
        self.top, self.bottom = 0, rows - 1  # the scroll region (DECSTBM)
        self.saved = (0, 0)
        self.pending = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.widths = {}

    def text(self):
        return "\n".join("".join(row) for row in self.cells)

    def feed(self, data):
        s = self.pending + self.decoder.decode(data)
        self.pending = ""
        pos, n = 0, len(s)
        while pos < n:
            m = self.TOKEN.match(s, pos)
            if m is None:
                if s[pos] == "\x1b" and n - pos < 256:
                    self.pending = s[pos:]  # an escape sequence cut by the read
                    return
                pos += 1
                continue
            pos = m.end()
            if m.group(4) is not None:
                self.put(m.group(4))
            elif m.group(3) is not None:
                self.control(m.group(3))
            elif m.group(2) is not None:
                self.csi(m.group(1), m.group(2))
            else:
                seq = m.group(0)
                if seq == "\x1b7":
                    self.saved = (self.r, self.c)
                elif seq == "\x1b8":
                    self.r, self.c = self.saved
                elif seq == "\x1bc":
                    self.__init__(self.rows, self.cols)

    def width(self, ch):
        w = self.widths.get(ch)
        if w is None:
            if unicodedata.combining(ch):
                w = 0
            elif unicodedata.east_asian_width(ch) in ("W", "F"):
                w = 2
            else:
                w = 1
            self.widths[ch] = w
        return w

    def put(self, run):
        row = self.cells[self.r]
        if run.isascii():
            end = min(self.cols, self.c + len(run))
            row[self.c:end] = run[:end - self.c]
            self.c = min(end, self.cols - 1) if end >= self.cols else end
            return
        for ch in run:
            w = self.width(ch)
            if w == 0:
                continue
            if self.c + w > self.cols:
                self.c = self.cols - w
            row[self.c] = ch
            if w == 2 and self.c + 1 < self.cols:
                row[self.c + 1] = ""
            self.c = min(self.c + w, self.cols - 1) if self.c + w >= self.cols else self.c + w

    def scroll_up(self):
        del self.cells[self.top]
        self.cells.insert(self.bottom, [" "] * self.cols)

    def control(self, ch):
        if ch == "\r":
            self.c = 0
        elif ch == "\n":
            if self.r == self.bottom:
                self.scroll_up()
            elif self.r == self.rows - 1:
                pass
            else:
                self.r += 1
        elif ch == "\b":
            self.c = max(0, self.c - 1)
        elif ch == "\t":
            self.c = min(self.cols - 1, (self.c // 8 + 1) * 8)

    def csi(self, params, final):
        if params.startswith(("?", ">", "<", "=")):
            return  # modes and queries: nothing on screen changes
        args = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []

        def arg(i, default):
            return args[i] if len(args) > i and args[i] else default

        if final in "Hf":
            self.r = min(self.rows - 1, arg(0, 1) - 1)
            self.c = min(self.cols - 1, arg(1, 1) - 1)
        elif final == "J":
            mode = arg(0, 0)
            if mode in (2, 3):
                self.cells = [[" "] * self.cols for _ in range(self.rows)]
            elif mode == 0:
                self.cells[self.r][self.c:] = [" "] * (self.cols - self.c)
                for r in range(self.r + 1, self.rows):
                    self.cells[r] = [" "] * self.cols
            elif mode == 1:
                for r in range(self.r):
                    self.cells[r] = [" "] * self.cols
                self.cells[self.r][:self.c + 1] = [" "] * (self.c + 1)
        elif final == "K":
            mode = arg(0, 0)
            row = self.cells[self.r]
            if mode == 0:
                row[self.c:] = [" "] * (self.cols - self.c)
            elif mode == 1:
                row[:self.c + 1] = [" "] * (self.c + 1)
            else:
                self.cells[self.r] = [" "] * self.cols
        elif final == "X":
            k = min(arg(0, 1), self.cols - self.c)
            self.cells[self.r][self.c:self.c + k] = [" "] * k
        elif final == "A":
            self.r = max(0, self.r - arg(0, 1))
        elif final in "Be":
            self.r = min(self.rows - 1, self.r + arg(0, 1))
        elif final in "Ca":
            self.c = min(self.cols - 1, self.c + arg(0, 1))
        elif final == "D":
            self.c = max(0, self.c - arg(0, 1))
        elif final == "E":
            self.r, self.c = min(self.rows - 1, self.r + arg(0, 1)), 0
        elif final == "F":
            self.r, self.c = max(0, self.r - arg(0, 1)), 0
        elif final in "G`":
            self.c = min(self.cols - 1, arg(0, 1) - 1)
        elif final == "d":
            self.r = min(self.rows - 1, arg(0, 1) - 1)
        elif final == "s":
            self.saved = (self.r, self.c)
        elif final == "u":
            self.r, self.c = self.saved
        elif final == "r":
            top, bottom = arg(0, 1) - 1, arg(1, self.rows) - 1
            if 0 <= top < bottom < self.rows:
                self.top, self.bottom = top, bottom
            self.r = self.c = 0
        # m (colours), n, t, q: ignored


# --------------------------------------------------------------------------------------------
# A program in a pseudo-terminal of its own


SYNC_BEGIN = b"\x1b[?2026h"


def _child_setup(cpus):
    def setup():
        # Runs in the child after setsid(): the pty becomes its controlling terminal.
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if cpus:
            os.sched_setaffinity(0, cpus)
    return setup


class Pty:
    """Runs argv with a fresh pty (COLS x ROWS) as its controlling terminal; reads everything
    it writes, timestamping each read, into a Screen."""

    def __init__(self, argv, env, cols=COLS, rows=ROWS, cpus=None):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.screen = Screen(rows, cols)
        self.bytes = 0
        self.frames = 0  # synchronized updates begun (one per frame the cockpit draws)
        self._tail = b""
        self.eof = False
        self.t_spawn = time.monotonic()
        self.proc = CLEAN.proc(subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
            start_new_session=True, preexec_fn=_child_setup(cpus)))
        os.close(slave)
        os.set_blocking(master, False)
        self.master = master

    @property
    def pid(self):
        return self.proc.pid

    def read(self, timeout):
        """Waits up to `timeout` s for output; returns the time it was read, or None."""
        if self.eof:
            time.sleep(max(0.0, timeout))
            return None
        r, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not r:
            return None
        try:
            data = os.read(self.master, 1 << 16)
        except BlockingIOError:
            return None
        except OSError:  # EIO: the program has gone and closed the terminal
            data = b""
        t = time.monotonic()
        if not data:
            self.eof = True
            return None
        self.bytes += len(data)
        both = self._tail + data
        self.frames += both.count(SYNC_BEGIN) - self._tail.count(SYNC_BEGIN)
        self._tail = both[-(len(SYNC_BEGIN) - 1):]
        self.screen.feed(data)
        return t

    def wait_for(self, cond, timeout):
        """The time of the read after which cond(screen text) held, or None on timeout."""
        deadline = time.monotonic() + timeout
        if cond(self.screen.text()):
            return time.monotonic()
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return None
            t = self.read(left)
            if t is not None and cond(self.screen.text()):
                return t

    def pump(self, seconds):
        """Keeps reading (so the program never blocks on a full terminal) for `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.read(left)

    def close(self):
        CLEAN.stop(self.proc)
        try:
            os.close(self.master)
        except OSError:
            pass


def luzia_pty(binary, root, env, cpus=None):
    return Pty([binary, "tui", "--jobs-dir", root], env, cpus=cpus)


def first_frame_logged(env, timeout, pty=None):
    """(ms, jobs) from the cockpit's `first full frame` log line."""
    path = cockpit_log(env)
    deadline = time.monotonic() + timeout
    pat = re.compile(r"first full frame.*?jobs=(\d+).*?ms=([0-9.]+)|"
                     r"first full frame.*?ms=([0-9.]+).*?jobs=(\d+)")
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                m = pat.search(f.read())
            if m:
                if m.group(1):
                    return float(m.group(2)), int(m.group(1))
                return float(m.group(3)), int(m.group(4))
        except FileNotFoundError:
            pass
        if pty:
            pty.pump(0.02)
        else:
            time.sleep(0.02)
    return None, None


def drop_caches():
    """True if the page cache, dentries and inodes could be dropped."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def jobs_title(n):
    return re.compile(rf"jobs 1/{n}(?!\d)")


def jobs_title_empty():
    return re.compile(r"jobs 0/0(?!\d)")


# --------------------------------------------------------------------------------------------
# 1. Time to the first full frame with 10,000 jobs


def bench_first_frame(args, out):
    work = CLEAN.mkdtemp("first-frame")
    sleeper = live_process()
    root = os.path.join(work, "jobs")
    t = time.monotonic()
    make_root(root, 9000, 1000, sleeper.pid)
    os.sync()  # no writeback of the new tree competing with the runs
    print(f"  generated 10,000 jobs in {time.monotonic() - t:.1f} s "
          f"({du(root) / 1e6:.0f} MB)", flush=True)
    title = jobs_title(10000)
    # (name, drop the caches first, CPUs the cockpit may run on)
    sets = [("warm", False, None)]
    if len(os.sched_getaffinity(0)) > 1:
        # What a busy machine leaves: the same, on one core.
        sets.append(("warm, one core", False, {min(os.sched_getaffinity(0))}))
    if args.cold:
        if drop_caches():
            sets.append(("cold", True, None))
        else:
            print("  cannot write /proc/sys/vm/drop_caches: no cold-cache runs", flush=True)
    res = {}
    for name, cold, cpus in sets:
        logged, external, cpu_ms, jobs_seen = [], [], [], set()
        load = os.getloadavg()[0]
        # Warm: one untimed run first, so every timed run finds the tree in the page cache.
        for i in range(-1 if not cold else 0, args.runs):
            home = os.path.join(work, f"home-{name.replace(' ', '')}-{i}")
            env = cockpit_env(home)
            if cold:
                drop_caches()
            p = luzia_pty(args.bin, root, env, cpus)
            try:
                t = p.wait_for(lambda s: title.search(s), timeout=60)
                if t is None:
                    raise RuntimeError("the cockpit never showed `jobs 1/10000`:\n" + p.screen.text())
                # CPU time (all threads, 10 ms ticks) spent up to the moment the frame was seen.
                cpu = proc_ticks(p.pid) * 1000 / os.sysconf("SC_CLK_TCK")
                ms, jobs = first_frame_logged(env, 10, p)
                if ms is None:
                    raise RuntimeError(f"no `first full frame` line in {cockpit_log(env)}")
                if i >= 0:
                    external.append((t - p.t_spawn) * 1000)
                    logged.append(ms)
                    cpu_ms.append(cpu)
                    jobs_seen.add(jobs)
            finally:
                p.close()
            shutil.rmtree(home, ignore_errors=True)
        res[name] = {"logged_ms": logged, "external_ms": external, "cpu_ms": cpu_ms,
                     "jobs": sorted(jobs_seen), "load_before": load,
                     "load_after": os.getloadavg()[0]}
        print(f"  {name}: log line p50 {pct(logged, 50):.1f} ms, "
              f"spawn-to-screen p50 {pct(external, 50):.1f} ms, CPU p50 {pct(cpu_ms, 50):.0f} ms "
              f"({len(logged)} runs, load {load:.2f})", flush=True)
    out["first-frame"] = res
    CLEAN.stop(sleeper)
    CLEAN.rmdir(work)


def du(path):
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


# --------------------------------------------------------------------------------------------
# 2. A line appended to output.log until it is visible, next to tail -f


def latency_loop(p, log, marks, gap):
    """Appends `MARK-<n>` for each n in `marks` (one write() each, `gap` s apart) and times
    each until the screen shows it."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    lat, missed = [], 0
    try:
        for n in marks:
            p.pump(gap)
            pat = re.compile(rf"MARK-{n}(?!\d)")
            t0 = time.monotonic()
            os.write(fd, b"MARK-%d\n" % n)
            t = p.wait_for(lambda s: pat.search(s), timeout=2.0)
            if t is None:
                missed += 1
            else:
                lat.append((t - t0) * 1000)
    finally:
        os.close(fd)
    return lat, missed


def bench_latency(args, out):
    work = CLEAN.mkdtemp("latency")
    sleeper = live_process()
    root = os.path.join(work, "jobs")
    sel = make_root(root, 49, 1, sleeper.pid, seed=2)
    log = os.path.join(root, sel, "output.log")
    with open(log, "rb") as f:
        last = [l for l in f.read().decode().splitlines() if l.strip()][-1]
    res = {"jobs": 50, "running": 1, "selected": sel}

    env = cockpit_env(os.path.join(work, "home"))
    p = luzia_pty(args.bin, root, env)
    try:
        shown = p.wait_for(lambda s: f"output {sel}" in s and last in s and "jobs 1/50" in s, 30)
        if shown is None:
            raise RuntimeError("the cockpit did not show the job's log:\n" + p.screen.text())
        res["follows"] = "FOLLOWING" in p.screen.text()
        p.pump(1.0)
        lat, missed = latency_loop(p, log, range(args.samples), 0.1)
        res["luzia_ms"], res["luzia_missed"] = lat, missed
    finally:
        p.close()
    print(f"  luzia: p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms "
          f"({len(lat)} samples, {missed} missed)", flush=True)

    p = Pty(["tail", "-n", "10", "-f", log], cockpit_env(os.path.join(work, "home-tail")))
    try:
        if p.wait_for(lambda s: f"MARK-{args.samples - 1}" in s, 10) is None:
            raise RuntimeError("tail -f did not start:\n" + p.screen.text())
        p.pump(1.0)
        # Fresh marks, numbered on from the cockpit's.
        lat, missed = latency_loop(p, log, range(args.samples, 2 * args.samples), 0.1)
        res["tail_ms"], res["tail_missed"] = lat, missed
    finally:
        p.close()
    print(f"  tail -f: p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms "
          f"({len(lat)} samples, {missed} missed)", flush=True)
    out["latency"] = res
    CLEAN.stop(sleeper)
    CLEAN.rmdir(work)


# --------------------------------------------------------------------------------------------
# 3. CPU while idle, next to htop, in tmux


def proc_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def bench_idle(args, out):
    if shutil.which("htop") is None:
        if os.geteuid() == 0 and shutil.which("apt-get"):
            print("  installing htop", flush=True)
            subprocess.run(["apt-get", "install", "-y", "htop"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if shutil.which("htop") is None:
            raise RuntimeError("htop is not installed (apt-get install -y htop)")
    work = CLEAN.mkdtemp("idle")
    sleeper = live_process()
    roots = {
        "luzia, 1,000 jobs (100 running)": (os.path.join(work, "jobs-running"), 900, 100),
        "luzia, 1,000 jobs (all finished)": (os.path.join(work, "jobs-finished"), 1000, 0),
    }
    for root, fin, run in roots.values():
        make_root(root, fin, run, sleeper.pid, seed=3)
    sock = f"luzia-bench-{os.getpid()}"
    CLEAN.tmux_sockets.append(sock)
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    os.environ.pop("TMUX", None)  # a private server, even when run from inside tmux
    panes = {}
    for i, (name, (root, _fin, _run)) in enumerate(roots.items()):
        env = cockpit_env(os.path.join(work, f"home-{i}"))
        panes[name] = (env, [args.bin, "tui", "--jobs-dir", root])
    panes["htop -d 15"] = (cockpit_env(os.path.join(work, "home-htop")), ["htop", "-d", "15"])
    pids = {}
    for i, (name, (env, argv)) in enumerate(panes.items()):
        envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
        cmd = f"exec env -i {envs} {' '.join(shlex.quote(a) for a in argv)}"
        session = f"s{i}"
        subprocess.run(tmux + ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                               "-s", session, cmd], check=True)
        pid = subprocess.run(tmux + ["display-message", "-p", "-t", session, "#{pane_pid}"],
                             check=True, capture_output=True, text=True).stdout.strip()
        pids[name] = (int(pid), session)

    def screen(session):
        return subprocess.run(tmux + ["capture-pane", "-p", "-t", session],
                              capture_output=True, text=True).stdout

    for name, (pid, session) in pids.items():
        want = "jobs 1/1000" if name.startswith("luzia") else "PID"
        deadline = time.monotonic() + 30
        while want not in screen(session):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start:\n{screen(session)}")
            time.sleep(0.1)
    for name, (pid, _s) in pids.items():
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        if comm != name.split(",")[0].split()[0]:
            raise RuntimeError(f"the pane of {name} runs {comm!r}")
    time.sleep(5)  # settle
    hz = os.sysconf("SC_CLK_TCK")
    window = args.idle_seconds
    step = 10
    marks = {name: [proc_ticks(pid)] for name, (pid, _s) in pids.items()}
    times = [time.monotonic()]
    while times[-1] - times[0] < window - 0.5:
        time.sleep(min(step, window - (time.monotonic() - times[0])))
        times.append(time.monotonic())
        for name, (pid, _s) in pids.items():
            marks[name].append(proc_ticks(pid))
    res = {"hz": hz, "seconds": times[-1] - times[0], "cases": {}}
    for name, ticks in marks.items():
        total = (ticks[-1] - ticks[0]) / hz
        per_window = [100.0 * (ticks[k + 1] - ticks[k]) / hz / (times[k + 1] - times[k])
                      for k in range(len(ticks) - 1)]
        res["cases"][name] = {"cpu_seconds": total, "ticks": ticks[-1] - ticks[0],
                              "percent": 100.0 * total / (times[-1] - times[0]),
                              "windows_percent": per_window}
        print(f"  {name}: {res['cases'][name]['percent']:.3f} % of one core "
              f"({ticks[-1] - ticks[0]} ticks in {times[-1] - times[0]:.1f} s)", flush=True)
    out["idle"] = res
    subprocess.run(tmux + ["kill-server"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CLEAN.tmux_sockets.remove(sock)
    CLEAN.stop(sleeper)
    CLEAN.rmdir(work)


# --------------------------------------------------------------------------------------------
# 4. Bytes written to the terminal per second


def bench_bytes(args, out):
    res = {}
    for case, rate in (("idle", 0), ("20 lines/s", 20)):
        work = CLEAN.mkdtemp("bytes")
        sleeper = live_process()
        root = os.path.join(work, "jobs")
        sel = make_root(root, 900, 100, sleeper.pid, seed=4)
        log = os.path.join(root, sel, "output.log")
        env = cockpit_env(os.path.join(work, "home"))
        p = luzia_pty(args.bin, root, env)
        rng = random.Random(5)
        written = frames = 0
        try:
            if p.wait_for(lambda s: f"output {sel}" in s and "jobs 1/1000" in s, 30) is None:
                raise RuntimeError("the cockpit did not start:\n" + p.screen.text())
            p.pump(3.0)  # settle
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            try:
                buckets = [0] * args.bytes_seconds
                start = time.monotonic()
                end = start + args.bytes_seconds
                next_write = start
                while (now := time.monotonic()) < end:
                    if rate and now >= next_write:
                        line = (log_line(rng) + " " + sentence(rng, 20, 20))[:79].rstrip()
                        os.write(fd, line.encode() + b"\n")
                        written += 1
                        next_write += 1.0 / rate
                    wait = end - now
                    if rate:
                        wait = min(wait, max(0.0, next_write - now))
                    before, frames_before = p.bytes, p.frames
                    t = p.read(wait)
                    if t is not None and t < end:
                        buckets[min(int(t - start), len(buckets) - 1)] += p.bytes - before
                        frames += p.frames - frames_before
            finally:
                os.close(fd)
            elapsed = time.monotonic() - start
        finally:
            p.close()
        res[case] = {"per_second": buckets, "total": sum(buckets), "seconds": elapsed,
                     "lines_written": written, "frames": frames}
        print(f"  {case}: {sum(buckets) / args.bytes_seconds / 1000:.2f} KB/s average, "
              f"max second {max(buckets) / 1000:.2f} KB; {frames} frames, "
              f"{sum(buckets) / max(frames, 1):.0f} bytes a frame ({written} lines written)",
              flush=True)
        CLEAN.stop(sleeper)
        CLEAN.rmdir(work)
    out["bytes"] = res


# --------------------------------------------------------------------------------------------
# 5. Resident memory with 10,000 jobs and a 2 GiB log selected


def big_log():
    """The 2 GiB log of real text lines, written once and reused while its size is right."""
    try:
        st = os.stat(BIG_LOG)
        if st.st_size == BIG_LOG_SIZE:
            with open(BIG_LOG, "rb") as f:
                f.seek(BIG_LOG_SIZE - 64)
                if BIG_LOG_END in f.read():
                    return BIG_LOG
    except FileNotFoundError:
        pass
    print(f"  writing {BIG_LOG} (2 GiB, once)", flush=True)
    tmp = BIG_LOG + f".{os.getpid()}.tmp"
    chunk = corpus()
    end = BIG_LOG_END + b" the last line of a 2 GiB log\n"
    try:
        with open(tmp, "wb") as f:
            left = BIG_LOG_SIZE - len(end)
            n = 0
            while left > 0:
                head = b"chunk %d\n" % n
                n += 1
                piece = head + chunk
                if len(piece) > left:
                    cut = piece.rfind(b"\n", 0, left - 1) + 1
                    piece = piece[:cut]
                    pad = left - len(piece)  # one filler line of exactly `pad` bytes
                    piece += b"." * (pad - 1) + b"\n" if pad > 0 else b""
                f.write(piece)
                left -= len(piece)
            f.write(end)
        os.replace(tmp, BIG_LOG)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if os.path.getsize(BIG_LOG) != BIG_LOG_SIZE:
        raise RuntimeError(f"{BIG_LOG} has the wrong size")
    return BIG_LOG


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])  # kB
    return out


def bench_memory(args, out):
    log = big_log()
    work = CLEAN.mkdtemp("memory")
    sleeper = live_process()
    root = os.path.join(work, "jobs")
    sel = make_root(root, 9000, 1000, sleeper.pid, selected_log=log, seed=6)
    title = jobs_title(10000)
    rss, hwm, tail_shown = [], [], 0
    for i in range(args.memory_runs):
        env = cockpit_env(os.path.join(work, f"home-{i}"))
        p = luzia_pty(args.bin, root, env)
        try:
            if p.wait_for(lambda s: title.search(s), 60) is None:
                raise RuntimeError("the cockpit never showed `jobs 1/10000`:\n" + p.screen.text())
            p.pump(2.0)
            st = proc_status(p.pid)
            text = p.screen.text()
            if f"output {sel}" not in text:
                raise RuntimeError("the 2 GiB job is not selected:\n" + text)
            tail_shown += BIG_LOG_END.decode() in text
            rss.append(st["VmRSS"] / 1024)
            hwm.append(st["VmHWM"] / 1024)
        finally:
            p.close()
    print(f"  VmRSS p50 {pct(rss, 50):.1f} MiB, VmHWM p50 {pct(hwm, 50):.1f} MiB "
          f"({len(rss)} runs; the log's last line on screen in {tail_shown})", flush=True)
    # For comparison: the same root with that job's log replaced by a small one, and no jobs.
    small = os.path.join(root, sel, "output.log")
    os.unlink(small)
    with open(small, "wb") as f:
        f.write(text_slice(random.Random(7), 8192))
    empty = os.path.join(work, "empty")
    os.mkdir(empty)
    context = {}
    for case, r, want in (("small log", root, title), ("no jobs", empty, jobs_title_empty())):
        c_rss, c_hwm = [], []
        for i in range(3):
            env = cockpit_env(os.path.join(work, f"home-{case.replace(' ', '-')}-{i}"))
            p = luzia_pty(args.bin, r, env)
            try:
                if p.wait_for(lambda s: want.search(s), 60) is None:
                    raise RuntimeError("the cockpit did not start:\n" + p.screen.text())
                p.pump(2.0)
                st = proc_status(p.pid)
                c_rss.append(st["VmRSS"] / 1024)
                c_hwm.append(st["VmHWM"] / 1024)
            finally:
                p.close()
        context[case] = {"rss_mib": c_rss, "hwm_mib": c_hwm}
        print(f"  {case}: VmRSS p50 {pct(c_rss, 50):.1f} MiB, VmHWM p50 {pct(c_hwm, 50):.1f} MiB "
              f"({len(c_rss)} runs)", flush=True)
    out["memory"] = {"rss_mib": rss, "hwm_mib": hwm, "log_bytes": os.path.getsize(log),
                     "tail_shown": tail_shown, "runs": args.memory_runs, "context": context}
    CLEAN.stop(sleeper)
    CLEAN.rmdir(work)


# --------------------------------------------------------------------------------------------
# The table


def verdict(ok):
    return "met" if ok else "NOT MET"


def report(out):
    rows = []

    def row(what, n, figures, target, ok):
        rows.append((what, str(n), figures, target, "" if ok is None else verdict(ok)))

    ff = out.get("first-frame")
    if ff:
        for name, r in ff.items():
            for key, label in (("logged_ms", "log line"), ("external_ms", "spawn to screen")):
                v = r[key]
                row(f"first frame, 10,000 jobs, {label} ({name})", len(v),
                    f"p50 {pct(v, 50):.1f} ms  p90 {pct(v, 90):.1f}  min {min(v):.1f}  max {max(v):.1f}",
                    "< 200 ms", pct(v, 50) < 200)
            v = r["cpu_ms"]
            row(f"first frame, CPU time used by then ({name})", len(v),
                f"p50 {pct(v, 50):.0f} ms  min {min(v):.0f}  max {max(v):.0f} (10 ms ticks)", "", None)
    lat = out.get("latency")
    if lat:
        for key, label in (("luzia_ms", "luzia"), ("tail_ms", "tail -f")):
            v = lat[key]
            missed = lat[key.replace("_ms", "_missed")]
            figures = (f"p50 {pct(v, 50):.1f}  p90 {pct(v, 90):.1f}  p99 {pct(v, 99):.1f}  "
                       f"max {max(v):.1f} ms" + (f"  ({missed} missed)" if missed else ""))
            if label == "luzia":
                row(f"appended line visible, {label}", len(v), figures,
                    "p50 < 20, p99 < 50 ms",
                    pct(v, 50) < 20 and pct(v, 99) < 50 and missed == 0)
            else:
                row(f"appended line visible, {label}", len(v), figures, "", None)
    idle = out.get("idle")
    if idle:
        for name, c in idle["cases"].items():
            w = c["windows_percent"]
            row(f"idle CPU over {idle['seconds']:.0f} s, {name}", 1,
                f"{c['percent']:.3f} % of a core ({c['ticks']} ticks); 10 s windows max {max(w):.2f} %",
                "< 0.5 %" if name.startswith("luzia") else "",
                c["percent"] < 0.5 if name.startswith("luzia") else None)
    b = out.get("bytes")
    if b:
        for case, r in b.items():
            per = r["per_second"]
            frames = r.get("frames", 0)
            row(f"bytes to the terminal, {case}", len(per),
                f"mean {r['total'] / len(per) / 1000:.2f} KB/s  p50 {pct(per, 50) / 1000:.2f}  "
                f"max {max(per) / 1000:.2f} KB/s; {frames / len(per):.1f} frames/s, "
                f"{r['total'] / max(frames, 1):.0f} B/frame",
                "< 30 KB/s", max(per) < 30000 and r["total"] / len(per) < 30000)
    m = out.get("memory")
    if m:
        row("memory, 10,000 jobs + 2 GiB log selected: VmRSS", len(m["rss_mib"]),
            f"p50 {pct(m['rss_mib'], 50):.1f} MiB  max {max(m['rss_mib']):.1f}",
            "< 60 MB", max(m["rss_mib"]) * 1.048576 < 60)
        row("memory, same: VmHWM (peak)", len(m["hwm_mib"]),
            f"p50 {pct(m['hwm_mib'], 50):.1f} MiB  max {max(m['hwm_mib']):.1f}",
            "< 60 MB", max(m["hwm_mib"]) * 1.048576 < 60)
        for case, c in m.get("context", {}).items():
            what = "10,000 jobs, small log selected" if case == "small log" else "no jobs at all"
            row(f"memory, {what}: VmRSS / VmHWM", len(c["rss_mib"]),
                f"p50 {pct(c['rss_mib'], 50):.1f} / {pct(c['hwm_mib'], 50):.1f} MiB", "", None)
    head = ("measurement", "n", "figures", "target", "")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    print()
    for r in [head] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(5)).rstrip())


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": os.uname().release,
            "load": os.getloadavg()}


def build_info(binary):
    """The binary's checksum and time, and the commit of the tree it was probably built from."""
    h = hashlib.sha256()
    with open(binary, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    built = datetime.fromtimestamp(os.stat(binary).st_mtime).strftime("%Y-%m-%d %H:%M:%S")
    info = f"sha256 {h.hexdigest()[:12]}, built {built}"
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src",
                                "Cargo.toml", "Cargo.lock"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            info += f"; tree at {head}" + (" with changes in src/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", nargs="*", metavar="NAME",
                    help="any of: " + " ".join(ALL) + " (default: all)")
    ap.add_argument("--bin", default=os.environ.get("LUZIA_BIN", DEFAULT_BIN),
                    help="the luzia binary (default: target/release/luzia)")
    ap.add_argument("--runs", type=int, default=10, help="first-frame runs per set (10)")
    ap.add_argument("--no-cold", dest="cold", action="store_false",
                    help="skip the cold-cache first-frame runs")
    ap.add_argument("--samples", type=int, default=200, help="latency samples (200)")
    ap.add_argument("--idle-seconds", type=int, default=60, help="idle window (60)")
    ap.add_argument("--bytes-seconds", type=int, default=30, help="bytes window (30)")
    ap.add_argument("--memory-runs", type=int, default=5, help="memory runs (5)")
    ap.add_argument("--json", help="also write every raw figure to this file")
    args = ap.parse_args()
    which = args.which or ALL
    unknown = [w for w in which if w not in ALL]
    if unknown:
        ap.error(f"unknown measurement {' '.join(unknown)}: choose from {' '.join(ALL)}")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    out = {"machine": machine(), "bin": args.bin, "build": build_info(args.bin)}
    m = out["machine"]
    print(f"{m['nproc']} cores, {m['cpu']}, Linux {m['kernel']}, load {m['load'][0]:.2f}; "
          f"terminal {COLS}x{ROWS}", flush=True)
    print(f"{args.bin}: {out['build']}", flush=True)
    # A private copy: a rebuild during the run must not mix two builds in one set of figures.
    copy = os.path.join(CLEAN.mkdtemp("bin"), "luzia")
    shutil.copy2(args.bin, copy)
    args.bin = copy
    benches = {"first-frame": bench_first_frame, "latency": bench_latency, "idle": bench_idle,
               "bytes": bench_bytes, "memory": bench_memory}
    try:
        for name in ALL:
            if name in which:
                load = os.getloadavg()
                print(f"{name}: (load average {load[0]:.2f})", flush=True)
                t = time.monotonic()
                benches[name](args, out)
                out.setdefault("load", {})[name] = [load[0], os.getloadavg()[0]]
                print(f"  ({time.monotonic() - t:.0f} s; load average {os.getloadavg()[0]:.2f})",
                      flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        CLEAN.all()
        sys.exit(130)
    finally:
        CLEAN.all()
    out["load_after"] = os.getloadavg()
    report(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
