"""The tests' oracle: the whole journal replayed into an in-memory ``model.Graph``.

The product reads everything from the on-disk index (``state/index.py``); the tests list
and compare nodes against this replay (as ``mino memory check`` does)."""
from __future__ import annotations

from pathlib import Path

from mino_memory_graph.core.model import Graph
from mino_memory_graph.journal.journal import Journal, Report, fold_range


def replay(where) -> Graph:
    """The graph the journal at ``where`` (a path, a home, a store, or a graph) replays
    to, read afresh (without the lock: a test may hold it, in a write request)."""
    if isinstance(where, Graph) and not getattr(where, "partial", False):
        return where
    if getattr(where, "partial", False):
        return where.whole()
    path = getattr(where, "path", where)
    path = Path(path)
    if path.is_dir():
        path = path / "graph" / "journal.jsonl"
    j = Journal(path)
    try:
        g = Graph()
        fold_range(j.read, 0, j.size(), g, Report(), [])
        return g
    finally:
        j.close()


def fold(data: bytes, graph: Graph, base: int, report: Report, bad: list[dict],
         long_lived: bool = False) -> None:
    """``fold_range`` over ``data``, which starts at byte ``base``."""
    fold_range(lambda a, b: data[a - base:b - base], base, base + len(data), graph,
               report, bad, long_lived)


def apply_ops(store, ops_list) -> int:
    """Apply pre-built ``(name, body)`` ops (a planner's output) as one request, each
    ``at`` replaced by the request's clock; returns that ``at``."""
    with store.write() as req:
        for name, body in ops_list:
            req.apply(name, dict(body, at=req.at))
        return req.at


def in_other_project(graph, nid: int, project: int | None) -> bool:
    """Attached by a live PartOf to another project and not to ``project`` (the store's
    scope rule, for one node: O(its edges))."""
    other = mine = False
    now = graph.clock
    projects = graph.projects
    for e in graph.edges_of(nid):
        if e.kind == "PartOf" and e.src == nid and e.dst in projects and e.alive_at(now):
            if e.dst == project:
                mine = True
            else:
                other = True
    return other and not mine



def graph_snapshot(g) -> tuple:
    """The graph as plain tuples (canonical: equal graphs give equal snapshots)."""
    g = replay(g)
    nodes = tuple(
        (n.id, n.kind, n.area, n.label,
         tuple((f.id, f.key, f.value, f.active, f.created_at, f.superseded_by)
               for f in n.facts),
         tuple(tuple(e) for e in n.log), tuple((c["from"], c["dim"], tuple(c["vec"]), c["note"])
                                          for c in n.context),
         n.created_at, n.deleted, n.useful, n.unhelpful)
        for _, n in sorted(g.nodes.items()))
    edges = tuple((e.id, e.src, e.dst, e.kind, e.weight, e.valid_from, e.invalid_at,
                   e.success, e.failure) for _, e in sorted(g.edges.items()))
    return (g.next_node, g.next_edge, g.next_fact, g.clock, nodes, edges)


def same_graph(a, b) -> bool:
    """Equal nodes, edges and counters (the clock is a process's own and may differ)."""
    sa, sb = graph_snapshot(a), graph_snapshot(b)
    return sa[:3] == sb[:3] and sa[4:] == sb[4:]
