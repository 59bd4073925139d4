"""An agent-like Mnemo journal for the graph benchmarks (beside graph_bench's uniform one).

    python bench/agent_journal.py OUT.jsonl --nodes 100000

The shape is what mino's loop writes, turn after turn:

- 50 projects (``project dir:/work/pNN``, Entity/Spatial with a ``path`` fact) and one
  ``user preferences`` profile, created first;
- each turn picks a project (Zipf over the 50: a few projects get most of the work) and
  writes one request: a ``task: ...`` TaskEpisode PartOf the project with facts
  ``session`` and ``turn``, SuppliesContext links from up to 3 memories recalled in the
  same project, ``tool_call`` log lines, then a RecordOutcome on every feeder (clean turn)
  or a pain marker (a Salience Aspect with ``failure``/``signature``/``occurrences``,
  DerivedFrom the episode; a known signature recurs and its ``occurrences`` supersede);
- some turns also leave new memories (Aspects PartOf the project with a ``summary`` and
  sometimes a ``fix``, and a ``provenance`` log line), an episode record (``goal``,
  ``outcome``), a usefulness vote, a profile fact that supersedes its key;
- every word of a label, fact or log line is drawn from a Zipf vocabulary (exponent 1.1
  over 30,000 words, the first ones real software words), so a few words are in most
  nodes and most words are rare, as in real text.

The mix comes to about 10 operations per node (``ops_per_node`` in the summary line).
Deterministic for a seed. Lines are Mnemo's format, compact, in its field order.
"""
from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
from pathlib import Path

T0 = 1_700_000_000_001
REAL = ("the a to of and in is for on with test run build fix error file path port deploy "
        "service python pytest npm pnpm install config module import function class api "
        "server client request response cache index query search memory node graph "
        "journal lock commit branch merge review docs readme lint format type check "
        "kubernetes helm ingress rollback migration latency trace alert dashboard react "
        "vite bundle async await crash script command repo endpoint plan decision session "
        "history database schema table column docker image container volume network "
        "timeout retry backoff token secret env variable release version tag changelog").split()


def vocabulary(n: int = 30_000) -> list[str]:
    syl = ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "ve", "zo", "ba", "do", "fe",
           "gi", "ho", "ju")
    return REAL + [f"{syl[i % 16]}{i // 16:x}" for i in range(n - len(REAL))]


class Zipf:
    def __init__(self, n: int, s: float, rnd: random.Random):
        acc, total = [], 0.0
        for r in range(1, n + 1):
            total += 1.0 / r ** s
            acc.append(total)
        self.acc, self.total, self.rnd = acc, total, rnd

    def draw(self) -> int:
        return bisect.bisect_left(self.acc, self.rnd.random() * self.total)


def generate(n_nodes: int, seed: int = 7):
    """Yield journal lines (bytes, with newline) until about ``n_nodes`` nodes exist."""
    rnd = random.Random(seed)
    words = vocabulary()
    zw = Zipf(len(words), 1.1, rnd)
    zp = Zipf(50, 0.8, rnd)

    def text(k: int) -> str:
        return " ".join(words[zw.draw()] for _ in range(k))

    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    ids = {"node": 1, "edge": 1, "fact": 1}
    at = T0

    def nid(kind):
        v = ids[kind]
        ids[kind] = v + 1
        return v

    def op(name, **body):
        body["at"] = at
        return (dumps({name: body}) + "\n").encode()

    projects, memories, pains, facts = [], {}, {}, {}
    out = []
    for p in range(50):
        n = nid("node")
        out.append(op("CreateNode", id=n, kind="Entity", label=f"project dir:/work/p{p:02d}"))
        f = nid("fact")
        out.append(op("AddFact", node=n, fact_id=f, key="path", value=f"/work/p{p:02d}"))
        projects.append(n)
        memories[n] = []
    user = nid("node")
    out.append(op("CreateNode", id=user, kind="Entity", label="user preferences"))
    out.append(op("SetArea", node=user, area="Semantic"))
    yield from out
    turn = 0
    while ids["node"] <= n_nodes:
        at += 1
        turn += 1
        proj = projects[zp.draw()]
        mine = memories[proj]
        out = []
        ep = nid("node")
        out.append(op("CreateNode", id=ep, kind="TaskEpisode", label="task: " + text(6)))
        out.append(op("Link", id=nid("edge"), src=ep, dst=proj, kind="PartOf"))
        out.append(op("AddFact", node=ep, fact_id=nid("fact"), key="session",
                      value=f"{turn // 20:032x}"))
        out.append(op("AddFact", node=ep, fact_id=nid("fact"), key="turn", value=str(turn)))
        feeders = []
        for m in rnd.sample(mine, min(len(mine), rnd.choice((0, 1, 2, 3)))):
            e = nid("edge")
            out.append(op("Link", id=e, src=m, dst=ep, kind="SuppliesContext"))
            feeders.append(e)
        for _ in range(rnd.choice((2, 3, 4, 5, 6))):
            out.append(op("CommitLog", node=ep, kind="tool_call",
                          detail=rnd.choice(("Bash", "read_file", "edit_file", "grep"))
                          + "(" + text(3) + "): ok"))
        if rnd.random() < 0.2:  # a failure: a pain marker, new or recurring
            sig = text(4) if rnd.random() < 0.5 or not pains else rnd.choice(list(pains))
            if sig in pains:
                pn, occ_fact, occ = pains[sig]
                f = nid("fact")
                out.append(op("SupersedeFact", node=pn, old_fact=occ_fact, new_key="occurrences",
                              new_value=str(occ + 1), new_fact_id=f))
                out.append(op("CommitLog", node=pn, kind="recurred", detail=f"in episode #{ep}"))
                pains[sig] = (pn, f, occ + 1)
            else:
                pn = nid("node")
                out.append(op("CreateNode", id=pn, kind="Aspect", label="pain: " + sig))
                out.append(op("SetArea", node=pn, area="Salience"))
                out.append(op("AddFact", node=pn, fact_id=nid("fact"), key="failure",
                              value=f"Bash({sig}) failed: " + text(8)))
                out.append(op("AddFact", node=pn, fact_id=nid("fact"), key="signature", value=sig))
                f = nid("fact")
                out.append(op("AddFact", node=pn, fact_id=f, key="occurrences", value="1"))
                out.append(op("Link", id=nid("edge"), src=pn, dst=proj, kind="PartOf"))
                pains[sig] = (pn, f, 1)
            out.append(op("Link", id=nid("edge"), src=ep, dst=pn, kind="DerivedFrom"))
        else:
            out.append(op("CommitLog", node=ep, kind="outcome", detail="success"))
            for e in feeders:
                out.append(op("RecordOutcome", edge=e, success=True))
        if rnd.random() < 0.45:  # a new memory in this project
            m = nid("node")
            out.append(op("CreateNode", id=m, kind="Aspect", label=text(4)))
            out.append(op("AddFact", node=m, fact_id=nid("fact"), key="summary", value=text(12)))
            if rnd.random() < 0.3:
                out.append(op("AddFact", node=m, fact_id=nid("fact"), key="fix", value=text(8)))
            out.append(op("Link", id=nid("edge"), src=m, dst=proj, kind="PartOf"))
            out.append(op("CommitLog", node=m, kind="provenance",
                          detail=f"session {turn // 20:032x}, source observed"))
            mine.append(m)
        if rnd.random() < 0.3:  # a reflection's episode record
            out.append(op("AddFact", node=ep, fact_id=nid("fact"), key="goal", value=text(6)))
            out.append(op("AddFact", node=ep, fact_id=nid("fact"), key="outcome", value="done"))
        if mine and rnd.random() < 0.15:
            out.append(op("RecordUsefulness", node=rnd.choice(mine), useful=True))
        if rnd.random() < 0.05:
            key = rnd.choice(("package manager", "language", "editor", "test runner", "style"))
            f = nid("fact")
            if key in facts:
                out.append(op("SupersedeFact", node=user, old_fact=facts[key], new_key=key,
                              new_value=text(3), new_fact_id=f))
            else:
                out.append(op("AddFact", node=user, fact_id=f, key=key, value=text(3)))
            facts[key] = f
        yield from out


def write(path: Path, n_nodes: int, seed: int = 7) -> dict:
    n = 0
    with open(path, "wb") as fh:
        buf = []
        for line in generate(n_nodes, seed):
            buf.append(line)
            n += 1
            if len(buf) >= 10_000:
                fh.write(b"".join(buf))
                buf.clear()
        fh.write(b"".join(buf))
    return {"path": str(path), "ops": n, "nodes": n_nodes, "ops_per_node": round(n / n_nodes, 2),
            "bytes": path.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    print(json.dumps(write(args.out, args.nodes, args.seed)))


if __name__ == "__main__":
    sys.exit(main())
