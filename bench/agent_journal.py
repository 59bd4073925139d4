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

The shape is a ``Shape`` (``--old``, ``--fact-words``, ``--projects``, ``--vocab``):

- ``old``: the share of the operations after the projects' that touch an old node, one
  drawn uniformly from every node made before the current turn (a log line, a new fact,
  a fact superseded, a usefulness vote), as when recall and reflection come back to
  memories of months ago. 0 is the loop's own mix alone (about 4% of its ops touch an
  old node: recurring pain markers, profile facts, votes); SPEC section 12 asks for up
  to a third.
- ``fact_words``: the mean length of a written fact's value (summaries, fixes, failures,
  goals: each drawn from half to one and a half times it); 0 keeps the loop's own
  lengths (12, 8, 8, 6).
- ``projects``, ``vocab``: how many projects the work spreads over (Zipf), and the
  vocabulary's size.

``SHAPES`` names the ones the storage bench (``storage_shapes.py``) runs.
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


class Shape:
    """A journal's shape (see the module docstring)."""

    def __init__(self, old: float = 0.0, fact_words: int = 0, projects: int = 50,
                 vocab: int = 30_000):
        if not 0 <= old < 1:
            raise ValueError("old: a share, from 0 up to (not including) 1")
        self.old, self.fact_words, self.projects, self.vocab = old, fact_words, projects, vocab

    def as_dict(self) -> dict:
        return {"old": self.old, "fact_words": self.fact_words, "projects": self.projects,
                "vocab": self.vocab}


# the storage bench's shapes: the loop's own, the (30% of later ops on old nodes,
# facts of about 10 words), and two further corners of SPEC section 12's ranges
SHAPES = {
    "loop": Shape(),
    "issue": Shape(old=0.30, fact_words=10),
    "short-many": Shape(old=0.15, fact_words=3, projects=500, vocab=100_000),
    "long-few": Shape(old=0.33, fact_words=12, projects=5, vocab=10_000),
}


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


def generate(n_nodes: int, seed: int = 7, shape: Shape | None = None):
    """Yield journal lines (bytes, with newline) until about ``n_nodes`` nodes exist."""
    shape = shape or Shape()
    rnd = random.Random(seed)
    words = vocabulary(shape.vocab)
    zw = Zipf(len(words), 1.1, rnd)
    zp = Zipf(shape.projects, 0.8, rnd)

    def text(k: int) -> str:
        return " ".join(words[zw.draw()] for _ in range(k))

    fw = shape.fact_words

    def fact(k: int) -> str:  # a written fact's value: the loop's length, or the shape's
        if fw:
            k = rnd.randint(max(1, fw // 2), max(1, fw + fw // 2))
        return text(k)

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
    # an old node's last fact, for the old-node ops (node id -> [fact id, key])
    last_fact: dict[int, list] = {}
    out = []
    for p in range(shape.projects):
        n = nid("node")
        out.append(op("CreateNode", id=n, kind="Entity", label=f"project dir:/work/p{p:02d}"))
        f = nid("fact")
        out.append(op("AddFact", node=n, fact_id=f, key="path", value=f"/work/p{p:02d}"))
        last_fact[n] = [f, "path"]
        projects.append(n)
        memories[n] = []
    user = nid("node")
    out.append(op("CreateNode", id=user, kind="Entity", label="user preferences"))
    out.append(op("SetArea", node=user, area="Semantic"))
    yield from out
    turn = 0
    odds = shape.old / (1 - shape.old)  # old-node ops per op of the turn's own

    def old_op(n: int, ep: int) -> bytes:
        """One op on old node ``n``: a log line, a fact, a superseded fact or a vote."""
        r = rnd.random()
        if r < 0.4:
            return op("CommitLog", node=n, kind="recalled", detail=f"in episode #{ep}")
        if r < 0.65 or n not in last_fact:
            f = nid("fact")
            key = rnd.choice(("note", "detail", "seen", "fix", "why"))
            last_fact[n] = [f, key]
            return op("AddFact", node=n, fact_id=f, key=key, value=fact(8))
        if r < 0.8:
            old, key = last_fact[n]
            f = nid("fact")
            last_fact[n] = [f, key]
            return op("SupersedeFact", node=n, old_fact=old, new_key=key,
                      new_value=fact(8), new_fact_id=f)
        return op("RecordUsefulness", node=n, useful=rnd.random() < 0.8)
    while ids["node"] <= n_nodes:
        at += 1
        turn += 1
        before = ids["node"]  # nodes below this one are old for this turn
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
                              value=f"Bash({sig}) failed: " + fact(8)))
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
            out.append(op("AddFact", node=m, fact_id=nid("fact"), key="summary", value=fact(12)))
            if rnd.random() < 0.3:
                out.append(op("AddFact", node=m, fact_id=nid("fact"), key="fix", value=fact(8)))
            out.append(op("Link", id=nid("edge"), src=m, dst=proj, kind="PartOf"))
            out.append(op("CommitLog", node=m, kind="provenance",
                          detail=f"session {turn // 20:032x}, source observed"))
            mine.append(m)
        if rnd.random() < 0.3:  # a reflection's episode record
            out.append(op("AddFact", node=ep, fact_id=nid("fact"), key="goal", value=fact(6)))
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
        if odds:
            want = len(out) * odds
            extra = int(want) + (rnd.random() < want - int(want))
            for _ in range(extra):
                out.append(old_op(rnd.randrange(1, before), ep))
        yield from out


def write(path: Path, n_nodes: int, seed: int = 7, shape: Shape | None = None) -> dict:
    n = 0
    with open(path, "wb") as fh:
        buf = []
        for line in generate(n_nodes, seed, shape):
            buf.append(line)
            n += 1
            if len(buf) >= 10_000:
                fh.write(b"".join(buf))
                buf.clear()
        fh.write(b"".join(buf))
    return {"path": str(path), "ops": n, "nodes": n_nodes, "ops_per_node": round(n / n_nodes, 2),
            "bytes": path.stat().st_size, "shape": (shape or Shape()).as_dict()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shape", choices=sorted(SHAPES), help="a named shape (the flags below "
                    "override its fields)")
    ap.add_argument("--old", type=float, help="share of ops touching an old node (0-0.9)")
    ap.add_argument("--fact-words", type=int, help="mean words of a fact's value (0: the "
                    "loop's own lengths)")
    ap.add_argument("--projects", type=int)
    ap.add_argument("--vocab", type=int, help="vocabulary size")
    args = ap.parse_args()
    base = SHAPES[args.shape].as_dict() if args.shape else Shape().as_dict()
    for key in base:
        if getattr(args, key) is not None:
            base[key] = getattr(args, key)
    try:
        shape = Shape(**base)
    except ValueError as e:
        ap.error(str(e))
    print(json.dumps(write(args.out, args.nodes, args.seed, shape)))


if __name__ == "__main__":
    sys.exit(main())
