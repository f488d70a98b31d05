#!/usr/bin/env python3
"""Latency from an operator's answer to the waiting agent printing it, against the release binary.

    cargo build --release && python3 benches/answer_latency.py [--samples 100] [--no-build]

For every sample a fresh job directory is made (its pid file names this script, so the job is
alive and `waiting`), `luzia ask "Which?" --option alpha --option bravo` is started in it, and
once clarification.json exists (plus a short settle, so the agent is really waiting) the answer
is written the way an operator's tool writes it:

  (a) cli   `luzia --jobs-dir ROOT answer JOB 2`, a new process: t0 is taken just before it is
            spawned, so process start, reading the job, validation and the exactly-once publish
            are all inside the figure;
  (b) link  a direct publish of response.json from Python, as protocol.md says: write a temporary
            file, fsync it, link() it to response.json, unlink the temporary. The floor: what any
            writer must pay, plus the agent's wake-up, read, archive and print.

t1 is when the answer line arrives on `ask`'s stdout (read from its pipe, time.monotonic()).
`ask` prints after it has archived the exchange to history.jsonl (one more fsync), so t1 is the
moment an agent script could act on the answer.

The two variants alternate (in alternating order) so that drift in the machine affects both
alike; a few warm-up samples of each are discarded. The table compares them with the Python
orchestrator's proposal, which polled for response.json once a second: an answer lands at a
uniformly random point of the poll interval, so its latency is uniform over 0-1000 ms (mean and
median 500 ms, p90 900 ms, p99 990 ms), before any cost of reading.

Python 3 standard library only. Every process the script starts is stopped on the way out, and
its temporary directory is removed.
"""

import argparse
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_P50_MS = 20.0
HANG_GUARD_S = 20.0


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(-(-p * len(sorted_values) // 100)) - 1))
    return sorted_values[k]


def read_line(proc, deadline):
    """Reads `proc`'s stdout up to the first newline; returns (line, time it arrived)."""
    fd = proc.stdout.fileno()
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer line from luzia ask (got {buf!r})")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError(f"luzia ask closed stdout without an answer (got {buf!r})")
        buf += chunk
    return buf, time.monotonic()


class Bench:
    def __init__(self, binary, settle):
        self.binary = binary
        self.settle = settle
        self.tmp = tempfile.mkdtemp(prefix="luzia-answer-latency-")
        self.root = os.path.join(self.tmp, "jobs")
        os.mkdir(self.root)
        xdg = os.path.join(self.tmp, "xdg")
        os.mkdir(xdg)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("LUZIA_JOBS_DIR", "LUZIA_CONFIG", "LUZIA_JOB_DIR")}
        self.env.update(XDG_CONFIG_HOME=xdg, NO_COLOR="1", USER="bench")
        self.n = 0
        self.live = []

    def close(self):
        for p in self.live:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, env=self.env, stdin=subprocess.DEVNULL, **kw)
        self.live.append(p)
        return p

    def reap(self, p):
        try:
            code = p.wait(timeout=HANG_GUARD_S)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.live.remove(p)
        return code

    def sample(self, variant):
        """One answer, published by `variant`; returns the latency in ms."""
        self.n += 1
        job = f"b{self.n}"
        d = os.path.join(self.root, job)
        os.mkdir(d)
        with open(os.path.join(d, "pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"id": job, "project": "bench", "task": "latency"}, f)
        ask = self.spawn(
            [self.binary, "ask", "Which?", "--option", "alpha", "--option", "bravo",
             "--job-dir", d],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        question = os.path.join(d, "clarification.json")
        deadline = time.monotonic() + HANG_GUARD_S
        while not os.path.exists(question):
            if time.monotonic() > deadline or ask.poll() is not None:
                raise RuntimeError(f"luzia ask never asked (exit {ask.poll()})")
            time.sleep(0.001)
        with open(question) as f:
            qid = json.load(f)["id"]
        time.sleep(self.settle)

        if variant == "cli":
            t0 = time.monotonic()
            op = self.spawn([self.binary, "--jobs-dir", self.root, "answer", job, "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            line, t1 = read_line(ask, t0 + HANG_GUARD_S)
            err = op.stderr.read()
            code = self.reap(op)
            if code != 0:
                raise RuntimeError(f"luzia answer failed ({code}): {err!r}")
        else:
            body = json.dumps({"question_id": qid, "answer": "bravo", "choice": "bravo",
                               "answered_by": "bench@link", "answered_at": "",
                               "source": "cli"}).encode()
            t0 = time.monotonic()
            tmp = os.path.join(d, f".response.json.bench.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, body)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, os.path.join(d, "response.json"))
            os.unlink(tmp)
            line, t1 = read_line(ask, t0 + HANG_GUARD_S)
        code = self.reap(ask)
        ask.stdout.close()
        if line != b"bravo\n" or code != 0:
            raise RuntimeError(f"luzia ask printed {line!r} and exited {code}")
        shutil.rmtree(d, ignore_errors=True)
        return (t1 - t0) * 1000.0


def cli_process_ms(bench, runs):
    """For context: a `luzia answer` process alone, spawn to exit, on a job it answers."""
    out = []
    for _ in range(runs):
        bench.n += 1
        job = f"p{bench.n}"
        d = os.path.join(bench.root, job)
        os.mkdir(d)
        with open(os.path.join(d, "pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        with open(os.path.join(d, "clarification.json"), "w") as f:
            json.dump({"id": "q1", "type": "choice", "question": "?",
                       "options": ["alpha", "bravo"]}, f)
        t0 = time.monotonic()
        op = bench.spawn([bench.binary, "--jobs-dir", bench.root, "answer", job, "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        code = bench.reap(op)
        out.append((time.monotonic() - t0) * 1000.0)
        if code != 0:
            raise RuntimeError(f"luzia answer failed ({code})")
        shutil.rmtree(d, ignore_errors=True)
    return out


def row(name, values):
    v = sorted(values)
    mean = sum(v) / len(v)
    cells = [percentile(v, 50), percentile(v, 90), percentile(v, 99), v[-1], mean]
    return f"{name:<44}" + "".join(f"{c:>9.1f}" for c in cells) + f"{len(v):>6}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=100, help="samples per variant (100)")
    ap.add_argument("--warmup", type=int, default=5, help="discarded samples per variant (5)")
    ap.add_argument("--settle", type=float, default=0.05,
                    help="seconds between the question appearing and the answer (0.05)")
    ap.add_argument("--binary", help="the luzia binary (default: target/release/luzia)")
    ap.add_argument("--no-build", action="store_true", help="skip `cargo build --release`")
    args = ap.parse_args()

    binary = args.binary or os.path.join(REPO, "target", "release", "luzia")
    if not args.binary and not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    if not os.access(binary, os.X_OK):
        sys.exit(f"no luzia binary at {binary}: run `cargo build --release` first")

    bench = Bench(binary, args.settle)
    results = {"cli": [], "link": []}
    try:
        for i in range(args.warmup + args.samples):
            order = ("cli", "link") if i % 2 == 0 else ("link", "cli")
            for variant in order:
                ms = bench.sample(variant)
                if i >= args.warmup:
                    results[variant].append(ms)
        process_alone = cli_process_ms(bench, args.samples)
    finally:
        bench.close()

    print(f"answer -> waiting `luzia ask` prints it; {args.samples} samples per variant, "
          f"{args.warmup} warm-up discarded")
    print(f"binary {binary}; {os.cpu_count()} CPUs; Linux {platform.release()}; "
          f"job dirs under {tempfile.gettempdir()}; settle {args.settle * 1000:.0f} ms")
    print()
    print(f"{'latency in ms':<44}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}{'mean':>9}{'n':>6}")
    print(row("(a) `luzia answer` CLI (incl. process start)", results["cli"]))
    print(row("(b) link() publish from Python (the floor)", results["link"]))
    print(row("    for context: `luzia answer` spawn to exit", process_alone))
    print(f"{'orchestrator proposal: poll once a second':<44}"
          + "".join(f"{c:>9.1f}" for c in (500, 900, 990, 1000, 500)) + f"{'model':>6}")
    print()
    for name, key in (("(a) cli", "cli"), ("(b) link", "link")):
        p50 = percentile(sorted(results[key]), 50)
        verdict = "PASS" if p50 < TARGET_P50_MS else "FAIL"
        print(f"target p50 < {TARGET_P50_MS:.0f} ms: {name}: {p50:.1f} ms {verdict} "
              f"({500 / p50:.0f}x faster than the 1 s poll's 500 ms median)")


if __name__ == "__main__":
    main()
