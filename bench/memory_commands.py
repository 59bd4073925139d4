"""``mino memory`` commands a person runs, on an agent-like journal: ``search`` (as a person
reads it, and ``--json``), ``list``, ``history``, and ``purge`` (rewrites the journal and
rebuilds the index). Each beside ``mino memory --help`` in the same run (the floor: the
interpreter, click, the plugin loading), as medians with CPU time beside wall time.

    .venv/bin/python bench/memory_commands.py [--nodes 20000] [--runs 5] [--json]

The journal comes from ``bench/agent_journal.py`` (what mino's loop writes, turn after
turn); its index is built once before the timings. ``purge`` is timed once per run on a
fresh copy (it rewrites the file).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from graph_store import MINO, med, timed_cmd  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mino-memory-commands-"))
    try:
        src = tmp / "agent.jsonl"
        subprocess.run([sys.executable, str(HERE / "agent_journal.py"), str(src), "--nodes",
                        str(a.nodes)], check=True, stdout=subprocess.DEVNULL)
        home = tmp / "home"
        (home / "graph").mkdir(parents=True)
        jpath = home / "graph" / "journal.jsonl"
        shutil.copyfile(src, jpath)
        (home / "config.yaml").write_text("memory:\n  backend: graph\n")
        env = dict(os.environ, MINO_HOME=str(home))
        env.pop("OPENAI_API_KEY", None)
        floor = [MINO, "memory", "--help"]
        cases = {
            "search": [MINO, "memory", "search", "deploy port fix"],
            "search --json": [MINO, "memory", "search", "deploy port fix", "--json"],
            "search --explain": [MINO, "memory", "search", "deploy port fix", "--explain"],
            "list": [MINO, "memory", "list"],
            "list --limit 0 --episodes": [MINO, "memory", "list", "--limit", "0",
                                          "--episodes", "--json"],
            "history": [MINO, "memory", "history", str(a.nodes // 2)],
        }
        timed_cmd(cases["search"], env)  # builds the index, compiles what changed
        rows: dict[str, list] = {k: [] for k in ["memory --help", *cases, "purge"]}
        for _ in range(a.runs):
            rows["memory --help"].append(timed_cmd(floor, env))
            for name, argv in cases.items():
                rows[name].append(timed_cmd(argv, env))
        for i in range(a.runs):
            shutil.copyfile(src, jpath)
            timed_cmd(cases["search"], env)  # the index of this copy, outside the timing
            rows["purge"].append(timed_cmd([MINO, "memory", "purge", str(100 + i), "--yes"],
                                           env))
        out = {"nodes": a.nodes, "journal_mb": round(src.stat().st_size / 2**20, 1),
               "runs": a.runs, "cases": {}}
        base = med(rows["memory --help"], "wall", "cpu")
        for name, r in rows.items():
            m = med(r, "wall", "cpu", "rss_mb")
            m["x_floor_wall"] = round(m["wall"] / base["wall"], 2)
            m["x_floor_cpu"] = round(m["cpu"] / base["cpu"], 2)
            out["cases"][name] = m
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['nodes']} nodes, journal {out['journal_mb']} MB, median of {out['runs']}")
    print(f"{'command':<28}{'wall ms':>9}{'cpu ms':>9}{'RSS MB':>8}{'x floor wall':>14}"
          f"{'x floor cpu':>13}")
    for name, m in out["cases"].items():
        print(f"{name:<28}{m['wall'] * 1000:>9.1f}{m['cpu'] * 1000:>9.1f}{m['rss_mb']:>8.1f}"
              f"{m['x_floor_wall']:>14.2f}{m['x_floor_cpu']:>13.2f}")


if __name__ == "__main__":
    main()
