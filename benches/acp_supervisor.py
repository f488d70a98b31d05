#!/usr/bin/env python3
"""Memory of the supervisor of an ACP agent, for each agent luzia drives over ACP.

For each row, in one run and one kind at a time: N jobs whose agent opens a session and asks
permission for a shell command, so that each job waits at a gate with its session open; then
each supervisor's PSS and anonymous PSS (/proc/PID/smaps_rollup) are read, and the PSS of its
agent's processes for context; the jobs are killed before the next row starts. The rows:

- plain (sleep): `sh -c 'exec sleep 600'`, a supervisor that only waits for its agent;
- fake ACP agent: acp_bench/fake_agent.py, run as a program named `gemini`;
- gemini, qwen, opencode, codex: the real CLIs CI pins (`gemini --acp`, `qwen --acp`,
  `opencode acp`, `codex-acp`), each with a HOME of its own set up as a user would, against a
  scripted model API this script serves on 127.0.0.1 (acp_bench/fake_llm.py) whose every turn
  is a call of the agent's shell tool.

    benches/acp_supervisor.py --luzia target/release/luzia [--jobs 5] [--agents gemini,codex]
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
from acp_bench import agents, fake_llm  # noqa: E402
from acp_bench.measure import Failed, measure  # noqa: E402

# The supervisor's budget of its own memory beside its agent's (issue 28).
BUDGET_KIB = 1024


def median(values):
    s = sorted(values)
    return s[len(s) // 2]


def rows_to_run(wanted, bindir, homes, llm_url):
    """The rows, plain and fake first; a real agent not installed is left out, saying so."""
    rows = [agents.plain(), agents.fake(bindir)]
    for name in wanted:
        path = agents.program(name)
        if path is None:
            print(f"SKIPPED {name}: not installed under {agents.CACHE}", file=sys.stderr)
            continue
        rows.append(agents.real(name, path, os.path.join(homes, name), llm_url))
    return rows


def report(results, n, plain_anon, fake_anon):
    """One line a row: medians over its N jobs, in KiB, and the differences in anonymous PSS
    from the plain and the fake rows."""
    print(f"\n{n} jobs a row; medians in KiB (supervisor: min-max of anonymous PSS)")
    head = (f"{'agent':16} {'sup PSS':>8} {'sup anon':>9} {'range':>11} {'- plain':>8} "
            f"{'- fake':>7} {'threads':>7} {'agent PSS':>10} {'procs':>5}  budget")
    print(head)
    for name, samples in results:
        anon = [s.anon for s in samples]
        m = median(anon)
        print(f"{name:16} {median(s.pss for s in samples):8} {m:9} "
              f"{min(anon):>5}-{max(anon):<5} {m - plain_anon:+8} {m - fake_anon:+7} "
              f"{median(s.threads for s in samples):7} {median(s.agent_pss for s in samples):10} "
              f"{median(s.agent_procs for s in samples):5}  "
              f"{'under' if max(anon) < BUDGET_KIB else 'OVER'} 1 MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--luzia", required=True)
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--agents", default=",".join(agents.REAL),
                    help="the real agents to run, comma-separated (default: all four)")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds to wait after the last gate before reading")
    a = ap.parse_args()
    wanted = [w for w in a.agents.split(",") if w]
    unknown = set(wanted) - set(agents.REAL)
    if unknown:
        sys.exit(f"unknown agents {sorted(unknown)}: choose among {', '.join(agents.REAL)}")
    luzia = os.path.abspath(a.luzia)
    scratch = tempfile.mkdtemp(prefix="luzia-bench-agents-")
    llm = fake_llm.FakeLlm()
    try:
        os.makedirs(os.path.join(scratch, "bin"))
        results = []
        for row in rows_to_run(wanted, os.path.join(scratch, "bin"), scratch, llm.url):
            print(f"{row.name}: {a.jobs} jobs ...", file=sys.stderr, flush=True)
            results.append((row.name, measure(luzia, row, a.jobs, a.settle)))
        print(f"model API requests: {llm.requests_seen()}", file=sys.stderr)
    except Failed as e:
        sys.exit(f"{e}\nmodel API requests: {llm.requests_seen()}")
    finally:
        llm.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    anon = {name: median(s.anon for s in samples) for name, samples in results}
    report(results, a.jobs, anon["plain (sleep)"], anon["fake ACP agent"])


if __name__ == "__main__":
    main()
