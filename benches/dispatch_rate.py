#!/usr/bin/env python3
"""Dispatches per second, end to end: whole `luzia run` processes against the release binary.

    cargo build --release && python3 benches/dispatch_rate.py [--count 200] [--parallel 4]
        [--prefill 1000] [--dir DIR] [--no-build]

Each dispatch is `luzia --config CONFIG run bench TASK`, a new process: process start, config,
the scan that counts running jobs, the job directory (mkdir, prompt.txt, run.sh, meta.json, each
fsynced) and the detached supervisor's spawn are all inside the figure; the supervisor's own
work (running the agent, the exit line) happens after `run` has returned. The agent is `true`.
`max_concurrent` is set far above the count, so nothing is queued: this measures dispatch, not
the queue.

A floor first: `luzia --config CONFIG queue` COUNT times (process start and config, nothing
dispatched). Then three runs, each in a fresh jobs root:

  sequential   COUNT dispatches one after another
  parallel     COUNT dispatches from PARALLEL threads at once
  prefilled    sequential again, in a jobs root that already holds PREFILL finished jobs
               (every `luzia run` scans the jobs root to count running agents, so this is
               what a long-lived root costs; --prefill 10000 takes minutes)

For each: dispatches/s (COUNT over the wall time from the first spawn to the last exit), the
latency of one `luzia run` (p50, p95, max), and the time until every agent has finished and its
exit line is written. Five warm-up dispatches before each run are not counted. The Python
orchestrator's figure to compare with is 434 tasks/s.

Python 3 standard library only. Every process the script starts (the supervisors are detached,
in their own sessions) is stopped on the way out, also on Ctrl-C, and the temporary directories
are removed.
"""

import argparse
import atexit
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(REPO, "target", "release", "luzia")
WARMUP = 5
ORCHESTRATOR_RATE = 434.0

TEMP_DIRS = []


# --------------------------------------------------------------------------------------------
# Cleaning up: supervisors and agents are not our children; they are found through /proc by
# the temporary directory on their command line or in their environment.


def mentions(data, path):
    needle = path.encode()
    start = 0
    while True:
        i = data.find(needle, start)
        if i < 0:
            return False
        after = data[i + len(needle): i + len(needle) + 1]
        if after in (b"", b"\0", b"/"):
            return True
        start = i + 1


def processes_mentioning(path):
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        for f in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{f}", "rb") as fh:
                    if mentions(fh.read(), path):
                        found.append(pid)
                        break
            except OSError:
                pass
    return found


def stop_everything():
    for d in TEMP_DIRS:
        quiet = 0
        deadline = time.monotonic() + 20
        while quiet < 3 and time.monotonic() < deadline:
            pids = processes_mentioning(d)
            quiet = 0 if pids else quiet + 1
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        shutil.rmtree(d, ignore_errors=True)
    TEMP_DIRS.clear()


def on_signal(signum, _frame):
    stop_everything()
    sys.exit(128 + signum)


# --------------------------------------------------------------------------------------------
# One measured run.


class Root:
    """A temporary directory with a config, a jobs root, a project and an empty config home."""

    def __init__(self, parent, prefill):
        self.dir = tempfile.mkdtemp(prefix="luzia-dispatch-rate-", dir=parent)
        TEMP_DIRS.append(self.dir)
        self.jobs = os.path.join(self.dir, "jobs")
        self.notes = os.path.join(self.dir, "notifications.log")
        project = os.path.join(self.dir, "project")
        for d in (self.jobs, project, os.path.join(self.dir, "xdg")):
            os.mkdir(d)
        self.config = os.path.join(self.dir, "config.toml")
        with open(self.config, "w") as f:
            f.write(
                f"jobs_dir = {json.dumps(self.jobs)}\n"
                f"notifications_log = {json.dumps(self.notes)}\n"
                f"queue_dir = {json.dumps(os.path.join(self.dir, 'queue'))}\n"
                "[agent]\ncommand = [\"true\"]\nmax_concurrent = 1000000\n"
                f"[projects.bench]\npath = {json.dumps(project)}\n"
            )
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LUZIA_")}
        self.env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "xdg")
        self.prefilled = prefill
        for i in range(prefill):
            jid = f"old-{i:06d}"
            d = os.path.join(self.jobs, jid)
            os.mkdir(d)
            meta = {"id": jid, "project": "bench", "task": f"old task {i}", "type": "agent",
                    "user": "", "started": "2026-01-09T14:23:15Z", "status": "running",
                    "debug": False, "argv": ["true"], "cwd": project,
                    "finished": "2026-01-09T14:23:16Z", "exit_code": 0}
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump(meta, f)
            with open(os.path.join(d, "output.log"), "w") as f:
                f.write("did the work\n\nexit:0\n")

    def floor(self, binary, _i):
        """`luzia queue` on an empty queue: process start and config, no dispatch."""
        t0 = time.monotonic()
        r = subprocess.run([binary, "--config", self.config, "queue"], env=self.env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f"luzia queue failed: {r.stderr.decode()}")
        return None, time.monotonic() - t0

    def dispatch(self, binary, i):
        t0 = time.monotonic()
        r = subprocess.run(
            [binary, "--config", self.config, "run", "bench", f"task number {i}"],
            env=self.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
        )
        t1 = time.monotonic()
        out = r.stdout.decode(errors="replace").strip()
        if r.returncode != 0 or out.startswith("queued") or not out:
            raise SystemExit(f"luzia run failed ({r.returncode}): {out} {r.stderr.decode()}")
        return out, t1 - t0

    def new_ids(self):
        return [n for n in os.listdir(self.jobs) if not n.startswith("old-")]

    def all_finished(self, ids):
        for jid in ids:
            try:
                with open(os.path.join(self.jobs, jid, "output.log"), "rb") as f:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - 64))
                    if not f.read().endswith(b"\nexit:0\n"):
                        return False
            except OSError:
                return False
        return True


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def measure_floor(binary, parent, count):
    root = Root(parent, 0)
    for i in range(WARMUP):
        root.floor(binary, i)
    latencies = []
    start = time.monotonic()
    for i in range(count):
        latencies.append(root.floor(binary, i)[1])
    wall = time.monotonic() - start
    latencies.sort()
    stop_everything()
    return {"name": "floor: `luzia queue` (no dispatch)", "rate": count / wall,
            "p50_ms": percentile(latencies, 50) * 1e3, "p95_ms": percentile(latencies, 95) * 1e3,
            "max_ms": latencies[-1] * 1e3, "finished_s": float("nan")}


def measure(name, binary, parent, count, parallel, prefill):
    root = Root(parent, prefill)
    for i in range(WARMUP):
        root.dispatch(binary, -1 - i)
    warm = set(root.new_ids())
    while not root.all_finished(warm):
        time.sleep(0.01)

    latencies = []
    start = time.monotonic()
    if parallel <= 1:
        for i in range(count):
            latencies.append(root.dispatch(binary, i)[1])
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
            for _, lat in pool.map(lambda i: root.dispatch(binary, i), range(count)):
                latencies.append(lat)
    wall = time.monotonic() - start

    ids = [j for j in root.new_ids() if j not in warm]
    if len(ids) != count:
        raise SystemExit(f"{name}: expected {count} new job directories, found {len(ids)}")
    deadline = time.monotonic() + 120
    while not root.all_finished(ids):
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: agents did not all finish within 120 s")
        time.sleep(0.005)
    done = time.monotonic() - start

    latencies.sort()
    result = {
        "name": name,
        "parallel": parallel,
        "prefill": prefill,
        "rate": count / wall,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p95_ms": percentile(latencies, 95) * 1e3,
        "max_ms": latencies[-1] * 1e3,
        "wall_s": wall,
        "finished_s": done,
    }
    stop_everything()
    return result


def filesystem_of(path):
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                mnt, fstype = fields[1], fields[2]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                    best, kind = mnt, fstype
    except OSError:
        pass
    return kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200, help="dispatches per run (200)")
    ap.add_argument("--parallel", type=int, default=4, help="threads of the parallel run (4)")
    ap.add_argument("--prefill", type=int, default=1000,
                    help="finished jobs already in the root of the third run (1000; 0 skips it)")
    ap.add_argument("--dir", default=tempfile.gettempdir(),
                    help="where the temporary jobs roots go (the system's temporary directory)")
    ap.add_argument("--bin", default=DEFAULT_BIN, help="the luzia binary")
    ap.add_argument("--no-build", action="store_true", help="do not run cargo build --release")
    args = ap.parse_args()

    if not args.no_build and args.bin == DEFAULT_BIN:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"no luzia binary at {args.bin}: run `cargo build --release` first")

    atexit.register(stop_everything)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    parent = os.path.realpath(args.dir)
    print(f"luzia: {args.bin}")
    print(f"jobs roots under {parent} ({filesystem_of(parent)}), {os.cpu_count()} CPUs, "
          f"{args.count} dispatches per run, agent `true`")
    runs = [("sequential", 1, 0), (f"{args.parallel} parallel", args.parallel, 0)]
    if args.prefill:
        runs.append((f"sequential, {args.prefill} jobs in root", 1, args.prefill))
    results = [measure_floor(args.bin, parent, args.count)]
    for name, parallel, prefill in runs:
        r = measure(name, args.bin, parent, args.count, parallel, prefill)
        results.append(r)
        print(f"  done: {name}", file=sys.stderr)

    print()
    print(f"{'run':<34} {'dispatches/s':>12} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} "
          f"{'all finished':>13} {'vs 434/s':>9}")
    for r in results:
        fin = "-" if r["finished_s"] != r["finished_s"] else f"{r['finished_s']:.2f} s"
        print(f"{r['name']:<34} {r['rate']:>12.0f} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} "
              f"{r['max_ms']:>8.1f} {fin:>13} {r['rate'] / ORCHESTRATOR_RATE:>8.2f}x")


if __name__ == "__main__":
    main()
