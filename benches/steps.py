#!/usr/bin/env python3
"""What a project's setup and checks add to a job beyond their commands' own time.

Runs real `luzia run` jobs (the agent is `sh` running `true`, in a project that is not a git
repository, so no isolation is set up) in two projects of one config, alternating round by
round in the same run:

  plain   no setup, no checks
  steps   three setup lines and three check lines, each `true`

and times each job from `luzia run` to its exit line in output.log (polled every millisecond).
Their commands' own time is measured in the same rounds: six `sh -c true` run one after the
other. The overhead is the median of steps, minus the median of plain, minus that own time:
the headings in the log, meta.json's `checks` rewritten as each check ends, the ports chosen.

Usage: benches/steps.py --luzia target/release/luzia --work target/bench/steps [--rounds 21]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time


def wait_exit_line(log):
    while True:
        try:
            with open(log, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 64))
                if b"\nexit:" in fh.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.001)


def one_job(luzia, config, jobs, project):
    t = time.perf_counter()
    out = subprocess.run(
        [luzia, "--config", config, "run", project, "--", "true"],
        check=True, capture_output=True, text=True,
    )
    job = out.stdout.strip()
    wait_exit_line(os.path.join(jobs, job, "output.log"))
    return time.perf_counter() - t


def own_time(lines):
    t = time.perf_counter()
    for _ in range(lines):
        subprocess.run(["/bin/sh", "-c", "true"], check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--luzia", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=21)
    a = ap.parse_args()
    luzia = os.path.abspath(a.luzia)
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    jobs = os.path.join(work, "jobs")
    project = os.path.join(work, "project")
    os.makedirs(jobs)
    os.makedirs(project)
    config = os.path.join(work, "config.toml")
    lines = '["true", "true", "true"]'
    with open(config, "w") as fh:
        fh.write(
            f'jobs_dir = "{jobs}"\nqueue_dir = "{work}/queue"\n'
            f'notifications_log = "{work}/notes.log"\n\n'
            '[agent]\ncommand = ["sh"]\nmax_concurrent = 4\nprompt_template = "{task}"\n\n'
            f'[projects.plain]\npath = "{project}"\nisolation = "none"\n\n'
            f'[projects.steps]\npath = "{project}"\nisolation = "none"\n'
            f"setup = {lines}\nchecks = {lines}\n"
        )
    plain, steps, own = [], [], []
    for r in range(a.rounds + 1):
        p = one_job(luzia, config, jobs, "plain")
        s = one_job(luzia, config, jobs, "steps")
        o = own_time(6)
        if r > 0:  # the first round warms the page cache
            plain.append(p)
            steps.append(s)
            own.append(o)
    ms = lambda xs: statistics.median(xs) * 1000
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {a.rounds} rounds")
    print(f"plain job:   median {ms(plain):7.1f} ms  (min {min(plain)*1000:.1f}, max {max(plain)*1000:.1f})")
    print(f"steps job:   median {ms(steps):7.1f} ms  (min {min(steps)*1000:.1f}, max {max(steps)*1000:.1f})")
    print(f"6 x sh -c true: median {ms(own):7.1f} ms")
    print(f"overhead beyond the commands: {ms(steps) - ms(plain) - ms(own):.1f} ms")


if __name__ == "__main__":
    main()
