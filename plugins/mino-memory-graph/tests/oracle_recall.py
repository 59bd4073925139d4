"""The tests' oracle recall: the in-memory engine over a replayed ``model.Graph`` (no
longer a product path: the product recalls from the index, ``recall/search.py``).

The recall engine: candidate scoring (pluggable), filters, one-hop expansion, recall block.

Rows
----
The engine gives every node a *row* the first time it sees it (rows are never reused;
a deleted node's row is emptied). Per-row arrays (node id, kind, area, net usefulness
votes) live in the engine; a scorer keeps whatever it needs per row.

The ``Scorer`` interface (plug a different candidate scorer in here)
--------------------------------------------------------------------
A scorer is any object with::

    name: str
    add(row: int, node_id: int, text: str) -> None      # a new node's text
    update(row: int, node_id: int, text: str) -> None   # its text changed
    remove(row: int, node_id: int) -> None              # deleted: must score <= 0 after
    scores(query: Query) -> numpy.ndarray               # float32, len >= query.n,
                                                        # index = row; the final seed
                                                        # score (> 1e-6 makes a seed)

and optionally ``touch(row, node_id)`` (an edge of the node was linked, unlinked or
reweighted; for scorers that read graph structure), ``add_many(rows, node_ids, texts)``
for bulk loading (a cold open calls
it once with every node), ``state() / load_state(obj)`` for the on-disk derived cache
(``state`` returns a dict of numpy arrays and plain values; ``load_state`` returns False
when it cannot use what it is given), and ``release()``.

The engine keeps scorers current incrementally: after every batch of operations it calls
``add``/``update``/``remove`` for exactly the nodes whose text changed (never a
re-embed of everything per search). ``Query`` carries what a scorer may combine:
``text`` (as typed), ``expanded`` (lowercased with aliases), ``routed`` (areas),
``area_weight`` (float32 per row: 1 in a routed area, else the cross-area discount; None
when nothing was routed), ``bias`` (float32 per row: net votes x 0.02; None when no node
has votes) and ``n`` (rows in use). Filters, expansion, ties and formatting stay in the
engine, so every scorer gets them for free.

``MnemoScorer`` is Mnemo's exact rule: ``cosine(q, v) x area_weight + (useful -
unhelpful) x 0.02`` over the embedder's vectors (``hashing-v1`` by default). It keeps the
vectors transposed (one row per dimension), so a sparse hashed query reads only the
dimensions it uses: the same numbers as a dense mat-vec, from a fraction of the memory.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mino_memory_graph.core.model import Graph, f32
from mino_memory_graph.recall.routing import CROSS_AREA_DISCOUNT, expand_query_aliases, route_explained, routing_why

from mino_memory_graph.recall.results import (AREA_CODE, SEED_MIN, USEFULNESS_BIAS, Found,  # noqa: F401
                      Hit, offer, ranked)

KIND_CODE = {"Aspect": 0, "TaskEpisode": 1, "Entity": 2, "Harness": 3, "Outcome": 4}


def area_names(areas: list[str]) -> str:
    return ", ".join(areas) if areas else "all"

_F32_01 = f32(0.1)


@dataclass
class Query:
    text: str
    expanded: str
    routed: list[str]
    area_weight: np.ndarray | None
    bias: np.ndarray | None
    n: int
    kind: np.ndarray | None = None  # each row's KIND_CODE (HybridParams.episode)


class Scorer(Protocol):
    name: str

    def add(self, row: int, node_id: int, text: str) -> None: ...
    def update(self, row: int, node_id: int, text: str) -> None: ...
    def remove(self, row: int, node_id: int) -> None: ...
    def scores(self, query: Query) -> np.ndarray: ...


class MnemoScorer:
    """Mnemo's scoring: cosine x area weight + usefulness bias, brute force, exact."""

    def __init__(self, embedder=None):
        if embedder is None:
            from mino_memory_graph.text.embed import HashingEmbedder
            embedder = HashingEmbedder()
        self.embedder = embedder
        self.name = f"mnemo-cosine/{embedder.name}"
        self.dim = embedder.dim or 0
        self.cap = 0
        self.mt = np.zeros((self.dim, 0), dtype=np.float32)  # (dim, rows)

    def _ensure(self, rows_needed: int, dim: int | None = None) -> None:
        if dim and dim != self.dim:
            if self.cap and self.dim:
                raise ValueError(f"vector size changed from {self.dim} to {dim}")
            self.dim = dim
            self.mt = np.zeros((dim, self.cap), dtype=np.float32)
        if rows_needed > self.cap:
            cap = max(1024, self.cap * 2, rows_needed)
            mt = np.zeros((self.dim, cap), dtype=np.float32)
            if self.cap:
                mt[:, : self.cap] = self.mt
            self.mt, self.cap = mt, cap

    def _writable(self) -> None:
        """A matrix loaded from the derived cache may be a read-only view: copy on write."""
        if not self.mt.flags.writeable:
            cap = max(1024, self.cap + self.cap // 4)
            mt = np.zeros((self.dim, cap), dtype=np.float32)
            mt[:, : self.cap] = self.mt[:, : self.cap]
            self.mt, self.cap = mt, cap

    def _set(self, row: int, vec) -> None:
        self._writable()
        if vec is None:
            self._ensure(row + 1)
            if self.dim:
                self.mt[:, row] = 0.0
            return
        self._ensure(row + 1, int(vec.shape[0]))
        self.mt[:, row] = vec

    def add(self, row, node_id, text):
        self._set(row, self.embedder.embed(text))

    update = add

    def remove(self, row, node_id):
        self._writable()
        if row < self.cap and self.dim:
            self.mt[:, row] = 0.0

    def add_many(self, rows, node_ids, texts):
        if not rows:
            return
        emb_matrix = getattr(self.embedder, "embed_matrix", None)
        if emb_matrix is None:  # a server embedder: one request per batch, not per text
            for r, vec in zip(rows, self.embedder.embed_many(texts)):
                self._set(r, vec)
            return
        m = emb_matrix(texts)
        self._ensure(max(rows) + 1, m.shape[1])
        self._writable()
        self.mt[:, np.asarray(rows, dtype=np.int64)] = m.T

    def query_vector(self, query: Query):
        # Asymmetric models embed a query apart from the documents it should find.
        embed_query = getattr(self.embedder, "embed_query", self.embedder.embed)
        return embed_query(query.expanded)

    def scores(self, query: Query) -> np.ndarray:
        n = query.n
        q = self.query_vector(query)
        if q is None or not self.dim or q.shape[0] != self.dim:
            s = np.zeros(n, dtype=np.float32)
        else:
            nz = np.flatnonzero(q)
            if len(nz) * 4 < self.dim:
                s = q[nz] @ self.mt[nz, :n]       # sparse query: read only its slots
            else:
                s = q @ self.mt[:, :n]
            s = np.asarray(s, dtype=np.float32)
        if query.area_weight is not None:
            s *= query.area_weight
        if query.bias is not None:
            s += query.bias
        return s

    # --- derived cache ------------------------------------------------------------

    def state(self, n: int) -> dict:
        return {"name": self.name, "dim": self.dim, "mt": self.mt[:, :n]}

    def load_state(self, st: dict, n: int) -> bool:
        if st.get("name") != self.name:
            return False
        mt = st["mt"]
        if mt.shape[1] != n:
            return False
        self.dim = int(st["dim"])
        if mt.flags.writeable:
            cap = max(1024, n + n // 4)
            self.mt = np.zeros((self.dim, cap), dtype=np.float32)
            self.mt[:, :n] = mt
            self.cap = cap
        else:  # a read-only view of the cache file: copied on the first write
            self.mt, self.cap = mt, n
        return True


class RecallEngine:
    """Rows, incremental scorer upkeep, filters, seeds and one-hop expansion."""

    def __init__(self, graph: Graph, scorer=None):
        self.graph = graph
        self.scorer = scorer if scorer is not None else MnemoScorer()
        self.row_of: dict[int, int] = {}
        self.n = 0
        self.cap = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.kind = np.zeros(0, dtype=np.int8)
        self.area = np.zeros(0, dtype=np.int8)
        self.votes = np.zeros(0, dtype=np.float32)
        self.live = np.zeros(0, dtype=bool)
        self.texts: list[str | None] = []
        self.voted = 0  # rows with a non-zero net vote
        # a new engine indexes every node the graph already has on its first sync
        self.primed = False

    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        cap = max(1024, self.cap * 2, need)
        for name, dt in (("ids", np.int64), ("kind", np.int8), ("area", np.int8),
                         ("votes", np.float32), ("live", bool)):
            a = np.zeros(cap, dtype=dt)
            a[: self.n] = getattr(self, name)[: self.n]
            setattr(self, name, a)
        self.cap = cap

    def sync(self) -> int:
        """Bring rows and the scorer up to date with the graph; returns nodes refreshed.

        Nodes whose text changed get ``scorer.update`` (new ones ``add``, deleted ones
        ``remove``); every other changed node (votes, area, an edge of it linked,
        unlinked, reweighted or with an outcome recorded, a neighbour deleted) gets
        ``scorer.touch`` when the scorer has it.
        """
        g = self.graph
        dirty = g.dirty
        edge_dirty = g.edge_dirty
        if not self.primed:
            self.primed = True
            dirty.update(g.nodes)
        if not dirty and not edge_dirty:
            return 0
        scorer = self.scorer
        touch = getattr(scorer, "touch", None)
        if touch is not None:
            changed = dirty | edge_dirty if edge_dirty else set(dirty)
        else:
            changed = set()
        edge_dirty.clear()
        ids = sorted(dirty)
        dirty.clear()
        self._grow(self.n + len(ids))
        new_rows, new_ids, new_texts = [], [], []
        for nid in ids:
            node = g.nodes.get(nid)
            row = self.row_of.get(nid)
            if node is None or node.deleted:
                changed.discard(nid)
                if row is not None and self.live[row]:
                    self.live[row] = False
                    self._set_votes(row, 0)
                    self.texts[row] = None
                    scorer.remove(row, nid)
                continue
            text = g.node_text(nid)
            if row is None:
                row = self.n
                self.n += 1
                self.row_of[nid] = row
                self.ids[row] = nid
                self.texts.append(text)
                new_rows.append(row)
                new_ids.append(nid)
                new_texts.append(text)
                changed.discard(nid)
            elif text != self.texts[row]:
                self.texts[row] = text
                if self.live[row]:
                    scorer.update(row, nid, text)
                else:
                    scorer.add(row, nid, text)
                changed.discard(nid)
            self.live[row] = True
            self.kind[row] = KIND_CODE[node.kind]
            self.area[row] = AREA_CODE[node.area]
            self._set_votes(row, node.useful - node.unhelpful)
        if new_rows:
            add_many = getattr(scorer, "add_many", None)
            if add_many is not None and len(new_rows) > 1:
                add_many(new_rows, new_ids, new_texts)
            else:
                for r, i, t in zip(new_rows, new_ids, new_texts):
                    scorer.add(r, i, t)
        if changed:
            row_of, live = self.row_of, self.live
            for nid in sorted(changed):
                row = row_of.get(nid)
                if row is not None and live[row]:
                    touch(row, nid)
        return len(ids)

    def _set_votes(self, row: int, net: int) -> None:
        old = self.votes[row]
        if (old != 0) != (net != 0):
            self.voted += 1 if net else -1
        self.votes[row] = net

    # --- search -------------------------------------------------------------------

    def _passes(self, node, kind, areas, exclude) -> bool:
        return (node is not None and not node.deleted
                and (kind is None or node.kind == kind)
                and (not areas or node.area in areas)
                and (not exclude or node.id not in exclude))

    def search(self, query: str, k: int = 5, *, kind: str | None = None,
               areas: list[str] | None = None, scope: int | None = None,
               prefer: list[str] | None = None, cross_area: float | None = None,
               now: int | None = None) -> Found:
        """Route, score every row, seed, expand one hop, return the top ``k``.

        ``areas`` filter hard and, when given, are also the preference; otherwise the
        query's routed areas are preferred (a bias). Ties break by node id.
        """
        self.sync()
        g = self.graph
        now = g.clock if now is None else now
        areas = list(areas or [])
        explained = route_explained(query)
        if prefer is None:
            prefer = areas if areas else [a for a, _ in explained]
        n = self.n
        discount = CROSS_AREA_DISCOUNT if cross_area is None else cross_area
        aw = None
        if prefer:
            table = np.full(6, discount, dtype=np.float32)
            for a in prefer:
                table[AREA_CODE[a]] = 1.0
            aw = table[self.area[:n]]
        bias = None
        if self.voted:
            bias = self.votes[:n] * np.float32(USEFULNESS_BIAS)
        q = Query(text=query, expanded=expand_query_aliases(query), routed=list(prefer),
                  area_weight=aw, bias=bias, n=n, kind=self.kind[:n])
        s = self.scorer.scores(q)[:n]
        exclude = g.out_of_scope(scope, now) if scope is not None else set()
        if kind is not None or areas or exclude:
            s = np.array(s, dtype=np.float32, copy=True)
            if kind is not None:
                s[self.kind[:n] != KIND_CODE[kind]] = -1.0
            if areas:
                s[~np.isin(self.area[:n], [AREA_CODE[a] for a in areas])] = -1.0
            if exclude:
                rows = [self.row_of[i] for i in exclude if i in self.row_of]
                s[rows] = -1.0
        hits = self._expand(s, k, kind, set(areas), exclude, now)
        why = routing_why(areas, prefer, explained)
        return Found(hits=hits, routed=list(prefer), cues={a: c for a, c in explained},
                     why=why, scorer=getattr(self.scorer, "name", ""))

    def _expand(self, s: np.ndarray, k: int, kind, areas, exclude, now) -> list[Hit]:
        if k <= 0 or self.n == 0:
            return []
        n = len(s)
        pos = np.flatnonzero(s > SEED_MIN)
        if len(pos) == 0:
            return []
        m = max(4 * k, 32)
        if len(pos) > m:
            sp = s[pos]
            part = np.argpartition(sp, len(pos) - m)[len(pos) - m:]
            t = sp[part].min()
            cand = pos[sp >= t]  # every tie at the cut stays in
        else:
            cand = pos
        cs = s[cand]
        cid = self.ids[cand]
        order = np.lexsort((cid, -cs))
        seeds = [(float(cs[i]), int(cid[i])) for i in order]
        final: dict[int, list] = {nid: [sc, False] for sc, nid in seeds}
        top = [sc for sc, _ in seeds[:k]]
        kth = top[-1] if len(top) >= k else float("-inf")
        g = self.graph
        nodes, edges, adj, row_of = g.nodes, g.edges, g.adj, self.row_of
        for sc, nid in seeds:
            if sc * 0.5 < kth:
                break  # no neighbour of this or any weaker seed can reach the top k
            changed = False
            for eid in adj.get(nid, ()):
                e = edges[eid]
                if not (e.invalid_at is None and now >= e.valid_from and e.weight > 0.0):
                    continue
                nb = e.dst if e.src == nid else e.src
                if nb == nid:
                    continue
                row = row_of.get(nb)
                if row is not None and row < n and s[row] > SEED_MIN:
                    continue  # a seed keeps its own score
                node = nodes.get(nb)
                if not self._passes(node, kind, areas, exclude):
                    continue
                w = e.weight if e.weight > _F32_01 else _F32_01
                if offer(final, nb, f32(sc * 0.5 * w)):
                    changed = True
            if changed and len(final) >= k:
                kth = heapq.nlargest(k, (v[0] for v in final.values()))[-1]
        return ranked(final, k)
