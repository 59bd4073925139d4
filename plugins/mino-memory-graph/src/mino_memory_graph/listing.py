"""What a person reads about memories: facts by node, where each came from, and when.

Read from the derived index when the store has one (``mino memory`` commands never build
the graph to list or search), else from the graph in memory.

Dates. The journal's ``at`` is Mnemo's logical clock, not a time. Wall-clock time lives
where Mnemo keeps it, in fact values: a session's episode records ``started``
(``YYYY-MM-DD HH:MM UTC``; a turn's episode may record ``date``). Anything written with
logical time ``at`` is dated by the newest such episode created at or before ``at``: the
session it was written in. Nothing dated (a journal Mnemo wrote alone): no date.
"""
from __future__ import annotations

import json
import re

from .model import PROJECT_PREFIX
from .standing import USER_LABEL

DATE_KEYS = ("date", "started")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}(?: UTC)?)?")
_SESSION = re.compile(r"\bsession ([^\s,;:()]+)")
# facts that say where or when a node was written, shown as such rather than as facts
BOOKKEEPING = frozenset({"session", "turn", "started", "date"})


def _date_in(facts) -> str | None:
    for f in facts:
        if f[1] in DATE_KEYS:
            m = _DATE.match(str(f[2]))
            if m:
                return m.group(0)
    return None


class Reader:
    """Rows of nodes, their sources and dates, from ``store``'s index or graph."""

    def __init__(self, store):
        self.store = store
        self.ix = store.index if store.index is not None and not store.graph_built else None
        self._anchors = None  # graph path: sorted [(at, date)]
        self._dated: dict[int, str | None] = {}
        self._labels: dict[int, tuple] = {}

    # --- nodes ----------------------------------------------------------------------

    def rows(self):
        """``(id, kind, area, label, deleted, created_at, facts)`` of every node; each
        fact ``(id, key, value, created_at, active, superseded_by)``."""
        if self.ix is not None:
            for r in self.ix.db.execute("SELECT id, kind, area, label, deleted, created_at, "
                                        "facts FROM nodes"):
                yield (r[0], r[1], r[2], r[3], bool(r[4]), r[5],
                       [tuple(f) for f in json.loads(r[6])])
            return
        for n in list(self.store.graph.nodes.values()):
            yield (n.id, n.kind, n.area, n.label, bool(n.deleted), n.created_at,
                   [(f.id, f.key, f.value, f.created_at, f.active, f.superseded_by)
                    for f in n.facts])

    def row(self, id: int):
        if self.ix is not None:
            r = self.ix.db.execute("SELECT id, kind, area, label, deleted, created_at, facts "
                                   "FROM nodes WHERE id=?", (id,)).fetchone()
            return None if r is None else (r[0], r[1], r[2], r[3], bool(r[4]), r[5],
                                           [tuple(f) for f in json.loads(r[6])])
        n = self.store.graph.nodes.get(id)
        if n is None:
            return None
        return (n.id, n.kind, n.area, n.label, bool(n.deleted), n.created_at,
                [(f.id, f.key, f.value, f.created_at, f.active, f.superseded_by)
                 for f in n.facts])

    def _log(self, id: int) -> list[tuple]:
        if self.ix is not None:
            return self.ix.db.execute("SELECT at, kind, detail FROM log WHERE node=? "
                                      "ORDER BY seq", (id,)).fetchall()
        n = self.store.graph.nodes.get(id)
        return [tuple(e) for e in n.log] if n is not None else []

    def _part_of(self, id: int) -> list[int]:
        if self.ix is not None:
            return [r[0] for r in self.ix.db.execute(
                "SELECT dst FROM edges WHERE src=? AND kind='PartOf' AND invalid_at IS NULL "
                "ORDER BY id", (id,))]
        g = self.store.graph
        return [e.dst for e in (g.edges[i] for i in g.adj.get(id, ()))
                if e.src == id and e.kind == "PartOf" and e.invalid_at is None]

    def _label(self, id: int):
        if id not in self._labels:
            r = self.row(id)
            self._labels[id] = (r[1], r[3], r[6]) if r else (None, None, [])
        return self._labels[id]

    # --- where and when -------------------------------------------------------------

    def source(self, row) -> dict:
        """``{"project", "session", "scope"}`` of a node: the project it is part of (or
        the user's profile, global), the session that wrote it when known."""
        id, kind, _area, label, _d, _c, facts = row
        out = {"project": None, "session": None, "scope": None}
        if kind == "Entity" and label == USER_LABEL:
            out["scope"] = "your profile (every project)"
        elif kind == "Entity" and label.startswith(PROJECT_PREFIX):
            out["project"] = label[len(PROJECT_PREFIX):]
            out["scope"] = "this project's profile"
        for f in facts:
            if f[1] == "session" and f[4]:
                out["session"] = str(f[2])
        for dst in self._part_of(id):
            dkind, dlabel, dfacts = self._label(dst)
            if dkind == "Entity" and dlabel and dlabel.startswith(PROJECT_PREFIX):
                out["project"] = out["project"] or dlabel[len(PROJECT_PREFIX):]
            elif dkind == "TaskEpisode" and out["session"] is None:
                for f in dfacts:
                    if f[1] == "session":
                        out["session"] = str(f[2])
        if out["session"] is None:
            for _at, k, detail in self._log(id):
                if k == "provenance":
                    m = _SESSION.search(str(detail))
                    if m:
                        out["session"] = m.group(1)
        return out

    def date_of(self, at: int) -> str | None:
        """The date of logical time ``at`` (see the module docstring), or None."""
        if not at:
            return None
        if at in self._dated:
            return self._dated[at]
        got = None
        if self.ix is not None:
            # node ids grow with ``at``: walking them down finds the newest episode
            # created at or before ``at`` without reading the others
            for (fj,) in self.ix.db.execute(
                    "SELECT facts FROM nodes WHERE kind='TaskEpisode' AND created_at<=? "
                    "AND (instr(facts, '\"started\"') OR instr(facts, '\"date\"')) "
                    "ORDER BY id DESC LIMIT 50", (at,)):
                got = _date_in(json.loads(fj))
                if got:
                    break
        else:
            if self._anchors is None:
                self._anchors = sorted(
                    (r[5], d) for r in self.rows() if r[1] == "TaskEpisode"
                    for d in [_date_in(r[6])] if d)
            import bisect

            i = bisect.bisect_right(self._anchors, (at, "\uffff")) - 1
            got = self._anchors[i][1] if i >= 0 else None
        self._dated[at] = got
        return got

    def newest_at(self, row) -> int:
        return max([row[5]] + [f[3] for f in row[6]])


def is_episode(row) -> bool:
    return row[1] == "TaskEpisode"


def facts_view(reader: Reader, row, everything: bool = False) -> list[dict]:
    """A node's facts for people, newest first: current ones (all with ``everything``)."""
    out = []
    for f in sorted(row[6], key=lambda f: (f[3], f[0]), reverse=True):
        if not (f[4] or everything):
            continue
        out.append({"id": f[0], "key": f[1], "value": f[2], "current": bool(f[4]),
                    "date": reader.date_of(f[3]), "at": f[3], "superseded_by": f[5]})
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 2}


def node_view(reader: Reader, row, everything: bool = False, query: str = "") -> dict:
    """One node as ``list`` and ``search`` show it (for a search, the facts sharing the
    most words with ``query`` first)."""
    facts = facts_view(reader, row, everything)
    if query:
        q = _words(query)
        facts.sort(key=lambda f: -len(q & _words(f"{f['key']} {f['value']}")))
    return {"node": row[0], "label": row[3], "kind": row[1], "area": row[2],
            "forgotten": row[4], "created": reader.date_of(row[5]),
            "changed": reader.date_of(reader.newest_at(row)),
            "source": reader.source(row), "facts": facts,
            "earlier_values": sum(1 for f in row[6] if not f[4])}


def listing(store, *, limit: int = 20, offset: int = 0, episodes: bool = False,
            forgotten: bool = False, kind: str | None = None) -> dict:
    """Nodes with their facts, the most recently changed first (``list``)."""
    reader = Reader(store)
    picked, hidden = [], 0
    for row in reader.rows():
        if row[4] and not forgotten:
            continue
        if kind is not None and row[1] != kind:
            continue
        if is_episode(row) and not episodes and kind is None:
            hidden += 1
            continue
        picked.append((reader.newest_at(row), row[0], row))
    picked.sort(reverse=True)
    total = len(picked)
    page = picked[offset:offset + limit] if limit else picked[offset:]
    return {"total": total, "offset": offset, "limit": limit, "episodes_hidden": hidden,
            "nodes": [node_view(reader, row) for _, _, row in page]}
