#!/usr/bin/env python3
"""The fleet: 5 hosts of 200 agents each, over real OpenSSH on 127.0.0.1, beside the local root
in the same run.

    cargo build --release
    python3 benches/fleet.py [stream] [cockpit] [--bin target/release/luzia] [--samples 60]

Five real sshd processes on 127.0.0.1 (benches/fleet_hosts.py: each its own host key, client
key, config, free port and jobs root), each root holding `--agents` (200) agents started with
`luzia run`, and the local root as many: real supervisors and agent processes (`sleep`), so
each host's `luzia watch` follows 200 running jobs, their pidfds and inotify watches. Every
agent stays quiet; the changes are made by this script, in one running job per root, by
replacing its progress.json the way `luzia progress` does (temporary file, fsync, rename), so
that the moment of the change (when the rename returns) is known to the microsecond and the
same writer serves the local root and the remote ones. The remote logins are a throwaway system user whose shell is /bin/sh
(removed at the end), so no login shell's start-up files are timed; `--login root` uses root.

  stream   what the cockpit's links get, without the cockpit: `ssh ... luzia watch --json` per
           host, run with the links' own ssh options (BatchMode, a shared ControlMaster,
           ControlPersist, ServerAlive), beside `luzia watch --json` on the local root.
           connect  spawn to the `synced` line: each host, all five, the local root; with no
                    master connection yet (cold) and over an open one (warm).
           latency  progress.json replaced on a host until the line naming it is read from
                    that host's stream (p50, p99), the same on the local root, interleaved.
           rtt      `ssh HOST true` over the open master, and a line echoed by `cat` through
                    an already open session (one round trip through ssh).
           idle     bytes on each host's TCP connection over `--idle-seconds` (60) with
                    nothing changing: the client socket's bytes_acked + bytes_received from
                    `ss -tin` at the start and the end (payload; with the TCP/IP headers of
                    loopback, 52 bytes a segment, beside it), and the JSON bytes read.
  cockpit  the same with `luzia tui --all-hosts` in a pty (160x45, the terminal model of
           benches/cockpit.py): time from spawn to every job on screen (`jobs K/N`), a change
           until the screen shows it (its step in the PROGRESS cell, `K/1000`) for the remote
           and the local root, the round trips over the cockpit's own master connection, and
           the idle bytes on its connections.

Target (issue 16): a change on a host visible in the cockpit within the local latency + one
round trip + 50 ms (p99); idle traffic < 1 KB/s per host.

Fixtures go under --work (default target/bench/fleet, or $LUZIA_BENCH_FLEET) and are removed
on the way out, as is every process the script started. Needs root (sshd, useradd), OpenSSH
and `ss`. Python 3 standard library only.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ left in benches/
import cockpit as ck  # noqa: E402  (cleanup, the pty and its terminal model, percentiles)
import fleet_hosts as fh  # noqa: E402
from fleet_streams import (Stream, idle_bytes, kind, pump, wait_line,  # noqa: E402
                           wait_no_connections)

CLEAN = ck.CLEAN
pct = ck.pct
TOTAL_STEPS = 1000


# --------------------------------------------------------------------------------------------
# The fleet


def runtime_dir():
    """A short directory for master sockets: ssh's socket path (with the 17 characters it
    adds while binding) must fit in 108 bytes, which a path under a worktree may not."""
    d = ck.tempfile.mkdtemp(prefix="lzfb-")
    CLEAN.dirs.append(d)
    return d


class Fleet:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.bin = args.bin
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LUZIA_")}
        self.env["XDG_CONFIG_HOME"] = os.path.join(self.work, "xdg")
        os.makedirs(self.env["XDG_CONFIG_HOME"], exist_ok=True)
        self.login = fh.Login(args.login, os.path.join(self.work, "home"))
        self.hosts = []  # (name, root, sshd, changing job dir)
        self.local = None  # (root, changing job dir)
        self.cdir = None

    def start(self):
        a = self.args
        t = time.monotonic()
        for i in range(a.hosts):
            name = f"h{i + 1}"
            root = fh.write_root(self.work, name)
            sshd = fh.Sshd(name, os.path.join(self.work, f"sshd-{name}"), root["jobs"],
                           root["config"], self.login, CLEAN)
            self.hosts.append([name, root, sshd, None])
        self.local = [fh.write_root(self.work, "local"), None]
        # The idle agents first, then one per root that changes: the newest jobs, at the top
        # of the cockpit's table; the local root's last of all.
        for h in self.hosts:
            fh.dispatch(self.bin, h[1], a.agents - 1, self.env)
        fh.dispatch(self.bin, self.local[0], a.agents - 1, self.env)
        # Ids and `started` count seconds: a second apart, the changing jobs are newer than
        # every idle one, whatever the order within a second.
        time.sleep(1.1)
        for h in self.hosts:
            jid = fh.dispatch(self.bin, h[1], 1, self.env, "changing agent")[0]
            h[3] = os.path.join(h[1]["jobs"], jid)
        jid = fh.dispatch(self.bin, self.local[0], 1, self.env, "changing agent")[0]
        self.local[1] = os.path.join(self.local[0]["jobs"], jid)
        for root in [h[1] for h in self.hosts] + [self.local[0]]:
            fh.wait_running(root, sorted(os.listdir(root["jobs"])))
        self.total = a.agents * (a.hosts + 1)
        print(f"  {a.hosts} sshd on 127.0.0.1 (ports "
              f"{', '.join(str(h[2].port) for h in self.hosts)}), login {self.login.name}; "
              f"{self.total} agents running ({a.agents} a root, local included) after "
              f"{time.monotonic() - t:.0f} s", flush=True)

    def stop(self):
        killed = 0
        for root in [h[1] for h in self.hosts] + ([self.local[0]] if self.local else []):
            killed += fh.stop_agents(root["jobs"])
        for h in self.hosts:
            h[2].stop()
        self.login.remove()
        return killed

    def watch_argv(self, host):
        return host[2].ssh_argv(self.control_dir(), [self.bin, "--jobs-dir", host[1]["jobs"],
                                                     "watch", "--json"])

    def control_dir(self):
        if self.cdir is None:
            self.cdir = os.path.join(runtime_dir(), "luzia-ssh")
            os.makedirs(self.cdir, mode=0o700)
        return self.cdir

    def close_masters(self, control_dir=None):
        for h in self.hosts:
            argv = h[2].ssh_argv(control_dir or self.control_dir(), [])[:-1]
            subprocess.run(argv[:1] + ["-O", "exit"] + argv[1:], capture_output=True, timeout=10)


# --------------------------------------------------------------------------------------------
# Round trips


def rtt_true(fleet, control_dir, n):
    out = []
    for i in range(-len(fleet.hosts), n):  # one untimed round: every master open
        h = fleet.hosts[i % len(fleet.hosts)]
        t = time.monotonic()
        r = subprocess.run(h[2].ssh_argv(control_dir, ["true"]), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        if i >= 0:
            out.append((time.monotonic() - t) * 1000)
        if r.returncode != 0:
            raise RuntimeError(f"ssh {h[0]} true: {r.stderr.decode().strip()}")
    return out


def rtt_echo(fleet, control_dir, n):
    """A line written into `cat` at the other end of an open session, until it is read back."""
    cats = [Stream(h[0], h[2].ssh_argv(control_dir, ["exec", "cat"]), fleet.env)
            for h in fleet.hosts]
    out = []
    try:
        for s in cats:  # the session is open once a first line came back
            s.proc.stdin.write(b"open\n")
            s.proc.stdin.flush()
            if wait_line(cats, s, lambda l: l == b"open", 30) is None:
                raise RuntimeError(f"no echo from {s.name}: {s.stderr()}")
        for i in range(n):
            s = cats[i % len(cats)]
            mark = b"echo-%d" % i
            t = time.monotonic()
            s.proc.stdin.write(mark + b"\n")
            s.proc.stdin.flush()
            got = wait_line(cats, s, lambda l: l == mark, 10)
            if got is None:
                raise RuntimeError(f"echo {i} never came back from {s.name}")
            out.append((got - t) * 1000)
            time.sleep(0.02)
    finally:
        for s in cats:
            s.close()
    return out


def print_ms(label, v, extra=""):
    if not v:
        print(f"  {label}: no samples {extra}", flush=True)
        return
    print(f"  {label}: p50 {pct(v, 50):.2f} ms  p90 {pct(v, 90):.2f}  p99 {pct(v, 99):.2f}  "
          f"max {max(v):.2f}  ({len(v)} samples){extra}", flush=True)


# --------------------------------------------------------------------------------------------
# Stream mode


def open_streams(fleet):
    """The five host streams and the local one, each until `synced`; returns (streams, ms to
    synced by name, ms until all the remote ones were synced)."""
    streams = {}
    for h in fleet.hosts:
        streams[h[0]] = Stream(h[0], fleet.watch_argv(h), fleet.env)
    streams["local"] = Stream("local", [fleet.bin, "--jobs-dir", fleet.local[0]["jobs"], "watch",
                                        "--json"], fleet.env)
    synced, sizes = {}, {}
    deadline = time.monotonic() + 120
    while len(synced) < len(streams):
        for name, s in streams.items():
            for t, line in s.take():
                if name not in synced and kind(line) == "synced":
                    synced[name] = (t - s.t_spawn) * 1000
                    sizes[name] = s.bytes - len(s.buf)
            if s.eof and name not in synced:
                raise RuntimeError(f"`luzia watch --json` on {name} ended: {s.stderr()}")
        if time.monotonic() > deadline:
            missing = sorted(set(streams) - set(synced))
            raise RuntimeError(f"no `synced` from {' '.join(missing)} within 120 s")
        pump(streams.values(), 0.5)
    all_remote = max(v for k, v in synced.items() if k != "local")
    return streams, synced, all_remote, sizes


def connect_rounds(fleet, rounds):
    res = {"cold": [], "warm": []}
    for i in range(rounds):
        for case in ("cold", "warm"):
            if case == "cold":
                fleet.close_masters()
            streams, synced, all_remote, sizes = open_streams(fleet)
            for s in streams.values():
                s.close()
            res[case].append({"per_host_ms": synced, "all_remote_ms": all_remote,
                              "bytes_to_synced": sizes})
            hosts = [v for k, v in synced.items() if k != "local"]
            print(f"  connect {case} {i + 1}: all {len(hosts)} hosts synced {all_remote:.0f} ms "
                  f"(each {min(hosts):.0f} - {max(hosts):.0f}); local root {synced['local']:.0f} "
                  f"ms; {sizes['local'] / 1000:.0f} KB of JSON a root", flush=True)
    return res


def latency_samples(fleet, n, gap, shown, pump_fn):
    """`n` changes per root (the hosts in turn, the local root after each host), each timed
    until `shown(root name, step)` is seen; returns {"remote": [...], "local": [...]}."""
    rng = random.Random(16)
    res = {"remote": [], "local": [], "missed": 0}
    step = 0
    targets = [(h[0], h[3]) for h in fleet.hosts]
    for i in range(n):
        h = targets[i % len(targets)]
        order = [h, ("local", fleet.local[1])]
        if i % 2:
            order.reverse()
        for name, job_dir in order:
            pump_fn(gap * (0.5 + rng.random()))
            step = step % (TOTAL_STEPS - 1) + 1
            t0 = fh.write_progress(job_dir, step, TOTAL_STEPS)
            t = shown(name, step, 5.0)
            if t is None:
                res["missed"] += 1
                print(f"  missed: step {step} on {name}", flush=True)
            else:
                res["local" if name == "local" else "remote"].append((t - t0) * 1000)
    return res


def bench_stream(fleet, out):
    a = fleet.args
    cdir = fleet.control_dir()
    res = {"connect": connect_rounds(fleet, a.connect_rounds)}
    # The floor: the same master connections with no session at all (ssh's keepalives only).
    rtt_true(fleet, cdir, 0)
    time.sleep(2.0)
    # Shorter than ControlPersist (60 s), which ends a master that long after its last session.
    floor_s = min(a.idle_seconds, 45.0)
    print("  masters open, no session:", flush=True)
    res["idle_floor"] = idle_bytes(fleet, floor_s, lambda left: time.sleep(min(left, 1.0)))
    streams, _, _, _ = open_streams(fleet)
    try:
        every = list(streams.values())

        def shown(name, step, timeout):
            mark = b'"M%d"' % step
            return wait_line(every, streams[name], lambda line: mark in line, timeout)

        pump(every, 1.0)
        for s in every:
            s.take()
        lat = latency_samples(fleet, a.samples, a.gap, shown, lambda sec: pump(every, sec))
        res["latency"] = lat
        print_ms("change -> line, remote hosts", lat["remote"])
        print_ms("change -> line, local root", lat["local"])
        res["rtt_true"] = rtt_true(fleet, cdir, a.rtt_samples)
        print_ms("ssh HOST true over the master", res["rtt_true"])
        res["rtt_echo"] = rtt_echo(fleet, cdir, a.rtt_samples)
        print_ms("a line echoed through an open session", res["rtt_echo"])
        pump(every, 5.0)  # settle: the round trips' sessions closed

        def reader(left):
            pump(every, min(left, 1.0))
            for s in every:
                s.take()
        res["idle"] = idle_bytes(fleet, a.idle_seconds, reader,
                                 {n: s for n, s in streams.items() if n != "local"})
    finally:
        for s in streams.values():
            s.close()
    out["stream"] = res


# --------------------------------------------------------------------------------------------
# Cockpit mode


def cockpit_config(fleet):
    path = os.path.join(fleet.work, "cockpit-config.toml")
    with open(path, "w") as f:
        f.write(f"jobs_dir = {json.dumps(fleet.local[0]['jobs'])}\n"
                f"queue_dir = {json.dumps(os.path.join(fleet.local[0]['dir'], 'queue'))}\n\n")
        for h in fleet.hosts:
            f.write(h[2].host_toml(fleet.bin) + "\n")
    return path


def start_cockpit(fleet, tag):
    home = os.path.join(fleet.work, f"cockpit-{tag}")
    env = ck.cockpit_env(home)
    env["LUZIA_CONFIG"] = cockpit_config(fleet)
    env["XDG_RUNTIME_DIR"] = runtime_dir()
    p = ck.Pty([fleet.bin, "tui", "--all-hosts"], env)
    return p, os.path.join(env["XDG_RUNTIME_DIR"], "luzia-ssh")


def bench_cockpit(fleet, out):
    a = fleet.args
    # `jobs K/N`: K is the selected row, which the sort may move as hosts come in.
    title = re.compile(rf"jobs \d+/{fleet.total}(?!\d)")
    res = {"connect_ms": []}
    fleet.close_masters()  # the stream mode's
    for i in range(a.connect_rounds):
        wait_no_connections(fleet, 90)
        p, cdir = start_cockpit(fleet, f"c{i}")
        try:
            t = p.wait_for(lambda s: title.search(s), 120)
            if t is None:
                raise RuntimeError(f"the cockpit never showed `jobs K/{fleet.total}`:\n"
                                   + p.screen.text())
            res["connect_ms"].append((t - p.t_spawn) * 1000)
            print(f"  cockpit {i + 1}: every job on screen {res['connect_ms'][-1]:.0f} ms after "
                  f"spawn (no master connection before)", flush=True)
        finally:
            p.close()
            fleet.close_masters(cdir)
    waited = wait_no_connections(fleet, 90)
    if waited > 1:
        print(f"  waited {waited:.0f} s for the earlier cockpits' connections to end", flush=True)
    p, cdir = start_cockpit(fleet, "main")
    try:
        if p.wait_for(lambda s: title.search(s), 120) is None:
            raise RuntimeError("the cockpit never showed every job:\n" + p.screen.text())
        p.pump(2.0)
        text = p.screen.text()
        # A row names its host in the HOST column and the job by its id there.
        rows = [(h[0], os.path.basename(h[3])) for h in fleet.hosts]
        rows.append(("local", os.path.basename(fleet.local[1])))
        missing = [f"{i}@{h}" for h, i in rows if not re.search(rf"\b{h}\s+{i}\b", text)]
        if missing:
            raise RuntimeError(f"not every changing job ({' '.join(missing)}) is on screen:\n{text}")

        def shown(_name, step, timeout):
            pat = re.compile(rf"(?<!\d){step}/{TOTAL_STEPS}(?!\d)")
            return p.wait_for(lambda s: pat.search(s), timeout)

        lat = latency_samples(fleet, a.samples, a.gap, shown, p.pump)
        res["latency"] = lat
        print_ms("change -> screen, remote hosts", lat["remote"])
        print_ms("change -> screen, local root", lat["local"])
        if lat["missed"]:
            print("  the screen at the end:\n" + p.screen.text(), flush=True)
        # Round trips over the cockpit's own master connections, the screen read meanwhile.
        res["rtt_true"] = rtt_true(fleet, cdir, a.rtt_samples)
        print_ms("ssh HOST true over the cockpit's master", res["rtt_true"])
        res["rtt_echo"] = rtt_echo(fleet, cdir, a.rtt_samples)
        print_ms("a line echoed through an open session", res["rtt_echo"])
        p.pump(5.0)
        res["idle"] = idle_bytes(fleet, a.idle_seconds, lambda left: p.pump(min(left, 1.0)))
    finally:
        p.close()
        fleet.close_masters(cdir)
    out["cockpit"] = res


# --------------------------------------------------------------------------------------------
# The verdict


def verdict(out):
    print()
    for mode in ("stream", "cockpit"):
        r = out.get(mode)
        if not r or "latency" not in r:
            continue
        remote, local = r["latency"]["remote"], r["latency"]["local"]
        echo, true = pct(r["rtt_echo"], 50), pct(r["rtt_true"], 50)
        budget = pct(local, 99) + echo + 50
        print(f"{mode}: remote p99 {pct(remote, 99):.1f} ms against local p99 "
              f"{pct(local, 99):.1f} + one round trip {echo:.1f} (echo p50; `ssh true` p50 "
              f"{true:.1f}) + 50 = {budget:.1f} ms: "
              f"{'met' if pct(remote, 99) <= budget else 'NOT MET'}; "
              f"remote p50 {pct(remote, 50):.1f}, local p50 {pct(local, 50):.1f}")
        idle = r["idle"]
        worst = max(v["wire_bps"] for v in idle.values())
        print(f"{mode}: idle traffic per host, worst {worst:.1f} B/s with headers "
              f"({max(v['payload_bps'] for v in idle.values()):.1f} payload): "
              f"{'met' if worst < 1000 else 'NOT MET'} (< 1 KB/s)")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", nargs="*", metavar="MODE", help="stream, cockpit (default: both)")
    ap.add_argument("--bin", default=os.environ.get("LUZIA_BIN", ck.DEFAULT_BIN))
    ap.add_argument("--work", default=os.environ.get(
        "LUZIA_BENCH_FLEET", os.path.join(ck.REPO, "target", "bench", "fleet")))
    ap.add_argument("--hosts", type=int, default=5)
    ap.add_argument("--agents", type=int, default=200, help="agents per root (200)")
    ap.add_argument("--samples", type=int, default=60, help="changes per side (60)")
    ap.add_argument("--gap", type=float, default=0.2, help="mean seconds between changes")
    ap.add_argument("--rtt-samples", type=int, default=50)
    ap.add_argument("--connect-rounds", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--login", help="log in as this existing user (default: a throwaway one)")
    ap.add_argument("--json", help="also write every raw figure to this file")
    return ap, ap.parse_args()


def main():
    ap, args = parse_args()
    which = args.which or ["stream", "cockpit"]
    if set(which) - {"stream", "cockpit"}:
        ap.error("modes: stream, cockpit")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    if os.geteuid() != 0 or not os.access(fh.SSHD, os.X_OK):
        sys.exit("needs root and /usr/sbin/sshd (apt-get install openssh-server)")
    args.work = os.path.abspath(args.work)
    if os.path.exists(args.work):
        sys.exit(f"{args.work} exists: remove it (a run left it?) or pass --work")
    os.makedirs(args.work)
    os.chmod(args.work, 0o755)
    CLEAN.dirs.append(args.work)
    for sig in (ck.signal.SIGINT, ck.signal.SIGTERM, ck.signal.SIGHUP):
        ck.signal.signal(sig, ck.on_signal)
    # A private copy, readable by the hosts' login: a rebuild must not change the figures.
    binary = os.path.join(args.work, "bin", "luzia")
    os.makedirs(os.path.dirname(binary))
    shutil.copy2(args.bin, binary)
    os.chmod(os.path.dirname(binary), 0o755)
    src = args.bin
    args.bin = binary
    out = {"machine": ck.machine(), "bin": src, "build": ck.build_info(src)}
    m = out["machine"]
    print(f"{m['nproc']} cores, {m['cpu']}, load {m['load'][0]:.2f}; {src}: {out['build']}",
          flush=True)
    fleet = Fleet(args)
    try:
        fleet.start()
        for mode, fn in (("stream", bench_stream), ("cockpit", bench_cockpit)):
            if mode in which:
                print(f"{mode}: (load average {os.getloadavg()[0]:.2f})", flush=True)
                t = time.monotonic()
                fn(fleet, out)
                print(f"  ({time.monotonic() - t:.0f} s; load average "
                      f"{os.getloadavg()[0]:.2f})", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        sys.exit(130)
    finally:
        fleet.close_masters()
        killed = fleet.stop()
        print(f"  stopped {killed} agent and supervisor processes", flush=True)
        CLEAN.all()
    verdict(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
