"""The graph: nodes with facts and a log, typed edges, and the fold that applies one op.

``Graph.apply(name, body)`` is the only mutator. It is a pure fold: the same operations in
the same order give the same graph, and an operation that cannot apply (missing
reference, id collision) raises ``ApplyError`` *before* changing anything.

Derived state lives here only as memos that any touching operation invalidates (the
state text) and as the ``dirty`` set the recall engine drains to keep its vectors
current incrementally. Neither is ever journaled.
"""
from __future__ import annotations

import struct

from . import ops as _ops
from .ops import EDGE_KINDS

CLOCK_START = 1_700_000_000_000

AREA_FOR_KIND = {
    "TaskEpisode": "Episodic", "Outcome": "Episodic", "Aspect": "Semantic",
    "Harness": "Procedural", "Entity": "Spatial",
}
# Edges that one-hop expansion follows (Supersedes is declared but never followed).
EXPANSION_KINDS = frozenset(("PartOf", "SuppliesContext", "ActivatedWith", "DerivedFrom"))
# Log kinds that repeat a fact's value: kept on disk, not re-stated in the state text, so
# a retired value cannot reach the model through the log.
FACT_LOG_KINDS = frozenset(("fact_added", "fact_superseded"))
PROJECT_PREFIX = "project "

_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """Round to the nearest float32, as Mnemo keeps edge weights."""
    return _F32.unpack(_F32.pack(x))[0]


_W_SUCCESS = f32(0.05)
_W_FAILURE = f32(0.10)


def outcome_weight(w: float, success: bool) -> float:
    """An edge's weight after RecordOutcome: +0.05 capped at 1, or -0.10 floored at 0, in
    float32 as Mnemo computes it."""
    return min(f32(w + _W_SUCCESS), 1.0) if success else max(f32(w - _W_FAILURE), 0.0)


class ApplyError(Exception):
    """An operation that is well formed but cannot apply to this graph."""


class Fact:
    __slots__ = ("id", "key", "value", "active", "created_at", "superseded_by")

    def __init__(self, id, key, value, created_at, active=True, superseded_by=None):
        self.id = id
        self.key = key
        self.value = value
        self.active = active
        self.created_at = created_at
        self.superseded_by = superseded_by

    @property
    def status(self) -> str:
        return "Active" if self.active else "Superseded"

    def as_dict(self) -> dict:
        return {"id": self.id, "key": self.key, "value": self.value,
                "status": "active" if self.active else "superseded",
                "created_at": self.created_at, "superseded_by": self.superseded_by}


class Node:
    # ``_keys``: the active facts by key (see ``key_index``); None until a supersede
    # needs it, False when two facts share an id (then scans decide). Every fact handler
    # keeps a built index current; code that replaces ``facts`` resets it to None.
    __slots__ = ("id", "kind", "area", "label", "facts", "log", "context", "created_at",
                 "deleted", "useful", "unhelpful", "_state", "_keys")

    def __init__(self, id, kind, label, at, area=None):
        self.id = id
        self.kind = kind
        self.area = area or AREA_FOR_KIND[kind]
        self.label = label
        self.facts: list[Fact] = []
        # (at, kind, detail); append-only
        self.log: list = []
        self.context: list[dict] = []
        self.created_at = at
        self.deleted = False
        self.useful = 0
        self.unhelpful = 0
        self._state: str | None = None
        self._keys = None

    def active_facts(self):
        return [f for f in self.facts if f.active]

    def fact(self, key: str) -> Fact | None:
        """The current (active) fact under ``key``, if any (the first, when several)."""
        keys = self._keys
        if keys.__class__ is dict:
            f = keys.get(key)
            return f[0] if f.__class__ is list else f
        for f in self.facts:
            if f.active and f.key == key:
                return f
        return None

    def last_at(self) -> int:
        return max((e[0] for e in self.log), default=0)

    def log_of(self, kind: str) -> list:
        """The log lines of one kind (a node read from the index asks the index, not its
        whole log: a hot node's is thousands of lines, and its provenance a few)."""
        return [e for e in self.log if e[1] == kind]


# The slots under the properties of nodes read lazily (partial.IndexNode's log, the
# index fold's RowNode facts)
_FACTS, _LOG = Node.__dict__["facts"], Node.__dict__["log"]


def key_index(facts) -> dict | bool:
    """key -> its active Fact, or the list of them in ``facts`` order when several.

    False when two facts share an id: "the fact with id X" is then the first in list
    order, which only a scan finds.
    """
    keys: dict = {}
    ids = set()
    for f in facts:
        ids.add(f.id)
        if f.active:
            _add_key(keys, f)
    return keys if len(ids) == len(facts) else False


def _add_key(keys: dict, f: "Fact") -> None:
    """``f`` under its key: the fact alone, or a list once a second shares the key."""
    cur = keys.get(f.key)
    if cur is None:
        keys[f.key] = f
    elif cur.__class__ is list:
        cur.append(f)
    else:
        keys[f.key] = [cur, f]


def _index_fact(n: "Node", keys: dict, f: "Fact", fresh_id: bool) -> None:
    """Record a new active fact (not yet appended to ``n.facts``) in ``n``'s index.

    ``fresh_id``: its id is above every fact id of the graph, so it cannot collide.
    """
    if not fresh_id and any(x.id == f.id for x in n.facts):
        n._keys = False
        return
    _add_key(keys, f)


class Edge:
    __slots__ = ("id", "src", "dst", "kind", "weight", "valid_from", "invalid_at",
                 "success", "failure")

    def __init__(self, id, src, dst, kind, at):
        self.id = id
        self.src = src
        self.dst = dst
        self.kind = kind
        self.weight = 0.5
        self.valid_from = at
        self.invalid_at = None
        self.success = 0
        self.failure = 0

    def alive_at(self, t: int) -> bool:
        return self.invalid_at is None and t >= self.valid_from and self.weight > 0.0

    def as_dict(self) -> dict:
        return {"id": self.id, "src": self.src, "dst": self.dst, "kind": self.kind,
                "weight": self.weight, "valid_from": self.valid_from,
                "invalid_at": self.invalid_at, "success": self.success,
                "failure": self.failure}


class Graph:
    """Nodes, edges, id counters and the logical clock; ``apply`` folds one operation."""

    __slots__ = ("nodes", "edges", "next_node", "next_edge", "next_fact", "clock", "adj",
                 "projects", "dirty", "edge_dirty", "handlers", "__dict__")

    def __init__(self):
        self.nodes: dict[int, Node] = {}
        self.edges: dict[int, Edge] = {}
        self.next_node = 1
        self.next_edge = 1
        self.next_fact = 1
        self.clock = CLOCK_START
        # node id -> ids of edges touching it that expansion follows (both directions)
        self.adj: dict[int, list[int]] = {}
        # Entity nodes labelled "project ...": the scopes of project-scoped search
        self.projects: set[int] = set()
        # nodes whose derived state (text, vector, area, votes) changed since the
        # recall engine last looked
        self.dirty: set[int] = set()
        # nodes whose edges were linked, unlinked or reweighted (for scorers that read
        # graph structure; see ``recall.Scorer.touch``)
        self.edge_dirty: set[int] = set()
        # the twelve operations as positional functions (``_appliers``), and the
        # live handlers ``handlers[name](body)`` over them (the clock untouched)
        self.handlers = _ops.bind(self, _appliers(self, True))[0]

    def replay_handlers_for(self, track: bool) -> dict:
        """Replay's handlers, ``handler(body)``: each checks its fields inline and
        answers ``ops.INVALID`` when they are not that operation, else moves the clock
        and applies (see ``ops.bind``). ``track=False`` leaves dirty marks to the
        caller (only for a fold into a graph that was empty: see ``_appliers``)."""
        key = "_replay" if track else "_replay_fresh"
        rh = self.__dict__.get(key)
        if rh is None:
            rh = self.__dict__[key] = _ops.bind(self, self.appliers(track))[1]
        return rh

    def appliers(self, track: bool = True) -> dict:
        """The operations as functions of their fields (``_appliers``); they leave the
        clock to the caller."""
        key = "_appliers" if track else "_appliers_fresh"
        ap = self.__dict__.get(key)
        if ap is None:
            ap = self.__dict__[key] = _appliers(self, track)
        return ap

    def release(self) -> None:
        """Break the graph's own reference cycles (its handlers close over it), so a
        dropped graph is freed by reference counting even when ``gc.freeze`` put it
        out of the collector's reach. The graph stays readable; it applies no more."""
        self.handlers = {}
        self.__dict__.clear()

    # --- the fold ---------------------------------------------------------------------

    def apply(self, name: str, body: dict) -> None:
        """Apply one validated operation; ``ApplyError`` leaves the graph unchanged.

        The clock moves past the op's ``at`` either way, as Mnemo's sync does.
        """
        at = body["at"]
        if at >= self.clock:
            self.clock = at + 1
        self.handlers[name](body)

    # --- reading ----------------------------------------------------------------------

    def live(self, id: int) -> Node | None:
        n = self.nodes.get(id)
        return None if n is None or n.deleted else n

    def state_of(self, id: int) -> str:
        """What the model reads about a node (memoized until an op touches the node)."""
        n = self.nodes.get(id)
        if n is None:
            raise KeyError(f"node {id} missing")
        if n._state is not None:
            return n._state
        # fact entries are the only compact ones, and they are filtered out here
        recent = [e for e in n.log if e[1] not in FACT_LOG_KINDS][-5:]
        n._state = render_state(n.kind, n.area, n.label, n.id,
                                [(f.key, f.value, f.active) for f in n.facts], recent,
                                n.context, n.useful, n.unhelpful)
        return n._state

    def node_text(self, id: int) -> str | None:
        """The text a node is embedded from; None for a deleted or missing node.

        Kind and label, each active fact as ``key value``, then the last three log
        entries newest first as ``kind detail`` (unfiltered, as Mnemo embeds them).
        """
        n = self.nodes.get(id)
        if n is None or n.deleted:
            return None
        parts = [f"{n.kind} {n.label}"]
        for f in n.facts:
            if f.active:
                parts.append(f"{f.key} {f.value}")
        log = n.log
        for i in range(len(log) - 1, max(len(log) - 4, -1), -1):
            e = log[i]
            parts.append(f"{e[1]} {e[2]}")
        return " ".join(parts)

    def history(self, id: int) -> dict:
        n = self.nodes.get(id)
        if n is None:
            raise KeyError(f"node {id} missing")
        return {"node": id, "label": n.label, "kind": n.kind, "area": n.area,
                "deleted": n.deleted,
                "facts": [f.as_dict() for f in n.facts],
                "log": [{"at": a, "kind": k, "detail": d} for a, k, d in n.log]}

    def edges_of(self, id: int):
        """Edges that expansion follows touching ``id`` (both directions), by edge id."""
        edges = self.edges
        return [edges[e] for e in self.adj.get(id, ())]

    def feeders_of(self, dst: int, now: int | None = None) -> list[Edge]:
        """Live SuppliesContext edges pointing at ``dst``, heaviest first, then by id."""
        now = self.clock if now is None else now
        out = [e for e in self.edges_of(dst)
               if e.kind == "SuppliesContext" and e.dst == dst and e.alive_at(now)]
        out.sort(key=lambda e: (-e.weight, e.id))
        return out

    def out_of_scope(self, project: int, now: int | None = None) -> set[int]:
        """Nodes attached by a live PartOf to a project other than ``project``.

        A project is an Entity labelled ``project ...``. Nodes attached to ``project``
        itself, and nodes attached to no project, stay in scope.
        """
        now = self.clock if now is None else now
        mine: set[int] = set()
        other: set[int] = set()
        edges = self.edges
        for p in self.projects:
            target = mine if p == project else other
            for eid in self.adj.get(p, ()):
                e = edges[eid]
                if e.kind == "PartOf" and e.dst == p and e.alive_at(now):
                    target.add(e.src)
        return other - mine

    def counts(self) -> dict:
        live = [n for n in self.nodes.values() if not n.deleted]
        by_kind = {k: 0 for k in ("Aspect", "TaskEpisode", "Entity", "Harness", "Outcome")}
        by_area = {a: 0 for a in ("Episodic", "Semantic", "Procedural", "Spatial",
                                  "Salience", "Executive")}
        facts = retired = 0
        for n in live:
            by_kind[n.kind] += 1
            by_area[n.area] += 1
            for f in n.facts:
                if f.active:
                    facts += 1
                else:
                    retired += 1
        now = self.clock
        return {
            "nodes": len(live), "soft_deleted": len(self.nodes) - len(live),
            "edges": len(self.edges),
            "live_edges": sum(1 for e in self.edges.values() if e.alive_at(now)),
            "facts": facts, "retired_facts": retired,
            "by_kind": by_kind, "by_area": by_area,
            "episodes": by_kind["TaskEpisode"],
            "next_ids": {"node": self.next_node, "edge": self.next_edge,
                         "fact": self.next_fact},
            "clock": self.clock,
        }


def _supersede_scan(g: "Graph", n: Node, old, key, value, fid, at) -> None:
    """The general case: the target is the first fact with id ``old`` (live or not) and
    every other live fact under ``key`` retires too (one current value per key).
    Raises ApplyError before changing anything."""
    facts = n.facts
    target = None
    same = None
    for f in facts:
        if target is None and f.id == old:
            target = f
        elif f.active and f.key == key:
            if same is None:
                same = [f]
            else:
                same.append(f)
    if target is None:
        raise ApplyError(f"fact {old} not on node {n.id}")
    target.active = False
    target.superseded_by = fid
    also = 0
    if same:
        for f in same:
            if f.active:
                f.active = False
                f.superseded_by = fid
                also += 1
    facts.append(Fact(fid, key, value, at))
    if also:
        detail = f"{old} (+{also} other live '{key}') -> {fid}: {value}"
    else:
        detail = f"{old} -> {fid}: {value}"
    n.log.append((at, "fact_superseded", detail))
    if n._keys is not False:
        n._keys = None  # rebuilt by the next supersede
    if fid >= g.next_fact:
        g.next_fact = fid + 1


def _appliers(g: "Graph", track: bool = True, node_class=Node) -> dict:
    """The twelve operations of ``g`` as functions of their fields, in ``ops.SPECS``
    order: ``appliers["AddFact"](node, fact_id, key, value, at)``. The one applier of
    Mnemo's operations: the in-memory ``Graph``, the partial graph of a write request
    (``state.partial``) and the index's fold (``state.index._Sink``) all apply these.

    What ``g`` must offer is small: ``nodes`` and ``edges`` (``get``, ``in``, ``[id] =``,
    ``del`` for nodes), ``adj`` (``get``, ``[id] =``), ``projects`` (``add``,
    ``discard``), ``dirty`` and ``edge_dirty`` (``add``) and the three id counters; the
    index's fold gives maps that read its rows when first asked for, and makes its
    nodes as ``node_class`` (``Node``'s fields and constructor).

    Fields arrive checked (``ops.validate``'s types); references are checked here, and
    an op that cannot apply raises ``ApplyError`` before changing anything. The clock
    is the caller's (``ops.bind``). ``track=False`` is for a fold into a graph that was
    empty: every node it ends with is new, so the hot operations mark nothing dirty
    (the fold marks all nodes once at the end) and reset no state memo (none exists),
    and for the index's fold, which knows what it changed from what its maps were asked.
    """
    nodes, edges, adj = g.nodes, g.edges, g.adj
    dirty_add, ed_add = g.dirty.add, g.edge_dirty.add
    new_node, new_fact, new_edge = node_class, Fact, Edge
    expand = EXPANSION_KINDS
    projects = g.projects

    def node_of(id) -> Node:
        n = nodes.get(id)
        if n is None:
            raise ApplyError(f"node {id} missing")
        return n

    def edge_of(id) -> Edge:
        e = edges.get(id)
        if e is None:
            raise ApplyError(f"edge {id} missing")
        return e

    def touch(n: Node) -> None:
        n._state = None
        dirty_add(n.id)

    def edge_touched(e: Edge) -> None:
        ed_add(e.src)
        ed_add(e.dst)

    def create_node(id, kind, label, at):
        if id in nodes:
            raise ApplyError(f"node {id} exists")
        n = new_node(id, kind, label, at)
        n.log.append((at, "created", "node created as " + label))
        nodes[id] = n
        if id >= g.next_node:
            g.next_node = id + 1
        if kind == "Entity" and label.startswith(PROJECT_PREFIX):
            projects.add(id)
        if track:
            dirty_add(id)

    def add_fact(node, fact_id, key, value, at):
        n = nodes.get(node)
        if n is None:
            raise ApplyError(f"node {node} missing")
        f = new_fact(fact_id, key, value, at)
        fresh = fact_id >= g.next_fact
        keys = n._keys
        if keys.__class__ is dict:
            if fresh and key not in keys:
                keys[key] = f
            else:
                _index_fact(n, keys, f, fresh)
        n.facts.append(f)
        n.log.append((at, "fact_added", f"{key}: {value}"))
        if fresh:
            g.next_fact = fact_id + 1
        if track:
            n._state = None
            dirty_add(node)

    def supersede_fact(node, old_fact, new_key, new_value, new_fact_id, at):
        n = nodes.get(node)
        if n is None:
            raise ApplyError(f"node {node} missing")
        key = new_key
        # Through the key index when the target is the key's only live value (the
        # usual case), else by one scan of the node's facts.
        keys = n._keys
        if keys is None:
            keys = n._keys = key_index(n.facts)
        cur = keys.get(key) if keys.__class__ is dict else None
        # ids are unique on this node (else keys is False): cur is *the* fact old_fact
        if cur is not None and cur.__class__ is not list and cur.id == old_fact:
            cur.active = False
            cur.superseded_by = new_fact_id
            f = new_fact(new_fact_id, key, new_value, at)
            if new_fact_id >= g.next_fact:
                g.next_fact = new_fact_id + 1
                keys[key] = f
            elif any(x.id == new_fact_id for x in n.facts):
                n._keys = False
            else:
                keys[key] = f
            n.facts.append(f)
            n.log.append((at, "fact_superseded", f"{old_fact} -> {new_fact_id}: {new_value}"))
        else:
            _supersede_scan(g, n, old_fact, key, new_value, new_fact_id, at)
        if track:
            n._state = None
            dirty_add(node)

    def set_area(node, area, at):
        n = node_of(node)
        old = n.area
        n.area = area
        n.log.append((at, "area_set", f"{old} -> {n.area}"))
        touch(n)

    def delete_node(node, hard, at):
        n = node_of(node)
        n.deleted = True
        n.log.append((at, "deleted", "hard=true" if hard else "hard=false"))
        # its edges no longer lead anywhere: both ends changed for structure readers
        for eid in adj.get(n.id, ()):
            edge_touched(edges[eid])
        if hard:
            del nodes[n.id]
            projects.discard(n.id)
        touch(n)

    def link(id, src, dst, kind, at):
        if src not in nodes:
            raise ApplyError(f"node {src} missing")
        if dst not in nodes:
            raise ApplyError(f"node {dst} missing")
        if id in edges:
            raise ApplyError(f"edge {id} exists")
        edges[id] = new_edge(id, src, dst, kind, at)
        if id >= g.next_edge:
            g.next_edge = id + 1
        if track:
            ed_add(src)
            ed_add(dst)
        if kind in expand:  # both ends' adjacency lists (once for a self-loop)
            lst = adj.get(src)
            if lst is None:
                adj[src] = [id]
            else:
                lst.append(id)
            if dst != src:
                lst = adj.get(dst)
                if lst is None:
                    adj[dst] = [id]
                else:
                    lst.append(id)

    def unlink(edge, at):
        e = edge_of(edge)
        e.invalid_at = at
        edge_touched(e)

    def reweight(edge, delta, at):
        e = edge_of(edge)
        edge_touched(e)
        e.weight = min(max(f32(e.weight + f32(delta)), 0.0), 1.0)

    def record_outcome(edge, success, at):
        e = edges.get(edge)
        if e is None:
            raise ApplyError(f"edge {edge} missing")
        if track:
            ed_add(e.src)
            ed_add(e.dst)
        if success:
            e.success += 1
        else:
            e.failure += 1
        e.weight = outcome_weight(e.weight, success)

    def push_context(to, chunk, at):
        n = node_of(to)
        n.context.append({"from": chunk["from"], "dim": chunk["dim"],
                          "vec": list(chunk.get("vec", [])), "note": chunk["note"]})
        n._state = None

    def commit_log(node, kind, detail, at):
        n = nodes.get(node)
        if n is None:
            raise ApplyError(f"node {node} missing")
        n.log.append((at, kind, detail))
        if track:
            n._state = None
            dirty_add(node)

    def record_usefulness(node, useful, at):
        # Counted, never logged: the last log lines are embedded, and vote lines once
        # drifted heavily voted nodes off their topic.
        n = nodes.get(node)
        if n is None:
            raise ApplyError(f"node {node} missing")
        if useful:
            n.useful += 1
        else:
            n.unhelpful += 1
        if track:
            n._state = None
            dirty_add(node)

    return {"CreateNode": create_node, "AddFact": add_fact,
            "SupersedeFact": supersede_fact, "SetArea": set_area,
            "DeleteNode": delete_node, "Link": link, "Unlink": unlink,
            "Reweight": reweight, "RecordOutcome": record_outcome,
            "PushContext": push_context, "CommitLog": commit_log,
            "RecordUsefulness": record_usefulness}

__all__ = ["ApplyError", "CLOCK_START", "EDGE_KINDS", "Edge", "Fact", "Graph", "Node", "f32"]


def render_state(kind, area, label, id, facts, recent, context, useful, unhelpful) -> str:
    """What the model reads about a node: ``facts`` as (key, value, active), ``recent`` as
    (at, kind, detail). One text for the in-memory graph and the on-disk index."""
    out = [f"[{kind}/{area}] {label} #{id}", "facts:"]
    retired = 0
    for key, value, active in facts:
        if active:
            out.append(f"  - {key}: {value}")
        else:
            retired += 1
    if retired:  # Mnemo's line, word for word (#24: retired values are history, not answers)
        noun = "value" if retired == 1 else "values"
        out.append(f"  ({retired} retired {noun} kept as history, not current \u2014 "
                   "the facts above are the current answer)")
    out.append("recent log:")
    out += [f"  [{at}] {k}: {detail}" for at, k, detail in recent]
    out.append(f"context chunks: {len(context)}")
    out += [f"  <- #{c['from']} [dim {c['dim']}]: {c['note']}" for c in context]
    if useful or unhelpful:
        out.append(f"usefulness votes: {useful} useful / {unhelpful} unhelpful")
    return "\n".join(out) + "\n"
