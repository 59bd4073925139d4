"""Memory overhead of one turn with the graph backend, excluding the model.

    python bench/graph_turn.py            # 1,000 and 100,000 nodes
    python bench/graph_turn.py --quick    # 1,000 and 10,000 nodes

One turn here is what the loop does around a model: ``front_input`` (recall scoped to the
project; the turn's episode with its message, PartOf the project and the session's node, and
its feeder links in one journal write; the block rendered), one
``tool_outcome`` for a completed call (a log line on the episode), and ``after_turn``
(reinforce the feeders, evidence votes). The reflection is a model request and is not
counted; a turn that fails also steers (one more write), measured separately. Writes are
fsynced, as in use. Goal: median under 15 ms at 100,000 nodes (SPEC section 12).

Baseline in the same run: the same turns, interleaved, from a session with
``memory.graph.episodes: off`` (the session's node only, no message recorded), so the
ratio is what recording each message as an episode costs.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "mino-memory-graph" / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from graph_bench import journal_lines, queries  # noqa: E402

from mino_core import Status, ToolCall, ToolOutcome, ToolResult  # noqa: E402
from mino_memory_graph.loop import loop  # noqa: E402
from mino_memory_graph.loop.standing import project_identity  # noqa: E402
from mino_memory_graph.store import Store  # noqa: E402


def build(home: Path, project: Path, n_nodes: int) -> None:
    """A journal of ``n_nodes`` random nodes (3 ops each), 2 projects owning 20% of them."""
    path = home / "graph" / "journal.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(journal_lines(n_nodes, n_nodes * 3))
    s = Store.open(path, fsync=False)
    rnd = random.Random(3)
    with s.write() as r:
        mine = r.create_node("Entity", f"project {project_identity(project)}")
        other = r.create_node("Entity", "project dir:/somewhere/else")
        for nid in rnd.sample(range(1, n_nodes), n_nodes // 5):
            r.link(nid, mine if rnd.random() < 0.5 else other, "PartOf")
        user = r.create_node("Entity", "user preferences", area="Semantic")
        r.fact(user, "package manager", "pnpm")
    s.close()


class Session(SimpleNamespace):
    def notice(self, text):
        pass
    def denied(self, name, arguments):
        return None


def one_turn(session, text: str, number: int, fail: bool) -> dict:
    turn = SimpleNamespace(session=session, user_text=text, number=number, scratch={})
    t0 = time.perf_counter()
    loop.begin(turn)
    t1 = time.perf_counter()
    ok = ToolOutcome(ToolCall("c1", "read_file", {"path": "src/app.py"}),
                     ToolResult(Status.COMPLETED, "print('hi')"), "allow")
    loop.observe(ok, turn)
    outcomes = [ok]
    if fail:
        bad = ToolOutcome(ToolCall("c2", "Bash", {"command": "pytest -q"}),
                          ToolResult(Status.FAILED, f"E   AssertionError in test_{number % 7}"),
                          "allow")
        loop.observe(bad, turn)
        outcomes.append(bad)
    t2 = time.perf_counter()
    record = SimpleNamespace(info=turn, outcomes=outcomes, answer="Use pnpm and vite here.",
                             ended="answer", requests=1, clean=not fail)
    loop.end(record)
    t3 = time.perf_counter()
    return {"turn": t3 - t0, "front_input": t1 - t0, "tool_outcome": t2 - t1,
            "after_turn": t3 - t2}


def ms(xs):
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs) * 1000, 3),
            "p95_ms": round(xs[min(len(xs) - 1, int(len(xs) * 0.95))] * 1000, 3)}


def run(n_nodes: int, turns: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="mino-turn-bench-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        t = time.perf_counter()
        build(home, project, n_nodes)
        built = time.perf_counter() - t
        session = Session(id="b" * 32, home=home, project_root=project, config={},
                          state={}, mode="manual")
        off = Session(id="c" * 32, home=home, project_root=project,
                      config={"memory": {"graph": {"episodes": "off"}}}, state={},
                      mode="manual")
        loop.forget_open()
        t = time.perf_counter()
        one_turn(session, "warm up the memory please", 0, False)  # opens the store
        first = time.perf_counter() - t
        one_turn(off, "warm up the memory please", 0, False)
        qs = queries(turns * 2, seed=5)
        clean, baseline = [], []
        for i in range(turns):  # interleaved: both see the same machine load
            c0 = time.process_time()
            clean.append(one_turn(session, qs[i], i + 1, False))
            clean[-1]["cpu"] = time.process_time() - c0
            c0 = time.process_time()
            baseline.append(one_turn(off, qs[i], i + 1, False))
            baseline[-1]["cpu"] = time.process_time() - c0
        failed = [one_turn(session, qs[turns + i], turns + i + 1, True)
                  for i in range(max(5, turns // 4))]
        # The store's own share: the same searches with no write in between (no re-index).
        store = loop.memory_for(home, {}).store
        k = loop.RECALL_K
        alone = []
        for q in qs[:turns]:
            t = time.perf_counter()
            store.search(q, k, refresh=False)
            alone.append(time.perf_counter() - t)
        loop.forget_open()
    out = {"nodes": n_nodes, "turns": turns, "build_s": round(built, 2),
           "first_turn_ms (opens the store)": round(first * 1000, 1)}
    for key in ("turn", "front_input", "tool_outcome", "after_turn"):
        out[f"clean {key}"] = ms([r[key] for r in clean])
    out["clean turn CPU"] = ms([r["cpu"] for r in clean])
    out["clean turn, episodes off (baseline)"] = ms([r["turn"] for r in baseline])
    out["clean turn CPU, episodes off"] = ms([r["cpu"] for r in baseline])
    out["episodes on / off (median wall, CPU)"] = [
        round(out["clean turn"]["median_ms"] / out["clean turn, episodes off (baseline)"]["median_ms"], 2),
        round(out["clean turn CPU"]["median_ms"] / out["clean turn CPU, episodes off"]["median_ms"], 2)]
    out["failing turn (steers once)"] = ms([r["turn"] for r in failed])
    out["store.search alone (k=48, no write between)"] = ms(alone)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--turns", type=int, default=60)
    args = ap.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 100_000)
    results = [run(n, args.turns) for n in sizes]
    for r in results:
        print(json.dumps(r, indent=2))
    big = results[-1]
    goal = 15.0
    med = big["clean turn"]["median_ms"]
    print(f"memory work per turn at {big['nodes']:,} nodes: median {med} ms "
          f"(goal < {goal} ms): {'OK' if med < goal else 'OVER'}")


if __name__ == "__main__":
    main()
