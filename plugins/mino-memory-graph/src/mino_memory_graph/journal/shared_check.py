"""Which rows of the shared journal are applied: every row is judged before it reaches a
machine's copy, by the same rules on every machine, so a teammate's forged row is refused
(quarantined) everywhere alike and never reaches replay, the index or recall.

A row is applied when it is one operation (``journal.parse_one``), at most ``MAX_ROW``
bytes, and fits the journal as it stands after the rows before it (``seq`` order):

- a new id (node, edge, fact) is the next one or a little past it (``GAP``): never a
  reused id (a second fact 7), never 2^63-1 (which overflowed SQLite's integers and made
  ``search``, ``check`` and ``check --repair`` fail on every machine);
- an operation names nodes, edges and facts that exist (a fact superseded on its node);
- ``at`` moves the logical clock forward by less than ``CLOCK_STEP``; a context chunk's
  numbers stay small;
- a person's profile (the ``user preferences`` node a role created) is written by that
  role only: each teammate has their own, and nobody else's writes reach it.

Who wrote each row comes from the table (the database sets it); ``Rows`` keeps, per id
range, who created the ids (``author_of``): ids only grow, so runs of one author are
enough. The state is a few counters and three arrays; it is saved beside the copy
(``save``) and read back (``load``) so an open never replays the copy to judge a row.
Pure Python: no psycopg here (the owner's repair and restore use it too).
"""
from __future__ import annotations

import bisect
import json
import os
from array import array
from pathlib import Path

from .journal import parse_one
from ..core.model import CLOCK_START

MAX_ROW = 256 * 1024      # bytes of one row's line (the table's CHECK says the same)
GAP = 1024                # a new id may skip this many (a hand-edited journal); no more
CLOCK_STEP = 1 << 32      # one row moves the clock forward by less than this
MAX_DIM = 1 << 16         # a context chunk's ``dim``
MAX_VEC = 4096            # and the length of its vector
PROFILE_LABEL = "user preferences"  # standing.USER_LABEL (not imported: no cycle)

ABSENT, LIVE, GONE = 0, 1, 2  # a node's slot: never made, made, hard-deleted

_NODE_OPS = {"AddFact", "SupersedeFact", "SetArea", "DeleteNode", "PushContext",
             "CommitLog", "RecordUsefulness"}
# what a teammate may not do to another person's profile
_PROFILE_WRITES = {"AddFact", "SupersedeFact", "SetArea", "DeleteNode", "PushContext",
                   "CommitLog"}


class Rows:
    """The judge of rows, and what it must know of the journal so far."""

    def __init__(self):
        self.next_node = self.next_edge = self.next_fact = 1
        self.clock = CLOCK_START
        self.nodes = bytearray(1)          # by node id: ABSENT, LIVE, GONE
        self.edges = bytearray(1)          # by edge id: 1 when it exists
        self.fact_node = array("q", [0])   # by fact id: the node it is on
        self.profiles: dict[int, str] = {}  # profile node -> the role that made it
        self.runs: list[list] = []         # [first node, first edge, first fact, role, host]
        self.lines = 0                     # rows applied
        self.refused = 0                   # rows refused

    # --- judging ------------------------------------------------------------------

    def admit(self, line: str, user: str = "", host: str = "") -> str | None:
        """None (and the row applied to this state) when ``line`` may be applied, else
        why not (nothing changes)."""
        n = len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
        if n > MAX_ROW:
            return f"row of {n} bytes, over the {MAX_ROW} a row may hold"
        try:
            name, body = parse_one(line)
        except ValueError as e:
            return str(e)
        why = self._why(name, body, user)
        if why is None:
            self._apply(name, body, user, host)
        return why

    def _new_id(self, what: str, id: int, nxt: int) -> str | None:
        if id < nxt:
            return f"{what} id {id} is already given out (the next is {nxt})"
        if id >= nxt + GAP:
            return f"{what} id {id} is far past the next one ({nxt})"
        return None

    def _node(self, id: int) -> bool:
        return id < len(self.nodes) and self.nodes[id] == LIVE

    def _why(self, name: str, b: dict, user: str) -> str | None:
        at = b["at"]
        if at >= self.clock + CLOCK_STEP:
            return f"{name}: at {at} jumps the clock (now {self.clock})"
        if name == "CreateNode":
            return self._new_id("node", b["id"], self.next_node)
        if name in _NODE_OPS:
            node = b["to"] if name == "PushContext" else b["node"]
            if not self._node(node):
                return f"{name}: node {node} does not exist"
            owner = self.profiles.get(node)
            if owner is not None and owner != user and name in _PROFILE_WRITES:
                return f"{name}: node {node} is the profile of {owner!r}; only they write it"
            if name == "AddFact":
                return self._new_id("fact", b["fact_id"], self.next_fact)
            if name == "SupersedeFact":
                old = b["old_fact"]
                if old >= len(self.fact_node) or self.fact_node[old] != node:
                    return f"SupersedeFact: fact {old} is not on node {node}"
                return self._new_id("fact", b["new_fact_id"], self.next_fact)
            if name == "PushContext":
                c = b["chunk"]
                if c["from"] >= self.next_node or c["dim"] > MAX_DIM or \
                        len(c.get("vec", ())) > MAX_VEC:
                    return "PushContext: chunk out of bounds"
            return None
        if name == "Link":
            if not (self._node(b["src"]) and self._node(b["dst"])):
                return f"Link: node {b['src']} or {b['dst']} does not exist"
            return self._new_id("edge", b["id"], self.next_edge)
        edge = b["edge"]  # Unlink, Reweight, RecordOutcome
        if edge >= len(self.edges) or not self.edges[edge]:
            return f"{name}: edge {edge} does not exist"
        return None

    @staticmethod
    def _grow(arr, size: int, fill):
        if len(arr) < size:
            arr.extend(fill * (size - len(arr)))

    def _apply(self, name: str, b: dict, user: str, host: str) -> None:
        if not self.runs or self.runs[-1][3:] != [user, host]:
            self.runs.append([self.next_node, self.next_edge, self.next_fact, user, host])
        at = b["at"]
        if at >= self.clock:
            self.clock = at + 1
        self.lines += 1
        if name == "CreateNode":
            id = b["id"]
            self._grow(self.nodes, id + 1, b"\0")
            self.nodes[id] = LIVE
            self.next_node = id + 1
            if b["kind"] == "Entity" and b["label"] == PROFILE_LABEL:
                self.profiles[id] = user
        elif name in ("AddFact", "SupersedeFact"):
            fid = b["fact_id"] if name == "AddFact" else b["new_fact_id"]
            self._grow(self.fact_node, fid + 1, array("q", [0]))
            self.fact_node[fid] = b["node"]
            self.next_fact = fid + 1
        elif name == "DeleteNode" and b["hard"]:
            self.nodes[b["node"]] = GONE
            self.profiles.pop(b["node"], None)
        elif name == "Link":
            id = b["id"]
            self._grow(self.edges, id + 1, b"\0")
            self.edges[id] = 1
            self.next_edge = id + 1

    # --- who wrote what -----------------------------------------------------------

    def author_of(self, kind: str, id: int) -> tuple[str, str] | None:
        """(role, host) that made node / edge / fact ``id``; None when not made here."""
        col = {"node": 0, "edge": 1, "fact": 2}[kind]
        nxt = (self.next_node, self.next_edge, self.next_fact)[col]
        if not self.runs or id >= nxt or id < 1:
            return None
        i = bisect.bisect_right([r[col] for r in self.runs], id) - 1
        if i < 0:
            return None
        r = self.runs[i]
        return r[3], r[4]

    # --- saved beside the copy ----------------------------------------------------

    def save(self, path: Path, mark: dict) -> None:
        """Best effort (a derived file): ``mark`` says which copy this state is of."""
        head = {"v": 1, "mark": mark, "counters": [self.next_node, self.next_edge,
                                                   self.next_fact, self.clock],
                "profiles": {str(k): v for k, v in self.profiles.items()},
                "runs": self.runs, "lines": self.lines, "refused": self.refused,
                "sizes": [len(self.nodes), len(self.edges), len(self.fact_node)]}
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                for part in (json.dumps(head).encode() + b"\n", self.nodes, self.edges,
                             self.fact_node.tobytes()):
                    view = memoryview(part)
                    while view:
                        view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            try:
                os.unlink(path)  # a stale one must not be taken for the copy's
            except OSError:
                pass

    @classmethod
    def load(cls, path: Path, mark: dict) -> "Rows | None":
        try:
            data = path.read_bytes()
            nl = data.index(b"\n")
            head = json.loads(data[:nl])
            if head.get("v") != 1 or head.get("mark") != mark:
                return None
            r = cls()
            r.next_node, r.next_edge, r.next_fact, r.clock = head["counters"]
            r.profiles = {int(k): v for k, v in head["profiles"].items()}
            r.runs, r.lines, r.refused = head["runs"], head["lines"], head["refused"]
            a, b, c = head["sizes"]
            pos = nl + 1
            r.nodes = bytearray(data[pos:pos + a])
            r.edges = bytearray(data[pos + a:pos + a + b])
            r.fact_node = array("q")
            r.fact_node.frombytes(data[pos + a + b:pos + a + b + 8 * c])
            if len(r.nodes) != a or len(r.edges) != b or len(r.fact_node) != c:
                return None
            return r
        except (OSError, ValueError, KeyError, TypeError):
            return None


def judge_all(rows) -> tuple["Rows", list, list]:
    """``rows``: ``(line, user, host, ...)`` in ``seq`` order; returns the state after them,
    the rows applied and ``(row, why)`` of those refused (the owner's repair, restore)."""
    state = Rows()
    kept, refused = [], []
    for row in rows:
        why = state.admit(row[0], row[1], row[2])
        if why is None:
            kept.append(row)
        else:
            state.refused += 1
            refused.append((row, why))
    return state, kept, refused


def written_by(store, node: int, kind: str = "node") -> dict | None:
    """Who wrote memory ``node`` (or fact / edge ``id`` with ``kind``), for what shows it
    (``mino memory``, the recall block's provenance): ``{"role", "host", "mine", "here"}``
    from a shared journal (``mine``: this database role; ``here``: and from this
    machine's address; ``claimed``: an older table's clients said so), None for a file
    journal (everything in it is this machine's)."""
    f = getattr(store.journal, "written_by", None)
    return f(kind, node) if f is not None else None


def describe(who: dict | None) -> str:
    """``written by ann (10.0.0.5), a teammate`` for one line of output; "" for none."""
    if not who:
        return ""
    whose = ("you, on this machine" if who.get("here") else "you" if who["mine"]
             else "a teammate")
    said = ", as its client said" if who.get("claimed") else ""
    return f"written by {who['role']} ({who['host']}), {whose}{said}"
