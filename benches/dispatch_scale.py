#!/usr/bin/env python3
"""`luzia run` latency against the size of the jobs root, this build beside another, and `luzia gc`.

    cargo build --release && python3 benches/dispatch_scale.py --base-bin OTHER_LUZIA
        [--sizes 0,1000,10000,100000] [--count 30] [--dir DIR] [--gc] [--bin LUZIA]

For each size, a jobs root is written holding that many finished jobs (meta.json, prompt.txt and
an output.log of a few hundred bytes to 4 KB ending in its exit line, like benches/scan.rs makes;
every file dated 60 days back), with a config whose agent is `true` and whose `max_concurrent` is
far above the count, so nothing is queued. Then, in the same root, the first three taking turns
call by call (so that a load coming and going weighs on each alike), then the last two:

  floor      `luzia queue` COUNT times: process start and config, nothing dispatched
  base       `luzia run` COUNT times with --base-bin (the commit before, built apart)
  this       `luzia run` COUNT times with this build
  rescan     this build again, each dispatch just after a finished job made by someone else
             (a directory luzia did not make: the count reads the root whole once)
  fsync      one bare fsync of a small new file in the jobs root, COUNT times: what the disk
             charges for one fsync just then

Three warm-up dispatches before each run are not counted, and each run waits until every agent
it started has written its exit line. p50 and p90 of the time one `luzia run` takes, from spawn
to exit, are printed as a table.

With --gc, after the largest size: `luzia gc --older-than 30d --dry-run`, then `luzia gc
--older-than 30d` (every fixture job is 60 days old), timed, while `luzia status` runs in a loop
beside it; every status must exit 0. Its latencies are printed too.

Python 3 standard library only. Fixtures go under DIR (default target/bench/dispatch) and are
removed on the way out, also on Ctrl-C; every process the script started is stopped.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(REPO, "target", "release", "luzia")
WARMUP = 3
AGE = 60 * 86400
PROJECTS = ["musica", "overbits", "dss", "librechat", "admin", "assistant"]
TASKS = [
    "Run tests and report results",
    "Fix the failing migration in the billing module",
    "Review the open pull request and summarise the risks",
    "Upgrade the dependencies and make the build pass again",
    "Write documentation for the deployment scripts",
]
LOG_LINES = [
    "Reading src/main.rs",
    "Running cargo test --workspace",
    "test result: ok. 142 passed; 0 failed; 3 ignored",
    "Editing src/billing/migrate.rs: replaced 12 lines",
    "Searching the repository for callers of `apply_discount`",
    "All checks passed; writing the summary",
]

MADE = []


def stop_everything():
    """Kills what still runs from a fixture (supervisors are detached), then removes it."""
    for d in MADE:
        needle = d.encode()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if needle in f.read():
                        os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(d, ignore_errors=True)
    MADE.clear()


def on_signal(signum, _frame):
    stop_everything()
    sys.exit(128 + signum)


def write_root(base, size):
    """A fixture: config, project, queue and a jobs root of `size` finished jobs."""
    d = os.path.join(base, f"root-{size}")
    shutil.rmtree(d, ignore_errors=True)
    MADE.append(d)
    jobs = os.path.join(d, "jobs")
    project = os.path.join(d, "project")
    for p in (jobs, project, os.path.join(d, "xdg")):
        os.makedirs(p)
    then = time.time() - AGE
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(then))
    for i in range(size):
        jid = f"old{i:06d}-{i % 65536:04x}"
        job = os.path.join(jobs, jid)
        os.mkdir(job)
        project_name = PROJECTS[i % len(PROJECTS)]
        task = TASKS[i % len(TASKS)]
        code = {1: 1, 33: 1, 67: 1, 7: -9}.get(i % 100, 0)
        meta = {"id": jid, "project": project_name, "task": task, "type": "agent",
                "user": "", "started": stamp, "status": "running", "debug": False,
                "argv": ["true"], "cwd": project, "finished": stamp, "exit_code": code}
        files = {
            "meta.json": json.dumps(meta),
            "prompt.txt": f"You are working on the {project_name} project.\n\nTask: {task}\n",
            "output.log": "".join(
                f"[{n // 3600 % 24:02}:{n // 60 % 60:02}:{n % 60:02}] "
                f"{LOG_LINES[(i + n) % len(LOG_LINES)]}\n" for n in range(3 + i % 40)
            ) + f"\nexit:{code}\n",
        }
        for name, body in files.items():
            path = os.path.join(job, name)
            with open(path, "w") as f:
                f.write(body)
            os.utime(path, (then, then))
        os.utime(job, (then, then))
    config = os.path.join(d, "config.toml")
    with open(config, "w") as f:
        f.write(
            f"jobs_dir = {json.dumps(jobs)}\n"
            f"notifications_log = {json.dumps(os.path.join(d, 'notifications.log'))}\n"
            f"queue_dir = {json.dumps(os.path.join(d, 'queue'))}\n"
            "[agent]\ncommand = [\"true\"]\nmax_concurrent = 1000000\n"
            f"[projects.bench]\npath = {json.dumps(project)}\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LUZIA_")}
    env["XDG_CONFIG_HOME"] = os.path.join(d, "xdg")
    return {"dir": d, "jobs": jobs, "config": config, "env": env}


def luzia(root, binary, *args, timeout=600):
    t0 = time.monotonic()
    r = subprocess.run([binary, "--config", root["config"], *args], env=root["env"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return r, time.monotonic() - t0


def dispatch(root, binary, i):
    r, took = luzia(root, binary, "run", "bench", f"task number {i}")
    out = r.stdout.decode(errors="replace").strip()
    if r.returncode != 0 or not out or out.startswith("queued"):
        raise SystemExit(f"luzia run failed ({r.returncode}): {out} {r.stderr.decode()}")
    return out, took


def wait_finished(root, ids):
    deadline = time.monotonic() + 120
    for jid in ids:
        path = os.path.join(root["jobs"], jid, "output.log")
        while time.monotonic() < deadline:
            try:
                with open(path, "rb") as f:
                    if f.read().endswith(b"exit:0\n"):
                        break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            raise SystemExit(f"job {jid} never finished")


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(p / 100 * (len(v) - 1))))]


def run_block(root, count, step):
    """WARMUP + count calls of step(i) -> (job id or None, seconds); the timed latencies."""
    ids, times = [], []
    for i in range(WARMUP + count):
        jid, took = step(i)
        if jid:
            ids.append(jid)
        if i >= WARMUP:
            times.append(took)
    wait_finished(root, ids)
    return times


def foreign_then_dispatch(root, binary):
    n = [0]

    def step(i):
        n[0] += 1
        jid = f"foreign-{n[0]:04d}"
        d = os.path.join(root["jobs"], jid)
        os.mkdir(d)
        with open(os.path.join(d, "output.log"), "w") as f:
            f.write("exit:0\n")
        return dispatch(root, binary, i)

    return step


def run_interleaved(root, count, steps):
    """Like run_block for several steps at once, taking turns call by call, so that a load that
    comes and goes weighs on each alike; the timed latencies of each, by name."""
    ids, times = [], {name: [] for name in steps}
    for i in range(WARMUP + count):
        for name, step in steps.items():
            jid, took = step(i)
            if jid:
                ids.append(jid)
            if i >= WARMUP:
                times[name].append(took)
    wait_finished(root, ids)
    return times


def measure(root, args):
    rows = run_interleaved(root, args.count, {
        "floor": lambda i: (None, luzia(root, args.bin, "queue")[1]),
        "base": lambda i: dispatch(root, args.base_bin, i),
        "this": lambda i: dispatch(root, args.bin, i),
    })
    rows["rescan"] = run_block(root, max(5, args.count // 6), foreign_then_dispatch(root, args.bin))
    rows["fsync"] = [bare_fsync(root["jobs"]) for _ in range(args.count)]
    return rows


def bare_fsync(where):
    """One fsync of a small new file in the jobs root: what the disk charges for each fsync."""
    path = os.path.join(where, ".fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"x" * 512)
        t0 = time.monotonic()
        os.fsync(fd)
        return time.monotonic() - t0
    finally:
        os.close(fd)
        os.unlink(path)


def gc_beside_status(root, args):
    dry, dry_s = luzia(root, args.bin, "gc", "--older-than", "30d", "--dry-run")
    print(f"gc --dry-run: {dry_s * 1000:.0f} ms: {dry.stdout.decode().strip()}")
    stop = threading.Event()
    status = []

    def loop():
        while not stop.is_set():
            r, took = luzia(root, args.bin, "status")
            status.append((r.returncode, took, r.stderr.decode(errors="replace")[:200]))

    t = threading.Thread(target=loop)
    t.start()
    r, took = luzia(root, args.bin, "gc", "--older-than", "30d", timeout=3600)
    stop.set()
    t.join()
    print(f"gc: {took:.1f} s wall, exit {r.returncode}: {r.stdout.decode().strip()}")
    if r.stderr:
        print(f"gc stderr: {r.stderr.decode()[:500]}")
    bad = [s for s in status if s[0] != 0]
    lat = [s[1] * 1000 for s in status]
    print(f"luzia status during gc: {len(status)} runs, {len(bad)} failed; "
          f"p50 {pct(lat, 50):.0f} ms, max {max(lat):.0f} ms")
    for b in bad[:3]:
        print(f"  failed: exit {b[0]}: {b[2]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=DEFAULT_BIN)
    ap.add_argument("--base-bin", required=True)
    ap.add_argument("--sizes", default="0,1000,10000,100000")
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "bench", "dispatch"))
    ap.add_argument("--gc", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    os.makedirs(args.dir, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| jobs in the root | floor p50 / p90 | base p50 / p90 | this p50 / p90 "
          "| this, after a foreign job, p50 / p90 | one bare fsync p50 / p90 | load average |")
    print("|---|---|---|---|---|---|---|")
    try:
        for size in sizes:
            t0 = time.monotonic()
            root = write_root(args.dir, size)
            built = time.monotonic() - t0
            rows = measure(root, args)
            cells = " | ".join(
                f"{pct(rows[k], 50) * 1000:.1f} / {pct(rows[k], 90) * 1000:.1f} ms"
                for k in ("floor", "base", "this", "rescan", "fsync"))
            load = "%.1f" % os.getloadavg()[0]
            print(f"| {size:,} | {cells} | {load} |", flush=True)
            print(f"<!-- root of {size} written in {built:.0f} s -->", flush=True)
            if args.gc and size == max(sizes):
                gc_beside_status(root, args)
            stop_everything()
    finally:
        stop_everything()


if __name__ == "__main__":
    main()
