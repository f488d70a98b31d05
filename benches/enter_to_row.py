#!/usr/bin/env python3
"""Enter-to-row latency: from pressing Enter in the cockpit's input bar to the new job's row on
screen, running. Drives the release binary in tmux (new-session -d -x 160 -y 45, send-keys,
capture-pane), with a real config, project and agent (`sleep`).

Usage: cargo build --release && python3 benches/enter_to_row.py [--samples 20]
The clock stops at the first capture that shows the row, polled every 2 ms: each figure includes
up to one poll interval plus the time tmux takes to answer a capture (about 1-2 ms here).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

BIN = os.path.abspath(os.environ.get("LUZIA_BIN", "target/release/luzia"))


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock, *args], check=True, capture_output=True, text=True).stdout


def wait(sock, pred, timeout=10.0, poll=0.002):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        screen = tmux(sock, "capture-pane", "-p")
        if pred(screen):
            return time.monotonic()
        time.sleep(poll)
    raise SystemExit("timed out; last screen:\n" + screen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="luzia-enter-")
    sock = os.path.join(tmp, "tmux.sock")
    try:
        jobs, proj = os.path.join(tmp, "jobs"), os.path.join(tmp, "proj")
        os.makedirs(jobs)
        os.makedirs(proj)
        cfg = os.path.join(tmp, "config.toml")
        with open(cfg, "w") as f:
            f.write(f'jobs_dir = "{jobs}"\nqueue_dir = "{tmp}/queue"\nnotifications_log = "{tmp}/n.log"\n'
                    f'[agent]\ncommand = ["sleep", "30"]\nmax_concurrent = 1000\n'
                    f'[projects.bench]\npath = "{proj}"\n')
        env = f"XDG_STATE_HOME={tmp}/state XDG_CONFIG_HOME={tmp}/xdg TERM=xterm-256color"
        tmux(sock, "new-session", "-d", "-x", "160", "-y", "45", f"env {env} {BIN} --config {cfg} tui")
        wait(sock, lambda s: "no jobs under" in s)
        samples = []
        for k in range(args.samples):
            task = f"bench task {k:03d}"
            tmux(sock, "send-keys", "n")
            wait(sock, lambda s: "new task for" in s)
            tmux(sock, "send-keys", "-l", task)
            wait(sock, lambda s, t=task: t in s)
            t0 = time.monotonic()
            tmux(sock, "send-keys", "Enter")
            t1 = wait(sock, lambda s, t=task: any(t in line and "running" in line for line in s.splitlines()))
            samples.append((t1 - t0) * 1000)
            time.sleep(0.2)
        samples.sort()
        q = lambda p: samples[min(len(samples) - 1, int(p * len(samples)))]
        print(f"Enter to row visible: n={len(samples)} p50 {statistics.median(samples):.1f} ms  "
              f"p90 {q(0.9):.1f}  max {samples[-1]:.1f} ms  (target < 100 ms)")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        # Each job's supervisor passes SIGTERM on to its agent and records the exit.
        for job in os.listdir(os.path.join(tmp, "jobs")) if os.path.isdir(os.path.join(tmp, "jobs")) else []:
            try:
                with open(os.path.join(tmp, "jobs", job, "pid")) as f:
                    os.kill(int(f.read().strip()), 15)
            except (OSError, ValueError):
                pass
        time.sleep(0.5)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
