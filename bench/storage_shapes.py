"""The graph's storage figures over several journal shapes, a baseline checkout's code
beside this one's, in one run.

    python bench/storage_shapes.py --base /work/main              # 100,000 nodes
    python bench/storage_shapes.py --base /work/main --nodes 20000 --shapes issue,loop

Each shape (``agent_journal.SHAPES``: ``loop``, the generator's own; ``issue``, 30% of
later ops on old nodes and facts of about 10 words; ``short-many``; ``long-few``) is
generated once, then for each code (``old``: the ``--base`` checkout run by its own
``.venv``; ``new``: this one), alternating, in fresh processes:

- ``rebuild``: ``Store.open`` of the journal with no index (the index built from
  scratch, its text worker as in use): operations per second of CPU (this process and
  its worker) and of wall time;
- ``oneshot``: ``mino -p`` from process start against the scripted server on loopback,
  with the graph backend over that index, beside the same ``mino -p`` with the files
  backend (an empty memory): the memory's share is the difference of the medians, CPU
  (user + system of the process, from ``wait4``) beside wall;
- ``session_end``: ``--sessions`` sessions of 4 turns each through the real loop
  (``loop.begin/observe/end``), each followed by ``consolidate.at_session_end``: its CPU
  and wall time, the lessons that pass wrote, and the lessons in the memory after.

The machine is shared: read the old/new ratios of the same run, CPU beside wall.
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
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import agent_journal  # noqa: E402

REBUILD = """
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from mino_memory_graph.store import Store
s = Store.open(sys.argv[1])
ops, rebuilt = s.index.ops_applied, s.index.rebuilt
s.close()
ru = resource.getrusage(resource.RUSAGE_SELF); rc = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps(dict(wall=time.perf_counter() - t0,
                      cpu=time.process_time() - c0 + rc.ru_utime + rc.ru_stime,
                      ops=ops, rebuilt=rebuilt, rss_mb=ru.ru_maxrss / 1024)))
"""

SESSIONS = """
import json, random, sqlite3, sys, time
from pathlib import Path
from types import SimpleNamespace
from mino_core import Status, ToolCall, ToolOutcome, ToolResult
from mino_memory_graph.loop import consolidate, loop
home, project, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
class Session(SimpleNamespace):
    def notice(self, text):
        pass
    def denied(self, name, arguments):
        return None
words = ("deploy port fix the test run build error install config service pnpm cache "
         "helm rollback timeout migration").split()
rnd = random.Random(5)
out = []
for k in range(n):
    session = Session(id=f"{k + 1:032x}", home=home, project_root=project, config={},
                      state={}, mode="manual")
    for i in range(4):
        turn = SimpleNamespace(session=session, number=i + 1, scratch={},
                               user_text=" ".join(rnd.choice(words) for _ in range(6)))
        loop.begin(turn)
        ok = ToolOutcome(ToolCall("c1", "read_file", {"path": "src/app.py"}),
                         ToolResult(Status.COMPLETED, "print('hi')"), "allow")
        loop.observe(ok, turn)
        loop.end(SimpleNamespace(info=turn, outcomes=[ok], answer="Use pnpm here.",
                                 ended="answer", requests=1, clean=True))
    w, c = time.perf_counter(), time.process_time()
    lessons = consolidate.at_session_end(session)
    out.append(dict(wall=time.perf_counter() - w, cpu=time.process_time() - c,
                    written=sum(x["change"] != "unchanged" for x in lessons),
                    planned=len(lessons)))
db = sqlite3.connect(home / "graph" / "journal.index")
(total,) = db.execute("SELECT count(*) FROM nodes WHERE deleted=0 AND "
                      "substr(label, 1, 8)='lesson: '").fetchone()
print(json.dumps(dict(passes=out, lessons_total=total)))
"""


def child(py: str, code: str, *args, env=None) -> dict:
    out = subprocess.run([py, "-c", code, *map(str, args)], capture_output=True, text=True,
                         env=env, timeout=7200)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed(argv, env, cwd) -> dict:
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{argv} failed: {err[-800:]!r}")
    return {"wall": wall * 1000, "cpu": (ru.ru_utime + ru.ru_stime) * 1000}


def med(rows, key) -> float:
    return round(statistics.median(r[key] for r in rows), 1)


def run_shape(name: str, shape, nodes: int, codes: dict, args, tmp: Path, server) -> dict:
    base = tmp / name
    base.mkdir()
    journal = base / "journal.jsonl"
    gen = agent_journal.write(journal, nodes, shape=shape)
    out: dict = {"shape": name, "params": shape.as_dict(), "nodes": nodes, "ops": gen["ops"],
                 "journal_mb": round(gen["bytes"] / 2**20, 1)}
    print(json.dumps({"generated": out}), file=sys.stderr, flush=True)
    env0 = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
    env0.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, then cached
    env0.update(TERM="dumb", MINO_BASE_URL=server.base_url)
    homes, files_homes = {}, {}
    project = base / "project"
    project.mkdir()
    for code in codes:  # the index, built from scratch by each code (alternating)
        home = base / code / "home"
        (home / "graph").mkdir(parents=True)
        shutil.copyfile(journal, home / "graph" / "journal.jsonl")
        (home / "config.yaml").write_text("memory:\n  backend: graph\n")
        homes[code] = home
        fh = base / code / "files-home"
        fh.mkdir()
        (fh / "config.yaml").write_text("memory:\n  backend: files\n")
        files_homes[code] = fh
    rebuilds: dict = {c: [] for c in codes}
    for r in range(args.rebuilds):
        for code, (py, _) in codes.items():
            index = homes[code] / "graph" / "journal.index"
            index.unlink(missing_ok=True)
            got = child(py, REBUILD, homes[code] / "graph" / "journal.jsonl", env=env0)
            assert got["rebuilt"], got
            rebuilds[code].append(got)
            print(json.dumps({"shape": name, "code": code, "rebuild": got}), file=sys.stderr,
                  flush=True)
    for code, rows in rebuilds.items():
        ops = rows[0]["ops"]
        cpu, wall = med(rows, "cpu"), med(rows, "wall")
        out.setdefault(code, {})["rebuild"] = {
            "ops_per_s_cpu": round(ops / cpu), "ops_per_s_wall": round(ops / wall),
            "cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "rss_mb": med(rows, "rss_mb")}
    # one-shot turns, interleaved: graph and files backends, each code
    prompt = "how do I deploy the service on port 8081"
    samples = {(c, b): [] for c in codes for b in ("graph", "files")}
    for r in range(args.runs + 1):
        for code, (_, mino) in codes.items():
            for backend, home in (("graph", homes[code]), ("files", files_homes[code])):
                got = timed([mino, "-p", prompt], dict(env0, MINO_HOME=str(home)), project)
                if r:  # the first: compiles what changed, writes first-use files
                    samples[(code, backend)].append(got)
    for code in codes:
        g, f = samples[(code, "graph")], samples[(code, "files")]
        out[code]["oneshot"] = {
            "memory_cpu_ms": round(med(g, "cpu") - med(f, "cpu"), 1),
            "memory_wall_ms": round(med(g, "wall") - med(f, "wall"), 1),
            "graph_cpu_ms": med(g, "cpu"), "files_cpu_ms": med(f, "cpu"),
            "graph_wall_ms": med(g, "wall"), "files_wall_ms": med(f, "wall")}
    for code, (py, _) in codes.items():
        got = child(py, SESSIONS, homes[code], project, args.sessions, env=env0)
        passes = got["passes"]
        out[code]["session_end"] = {
            "first_cpu_ms": round(passes[0]["cpu"] * 1000, 1),
            "first_wall_ms": round(passes[0]["wall"] * 1000, 1),
            "later_cpu_ms": round(statistics.median(p["cpu"] for p in passes[1:]) * 1000, 1)
            if len(passes) > 1 else None,
            "later_wall_ms": round(statistics.median(p["wall"] for p in passes[1:]) * 1000, 1)
            if len(passes) > 1 else None,
            "written": [p["written"] for p in passes], "lessons_total": got["lessons_total"]}
    return out


def table(rows: list[dict], codes) -> str:
    head = (f"{'shape':<11} {'code':<4} {'build ops/s cpu':>15} {'wall':>8} "
            f"{'-p memory cpu ms':>16} {'wall':>7} {'end cpu ms (1st/later)':>23} "
            f"{'wall':>15} {'written/pass':>14} {'lessons':>8}")
    lines = [head]
    for r in rows:
        for code in codes:
            x = r[code]
            b, o, e = x["rebuild"], x["oneshot"], x["session_end"]
            lines.append(
                f"{r['shape']:<11} {code:<4} {b['ops_per_s_cpu']:>15} {b['ops_per_s_wall']:>8} "
                f"{o['memory_cpu_ms']:>16} {o['memory_wall_ms']:>7} "
                f"{str(e['first_cpu_ms']) + ' / ' + str(e['later_cpu_ms']):>23} "
                f"{str(e['first_wall_ms']) + ' / ' + str(e['later_wall_ms']):>15} "
                f"{','.join(map(str, e['written'])):>14} {e['lessons_total']:>8}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--shapes", default="issue,loop,short-many",
                    help=f"comma-separated, of {', '.join(agent_journal.SHAPES)}")
    ap.add_argument("--base", type=Path, help="a checkout with its .venv: the old code")
    ap.add_argument("--runs", type=int, default=5, help="mino -p runs per backend and code")
    ap.add_argument("--rebuilds", type=int, default=1, help="index builds per code")
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    py = Path(sys.executable)
    codes = {}
    if args.base:
        bpy = args.base / ".venv" / "bin" / "python"
        codes["old"] = (str(bpy), str(bpy.parent / "mino"))
    codes["new"] = (str(py), str(py.parent / "mino"))
    from mino_core.testing import ScriptedServer

    tmp = Path(tempfile.mkdtemp(prefix="mino-storage-shapes-"))
    rows = []
    try:
        with ScriptedServer() as server:
            server.add(*[{"text": "Use pnpm here."} for _ in range(5000)])
            for name in args.shapes.split(","):
                row = run_shape(name, agent_journal.SHAPES[name], args.nodes, codes, args,
                                tmp, server)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows, codes))


if __name__ == "__main__":
    main()
