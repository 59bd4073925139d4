"""The graph store's figures on an agent-like journal (bench/agent_journal.py), one run.

    python bench/graph_store.py                 # 100,000 nodes (about 1M operations)
    python bench/graph_store.py --quick         # 10,000 nodes
    python bench/graph_store.py --nodes 1000000 --only index

Every figure of issue 15's table, each measured in a fresh process (a cold start is one)
with its CPU time (user + system of that process) beside its wall time, median of
``--runs``:

- ``replay``: open with no derived state (the old design's cold open; the index's rebuild,
  and beside it ``replay_in_process``: the same rebuild without its text worker, in
  alternating runs; CPU time counts both processes)
- ``open``: open with valid derived state (old: ``journal.cache``; new: ``journal.index``)
- ``search``: ``mino memory search Q`` from the shell, beside ``mino --help`` (the floor)
- ``turn``: memory work per turn through the real loop (``loop.begin/observe/end``), the
  second turn included, and the agent process's resident memory after 20 turns
- ``disk``: the derived state's size against the journal's

The machine is shared: compare the ratios against the floor measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "plugins" / "mino-memory-graph" / "src"
sys.path.insert(0, str(ROOT / "bench"))

import agent_journal  # noqa: E402

PY = sys.executable
MINO = str(Path(PY).parent / "mino")

# Runs in the child: prints {"wall", "cpu", "rss_mb", ...} as its last line.
PRELUDE = f"""
import json, resource, sys, time
sys.path.insert(0, {str(SRC)!r})
t0 = time.perf_counter(); c0 = time.process_time()
def done(**extra):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    rc = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0 + rc.ru_utime + rc.ru_stime,
                          rss_mb=ru.ru_maxrss / 1024, **extra)))
"""

# old: the in-memory design left the product (issue 24 part 2); what remains is its replay
# into ``model.Graph``, the oracle ``mino memory check`` compares the index with (no cache);
# index: what `mino memory` commands open (the index, rebuilt when missing)
OPEN_OLD = """
from mino_memory_graph.core.model import Graph
from mino_memory_graph.journal.journal import Journal, Report, fold_range
j = Journal(sys.argv[1]); rep = Report()
fold_range(j.read, 0, j.size(), Graph(), rep, [])
done(ops=rep.ops, from_cache=False)
"""

OPEN_INDEX = """
from mino_memory_graph.store import Store
s = Store.open(sys.argv[1])
done(ops=s.index.ops_applied, rebuilt=s.index.rebuilt, note=s.index.note)
"""

# the index's own costs: a top-48 FTS5 BM25 query, and what one write request adds
INDEX_COSTS = """
import random
from mino_memory_graph.store import Store
from mino_memory_graph.text.words import tokenize
s = Store.open(sys.argv[1])
words = "deploy port fix the test run build error install config service pnpm cache".split()
rnd = random.Random(3)
qs = [tokenize(" ".join(rnd.choice(words) for _ in range(5))) for _ in range(50)]
c = time.process_time(); w = time.perf_counter()
for q in qs:
    s.index.lexical(q, 48)
lex = ((time.process_time() - c) / len(qs), (time.perf_counter() - w) / len(qs))
rows = {}
for use in (True, True, True):
    t = Store.open(sys.argv[1], fsync=False)
    t.graph
    c = time.process_time()
    for i in range(100):
        with t.write() as r:
            n = r.create_node("Aspect", f"bench memory {i} deploy port")
            r.fact(n, "summary", "the deploy uses port 8081 " + str(i))
            r.commit_log(n, "tool_call", "Bash(ls): ok")
    rows.setdefault(use, []).append((time.process_time() - c) / 100)
    t.close()
done(lexical_cpu_ms=lex[0] * 1000, lexical_wall_ms=lex[1] * 1000,
     write_cpu_ms_with_index=min(rows[True]) * 1000)
"""

TURN = """
from types import SimpleNamespace
from pathlib import Path
from mino_core import Status, ToolCall, ToolOutcome, ToolResult
from mino_memory_graph.loop import loop
home, project = Path(sys.argv[1]), Path(sys.argv[2])
config = json.loads(sys.argv[4])
class Session(SimpleNamespace):
    def notice(self, text):
        pass
    def denied(self, name, arguments):
        return None
session = Session(id="b" * 32, home=home, project_root=project, config=config, state={},
                  mode="manual")
words = "deploy port fix the test run build error install config service pnpm cache".split()
import random
rnd = random.Random(5)
turns = []
for i in range(int(sys.argv[3])):
    text = " ".join(rnd.choice(words) for _ in range(6))
    turn = SimpleNamespace(session=session, user_text=text, number=i + 1, scratch={})
    w, c = time.perf_counter(), time.process_time()
    loop.begin(turn)
    ok = ToolOutcome(ToolCall("c1", "read_file", {"path": "src/app.py"}),
                     ToolResult(Status.COMPLETED, "print('hi')"), "allow")
    loop.observe(ok, turn)
    loop.end(SimpleNamespace(info=turn, outcomes=[ok], answer="Use pnpm and vite here.",
                             ended="answer", requests=1, clean=True))
    turns.append((time.perf_counter() - w, time.process_time() - c))
done(turns=turns)
"""


def child(code: str, *args: str, env=None) -> dict:
    out = subprocess.run([PY, "-c", PRELUDE + code, *args], capture_output=True, text=True,
                         env=env, timeout=1800)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed_cmd(argv, env) -> dict:
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError(f"{argv} exited {p.returncode}: {p.stderr.read()[-500:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def med(rows: list[dict], *keys) -> dict:
    return {k: round(statistics.median(r[k] for r in rows), 4) for k in keys}


def figures(journal: Path, design: str, runs: int, turns: int, costs: bool = True) -> dict:
    """Every figure for one design (``old``: Graph + journal.cache; ``index``)."""
    out: dict = {"design": design}
    tmp = Path(tempfile.mkdtemp(prefix=f"mino-store-{design}-"))
    try:
        home = tmp / "home"
        (home / "graph").mkdir(parents=True)
        jpath = home / "graph" / "journal.jsonl"
        shutil.copyfile(journal, jpath)
        size = jpath.stat().st_size
        code = OPEN_OLD if design == "old" else OPEN_INDEX
        derived = jpath if design == "old" else jpath.with_suffix(".index")
        config = {}
        # the index's rebuild with its text worker (text_worker.py) and without, alternating
        reps, inproc = [], []
        alone = dict(os.environ, MINO_GRAPH_REBUILD_WORKER="0")
        for _ in range(max(1, runs // 2)):
            if design == "index":
                derived.unlink(missing_ok=True)
            reps.append(child(code, str(jpath), "none"))
            if design == "index":
                derived.unlink(missing_ok=True)
                inproc.append(child(code, str(jpath), "none", env=alone))
        ops = reps[0]["ops"]
        for key, rows in (("replay", reps), ("replay_in_process", inproc)):
            if rows:
                out[key] = med(rows, "wall", "cpu", "rss_mb")
                out[key]["ops"] = ops
                out[key]["ops_per_s_wall"] = round(ops / out[key]["wall"])
                out[key]["ops_per_s_cpu"] = round(ops / out[key]["cpu"])
        if inproc:  # cpu: both processes'
            out["replay"]["x_in_process_wall"] = round(
                out["replay_in_process"]["wall"] / out["replay"]["wall"], 2)
        child(code, str(jpath), "none")
        out["open"] = med([child(code, str(jpath), "cache") for _ in range(runs)],
                          "wall", "cpu", "rss_mb")
        out["disk"] = {"journal_mb": round(size / 2**20, 1),
                       "derived_mb": round(derived.stat().st_size / 2**20, 1),
                       "ratio": round(derived.stat().st_size / size, 2)}
        env = dict(os.environ, MINO_HOME=str(home))
        env.pop("OPENAI_API_KEY", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, then cached
        helps, mhelps, searches = [], [], []
        search = [MINO, "memory", "search", "deploy port fix", "--k", "5"]
        timed_cmd(search, env)  # compiles what changed
        for _ in range(runs):
            helps.append(timed_cmd([MINO, "--help"], env))
            mhelps.append(timed_cmd([MINO, "memory", "--help"], env))
            searches.append(timed_cmd(search, env))
        out["help"] = med(helps, "wall", "cpu")
        out["memory_help"] = med(mhelps, "wall", "cpu")
        out["search"] = med(searches, "wall", "cpu", "rss_mb")
        out["search"]["x_help_cpu"] = round(out["search"]["cpu"] / out["help"]["cpu"], 2)
        out["search"]["x_help_wall"] = round(out["search"]["wall"] / out["help"]["wall"], 2)
        out["search"]["x_memory_help_wall"] = round(
            out["search"]["wall"] / out["memory_help"]["wall"], 2)
        if design == "index" and costs:
            out["index_costs"] = child(INDEX_COSTS, str(jpath))
        if turns:
            project = tmp / "project"
            project.mkdir()
            r = child(TURN, str(home), str(project), str(turns), json.dumps(config))
            ts = r["turns"]
            later = ts[1:]
            out["turn"] = {
                "first_wall_ms (opens the store)": round(ts[0][0] * 1000, 1),
                "first_cpu_ms": round(ts[0][1] * 1000, 1),
                "second_wall_ms": round(ts[1][0] * 1000, 1) if len(ts) > 1 else None,
                "median_wall_ms": round(statistics.median(t[0] for t in later) * 1000, 2),
                "median_cpu_ms": round(statistics.median(t[1] for t in later) * 1000, 2),
                "max_wall_ms (after the first)": round(max(t[0] for t in later) * 1000, 1),
                "rss_mb": round(r["rss_mb"], 1)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--only", choices=("old", "index"), action="append")
    ap.add_argument("--journal", type=Path, help="reuse a generated journal")
    ap.add_argument("--no-costs", action="store_true",
                    help="skip the write A/B (it replays the whole journal into memory)")
    args = ap.parse_args()
    nodes = args.nodes or (10_000 if args.quick else 100_000)
    tmp = Path(tempfile.mkdtemp(prefix="mino-agent-journal-"))
    try:
        journal = args.journal
        if journal is None:
            journal = tmp / "journal.jsonl"
            print(json.dumps({"journal": agent_journal.write(journal, nodes)}), flush=True)
        for design in args.only or ("old", "index"):
            # a reused journal: its size says what it is (the generator's nodes are unknown)
            shape = {"nodes": nodes} if args.journal is None else {"journal": str(journal)}
            print(json.dumps({**shape, **figures(journal, design, args.runs,
                                                         args.turns, not args.no_costs)}),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
