"""The fleet benchmark's measuring tools: JSON-line streams read side by side (what a cockpit's
links read from `ssh HOST luzia watch --json`), and the bytes on each host's TCP connection.
Used by benches/fleet.py. Python 3 standard library only.
"""

import json
import os
import select
import subprocess
import time

import cockpit as ck
import fleet_hosts as fh

CLEAN = ck.CLEAN
HEADER_BYTES = 52  # IPv4 20 + TCP 20 + timestamps 12, per segment on loopback


# --------------------------------------------------------------------------------------------
# JSON line streams read side by side


class Stream:
    def __init__(self, name, argv, env):
        self.name = name
        self.t_spawn = time.monotonic()
        self.proc = CLEAN.proc(subprocess.Popen(argv, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                env=env, start_new_session=True))
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""
        self.bytes = 0
        self.lines = []  # (time read, bytes) not yet taken
        self.eof = False

    def read(self, t):
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            self.eof = True
            return
        self.bytes += len(data)
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        self.lines.extend((t, line) for line in done)

    def take(self):
        out, self.lines = self.lines, []
        return out

    def stderr(self):
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace").strip()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        CLEAN.stop(self.proc, grace=2.0)


def pump(streams, timeout):
    """Reads whatever the streams have within `timeout` s; returns the time of the last read."""
    live = {s.fd: s for s in streams if not s.eof}
    if not live:
        time.sleep(max(0.0, timeout))
        return None
    r, _, _ = select.select(list(live), [], [], max(0.0, timeout))
    t = time.monotonic()
    for fd in r:
        live[fd].read(t)
    return t if r else None


def wait_line(streams, target, pred, timeout):
    """The time the first line of `target` satisfying pred(line) was read, or None; every
    other stream is read (and its lines dropped) meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        for t, line in target.take():
            if pred(line):
                return t
        for s in streams:
            if s is not target:
                s.take()
        left = deadline - time.monotonic()
        if left <= 0 or target.eof:
            return None
        pump(streams, left)


def kind(line):
    try:
        return json.loads(line).get("type")
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# Idle bytes


def idle_bytes(fleet, seconds, reader, streams_of=None):
    """Bytes on each host's connections over `seconds`, while `reader(left)` keeps reading.
    The counters are sampled every second, per connection: one that opens in the window counts
    from zero, one that closes counts up to its last sample."""
    first = {h[0]: fh.tcp_sockets(h[2].port) for h in fleet.hosts}
    last = {name: dict(socks) for name, socks in first.items()}
    app0 = {n: s.bytes for n, s in (streams_of or {}).items()}
    t0 = time.monotonic()
    while (left := t0 + seconds - time.monotonic()) > 0:
        reader(min(left, 1.0))
        for h in fleet.hosts:
            last[h[0]].update(fh.tcp_sockets(h[2].port))
    elapsed = time.monotonic() - t0
    res = {}
    for h in fleet.hosts:
        a, b = last[h[0]], first[h[0]]
        zero = dict.fromkeys(fh.COUNTERS, 0)

        def delta(k):
            return sum(a[s][k] - b.get(s, zero)[k] for s in a)
        payload = delta("bytes_acked") + delta("bytes_received")
        segs = delta("segs_out") + delta("segs_in")
        r = {"seconds": elapsed, "payload_bps": payload / elapsed,
             "wire_bps": (payload + HEADER_BYTES * segs) / elapsed,
             "segments_per_s": segs / elapsed, "connections": len(a),
             "connections_at_start": len(b)}
        if streams_of and h[0] in streams_of:
            r["json_bps"] = (streams_of[h[0]].bytes - app0[h[0]]) / elapsed
        res[h[0]] = r
        json_part = f", JSON lines read {r['json_bps']:.1f} B/s" if "json_bps" in r else ""
        print(f"  idle {h[0]}: {r['payload_bps']:.1f} B/s payload, {r['wire_bps']:.1f} B/s with "
              f"headers, {r['segments_per_s']:.2f} segments/s{json_part} "
              f"({elapsed:.0f} s, {len(a)} connection(s), {len(b)} at the start)", flush=True)
    return res


def wait_no_connections(fleet, timeout):
    """Waits until no connection to any host is left (an earlier cockpit's master ends
    ControlPersist after its last session); returns the seconds waited."""
    t0 = time.monotonic()
    while any(fh.tcp_sockets(h[2].port) for h in fleet.hosts):
        if time.monotonic() - t0 > timeout:
            left = {h[0]: len(fh.tcp_sockets(h[2].port)) for h in fleet.hosts}
            raise RuntimeError(f"connections still open after {timeout} s: {left}")
        time.sleep(0.5)
    return time.monotonic() - t0
