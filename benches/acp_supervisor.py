#!/usr/bin/env python3
"""Memory of the supervisor of an ACP agent: N jobs each run a small ACP agent (this script,
with --agent) that opens a session and asks permission for a tool call, so that each job waits
at a gate with its session open; then each supervisor's PSS (/proc/PID/smaps_rollup) is read,
beside the same for N plain jobs (`sleep`), whose supervisors only wait for their agent.
The agent's own memory is not counted: it is another process.

    benches/acp_supervisor.py --luzia target/release/luzia [--jobs 10]
"""
import argparse, json, os, subprocess, sys, tempfile, time


def agent():
    """A minimal ACP agent: initialize, session/new, then one prompt that asks permission and
    waits for the answer for ever (until its stdin closes)."""
    out = sys.stdout
    def send(o):
        out.write(json.dumps(o) + "\n"); out.flush()
    for line in sys.stdin:
        m = json.loads(line)
        method = m.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1,
                  "agentCapabilities": {"loadSession": True},
                  "agentInfo": {"name": "bench-agent", "version": "1"}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "bench-session"}})
        elif method == "session/prompt":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "bench-session",
                  "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Working.\n"}}}})
            send({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
                  "sessionId": "bench-session",
                  "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                              {"optionId": "no", "name": "Reject", "kind": "reject_once"}],
                  "toolCall": {"toolCallId": "c1", "title": "make test", "kind": "execute", "status": "pending"}}})


def pss_kib(pid):
    """PSS, and its anonymous part (what each supervisor has of its own, whatever the number
    of supervisors sharing the executable's pages), in KiB."""
    got = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("Pss", "Pss_Anon"):
                got[key] = int(line.split()[1])
    return got.get("Pss"), got.get("Pss_Anon")


def run(luzia, jobs, command, n, wait_for):
    base = tempfile.mkdtemp(prefix="luzia-bench-acp-")
    for d in ("jobs", "queue", "proj", "xdg"):
        os.makedirs(os.path.join(base, d))
    cfg = os.path.join(base, "config.toml")
    with open(cfg, "w") as f:
        f.write(f'jobs_dir = "{base}/jobs"\nnotifications_log = "{base}/notes.log"\n'
                f'queue_dir = "{base}/queue"\n[agent]\nmax_concurrent = {n}\n'
                f'command = {json.dumps(command)}\n[projects.p]\npath = "{base}/proj"\n')
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(base, "xdg"))
    ids = [subprocess.check_output([luzia, "--config", cfg, "run", "p", "bench"], env=env, text=True).strip()
           for _ in range(n)]
    deadline = time.time() + 60
    while not all(os.path.exists(os.path.join(base, "jobs", i, wait_for)) for i in ids):
        if time.time() > deadline:
            sys.exit(f"the jobs never showed {wait_for} in {base}")
        time.sleep(0.1)
    time.sleep(1)
    pids = [int(open(os.path.join(base, "jobs", i, "pid")).read()) for i in ids]
    sizes = [pss_kib(p) for p in pids]
    for i in ids:
        subprocess.run([luzia, "--config", cfg, "kill", i], env=env, capture_output=True)
    return sizes


def main():
    if "--agent" in sys.argv:
        return agent()
    ap = argparse.ArgumentParser()
    ap.add_argument("--luzia", required=True)
    ap.add_argument("--jobs", type=int, default=10)
    a = ap.parse_args()
    luzia = os.path.abspath(a.luzia)
    me = os.path.abspath(__file__)
    # An ACP kind is told by its program's name: the agent runs as a script named `gemini`.
    bindir = tempfile.mkdtemp(prefix="luzia-bench-bin-")
    fake = os.path.join(bindir, "gemini")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {me} --agent\n")
    os.chmod(fake, 0o755)
    acp = run(luzia, a.jobs, [fake, "--acp"], a.jobs, "approval.json")
    plain = run(luzia, a.jobs, ["sh", "-c", "exec sleep 600"], a.jobs, "pid")
    median = lambda s: s[len(s) // 2]
    for part, name in ((0, "PSS"), (1, "PSS anonymous")):
        x = sorted(v[part] for v in acp)
        y = sorted(v[part] for v in plain)
        print(f"{a.jobs} supervisors each, {name} in KiB (min / median / max)")
        print(f"  ACP session waiting at a gate: {x[0]} / {median(x)} / {x[-1]}")
        print(f"  plain agent (sleep):           {y[0]} / {median(y)} / {y[-1]}")
        print(f"  ACP's cost, medians:           {median(x) - median(y)} KiB")


if __name__ == "__main__":
    main()
