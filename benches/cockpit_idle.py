#!/usr/bin/env python3
"""Idle CPU of the cockpit (`luzia tui`) with large roots, next to an older build and htop.

    cargo build --release
    python3 benches/cockpit_idle.py --base /path/to/older/luzia [--sizes 1000 10000 100000]

For each size N, a root of N jobs is written, a tenth of them running: each running job's
meta.json names a live process of its own (`sleep`), started just before its meta.json says the job
started, so that the cockpit takes it for the job's. Then, in a private tmux server (terminal
160x45), the cockpit under test, the `--base` cockpit (when given) and `htop -d 15` run side by
side on that root, and the CPU each uses (utime + stime of `/proc/PID/stat`) is read every 10 s
over the window (60 s), after the cockpits have shown their first frame and settled. With
`--repeat R` the window is measured R times per size and the median is given; every 10 s window
is kept in the JSON.

The cockpits' own threads are reported too (`/proc/PID/task/*/stat`), which says where the time
goes: `luzia` (the event loop: alarms, frames), `luzia-reads` (pid checks, reads), and so on.

Fixtures live under `--work` (default target/bench/idle) and are removed at the end;
every process started here (the sleepers, tmux) is stopped on every way out, Ctrl-C included.
Python 3 standard library only; tmux must be installed, and htop (else `top -d 1 -b` is used).
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLS, ROWS = 160, 45


class Cleanup:
    """Everything started here, stopped on every way out."""

    def __init__(self):
        self.sleepers = []
        self.sockets = []
        self.dirs = []

    def all(self):
        for sock in self.sockets:
            subprocess.run(["tmux", "-L", sock, "kill-server"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sockets.clear()
        for p in self.sleepers:
            try:
                p.kill()
            except OSError:
                pass
        for p in self.sleepers:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.sleepers.clear()
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.dirs.clear()


CLEAN = Cleanup()


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


SPAWNED = []


def sleepers(n):
    """`n` live processes, one per running job, each started now."""
    while len(CLEAN.sleepers) < n:
        # When it started, to the second: the job's `started` (spawning 10,000 takes a while,
        # and a process that started over 10 s after its job's start is not the job's).
        SPAWNED.append(datetime.now(timezone.utc).replace(microsecond=0))
        CLEAN.sleepers.append(subprocess.Popen(
            ["sleep", "100000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))
    return CLEAN.sleepers[:n]


def make_root(root, total, running, procs):
    """`total` job directories, the last `running` of them running with a pid of `procs` each."""
    os.makedirs(root)
    now = datetime.now(timezone.utc)
    for i in range(total):
        is_running = i >= total - running
        if is_running:
            k = i - (total - running)
            started, pid = SPAWNED[k], procs[k].pid
        else:
            started = now - timedelta(seconds=3600 + i)
            pid = 100000 + i  # above pid_max: never alive
        job_id = f"{started.strftime('%H%M%S')}-{i:05x}"
        d = os.path.join(root, job_id)
        os.mkdir(d)
        meta = {"id": job_id, "project": f"p{i % 7}", "task": f"task number {i}",
                "type": "agent", "user": "bench", "pid": str(pid), "started": iso(started),
                "status": "running"}
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(d, "output.log"), "w") as f:
            f.write(f"working on task {i}\n")
            if not is_running:
                f.write(f"exit:{0 if i % 10 else 1}\n")


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def thread_ticks(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


def env_for(home):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
           "XDG_STATE_HOME": os.path.join(home, "state"),
           "XDG_CONFIG_HOME": os.path.join(home, "config"),
           "TERM": "xterm-256color", "LANG": "C.UTF-8", "LUZIA_LOG": "info"}
    for d in (env["XDG_STATE_HOME"], env["XDG_CONFIG_HOME"]):
        os.makedirs(d, exist_ok=True)
    return env


def measure(args, root, n, work):
    """One window: every pane started, shown, settled, then sampled every 10 s."""
    sock = f"luzia-idle-{os.getpid()}"
    CLEAN.sockets.append(sock)
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    os.environ.pop("TMUX", None)
    panes = {"luzia (this build)": [args.bin, "tui", "--jobs-dir", root]}
    if args.base:
        panes["luzia (base)"] = [args.base, "tui", "--jobs-dir", root]
    panes[args.monitor_name] = args.monitor
    pids = {}
    for i, (name, argv) in enumerate(panes.items()):
        env = env_for(os.path.join(work, f"home-{i}"))
        envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
        cmd = f"exec env -i {envs} {' '.join(shlex.quote(a) for a in argv)}"
        subprocess.run(tmux + ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                               "-s", f"s{i}", cmd], check=True)
        pid = subprocess.run(tmux + ["display-message", "-p", "-t", f"s{i}", "#{pane_pid}"],
                             check=True, capture_output=True, text=True).stdout.strip()
        pids[name] = (int(pid), f"s{i}")
    running = int(n * args.running)
    for name, (pid, session) in pids.items():
        # The first frame, with every running job taken for running (its pid is the job's).
        want = [f"jobs 1/{n}", f"Active {running} "] if name.startswith("luzia") else []
        deadline = time.monotonic() + 300
        while True:
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True).stdout
            if all(w in screen for w in want) and screen.strip():
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not show {want!r}:\n{screen}")
            time.sleep(0.2)
        if "polling every" in screen:
            raise RuntimeError(f"{name} polls the root (inotify watches ran out?):\n{screen}")
    time.sleep(args.settle)
    hz = os.sysconf("SC_CLK_TCK")
    marks = {name: [ticks(pid)] for name, (pid, _s) in pids.items()}
    threads0 = {name: thread_ticks(pid) for name, (pid, _s) in pids.items()
                if name.startswith("luzia")}
    times = [time.monotonic()]
    while times[-1] - times[0] < args.seconds - 0.5:
        time.sleep(min(10, args.seconds - (time.monotonic() - times[0])))
        times.append(time.monotonic())
        for name, (pid, _s) in pids.items():
            marks[name].append(ticks(pid))
    span = times[-1] - times[0]
    for name, (_pid, session) in pids.items():
        screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", session],
                                capture_output=True, text=True).stdout
        if name.startswith("luzia") and "polling every" in screen:
            raise RuntimeError(f"{name} fell back to polling the root:\n{screen}")
    res = {}
    for name, t in marks.items():
        res[name] = {
            "percent": 100.0 * (t[-1] - t[0]) / hz / span,
            "ticks": t[-1] - t[0],
            "windows_percent": [100.0 * (t[k + 1] - t[k]) / hz / (times[k + 1] - times[k])
                                for k in range(len(t) - 1)],
        }
        if name in threads0:
            after = thread_ticks(pids[name][0])
            res[name]["threads_percent"] = {
                th: 100.0 * (v - threads0[name].get(th, 0)) / hz / span
                for th, v in sorted(after.items()) if v - threads0[name].get(th, 0) > 0}
    subprocess.run(tmux + ["kill-server"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CLEAN.sockets.remove(sock)
    return span, res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "target", "release", "luzia"))
    ap.add_argument("--base", help="an older luzia binary, measured beside --bin")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--running", type=float, default=0.1, help="share of jobs running (0.1)")
    ap.add_argument("--seconds", type=int, default=60, help="window (60)")
    ap.add_argument("--settle", type=int, default=10, help="wait after the first frame (10)")
    ap.add_argument("--repeat", type=int, default=1, help="windows per size (1)")
    ap.add_argument("--work", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "bench", "idle"))
    ap.add_argument("--json", help="also write every figure to this file")
    args = ap.parse_args()
    for b in [args.bin] + ([args.base] if args.base else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} not found: build it first (cargo build --release)")
    if shutil.which("htop"):
        args.monitor_name, args.monitor = "htop -d 15", ["htop", "-d", "15"]
    else:
        args.monitor_name, args.monitor = "top -d 1 -b", ["top", "-d", "1", "-b"]
    if os.path.exists(args.work):
        sys.exit(f"{args.work} exists: remove it, or name another with --work")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    out = {"load": os.getloadavg(), "nproc": os.cpu_count(), "sizes": {}}
    try:
        os.makedirs(args.work)
        CLEAN.dirs.append(args.work)
        for n in args.sizes:
            running = int(n * args.running)
            procs = sleepers(running)
            root = os.path.join(args.work, f"jobs-{n}")
            t = time.monotonic()
            make_root(root, n, running, procs)
            print(f"{n} jobs ({running} running): root written in "
                  f"{time.monotonic() - t:.0f} s; load {os.getloadavg()[0]:.2f}", flush=True)
            runs = []
            for r in range(args.repeat):
                span, res = measure(args, root, n, os.path.join(args.work, f"home-{n}-{r}"))
                runs.append(res)
                print(f"  window {r + 1}: {span:.1f} s", flush=True)
                for name, c in res.items():
                    th = c.get("threads_percent")
                    threads = ("  [" + ", ".join(f"{k} {v:.2f}" for k, v in th.items()) + "]"
                               if th else "")
                    print(f"    {name}: {c['percent']:.3f} % of a core{threads}", flush=True)
            out["sizes"][n] = {"running": running, "runs": runs, "median_percent": {
                name: statistics.median(run[name]["percent"] for run in runs)
                for name in runs[0]}}
            shutil.rmtree(root, ignore_errors=True)
        print("\nmedian idle CPU, % of one core:")
        names = list(out["sizes"][args.sizes[0]]["median_percent"])
        print("  jobs (running) | " + " | ".join(names))
        for n, s in out["sizes"].items():
            print(f"  {n} ({s['running']}) | " +
                  " | ".join(f"{s['median_percent'][k]:.2f}" for k in names))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)
    finally:
        CLEAN.all()


if __name__ == "__main__":
    main()
