#!/usr/bin/env python3
"""The diff of a job that changed 1,000 files in a 100,000-file repository.

Builds (once, under --work) a git repository of 100,000 files in 1,000 directories, runs a real
`luzia run` job with snapshot isolation whose agent (`sh`) edits 1,000 of them (modified, added,
deleted), then times, in the same run and alternating:

  floor   `git diff --raw --numstat -p -z -M A B`: git alone printing what luzia reads (the
          records and the patch, one process)
  split   the same as two processes (`--raw --numstat -z`, then `-p`): the earlier way
  luzia   `luzia diff ID` (stdout to /dev/null): config, the job read, both git runs, parsing, the
          output written
  json    `luzia diff ID --json`

and reports the median and the spread of each over --rounds rounds. Also reports how long the
job's after-snapshot took (the supervisor's work when the job ends), measured as the time
between the agent's last write and the exit line.

Usage: benches/review_diff.py --luzia target/release/luzia --work /work/bench/review-core/diff
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

FILES = 100_000
DIRS = 1_000
CHANGED = 1_000


def run(argv, **kw):
    return subprocess.run(argv, check=True, **kw)


def build_repo(repo):
    if os.path.isdir(os.path.join(repo, ".git")):
        return
    os.makedirs(repo)
    per = FILES // DIRS
    for d in range(DIRS):
        sub = os.path.join(repo, f"d{d:04}")
        os.mkdir(sub)
        for f in range(per):
            with open(os.path.join(sub, f"f{f:03}.txt"), "w") as fh:
                fh.write("".join(f"line {i} of file {d}/{f}\n" for i in range(20)))
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    run(["git", "-C", repo, "init", "-q", "-b", "main"])
    run(["git", "-C", repo, "add", "."], env=env)
    run(["git", "-C", repo, "commit", "-qm", "init"], env=env)


AGENT = """
i=0
for d in $(seq 0 999); do
  dd=$(printf 'd%04d' $d)
  case $((d % 10)) in
    0) rm "$dd/f000.txt" ;;
    1) printf 'new\\nfile\\n' > "$dd/new.txt" ;;
    *) printf 'changed by the agent\\n' >> "$dd/f000.txt" ;;
  esac
done
date +%s.%N > "$MARK"
"""


def start_job(work, luzia, repo):
    jobs = os.path.join(work, "jobs")
    shutil.rmtree(jobs, ignore_errors=True)
    os.makedirs(jobs)
    mark = os.path.join(work, "agent-done")
    config = os.path.join(work, "config.toml")
    with open(config, "w") as fh:
        fh.write(
            f'jobs_dir = "{jobs}"\nqueue_dir = "{work}/queue"\n'
            f'notifications_log = "{work}/notes.log"\n'
            f'[agent]\ncommand = ["sh"]\nprompt_template = "{{task}}"\n'
            f'[projects.big]\npath = "{repo}"\nisolation = "snapshot"\n'
        )
    task = AGENT.replace('"$MARK"', f"'{mark}'")
    out = subprocess.run([luzia, "--config", config, "run", "big", "--", task],
                         check=True, capture_output=True, text=True)
    job = out.stdout.strip()
    log = os.path.join(jobs, job, "output.log")
    deadline = time.time() + 600
    while time.time() < deadline:
        if os.path.exists(log) and any(l.startswith("exit:") for l in open(log)):
            break
        time.sleep(0.05)
    ended = os.path.getmtime(log)
    agent_done = float(open(mark).read())
    meta = json.load(open(os.path.join(jobs, job, "meta.json")))
    return config, job, meta, ended - agent_done


CPU = {}


def timed(argv):
    """Wall time in ms; the CPU time the command and its children used is kept in CPU."""
    before = os.times()
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = (time.perf_counter() - t) * 1000
    after = os.times()
    CPU["last"] = CPU.get("last", 0) + ((after.children_user - before.children_user)
                                        + (after.children_system - before.children_system)) * 1000
    return wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--luzia", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--reuse", action="store_true", help="time the job of the last run again")
    a = p.parse_args()
    luzia = os.path.abspath(a.luzia)
    repo = os.path.join(a.work, "repo")
    t = time.time()
    build_repo(repo)
    print(f"repository: {FILES} files ({time.time() - t:.1f}s to build or find)")
    if not a.reuse:
        run(["git", "-C", repo, "checkout", "-q", "--", "."])
        run(["git", "-C", repo, "clean", "-qfd"])
    if a.reuse:
        config = os.path.join(a.work, "config.toml")
        job = os.listdir(os.path.join(a.work, "jobs"))[0]
        meta = json.load(open(os.path.join(a.work, "jobs", job, "meta.json")))
        review = meta["review"]
        print(f"job {job} (reused): {review['changes']}")
    else:
        config, job, meta, after = start_job(a.work, luzia, repo)
        review = meta["review"]
        print(f"job {job}: {review['changes']}; after-snapshot and record took {after * 1000:.0f} ms")
    base, head = review["base"], review["after"]
    opts = ["-M", "--no-color", "--no-ext-diff", "--no-textconv"]
    floor = lambda: timed(["git", "-C", repo, "diff", "--raw", "--numstat", "-p", "-z", *opts, base, head])
    split = lambda: timed(["git", "-C", repo, "diff", "--raw", "--numstat", "-z", *opts, base, head]) \
        + timed(["git", "-C", repo, "diff", "-p", *opts, base, head])
    ours = lambda: timed([luzia, "--config", config, "diff", job])
    as_json = lambda: timed([luzia, "--config", config, "diff", job, "--json"])
    samples = {"floor (git alone)": [], "git as two runs": [], "luzia diff": [],
               "luzia diff --json": []}
    cpu = {name: [] for name in samples}
    for _ in range(a.rounds):
        for name, f in zip(samples, (floor, split, ours, as_json)):
            CPU["last"] = 0
            samples[name].append(f())
            cpu[name].append(CPU["last"])
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, s in samples.items():
        s.sort()
        print(f"{name:20} wall median {statistics.median(s):7.1f} ms  "
              f"min {s[0]:7.1f}  max {s[-1]:7.1f}   "
              f"cpu median {statistics.median(cpu[name]):6.1f} ms  ({len(s)} runs)")
    worst = statistics.median(samples["luzia diff"])
    print("target < 300 ms:", "met" if worst < 300 else "MISSED")
    return 0 if worst < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
