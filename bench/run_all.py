"""Run every benchmark in this folder, one after another, with one command.

    .venv/bin/python bench/run_all.py            # full sizes (several minutes)
    .venv/bin/python bench/run_all.py --quick    # smaller graphs, fewer runs

Each benchmark measures its own baseline in the same run and prints ratios against it;
this script only runs them in turn and stops at none of their failures.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCOMO = HERE.parent.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"


def plan(quick: bool) -> list[list[str]]:
    runs = [
        ["startup.py", "--runs", "7" if quick else "15"],
        ["request_build.py"],
        ["memory_index.py"],
        ["sandbox_overhead.py", "--runs", "20" if quick else "50"],
        ["graph_bench.py", *(["--quick"] if quick else [])],
        ["graph_turn.py", *(["--quick"] if quick else [])],
        # issue 15's table: the in-memory design ("old") and journal.index, same run,
        # on the agent-like journal of agent_journal.py
        ["graph_store.py", *(["--quick"] if quick else [])],
        # issue 16: the mino memory commands a person runs (search, list, history, purge)
        ["memory_commands.py", *(["--nodes", "5000", "--runs", "3"] if quick else [])],
        # issue 16: scripted multi-session stories through the REPL (bench/stories)
        ["agent_memory.py", *(["--quick"] if quick else [])],
        # issue 17: the shared journal (PostgreSQL) beside the file journal
        ["shared_journal.py", *(["--quick"] if quick else [])],
        # issue 27: an MCP tool call (stdio) beside a built-in one
        ["mcp_call.py", *(["--calls", "50", "--turns", "10"] if quick else [])],
    ]
    if LOCOMO.exists():
        runs.append(["locomo_recall.py", "--data", str(LOCOMO), "--retriever", "all"])
        # issue 16: the graph mino's own loop stores, against BM25 over its texts
        runs.append(["locomo_recall.py", "--data", str(LOCOMO), "--through-loop",
                     *(["--quick"] if quick else ["--ablate"])])
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    failed = []
    for argv in plan(args.quick):
        print(f"\n=== {' '.join(argv)}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(HERE / argv[0]), *argv[1:]])
        print(f"--- {argv[0]}: exit {code}, {time.perf_counter() - started:.1f} s", flush=True)
        if code:
            failed.append(argv[0])
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
