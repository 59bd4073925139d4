"""The shared journal (PostgreSQL, journal_pg.py) beside the file journal, same run.

    python bench/shared_journal.py              # the open at 100,000 nodes (about 1M ops)
    python bench/shared_journal.py --quick      # 10,000 nodes, fewer runs

Figures, each side measured in fresh processes (median of ``--runs``), mino's CPU time
(user + system) beside wall time, and the server's CPU (PostgreSQL's processes, read from
/proc) for the shared side:

- ``write``: one write request of one operation, in a store already open (median of 200
  requests): the file journal (flock, append, fsync) against the shared one (flock,
  advisory lock and catch-up query, INSERT, COMMIT, the mirror's append and fsync).
- ``catch-up``: another process (file: on this machine, keeping no index, as Mnemo; shared:
  another home, as another machine) writes 1,000 operations in 100 requests; then one
  ``refresh`` of an open store, whose index applies them (the shared side first fetches
  them in one query and appends them to its mirror).
- ``open``: ``Store.open`` with valid derived state (the index) on the agent-like journal
  of bench/agent_journal.py: what ``mino memory`` commands do (``lazy``) and what the loop
  does (the graph over the index). The shared side's extra is one catch-up query.

The cluster is a throwaway one (tests/pg_server.py) with fsync on, as a real server; the
machine is shared, so compare the ratios, not the absolute times.
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
PLUGIN = ROOT / "plugins" / "mino-memory-graph"
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(PLUGIN / "tests"))
sys.path.insert(0, str(PLUGIN / "src"))

import agent_journal  # noqa: E402
from pg_server import PgServer, Unavailable  # noqa: E402

PY = sys.executable

PRELUDE = f"""
import json, sys, time
sys.path.insert(0, {str(PLUGIN / 'src')!r})
from mino_memory_graph.store import Store
def open_store(kind, where, url, **kw):
    if kind == "file":
        return Store.open(where, **kw)
    return Store.open(home=where, config={{"memory": {{"graph": {{"journal": url}}}}}}, **kw)
kind, where, url = sys.argv[1], sys.argv[2], sys.argv[3]
"""

WRITE = """
n = int(sys.argv[4])
s = open_store(kind, where, url)
with s.write() as r:
    node = r.create_node("Aspect", "bench writes")
walls, cpus = [], []
for i in range(n):
    c = time.process_time(); w = time.perf_counter()
    with s.write() as r:
        r.fact(node, "k%d" % (i % 7), "value %d" % i)
    walls.append(time.perf_counter() - w); cpus.append(time.process_time() - c)
walls.sort(); cpus.sort()
print(json.dumps({"wall": walls[n // 2], "cpu": cpus[n // 2], "p90": walls[n * 9 // 10]}))
"""

WRITE_MANY = """
n, per = int(sys.argv[4]), int(sys.argv[5])
# (a file journal's other writer shares the reader's journal.index, so the reader finds
# it caught up; a shared journal's reader applies the 1,000 ops itself)
s = open_store(kind, where, url, fsync=False)
for i in range(n):
    with s.write() as r:
        node = r.create_node("Aspect", "elsewhere %d" % i)
        for j in range(per - 1):
            r.fact(node, "k%d" % j, "written elsewhere %d %d" % (i, j))
print(json.dumps({"ops": n * per}))
"""

READER = """
s = open_store(kind, where, url)
s.refresh()
# a long session has recalled and written: what the index's update imports (numpy, the
# embedder) is loaded already, on both sides
s.search("elsewhere written")
from mino_memory_graph.text.vectors import _sparse
_sparse(["warm up"])
print("ready", flush=True)
sys.stdin.readline()
before = s.offset
c = time.process_time(); w = time.perf_counter()
s.refresh()
wall, cpu = time.perf_counter() - w, time.process_time() - c
print(json.dumps({"wall": wall, "cpu": cpu, "bytes": s.offset - before,
                  "ops": s.index.ops_applied,
                  "queries": getattr(s.journal, "queries", 0)}))
"""

OPEN = """
lazy = sys.argv[4] == "lazy"
c = time.process_time(); w = time.perf_counter()
s = open_store(kind, where, url)
if not lazy:
    s.graph
wall, cpu = time.perf_counter() - w, time.process_time() - c
print(json.dumps({"wall": wall, "cpu": cpu, "ops": s.index.ops_applied,
                  "note": s.index.note, "queries": getattr(s.journal, "queries", 0)}))
"""


def child(script: str, *args) -> dict:
    out = subprocess.run([PY, "-c", PRELUDE + script, *map(str, args)], capture_output=True,
                         text=True, timeout=3600)
    if out.returncode:
        raise SystemExit(f"child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class ServerCPU:
    """CPU seconds of the cluster's processes: the postmaster, its live children, and
    those it has reaped (cutime/cstime)."""

    def __init__(self, pg: PgServer):
        self.pid = int((pg.base / "data" / "postmaster.pid").read_text().split()[0])
        self.tick = os.sysconf("SC_CLK_TCK")

    def _stat(self, pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return int(parts[1]), [int(x) for x in parts[11:15]]  # ppid, ut st cut cst

    def now(self) -> float:
        total = sum(self._stat(self.pid)[1])
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != self.pid:
                st = self._stat(name)
                if st and st[0] == self.pid:
                    total += sum(st[1][:2])
        return total / self.tick


def med(xs, key):
    return statistics.median(x[key] for x in xs)


def ms(x):
    return f"{x * 1000:8.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nodes", type=int, default=None,
                    help="agent-like journal size for the open (default 100,000: ~1M ops)")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--writes", type=int, default=200)
    args = ap.parse_args()
    nodes = args.nodes or (10_000 if args.quick else 100_000)
    runs = args.runs or (3 if args.quick else 5)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        print("psycopg is not installed (pip install 'mino-memory-graph[postgres]'); skipped")
        return 0
    pg = PgServer(durable=True)
    try:
        pg.start()
    except Unavailable as e:
        pg.close()
        print(f"PostgreSQL cannot start here ({e}); skipped")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="mino-bench-shared-"))
    try:
        return run(pg, tmp, nodes, runs, args.writes)
    finally:
        pg.close()
        shutil.rmtree(tmp, ignore_errors=True)


def run(pg: PgServer, tmp: Path, nodes: int, runs: int, writes: int) -> int:
    cpu = ServerCPU(pg)
    print(f"shared journal vs file journal: {runs} run(s) each, fresh processes; "
          f"PostgreSQL {pg.bin.parent.name}, fsync on")

    # --- write latency --------------------------------------------------------------
    res = {"file": [], "shared": []}
    server = []
    for i in range(runs):
        res["file"].append(child(WRITE, "file", tmp / f"w{i}" / "journal.jsonl", "-", writes))
        db = pg.new_database()
        before = cpu.now()
        res["shared"].append(child(WRITE, "shared", tmp / f"wh{i}", db["mino_url"], writes))
        server.append((cpu.now() - before) / (writes + 1))
    f, s = res["file"], res["shared"]
    print(f"\nwrite (one request of one op; median of {writes}, median of runs)")
    print(f"  file    wall {ms(med(f, 'wall'))}  p90 {ms(med(f, 'p90'))}  cpu {ms(med(f, 'cpu'))}")
    print(f"  shared  wall {ms(med(s, 'wall'))}  p90 {ms(med(s, 'p90'))}  cpu {ms(med(s, 'cpu'))}"
          f"  + server cpu {ms(statistics.median(server))} (mean per request)")
    print(f"  shared/file: wall x{med(s, 'wall') / med(f, 'wall'):.2f}, "
          f"cpu x{med(s, 'cpu') / med(f, 'cpu'):.2f}")

    # --- catch-up of 1,000 operations written elsewhere --------------------------------
    res = {"file": [], "shared": []}
    for i in range(runs):
        for kind in ("file", "shared"):
            if kind == "file":
                where = other = tmp / f"c{i}" / "journal.jsonl"
                url = "-"
            else:
                db = pg.new_database()
                where, other, url = tmp / f"ca{i}", tmp / f"cb{i}", db["mino_url"]
            child(WRITE_MANY, kind, where, url, 10, 10)  # something there already
            reader = subprocess.Popen([PY, "-c", PRELUDE + READER, kind, str(where), url],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert reader.stdout.readline().strip() == "ready"
            child(WRITE_MANY, kind, other, url, 100, 10)
            time.sleep(0.3)  # the NOTIFY reaches the reader's socket
            out, _ = reader.communicate("go\n", timeout=600)
            r = json.loads(out.strip().splitlines()[-1])
            assert r["bytes"] > 90_000, r  # the 1,000 ops arrived
            res[kind].append(r)
    f, s = res["file"], res["shared"]
    print("\ncatch-up (one refresh after 1,000 ops in 100 requests written elsewhere)")
    print(f"  file    wall {ms(med(f, 'wall'))}  cpu {ms(med(f, 'cpu'))}")
    print(f"  shared  wall {ms(med(s, 'wall'))}  cpu {ms(med(s, 'cpu'))}  "
          f"(queries by then: {int(med(s, 'queries'))}, the open's and this one)")
    print(f"  shared/file: wall x{med(s, 'wall') / med(f, 'wall'):.2f}, "
          f"cpu x{med(s, 'cpu') / med(f, 'cpu'):.2f}")

    # --- open with valid derived state ---------------------------------------------------
    src = tmp / "agent.jsonl"
    info = agent_journal.write(src, nodes)
    fhome = tmp / "open-file"
    (fhome / "graph").mkdir(parents=True)
    fpath = fhome / "graph" / "journal.jsonl"
    shutil.copy(src, fpath)
    db = pg.new_database()
    from mino_memory_graph.journal.journal_pg import open_shared
    from mino_memory_graph.journal.shared_transfer import push, read_ops

    j = open_shared(db["mino_url"], tmp / "pusher")
    t = time.perf_counter()
    push(j, read_ops(src)[0])
    j.close()
    pushed = time.perf_counter() - t
    shome = tmp / "open-shared"
    first_f = child(OPEN, "file", fpath, "-", "lazy")       # builds journal.index
    first_s = child(OPEN, "shared", shome, db["mino_url"], "lazy")  # mirror + index
    assert first_s["ops"] == first_f["ops"] == info["ops"], (first_f, first_s)
    print(f"\nopen with a valid index: {info['ops']:,} ops ({info['bytes'] / 1e6:.0f} MB; "
          f"push took {pushed:.1f} s, the first shared open {first_s['wall']:.1f} s: "
          f"mirror and index built)")
    for mode in ("lazy", "graph"):
        f = [child(OPEN, "file", fpath, "-", mode) for _ in range(runs)]
        s = [child(OPEN, "shared", shome, db["mino_url"], mode) for _ in range(runs)]
        assert all(x["note"] == "valid" for x in f + s), (f, s)
        what = "lazy (mino memory commands)" if mode == "lazy" else "graph (the loop)"
        print(f"  {what}")
        print(f"    file    wall {ms(med(f, 'wall'))}  cpu {ms(med(f, 'cpu'))}")
        print(f"    shared  wall {ms(med(s, 'wall'))}  cpu {ms(med(s, 'cpu'))}  "
              f"(queries: {int(med(s, 'queries'))})")
        print(f"    shared/file: wall x{med(s, 'wall') / med(f, 'wall'):.2f}, "
              f"cpu x{med(s, 'cpu') / med(f, 'cpu'):.2f}; extra "
              f"{ms(med(s, 'wall') - med(f, 'wall'))} wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
