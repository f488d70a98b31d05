#!/usr/bin/env python3
"""The cockpit and the listing commands on large jobs roots (1,000, 10,000 and 100,000 jobs),
each figure beside its comparisons measured in the same run: the floor (listing the root and
reading and parsing every meta.json on all cores, `examples/read_metas.rs`) and another build
of luzia (the commit before a change).

    cargo build --release && cargo build --release --example read_metas
    python3 benches/cockpit_scale.py --base /path/to/base/luzia [--sizes 1k,10k,100k]

For each size, and each of `--runs` rounds (the three in turn, so that the machine's load
falls on all of them alike; warm page cache, after one untimed round):

  floor        target/release/examples/read_metas ROOT: ms to list and parse every meta.json.
  first frame  `luzia tui` in a pty of 160x45 (or `--pty`) until the screen shows `jobs 1/N`,
               from spawn (and the cockpit's own `first full frame` log line), for this build
               and the base. Each build keeps its user cache directory from round to round
               (written in the untimed first round, which waits for the cockpit to settle), so
               a build that keeps an index of settled jobs there starts from it, as on a server;
               `fresh` is this build's first start on the root (an empty cache each round).
  memory       the cockpit's VmRSS and VmHWM right after the first frame, and again once it
               has settled (its CPU time did not move for 2 s: the known-issue scan of every
               log is done).
  keys         once settled, 20 presses of `j` 150 ms apart, each timed from the write to the
               screen showing the selection a row down (`jobs K/N`).
  listings     `luzia jobs --json` and `luzia status` (with the same cache as the build's
               cockpit): wall time and peak RSS (GNU time's %M), and
               whether both builds wrote the same bytes (but for status's lines that give the
               clock and the load, and its ages, which move with the clock).

With --cold (and permission to write /proc/sys/vm/drop_caches), one more round per size runs
each of the floor and the two cockpits after dropping the page cache.

Roots are generated once under --roots (default target/bench/roots, or
$LUZIA_BENCH_ROOTS) by benches/cockpit.py's generator, 1 % of the jobs without an exit line,
and kept for the next run; delete them when done. Python 3 standard library only.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ left in benches/
import cockpit  # noqa: E402  (the pty, the screen, the job generator)
from cockpit import CLEAN, pct  # noqa: E402

SIZES = {"1k": 1000, "10k": 10000, "100k": 100000}
KEY_MOVES = 20
# The terminal the cockpit is measured in (`--pty`): below 102 columns ids are cut to their
# shortest unique prefix, which the columns work out from every id.
PTY = (cockpit.COLS, cockpit.ROWS)
AGE = re.compile(rb"\b\d+(?:d\d+h|h\d+m|m\d+s|s|m|h|d)\b")


def make_roots(base, sizes):
    for name in sizes:
        root = os.path.join(base, name)
        if os.path.isdir(root):
            continue
        n = SIZES[name]
        running = max(1, n // 100)
        t = time.monotonic()
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        # The unfinished jobs name pid 1: alive, but not started when they were, so they read
        # as ended without an exit line (`died`): never settled, re-read and watched like
        # running ones, with no process of the benchmark's to outlive.
        cockpit.make_root(tmp, n - running, running, 1)
        os.rename(tmp, root)
        os.sync()
        print(f"  generated {name} in {time.monotonic() - t:.0f} s", flush=True)


def status_kb(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    return out


def settle(p, quiet=2.0, timeout=300):
    """Waits until the cockpit's CPU time has not moved for `quiet` s (reading its screen
    meanwhile); returns the seconds it took."""
    t0 = time.monotonic()
    last, since = cockpit.proc_ticks(p.pid), time.monotonic()
    while time.monotonic() - t0 < timeout:
        p.pump(0.25)
        now = cockpit.proc_ticks(p.pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return time.monotonic() - t0


def key_moves(p, n, moves=KEY_MOVES):
    """ms from writing `j` to the screen showing the selection one row down (`jobs K/N`), for
    each of `moves` presses in turn, once the cockpit has settled. Presses are 150 ms apart,
    a person's pace: right after a frame the cockpit holds the next one for its frame interval
    (33 ms), which would be measured instead of what a press costs."""
    out = []
    for k in range(2, moves + 2):
        shown = re.compile(rf"jobs {k}/{n}(?!\d)")
        p.pump(0.15)
        t0 = time.monotonic()
        os.write(p.master, b"j")
        t = p.wait_for(lambda s: shown.search(s), timeout=30)
        if t is None:
            raise RuntimeError(f"`j` never moved the selection to row {k}:\n" + p.screen.text())
        out.append((t - t0) * 1000)
    return out


def first_frame(binary, root, n, work, tag, memory, cache, warm_up=False):
    """The first frame of `binary` on `root`, its user's cache directory (where the index of
    settled jobs is kept) at `cache`. With `warm_up`, waits for the cockpit to settle before it
    quits: a cockpit that may write refreshes the index after its first frame."""
    home = os.path.join(work, f"home-{tag}")
    env = cockpit.cockpit_env(home)
    env["XDG_CACHE_HOME"] = cache
    p = cockpit.Pty([binary, "tui", "--jobs-dir", root], env, cols=PTY[0], rows=PTY[1])
    title = cockpit.jobs_title(n)
    try:
        t = p.wait_for(lambda s: title.search(s), timeout=120)
        if t is None:
            raise RuntimeError(f"{binary} never showed `jobs 1/{n}`:\n" + p.screen.text())
        res = {"external_ms": (t - p.t_spawn) * 1000}
        res["at_frame"] = status_kb(p.pid)
        ms, _ = cockpit.first_frame_logged(env, 10, p)
        res["logged_ms"] = ms
        if warm_up:
            settle(p)
        if memory:
            res["settle_s"] = settle(p)
            res["settled"] = status_kb(p.pid)
            res["keys_ms"] = key_moves(p, n)
        return res
    finally:
        p.close()
        shutil.rmtree(home, ignore_errors=True)


def floor(binary, root):
    out = subprocess.run([binary, root], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def listing(binary, root, args, work, cache):
    """(wall ms, peak RSS KiB, sha256 of stdout) of `luzia ARGS` on `root`."""
    path = os.path.join(work, "listing.out")
    env = cockpit.cockpit_env(os.path.join(work, "home-listing"))
    env["XDG_CACHE_HOME"] = cache
    env["COLUMNS"] = "160"
    peak = os.path.join(work, "listing.maxrss")
    with open(path, "wb") as out:
        t = time.monotonic()
        # The peak from GNU time, which execs the listing from a small process of its own: a
        # child forked from this script would count this interpreter's pages in its ru_maxrss.
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", peak, binary, *args, "--jobs-dir",
                        root], stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                       env=env, check=False)
        wall = (time.monotonic() - t) * 1000
    with open(peak) as f:
        maxrss = int(f.read().split()[-1])
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            # `status` heads its report with the clock and the machine's load: not the jobs.
            if not (line.startswith(b"luzia status ") or b" load " in line):
                # ...and ages ("41m00s" a second later is "41m01s").
                h.update(AGE.sub(b"<age>", line))
    size = os.path.getsize(path)
    os.unlink(path)
    return wall, maxrss, f"{h.hexdigest()[:16]} ({size} bytes)"


def bench_size(name, args, out):
    n = SIZES[name]
    root = os.path.join(args.roots, name)
    work = CLEAN.mkdtemp(f"scale-{name}")
    builds = {"new": args.bin, "base": args.base}
    # Each build's user cache, kept from round to round: the index of settled jobs that a
    # cockpit writes after its first frame is there for the next start, as on a real server.
    caches = {b: os.path.join(work, f"cache-{b}") for b in builds}
    res = {"floor_ms": [], "listings": {}, "fresh": []}
    for b in builds:
        res[b] = []
    # One untimed round: the tree in the page cache for all, and each build's index written.
    floor(args.floor, root)
    for b, binary in builds.items():
        if args.runs:
            first_frame(binary, root, n, work, f"{b}-warmup", False, caches[b], warm_up=True)
    for i in range(args.runs):
        res["floor_ms"].append(floor(args.floor, root))
        order = list(builds.items())
        if i % 2:
            order.reverse()
        for b, binary in order:
            res[b].append(first_frame(binary, root, n, work, f"{b}-{i}", i == 0, caches[b]))
        # This build's first start on the root: no index yet (a cache of its own each round).
        fresh = os.path.join(work, f"cache-fresh-{i}")
        res["fresh"].append(first_frame(args.bin, root, n, work, f"fresh-{i}", False, fresh))
        shutil.rmtree(fresh, ignore_errors=True)
    for cmd in (["jobs", "--json"], ["status"]):
        key = " ".join(cmd)
        per = {}
        for b, binary in builds.items():
            runs = [listing(binary, root, cmd, work, caches[b])
                    for _ in range(args.listing_runs)]
            per[b] = {"wall_ms": [r[0] for r in runs], "maxrss_kib": [r[1] for r in runs],
                      "stdout": sorted({r[2] for r in runs})}
        per["identical"] = per["new"]["stdout"] == per["base"]["stdout"]
        res["listings"][key] = per
    if args.cold and args.runs and cockpit.drop_caches():
        cold = {}
        cockpit.drop_caches()
        cold["floor_ms"] = floor(args.floor, root)
        for b, binary in builds.items():
            cockpit.drop_caches()
            cold[b] = first_frame(binary, root, n, work, f"{b}-cold", False, caches[b])
        res["cold"] = cold
    out[name] = res
    CLEAN.rmdir(work)
    print_size(name, res, args.runs)


def mib(kib):
    return kib / 1024


def print_size(name, r, runs):
    n = SIZES[name]
    fl = pct(r["floor_ms"], 50)
    print(f"\n{name} ({n} jobs), {runs} rounds, medians:")
    if runs:
        print_frames(r, n, fl)
    print_listings(r)


def print_frames(r, n, fl):
    print(f"  floor (list + parse every meta.json, all cores): {fl:.0f} ms "
          f"(min {min(r['floor_ms']):.0f}, max {max(r['floor_ms']):.0f})")
    for b in ("new", "fresh", "base"):
        if not r[b]:
            continue
        ext = [x["external_ms"] for x in r[b]]
        log = [x["logged_ms"] for x in r[b] if x["logged_ms"] is not None]
        rss = [x["at_frame"]["VmRSS"] for x in r[b]]
        print(f"  {b:5} first frame: spawn to screen {pct(ext, 50):.0f} ms "
              f"({pct(ext, 50) / fl:.2f} x floor; min {min(ext):.0f}, max {max(ext):.0f}), "
              f"log line {pct(log, 50):.0f} ms; VmRSS at frame {mib(pct(rss, 50)):.1f} MiB")
        m = r[b][0]
        if "settled" in m:
            print(f"  {b:4} memory: at frame VmRSS {mib(m['at_frame']['VmRSS']):.1f} / VmHWM "
                  f"{mib(m['at_frame']['VmHWM']):.1f} MiB; settled after {m['settle_s']:.0f} s: "
                  f"VmRSS {mib(m['settled']['VmRSS']):.1f} / VmHWM "
                  f"{mib(m['settled']['VmHWM']):.1f} MiB "
                  f"({m['settled']['VmRSS'] * 1024 / n:.0f} B/job)")
            keys = m["keys_ms"]
            print(f"  {b:4} settled, `j` to the selection moved: p50 {pct(keys, 50):.1f} ms, "
                  f"max {max(keys):.1f} ms ({len(keys)} presses)")
    if "cold" in r:
        c = r["cold"]
        print(f"  cold: floor {c['floor_ms']:.0f} ms; new {c['new']['external_ms']:.0f} ms; "
              f"base {c['base']['external_ms']:.0f} ms")


def print_listings(r):
    for key, per in r["listings"].items():
        for b in ("new", "base"):
            p = per[b]
            print(f"  {b:4} luzia {key}: {pct(p['wall_ms'], 50):.0f} ms, max RSS "
                  f"{mib(pct(p['maxrss_kib'], 50)):.1f} MiB")
        print(f"       same stdout from both: {per['identical']} {per['new']['stdout']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(cockpit.REPO, "target", "release", "luzia"))
    ap.add_argument("--base", required=True, help="the luzia binary to compare with")
    ap.add_argument("--floor", default=os.path.join(cockpit.REPO, "target", "release",
                                                    "examples", "read_metas"))
    ap.add_argument("--roots", default=os.environ.get(
        "LUZIA_BENCH_ROOTS", os.path.join(cockpit.REPO, "target", "bench", "roots")))
    ap.add_argument("--sizes", default="1k,10k,100k")
    ap.add_argument("--runs", type=int, default=5,
                    help="rounds per size (5); 0: the listings only")
    ap.add_argument("--listing-runs", type=int, default=3, help="runs of each listing (3)")
    ap.add_argument("--cold", action="store_true", help="one cold-cache round per size")
    ap.add_argument("--json", help="also write every raw figure to this file")
    ap.add_argument("--pty", default=f"{cockpit.COLS}x{cockpit.ROWS}",
                    help="the cockpit's terminal, COLSxROWS (160x45; 80x24 is an ssh session's)")
    args = ap.parse_args()
    global PTY
    try:
        PTY = tuple(int(n) for n in args.pty.lower().split("x", 1))
        assert len(PTY) == 2 and min(PTY) > 0
    except (ValueError, AssertionError):
        ap.error(f"--pty {args.pty}: give it as COLSxROWS, such as 80x24")
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        ap.error(f"unknown size {' '.join(unknown)}: choose from {' '.join(SIZES)}")
    for b in (args.bin, args.base, args.floor):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} not found: build it first (see the top of this file)")
    # Private copies: a rebuild during the run must not mix two builds in one set of figures.
    copies = CLEAN.mkdtemp("bins")
    for attr in ("bin", "base", "floor"):
        dst = os.path.join(copies, attr)
        shutil.copy2(getattr(args, attr), dst)
        setattr(args, attr, dst)
    out = {"machine": cockpit.machine()}
    m = out["machine"]
    print(f"{m['nproc']} cores, {m['cpu']}, load {m['load'][0]:.2f}", flush=True)
    try:
        make_roots(args.roots, sizes)
        for name in sizes:
            load = os.getloadavg()[0]
            t = time.monotonic()
            bench_size(name, args, out)
            print(f"  ({time.monotonic() - t:.0f} s; load average {load:.2f} -> "
                  f"{os.getloadavg()[0]:.2f})", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        sys.exit(130)
    finally:
        CLEAN.all()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
