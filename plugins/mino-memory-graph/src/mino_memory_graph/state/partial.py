"""``PartialGraph``: a ``Graph`` whose nodes and edges are read from ``journal.index`` when
first touched, so a turn builds Python objects for the handful of nodes it reads or
writes and never the whole graph.

The twelve operations run unchanged (``model._appliers``) over three lazy maps:
``nodes``, ``edges`` and ``adj`` (a node's expansion edges) load an entry from the index
the first time it is asked for and keep it. The index and this graph always stand at
the same journal offset: a write request applies its operations here first (loading what
they touch as the index has it, under the exclusive lock), appends them, and only then
lets the index apply the same lines.

Another process's lines are not folded here: the index applies them, and this graph
forgets what it had loaded (``reload``), to read it again as the index now has it.

What cannot be answered from loaded entries alone is asked of the index: ``find_label``
and ``find_fact`` (live nodes by label or by a current fact, merged with this graph's
own changes), ``counts``, and the project list, read once. Listing every node is
refused (``TypeError``): code that needs it asks the index.
"""
from __future__ import annotations

import json

from ..core import ops as _ops
from .index import Index
from ..core.model import _LOG, EXPANSION_KINDS, PROJECT_PREFIX, Edge, Fact, Graph, Node, _appliers


class _Lazy(dict):
    """A dict that loads a missing key with ``load(key)`` (None: absent, remembered)."""

    def __init__(self, load):
        super().__init__()
        self._load = load
        self._absent: set = set()

    def _fetch(self, key):
        if key in self._absent:
            return None
        v = self._load(key)
        if v is None:
            self._absent.add(key)
        else:
            dict.__setitem__(self, key, v)
        return v

    def get(self, key, default=None):
        v = dict.get(self, key)
        if v is None:
            v = self._fetch(key)
        return default if v is None else v

    def __getitem__(self, key):
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or self._fetch(key) is not None

    def __setitem__(self, key, value) -> None:
        self._absent.discard(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key) -> None:
        dict.__delitem__(self, key)
        self._absent.add(key)

    def __len__(self) -> int:  # never "empty": a fold must not take it for a fresh graph
        return dict.__len__(self) + 1

    def loaded(self):
        return dict.items(self)

    def _refuse(self, *a):
        raise TypeError("a partial graph does not list its entries: ask the index")

    __iter__ = keys = values = items = _refuse


class IndexNode(Node):
    """A node read from the index whose log is read when first used: a turn loads a
    few dozen nodes (its project, the user's profile, what recall found), and a hot
    node's log is thousands of lines that most of them never show. The log read is the
    row's own first ``nlog`` lines, so it is the log the row was read with whatever the
    index applied since (an append first reads it: ``log.append`` reads the property)."""

    __slots__ = ("_ix", "_nlog")

    @property
    def log(self):
        ix = self._ix
        if ix is not None:
            self._ix = None
            _LOG.__set__(self, [] if self._nlog == 0 else ix.db.execute(
                "SELECT at, kind, detail FROM log WHERE node=? AND seq < ? ORDER BY seq",
                (self.id, self._nlog)).fetchall())
        return _LOG.__get__(self, Node)

    @log.setter
    def log(self, value):
        self._ix = None
        _LOG.__set__(self, value)

    def log_of(self, kind: str) -> list:
        ix = self._ix
        if ix is None:
            return Node.log_of(self, kind)
        return [] if self._nlog == 0 else ix.db.execute(
            "SELECT at, kind, detail FROM log WHERE node=? AND seq < ? AND kind=? ORDER BY seq",
            (self.id, self._nlog, kind)).fetchall()


def node_from_index(ix: Index, id: int) -> Node | None:
    r = ix.row(id)
    if r is None:
        return None
    _id, kind, area, label, deleted, useful, unhelpful, created, nlog, facts, ctx = r
    n = IndexNode(id, kind, label, created, area)
    n.deleted = bool(deleted)
    n.useful, n.unhelpful = useful, unhelpful
    n.facts = [Fact(f[0], f[1], f[2], f[3], bool(f[4]), f[5]) for f in json.loads(facts)]
    n._ix, n._nlog = ix, nlog  # (after __init__, whose empty log would be taken as read)
    if ctx:
        n.context = json.loads(ctx)
    return n


def edge_from_index(ix: Index, id: int) -> Edge | None:
    r = ix.db.execute("SELECT src, dst, kind, weight, valid_from, invalid_at, success, "
                      "failure FROM edges WHERE id=?", (id,)).fetchone()
    if r is None:
        return None
    e = Edge(id, r[0], r[1], r[2], r[4])
    e.weight, e.invalid_at, e.success, e.failure = r[3], r[5], r[6], r[7]
    return e


class PartialGraph(Graph):
    """A ``Graph`` over an index (see the module docstring)."""

    partial = True

    def __init__(self, index: Index):
        super().__init__()
        self.index = index
        ix = index
        self.nodes = _Lazy(lambda id: node_from_index(ix, id))
        self.edges = _Lazy(lambda id: edge_from_index(ix, id))
        kinds = tuple(sorted(EXPANSION_KINDS))

        def adjacency(id):
            ids = sorted({r[0] for col in ("src", "dst") for r in ix.db.execute(
                f"SELECT id FROM edges WHERE {col}=? AND kind IN (?,?,?,?)", (id, *kinds))})
            return ids or None

        self.adj = _Lazy(adjacency)
        self.projects = set()
        self.reload()
        # the operations again, over the lazy maps
        self.handlers = _ops.bind(self, _appliers(self, True))[0]

    def reload(self) -> None:
        """Forget every loaded entry and read the counters again: after another process
        wrote (the index applied its lines; what was loaded here is older)."""
        for m in (self.nodes, self.edges, self.adj):
            dict.clear(m)
            m._absent.clear()
        self.dirty.clear()
        self.edge_dirty.clear()
        ix = self.index
        self.projects.clear()  # in place: the operations hold this set
        self.projects.update(r[0] for r in ix.db.execute(  # a range of the label index
            "SELECT id FROM nodes WHERE label >= ? AND label < ? AND kind='Entity' AND "
            "substr(label, 1, ?)=?", (PROJECT_PREFIX, PROJECT_PREFIX + "\U0010ffff",
                                     len(PROJECT_PREFIX), PROJECT_PREFIX)))
        self.next_node, self.next_edge, self.next_fact, self.clock = ix.counters()

    # --- what the loaded entries cannot answer --------------------------------------

    def _merge(self, ids, keep) -> list[int]:
        """``ids`` from the index, re-judged (``keep(node)``) by this graph's own copy,
        plus loaded nodes that ``keep`` accepts (changed since the index saw them)."""
        out = set()
        for id in ids:
            n = self.nodes.get(id)
            if n is not None and keep(n):
                out.add(id)
        for id, n in self.nodes.loaded():
            if id not in out and keep(n):
                out.add(id)
        return sorted(out)

    def find_label(self, label: str, kind: str | None = None, prefix: bool = False):
        """Live nodes whose label is ``label`` (or starts with it), by id."""
        if prefix:  # a range of the label index (text compares as UTF-8 bytes)
            rows = self.index.db.execute(
                "SELECT id FROM nodes WHERE label >= ? AND label < ? AND deleted=0 "
                "AND substr(label, 1, ?)=?", (label, label + "\U0010ffff", len(label), label))
        else:
            rows = self.index.db.execute(
                "SELECT id FROM nodes WHERE deleted=0 AND label=?", (label,))

        def keep(n):
            return (not n.deleted and (kind is None or n.kind == kind)
                    and (n.label.startswith(label) if prefix else n.label == label))
        return self._merge([r[0] for r in rows], keep)

    def find_fact(self, key: str, value: str, area: str | None = None):
        """Live nodes (in ``area``) whose current ``key`` is ``value``, by id."""
        needle = "%" + json.dumps([key, value], ensure_ascii=False,
                                  separators=(",", ":"))[1:-1] + "%"
        if area is None:
            rows = self.index.db.execute(
                "SELECT id FROM nodes WHERE deleted=0 AND facts LIKE ?", (needle,))
        else:  # the area index: only that area's rows are matched
            rows = self.index.db.execute(
                "SELECT id FROM nodes WHERE area=? AND deleted=0 AND facts LIKE ?",
                (area, needle))

        def keep(n):
            if n.deleted or (area is not None and n.area != area):
                return False
            f = n.fact(key)
            return f is not None and f.value == value
        return self._merge([r[0] for r in rows], keep)

    def counts(self) -> dict:
        return self.index.counts()

    def whole(self) -> Graph:
        """Every node and edge as a plain ``Graph`` (for checks and tests; never a turn):
        what the index holds, with this graph's loaded entries over it."""
        g = Graph()
        ix = self.index
        for (id,) in ix.db.execute("SELECT id FROM nodes ORDER BY id"):
            n = dict.get(self.nodes, id) or node_from_index(ix, id)
            g.nodes[id] = n
        for id, n in self.nodes.loaded():
            g.nodes[id] = n
        for (id,) in ix.db.execute("SELECT id FROM edges ORDER BY id"):
            g.edges[id] = dict.get(self.edges, id) or edge_from_index(ix, id)
        for id, e in self.edges.loaded():
            g.edges[id] = e
        g.next_node, g.next_edge, g.next_fact, g.clock = (
            self.next_node, self.next_edge, self.next_fact, self.clock)
        return g


def find_label(graph: Graph, label: str, kind: str | None = None, prefix: bool = False):
    """Live nodes whose label is ``label`` (or starts with it), by id: from the index for
    a partial graph, by a scan of a whole one."""
    if getattr(graph, "partial", False):
        return graph.find_label(label, kind, prefix)
    return sorted(nid for nid, n in graph.nodes.items()
                  if not n.deleted and (kind is None or n.kind == kind)
                  and (n.label.startswith(label) if prefix else n.label == label))


def find_fact(graph: Graph, key: str, value: str, area: str | None = None):
    """Live nodes (in ``area``) whose current ``key`` is ``value``, by id."""
    if getattr(graph, "partial", False):
        return graph.find_fact(key, value, area)
    out = []
    for nid, n in graph.nodes.items():
        if n.deleted or (area is not None and n.area != area):
            continue
        f = n.fact(key)
        if f is not None and f.value == value:
            out.append(nid)
    return sorted(out)


__all__ = ["PartialGraph", "find_fact", "find_label"]
