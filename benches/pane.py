#!/usr/bin/env python3
"""The output pane at scale: each figure for one or more cockpit binaries and `tail -f`, in the
same run.

    cargo build --release
    python3 benches/pane.py --bin target/release/luzia [--bin /other/luzia ...] \
        [latency] [long-line] [burst] [fast-log]

With no names, all four run (about five minutes on 2 cores).

  latency    a writer on its own clock (10, 20 and 50 lines a second, never waiting for the
             screen) appends lines to the selected job's output.log; each line's time from
             write() until the terminal shows it (p50, p99), and the bytes written to the
             terminal per second meanwhile.
  long-line  a selected log whose second line is 50 MB without a newline: what the pane shows
             and the resident memory, next to the same cockpit on a small log.
  burst      1 GB appended at once to the selected log: time until its last line shows, CPU
             seconds and peak resident memory (VmHWM) of the cockpit.
  fast-log   a log growing at 50 MB/s for 10 s: CPU of the cockpit, in % of one core, and
             of each of its threads by name (utime + stime of /proc/PID/task/*); with
             --rounds N the programs take turns N times and the median is printed.

Terminal 160x45, TERM=xterm-256color, as benches/cockpit.py (whose pty, terminal model and job
roots this reuses). Files go under --work (default: the system's temporary directory) and are
removed on the way out.
"""

import argparse
import os
import random
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cockpit as ck  # noqa: E402

CLEAN = ck.CLEAN
MARK = re.compile(r"MARK-(\d+)\.")


def ticks(pid):
    return ck.proc_ticks(pid)


def thread_ticks(pid):
    """CPU ticks (utime + stime) of each thread of `pid`, summed by thread name."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


def status(pid, field):
    """A /proc/<pid>/status field in kB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def setup(work, name):
    root = os.path.join(work, name, "jobs")
    sleeper = ck.live_process()
    sel = ck.make_root(root, 49, 1, sleeper.pid, seed=2)
    return root, sel, os.path.join(root, sel, "output.log"), sleeper


class Quiet:
    """`tail -f` writing to /dev/null: what following costs it, without a terminal model in
    this script that could not keep up with 50 MB/s."""

    def __init__(self, log):
        self.proc = CLEAN.proc(ck.subprocess.Popen(
            ["tail", "-n", "0", "-f", log], stdout=ck.subprocess.DEVNULL,
            stdin=ck.subprocess.DEVNULL, start_new_session=True))
        self.pid = self.proc.pid
        self.screen = None
        time.sleep(0.5)

    def read(self, timeout):
        time.sleep(max(0.0, timeout))

    def wait_for(self, _cond, _timeout):
        return None

    def pump(self, seconds):
        time.sleep(seconds)

    def close(self):
        CLEAN.stop(self.proc)


def start(program, root, sel, log, work, name, quiet_tail=False):
    """The program in a pty, showing the selected job's log; `program` is a binary or 'tail'."""
    if program == "tail" and quiet_tail:
        return Quiet(log)
    env = ck.cockpit_env(os.path.join(work, name, "home"))
    if program == "tail":
        p = ck.Pty(["tail", "-n", "40", "-f", log], env)
        ok = p.wait_for(lambda s: s.strip() != "", 10)
    else:
        p = ck.luzia_pty(program, root, env)
        ok = p.wait_for(lambda s: f"output {sel}" in s and "jobs 1/50" in s, 30)
    if ok is None:
        p.close()
        raise RuntimeError(f"{program} did not start:\n{p.screen.text()}")
    p.pump(1.0)
    return p


def free_running(p, log, rate, seconds, rng):
    """Writes `rate` lines a second on a fixed clock for `seconds`; returns the latencies (ms)
    of the lines seen on screen, how many never were, and the bytes/s to the terminal."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    written, seen = {}, {}
    n = 0
    start = time.monotonic()
    bytes0 = p.bytes
    end = start + seconds
    next_write = start
    try:
        while (now := time.monotonic()) < end + 0.5:
            if now < end and now >= next_write:
                text = f"MARK-{n}. " + ck.log_line(rng)
                t = time.monotonic()
                os.write(fd, text[:100].encode() + b"\n")
                written[n] = t
                n += 1
                next_write += 1.0 / rate
                continue
            wait = (next_write if now < end else end + 0.5) - now
            t = p.read(max(0.0, wait))
            if t is None:
                continue
            for m in MARK.finditer(p.screen.text()):
                k = int(m.group(1))
                if k in written and k not in seen:
                    seen[k] = t
    finally:
        os.close(fd)
    elapsed = time.monotonic() - start
    lat = [(seen[k] - written[k]) * 1000 for k in seen]
    return lat, len(written) - len(seen), (p.bytes - bytes0) / elapsed


def bench_latency(args, programs, out):
    res = {}
    for rate in (10, 20, 50):
        for label, program in programs:
            work = CLEAN.mkdtemp("pane")
            root, sel, log, sleeper = setup(work, "lat")
            p = start(program, root, sel, log, work, "lat")
            try:
                lat, missed, bps = free_running(p, log, rate, args.seconds, random.Random(rate))
            finally:
                p.close()
                CLEAN.stop(sleeper)
                CLEAN.rmdir(work)
            r = {"p50": ck.pct(lat, 50), "p99": ck.pct(lat, 99), "samples": len(lat),
                 "missed": missed, "bytes_per_s": bps}
            res[f"{rate}/{label}"] = r
            print(f"  {rate} lines/s  {label:>8}: p50 {r['p50']:6.1f} ms  p99 {r['p99']:6.1f} ms"
                  f"  {bps / 1000:6.2f} KB/s  ({len(lat)} seen, {missed} not)", flush=True)
    out["latency"] = res


def bench_long_line(args, programs, out):
    res = {}
    for label, program in programs:
        if program == "tail":
            continue
        row = {}
        for case in ("small", "50 MB line"):
            work = CLEAN.mkdtemp("pane")
            root, sel, log, sleeper = setup(work, "long")
            if case != "small":
                with open(log, "wb") as f:
                    f.write(b"the first line\n")
                    chunk = b"z" * (1 << 20)
                    for _ in range(50):
                        f.write(chunk)
            p = start(program, root, sel, log, work, "long")
            try:
                p.pump(2.0)
                text = p.screen.text()
                row[case] = {"rss_kb": status(p.pid, "VmRSS"), "hwm_kb": status(p.pid, "VmHWM"),
                             "no_output": "no output yet" in text, "shows_z": "zzzzzzzz" in text}
            finally:
                p.close()
                CLEAN.stop(sleeper)
                CLEAN.rmdir(work)
        extra = (row["50 MB line"]["hwm_kb"] - row["small"]["hwm_kb"]) / 1024
        res[label] = dict(row, extra_hwm_mb=extra)
        big = row["50 MB line"]
        print(f"  {label:>8}: +{extra:.1f} MB peak RSS over a small log; "
              f"'no output yet' shown: {big['no_output']}; the line's end shown: "
              f"{big['shows_z']}", flush=True)
    out["long-line"] = res


def bench_burst(args, programs, out):
    res = {}
    line = (b"burst line of a log written at once, much faster than anyone reads it " * 2)[:139]
    block = (line + b"\n") * (8 * 1024 * 1024 // 140)
    for label, program in programs:
        work = CLEAN.mkdtemp("pane")
        root, sel, log, sleeper = setup(work, "burst")
        p = start(program, root, sel, log, work, "burst", quiet_tail=True)
        try:
            hwm0, t0 = status(p.pid, "VmHWM"), ticks(p.pid)
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            start_t = time.monotonic()
            written = 0
            try:
                while written < args.burst_mb * 1024 * 1024:
                    written += os.write(fd, block)
                    p.read(0)
                os.write(fd, b"BURST-END\n")
            finally:
                os.close(fd)
            wrote = time.monotonic() - start_t
            t = p.wait_for(lambda s: "BURST-END" in s, 120)
            shown = None if t is None else t - start_t
            p.pump(3.0 if t is None else 1.0)
            r = {"write_s": wrote, "end_shown_s": shown,
                 "cpu_s": (ticks(p.pid) - t0) / os.sysconf("SC_CLK_TCK"),
                 "hwm_growth_mb": (status(p.pid, "VmHWM") - hwm0) / 1024}
        finally:
            p.close()
            CLEAN.stop(sleeper)
            CLEAN.rmdir(work)
        res[label] = r
        shown = ("- (no screen)" if program == "tail" else "never") if r["end_shown_s"] is None \
            else f"{r['end_shown_s']:.2f} s"
        print(f"  {label:>8}: {args.burst_mb} MB written in {wrote:.2f} s; last line shown after "
              f"{shown}; {r['cpu_s']:.2f} CPU s; peak RSS +{r['hwm_growth_mb']:.1f} MB",
              flush=True)
    out["burst"] = res


def bench_fast_log(args, programs, out):
    res = {}
    rng = random.Random(7)
    text = "".join(ck.log_line(rng)[:100] + "\n" for _ in range(6000)).encode()
    per_tick = 50 * 1024 * 1024 // 100  # 50 MB/s in ticks of 10 ms
    chunk = (text * (per_tick // len(text) + 1))[:per_tick]
    chunk = chunk[:chunk.rindex(b"\n") + 1]
    hz = os.sysconf("SC_CLK_TCK")
    rounds = [(label, program) for _ in range(args.rounds) for label, program in programs]
    for label, program in rounds:
        work = CLEAN.mkdtemp("pane")
        root, sel, log, sleeper = setup(work, "fast")
        p = start(program, root, sel, log, work, "fast", quiet_tail=True)
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            t0, start_t = ticks(p.pid), time.monotonic()
            th0 = thread_ticks(p.pid)
            written, k = 0, 0
            try:
                while (now := time.monotonic()) < start_t + args.seconds:
                    at = start_t + k * 0.01
                    if now >= at:
                        written += os.write(fd, chunk)
                        k += 1
                    else:
                        p.read(at - now)
            finally:
                os.close(fd)
            elapsed = time.monotonic() - start_t
            cpu = (ticks(p.pid) - t0) / hz
            th1 = thread_ticks(p.pid)
            p.pump(1.0)
        finally:
            p.close()
            CLEAN.stop(sleeper)
            CLEAN.rmdir(work)
        threads = {n: 100 * (th1[n] - th0.get(n, 0)) / hz / elapsed for n in th1
                   if th1[n] > th0.get(n, 0)}
        r = {"mb_per_s": written / elapsed / 1e6, "cpu_percent": 100 * cpu / elapsed,
             "threads": threads}
        res.setdefault(label, []).append(r)
        by_thread = ", ".join(f"{n} {c:.1f}" for n, c in sorted(threads.items(),
                                                                 key=lambda t: -t[1]))
        print(f"  {label:>8}: {r['mb_per_s']:.1f} MB/s appended; {r['cpu_percent']:.1f} % of one "
              f"core ({by_thread}; load {os.getloadavg()[0]:.2f})", flush=True)
    for label, rs in res.items():
        if len(rs) > 1:
            cpus = sorted(r["cpu_percent"] for r in rs)
            print(f"  {label:>8}: median {statistics.median(cpus):.1f} % of one core over "
                  f"{len(rs)} rounds ({', '.join(f'{c:.1f}' for c in cpus)})", flush=True)
    out["fast-log"] = res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("which", nargs="*", default=[])
    ap.add_argument("--bin", action="append", default=[],
                    help="a cockpit binary (label=path to name it); repeat to compare")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="fast-log: rounds of every program, interleaved (the median is shown)")
    ap.add_argument("--burst-mb", type=int, default=1024)
    ap.add_argument("--work", default=None, help="where the job roots and logs go")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.work:
        ck.tempfile.tempdir = args.work
    programs = []
    for b in args.bin or [ck.DEFAULT_BIN]:
        label, _, path = b.rpartition("=")
        label = label or os.path.basename(os.path.dirname(os.path.dirname(path))) or path
        copy = os.path.join(CLEAN.mkdtemp("bin"), "luzia")
        ck.shutil.copy2(path, copy)  # a rebuild during the run must not change the figures
        programs.append((label, copy))
    programs.append(("tail -f", "tail"))
    benches = {"latency": bench_latency, "long-line": bench_long_line, "burst": bench_burst,
               "fast-log": bench_fast_log}
    which = args.which or list(benches)
    out = {"machine": ck.machine()}
    try:
        for name in which:
            print(f"{name}: (load average {os.getloadavg()[0]:.2f})", flush=True)
            benches[name](args, programs, out)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        sys.exit(130)
    finally:
        CLEAN.all()
    if args.json:
        with open(args.json, "w") as f:
            ck.json.dump(out, f, indent=1)


if __name__ == "__main__":
    for sig in (ck.signal.SIGINT, ck.signal.SIGTERM, ck.signal.SIGHUP):
        ck.signal.signal(sig, ck.on_signal)
    main()
