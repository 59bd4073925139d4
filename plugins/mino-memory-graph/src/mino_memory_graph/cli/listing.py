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

import bisect
import json
import re

from ..core.model import PROJECT_PREFIX
from ..loop.standing import USER_LABEL

DATE_KEYS = ("date", "started")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}(?: UTC)?)?")
_SESSION = re.compile(r"\bsession ([^\s,;:()]+)")
_FACT_SESSION = re.compile(r"^fact (?P<q>['\"])(?P<key>.*?)(?P=q): session (?P<s>[^\s,;:()]+)")
# facts that say where or when a node was written, shown as such rather than as facts
BOOKKEEPING = frozenset({"session", "turn", "started", "date"})


def _date_in(facts) -> str | None:
    for f in facts:
        if f[1] in DATE_KEYS:
            m = _DATE.match(str(f[2]))
            if m:
                return m.group(0)
    return None


def _node_row(n) -> tuple:
    """A graph node as the index's row (see ``Reader.rows``)."""
    return (n.id, n.kind, n.area, n.label, bool(n.deleted), n.created_at,
            [(f.id, f.key, f.value, f.created_at, f.active, f.superseded_by)
             for f in n.facts])


class Reader:
    """Rows of nodes, their sources and dates, from ``store``'s index or graph."""

    def __init__(self, store):
        self.store = store
        # the index whenever it is open: it is kept in step with every write, whatever
        # graph this store also built (a partial graph holds only the nodes it touched)
        self.ix = store.index
        self._anchors = None  # graph path: sorted [(at, date)]
        self._labels: dict[int, tuple] = {}
        self._prov: dict[int, list] = {}

    # --- nodes ----------------------------------------------------------------------

    def rows(self):
        """``(id, kind, area, label, deleted, created_at, facts)`` of every node in the
        graph (without the index: ``listing`` pages in SQLite); each fact ``(id, key,
        value, created_at, active, superseded_by)``."""
        for n in list(self.store.graph.nodes.values()):
            yield _node_row(n)

    def row(self, id: int):
        if self.ix is not None:
            r = self.ix.db.execute("SELECT id, kind, area, label, deleted, created_at, facts "
                                   "FROM nodes WHERE id=?", (id,)).fetchone()
            return None if r is None else (r[0], r[1], r[2], r[3], bool(r[4]), r[5],
                                           [tuple(f) for f in json.loads(r[6])])
        n = self.store.graph.nodes.get(id)
        return None if n is None else _node_row(n)

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
            # one session for the whole node only when its provenance names one (a
            # profile collects facts from many: each fact then says its own)
            named = {m.group(1) for _, d in self.provenance(id)
                     for m in [_SESSION.search(str(d))] if m}
            if len(named) == 1:
                out["session"] = named.pop()
        return out

    def provenance(self, id: int) -> list[tuple[int, str]]:
        """``(at, detail)`` of a node's ``provenance`` log lines, oldest first."""
        if id not in self._prov:
            if self.ix is not None:
                self._prov[id] = self.ix.db.execute(
                    "SELECT at, detail FROM log WHERE node=? AND kind='provenance' "
                    "ORDER BY seq", (id,)).fetchall()
            else:
                n = self.store.graph.nodes.get(id)
                self._prov[id] = [(a, d) for a, _, d in n.log_of("provenance")
                                  ] if n is not None else []
        return self._prov[id]

    def fact_sessions(self, id: int) -> dict[tuple[str, int], str]:
        """``(key, at) -> session`` from provenance lines that name a fact (``fact 'KEY':
        session S, ...``, written in the same request as the fact, so with its ``at``)."""
        out = {}
        for at, d in self.provenance(id):
            m = _FACT_SESSION.match(str(d))
            if m:
                out[(m.group("key"), at)] = m.group("s")
        return out

    def date_of(self, at: int) -> str | None:
        """The date of logical time ``at`` (see the module docstring), or None."""
        if not at:
            return None
        if self._anchors is None:
            self._anchors = self._dated_episodes()
        i = bisect.bisect_right(self._anchors, (at, "\uffff")) - 1
        return self._anchors[i][1] if i >= 0 else None

    def _dated_episodes(self) -> list[tuple[int, str]]:
        """``(created_at, date)`` of every episode that records a date, in order: one
        read (a lookup per date would scan the table each time on a journal without
        any)."""
        if self.ix is not None:
            rows = ((c, json.loads(fj)) for c, fj in self.ix.db.execute(
                "SELECT created_at, facts FROM nodes WHERE kind='TaskEpisode' AND "
                "(instr(facts, '\"started\"') OR instr(facts, '\"date\"'))"))
        else:
            rows = ((n.created_at, [(f.id, f.key, f.value) for f in n.facts])
                    for n in self.store.graph.nodes.values() if n.kind == "TaskEpisode")
        return sorted((c, d) for c, facts in rows for d in [_date_in(facts)] if d)

    def newest_at(self, row) -> int:
        return max([row[5]] + [f[3] for f in row[6]])


def is_episode(row) -> bool:
    return row[1] == "TaskEpisode"


def facts_view(reader: Reader, row, everything: bool = False) -> list[dict]:
    """A node's facts for people, newest first: current ones (all with ``everything``)."""
    out = []
    sessions = reader.fact_sessions(row[0])
    for f in sorted(row[6], key=lambda f: (f[3], f[0]), reverse=True):
        if not (f[4] or everything):
            continue
        out.append({"id": f[0], "key": f[1], "value": f[2], "current": bool(f[4]),
                    "date": reader.date_of(f[3]), "at": f[3], "superseded_by": f[5],
                    "session": sessions.get((f[1], f[3]))})
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
    hide = not episodes and kind is None
    if reader.ix is not None:
        ids, total, hidden = _page_from_index(reader.ix, limit, offset, hide, forgotten, kind)
        rows = [reader.row(id) for id in ids]
    else:
        picked, hidden = [], 0
        for row in reader.rows():
            if (row[4] and not forgotten) or (kind is not None and row[1] != kind):
                continue
            if hide and is_episode(row):
                hidden += 1
                continue
            picked.append((reader.newest_at(row), row[0], row))
        picked.sort(reverse=True)
        total = len(picked)
        rows = [r for _, _, r in (picked[offset:offset + limit] if limit else picked[offset:])]
    return {"total": total, "offset": offset, "limit": limit, "episodes_hidden": hidden,
            "nodes": [node_view(reader, row) for row in rows]}


def _page_from_index(ix, limit: int, offset: int, hide: bool, forgotten: bool,
                     kind: str | None) -> tuple[list[int], int, int]:
    """One page of node ids, newest change first, ordered in SQLite (only the page's
    rows are read into Python): ``(ids, total, episodes hidden)``."""
    where, args = [], []
    if not forgotten:
        where.append("deleted=0")
    if kind is not None:
        where.append("kind=?")
        args.append(kind)
    base = " AND ".join(where) or "1"
    hidden = 0
    if hide:
        hidden = ix.db.execute(f"SELECT count(*) FROM nodes WHERE {base} AND "
                               "kind='TaskEpisode'", args).fetchone()[0]
        base += " AND kind!='TaskEpisode'"
    total = ix.db.execute(f"SELECT count(*) FROM nodes WHERE {base}", args).fetchone()[0]
    ids = [r[0] for r in ix.db.execute(
        "SELECT id, max(created_at, coalesce((SELECT max(json_extract(f.value, '$[3]')) "
        f"FROM json_each(nodes.facts) f), 0)) AS t FROM nodes WHERE {base} "
        "ORDER BY t DESC, id DESC LIMIT ? OFFSET ?", (*args, limit or -1, offset))]
    return ids, total, hidden
