"""Recall from ``journal.index``: hybrid-v1 over lexical candidates, not a scan of every node.

``IndexSearch.search`` answers what ``RecallEngine.search`` answers with the default
scorer (routing, area weight, vote bias, filters, project scope, one-hop expansion, ties
by node id), reading only the nodes that can score:

1. **Lexical candidates**: the ``CANDIDATES`` best live nodes by FTS5 BM25 over the
   query's hybrid-v1 words (stemmed, no stopwords; a word in more than a tenth of the
   nodes is left out of the match while a rarer one remains, see ``Index.lexical``).
   Their BM25 is then computed exactly as hybrid-v1 does it (its IDF, k1 1.2, b 0.75,
   the whole index's document frequencies and average length), and divided by the best.
2. **Neighbours**: the previous and next live sibling (by node id, under the same
   cluster parent) of every lexical hit, which hybrid-v1 boosts by the hit's score.
3. **Clusters**: the best ``CLUSTERS`` cluster documents by FTS5, plus the clusters of
   the candidates, scored by exact BM25 over clusters; the members of the ``MEMBERS``
   best join the candidates (each member gains its cluster's score).
4. **Hashing cosine** (hybrid-v1's 0.2 share, Mnemo's exact ``hashing-v1`` vectors) is
   computed for the candidates only, from their text.
5. The temporal boost, area weight, vote bias, filters and expansion as the engine
   applies them (no entity boost: the engine names no entities, see ``hybrid.py``).
   The sum is divided, per node, by the weights of the signals that can apply to it
   (``HybridIndex.denominators``: a node outside any cluster is not held to the
   neighbour and cluster shares), so a node matching everything scores about 1.

What a node outside the candidates would have scored is the hashing share of a query
that shares none of its words (a slot collision), at most 0.2 / 1.2 of a cosine: it
is not computed. A query none of whose words is in the index has no hits.
"""
from __future__ import annotations

import bisect
import heapq
import json
import math
import struct

from ..text import words as _words
from ..state.index import Index
from ..core.model import f32
from .results import (AREA_CODE, SAVED_TOP, SEED_MIN, USEFULNESS_BIAS, Found, Hit,
                      current_fact, lift_saved, offer, ranked, saved_pairs)
from .routing import CROSS_AREA_DISCOUNT, expand_query_aliases, route_explained, routing_why
from ..text.words import HybridParams

_F32 = struct.Struct("<f")
CANDIDATES = 256
CLUSTERS = 32
MEMBERS = 8
_F32_01 = f32(0.1)

NAME = "hybrid-v1+mnemo-cosine/hashing-v1"


class _Row:
    __slots__ = ("id", "kind", "area", "label", "deleted", "useful", "unhelpful", "vec",
                 "words", "wlen", "parent", "temporal")


def _chunks(ids, n=500):
    ids = list(ids)
    for i in range(0, len(ids), n):
        part = ids[i:i + n]
        yield part, ",".join("?" * len(part))


def _rows(ix: Index, ids) -> dict[int, _Row]:
    out = {}
    for part, qs in _chunks(ids):
        for r in ix.db.execute(
                "SELECT id, kind, area, label, deleted, useful, unhelpful, vec, words, "
                f"wlen, parent, temporal FROM nodes WHERE id IN ({qs})", part):
            row = _Row()
            (row.id, row.kind, row.area, row.label, row.deleted, row.useful, row.unhelpful,
             row.vec, row.words, row.wlen, row.parent, row.temporal) = r
            out[row.id] = row
    return out


def _bm25(docs: dict, terms, dfs: dict, n: int, avg: float, k1: float, b: float) -> dict:
    """hybrid-v1's BM25 (``hybrid._bm25``) of each ``docs`` id -> (words, length)."""
    out = {}
    if n <= 0 or avg <= 0:
        return out
    idf = {t: math.log(1.0 + (n - dfs[t] + 0.5) / (dfs[t] + 0.5)) for t in terms if dfs.get(t)}
    if not idf:
        return out
    for id, (words, length) in docs.items():
        if not words:
            continue
        ws = words.split()
        s = 0.0
        norm = k1 * (1.0 - b + b * length / avg)
        for t, w in idf.items():
            tf = ws.count(t)
            if tf:
                s += w * tf * (k1 + 1.0) / (tf + norm)
        if s:
            out[id] = s
    return out


class IndexSearch:
    """hybrid-v1 recall over an open ``Index`` (see the module docstring)."""

    name = NAME

    def __init__(self, index: Index, embedder=None, params=None):
        self.index = index
        self.params = params or HybridParams()
        self._embedder = embedder
        self._qv: dict[int, float] = {}
        self._vecs: dict[int, tuple] = {}  # another embedder's vectors: id -> (text, vec)
        self._other = embedder is not None and getattr(embedder, "name", "") != "hashing-v1"
        if self._other:
            self.name = f"hybrid-v1+mnemo-cosine/{embedder.name}"

    @property
    def embedder(self):
        if self._embedder is None:
            from ..text.embed import HashingEmbedder

            self._embedder = HashingEmbedder()
        return self._embedder

    # --- scoring --------------------------------------------------------------------

    def vectors(self, ids) -> dict:
        """Another embedder's (``memory.graph.embedder``) vectors of ``ids``' texts, read
        from the index; a text already embedded in this process is not embedded again."""
        texts = {i: self.index.node_text(i) or "" for i in ids}
        todo = [(i, t) for i, t in texts.items() if self._vecs.get(i, (None,))[0] != t]
        if todo:
            emb = self.embedder
            many = getattr(emb, "embed_matrix", None)
            got = (list(many([t for _, t in todo])) if many is not None
                   else emb.embed_many([t for _, t in todo]))
            for (i, t), v in zip(todo, got):
                self._vecs[i] = (t, v)
        return {i: self._vecs[i][1] for i in ids}

    def _embedded_cosines(self, expanded: str, ids) -> dict[int, float]:
        import numpy as np

        emb = self.embedder
        q = getattr(emb, "embed_query", emb.embed)(expanded)
        out = {}
        for i, v in self.vectors(ids).items():
            ok = q is not None and v is not None and len(v) == len(q)
            out[i] = float(np.dot(q, v)) if ok else 0.0
        return out

    def query_vector(self, text: str) -> dict[int, float]:
        """The query's hashing-v1 vector as ``{slot: weight}`` (``embed``'s numbers
        in float64, without numpy)."""
        feats = self.embedder.features(text)
        norm = math.sqrt(sum(w * w for w in feats.values()))
        return {s: w / norm for s, w in feats.items()} if norm else {}

    def cosine(self, blob) -> float:
        """A stored vector (``vectors._sparse``) against the query's: only the query's
        few slots are looked up (``bytes.find``), at C speed."""
        if not blob:
            return 0.0
        n = len(blob) // 5
        find, total = blob.find, 0.0
        for slot, w in self._qitems:
            i = find(slot, 0, n)
            if i >= 0:
                total += w * _F32.unpack_from(blob, n + 4 * i)[0]
        return total

    def scores(self, query: str, prefer: list[str], discount: float) -> tuple[dict, dict]:
        """``({node: final seed score}, rows)`` for the candidates of ``query``."""
        ix, p = self.index, self.params
        expanded = expand_query_aliases(query)
        terms = set(_words.tokenize(expanded))
        n, wtotal = ix.stat("n_live"), ix.stat("w_total")
        dfs = ix.dfs(terms)
        cands = ix.lexical(terms, CANDIDATES, dfs=dfs)
        rows = _rows(ix, cands)
        lex = _bm25({i: (r.words, r.wlen) for i, r in rows.items()}, terms, dfs, n,
                    wtotal / n if n else 0.0, p.k1, p.b)
        if lex:
            top = max(lex.values())
            lex = {i: v / top for i, v in lex.items()}
        nb: dict[int, float] = {}
        members: dict[int, list] = {}  # cluster parent -> its live members, by id
        if p.neighbour and lex:
            for h, v in lex.items():
                parent = rows[h].parent
                if parent is None:
                    continue
                ms = members.get(parent)
                if ms is None:
                    ms = members[parent] = [r[0] for r in ix.db.execute(
                        "SELECT id FROM nodes WHERE parent=? AND deleted=0 ORDER BY id",
                        (parent,))]
                at = bisect.bisect_left(ms, h)
                for x in (ms[at - 1] if at > 0 else None,
                          ms[at + 1] if at + 1 < len(ms) else None):
                    if x is not None and v > nb.get(x, 0.0):
                        nb[x] = v
        cl: dict[int, float] = {}   # cluster parent -> raw BM25 x (cluster / best)
        c_live = ix.stat("c_live")
        if p.cluster and c_live and lex:
            cdfs = ix.dfs(terms, clusters=True)
            cids = set(ix.lexical(terms, CLUSTERS, clusters=True, dfs=cdfs))
            cids.update(r.parent for r in rows.values() if r.parent is not None)
            docs = {}
            cids = list(cids)
            for i in range(0, len(cids), 500):
                part = cids[i:i + 500]
                docs.update((r[0], (r[1], r[2])) for r in ix.db.execute(
                    f"SELECT id, words, wlen FROM clusters WHERE id IN "
                    f"({','.join('?' * len(part))})", part))
            cs = _bm25(docs, terms, cdfs, c_live, ix.stat("c_total") / c_live, p.k1, p.b)
            if cs:
                ctop = max(cs.values())
                cl = {c: v * (p.cluster / ctop) for c, v in cs.items()}
                for c in heapq.nlargest(MEMBERS, cl, key=lambda c: (cl[c], -c)):
                    for (m,) in ix.db.execute(
                            "SELECT id FROM nodes WHERE parent=? AND deleted=0", (c,)):
                        nb.setdefault(m, 0.0)
        more = [i for i in nb if i not in rows]
        if more:
            rows.update(_rows(ix, more))
        ids = sorted(i for i, r in rows.items() if not r.deleted)
        if not ids:
            return {}, rows
        cos = self._embedded_cosines(expanded, ids) if self._other else None
        if cos is None:
            self._qv = self.query_vector(expanded)
            self._qitems = list(self._qv.items())
        sizes = {c: len(ms) for c, ms in members.items()}
        if p.neighbour:  # the other clusters' sizes (only the neighbour share needs them)
            sizes.update(self._cluster_sizes({r.parent for r in rows.values()
                                              if r.parent is not None and r.parent not in sizes}))
        temporal = p.temporal and _words.is_temporal_query(expanded)
        pref = set(prefer)
        out = {}
        for i in ids:
            r = rows[i]
            v = f32(self.cosine(r.vec) if cos is None else cos[i]) * p.hashing
            v += lex.get(i, 0.0)
            v += nb.get(i, 0.0) * p.neighbour
            denom = 1.0 + p.hashing  # the signals that can apply to this node (hybrid.py)
            if r.parent is not None:
                v += cl.get(r.parent, 0.0)
                denom += p.cluster + (p.neighbour if sizes.get(r.parent, 0) > 1 else 0.0)
            v /= denom
            if temporal and r.temporal:
                v *= 1.0 + p.temporal
            v = f32(v)
            if r.kind == "TaskEpisode" and p.episode != 1.0:
                v = f32(v * f32(p.episode))
            if pref and r.area not in pref:
                v = f32(v * f32(discount))
            net = r.useful - r.unhelpful
            if net:
                v = f32(v + f32(net * f32(USEFULNESS_BIAS)))
            out[i] = v
        if p.episode != 1.0:  # 1: the old rule, messages and facts alike
            self._lift_saved(out, rows)
        return out, rows

    def _lift_saved(self, out: dict, rows: dict) -> None:
        """``results.lift_saved`` over the best ``SAVED_TOP`` candidates; a node one of
        their episodes saved a fact on joins the candidates (with its row) when lifted."""
        top = heapq.nlargest(SAVED_TOP, out, key=lambda i: (out[i], -i))
        eps = [i for i in top if rows[i].kind == "TaskEpisode"]
        if not eps:
            return
        db = self.index.db
        saved = {}
        for i, facts in db.execute(f"SELECT id, facts FROM nodes WHERE id IN "
                                   f"({','.join('?' * len(eps))}) AND instr(facts, '\"saved\"')",
                                   eps):
            value = next((f[2] for f in json.loads(facts) if f[1] == "saved" and f[4]), None)
            pairs = saved_pairs(value)
            if pairs:
                saved[i] = pairs
        targets = sorted({n for ps in saved.values() for n, _ in ps})
        if not targets:
            return
        facts_of = {i: json.loads(facts) for i, facts in db.execute(
            f"SELECT id, facts FROM nodes WHERE id IN ({','.join('?' * len(targets))}) "
            "AND deleted=0", targets)}
        scoped = {i: out[i] for i in top}
        scoped.update((n, out.get(n, 0.0)) for n in facts_of)
        lift_saved(scoped, saved, lambda n, fid: current_fact(facts_of.get(n), fid),
                   self.params.episode, f32)
        new = [n for n, v in scoped.items() if n not in out and v > 0.0]
        if new:
            rows.update(_rows(self.index, new))
        out.update((n, v) for n, v in scoped.items() if n in out or v > 0.0)

    def _cluster_sizes(self, parents) -> dict[int, int]:
        """Live members of each cluster parent (a member with a sibling has a neighbour)."""
        out: dict[int, int] = {}
        for part, qs in _chunks(parents):
            out.update(self.index.db.execute(
                f"SELECT parent, count(*) FROM nodes WHERE parent IN ({qs}) AND deleted=0 "
                "GROUP BY parent", part))
        return out

    # --- the engine's search ------------------------------------------------------------

    def search(self, query: str, k: int = 5, *, kind: str | None = None,
               areas: list[str] | None = None, scope: int | None = None,
               prefer: list[str] | None = None, cross_area: float | None = None,
               now: int | None = None) -> Found:
        ix = self.index
        now = ix.stat("clock") if now is None else now
        areas = list(areas or [])
        explained = route_explained(query)
        if prefer is None:
            prefer = areas if areas else [a for a, _ in explained]
        discount = CROSS_AREA_DISCOUNT if cross_area is None else cross_area
        for a in prefer:
            AREA_CODE[a]  # noqa: B018 - an unknown area is an error, as in the engine
        s, rows = self.scores(query, list(prefer), discount)
        exclude = self._out_of_scope(scope, now, s) if scope is not None else set()
        for i in s:
            r = rows[i]
            if ((kind is not None and r.kind != kind) or (areas and r.area not in areas)
                    or i in exclude):
                s[i] = -1.0
        hits = self._expand(s, k, kind, set(areas), scope, now)
        why = routing_why(areas, prefer, explained)
        return Found(hits=hits, routed=list(prefer), cues={a: c for a, c in explained},
                     why=why, path="index", scorer=self.name)

    def _out_of_scope(self, project: int, now: int, ids) -> set[int]:
        """``Graph.out_of_scope`` restricted to ``ids``: attached by a live PartOf to a
        project other than ``project``, and not to ``project`` itself."""
        ids = list(ids)
        mine, other = set(), set()
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            for src, dst in self.index.db.execute(
                    "SELECT e.src, e.dst FROM edges e JOIN nodes n ON n.id = e.dst "
                    f"WHERE e.src IN ({','.join('?' * len(part))}) AND e.kind='PartOf' "
                    "AND e.invalid_at IS NULL AND e.weight > 0 AND e.valid_from <= ? "
                    "AND n.kind='Entity' AND substr(n.label, 1, 8)='project '",
                    (*part, now)):
                (mine if dst == project else other).add(src)
        return other - mine

    def _expand(self, s: dict, k: int, kind, areas, scope, now) -> list[Hit]:
        """``RecallEngine._expand`` over the candidates' scores."""
        if k <= 0:
            return []
        pos = [(sc, i) for i, sc in s.items() if sc > SEED_MIN]
        if not pos:
            return []
        m = max(4 * k, 32)
        if len(pos) > m:
            t = heapq.nlargest(m, (sc for sc, _ in pos))[-1]
            pos = [(sc, i) for sc, i in pos if sc >= t]
        seeds = sorted(pos, key=lambda x: (-x[0], x[1]))
        final: dict[int, list] = {nid: [sc, False] for sc, nid in seeds}
        top = [sc for sc, _ in seeds[:k]]
        kth = top[-1] if len(top) >= k else float("-inf")
        ix = self.index
        for sc, nid in seeds:
            if sc * 0.5 < kth:
                break  # no neighbour of this or any weaker seed can reach the top k
            changed = False
            for e in ix.edges_of(nid):
                _eid, src, dst, _kind, w, valid_from, invalid_at = e[:7]
                if not (invalid_at is None and now >= valid_from and w > 0.0):
                    continue
                nb = dst if src == nid else src
                if nb == nid or s.get(nb, 0.0) > SEED_MIN:
                    continue  # a seed keeps its own score
                if nb not in s and self._own_cosine(nb) > SEED_MIN:
                    continue  # so does one outside the candidates (a slot collision)
                if not self._passes(nb, kind, areas, scope, now):
                    continue
                if offer(final, nb, f32(sc * 0.5 * (w if w > _F32_01 else _F32_01))):
                    changed = True
            if changed and len(final) >= k:
                kth = heapq.nlargest(k, (v[0] for v in final.values()))[-1]
        return ranked(final, k)

    def _own_cosine(self, nid: int) -> float:
        if self._other:
            return 0.0
        r = self.index.db.execute("SELECT vec FROM nodes WHERE id=? AND deleted=0",
                                  (nid,)).fetchone()
        return self.cosine(r[0]) * self.params.hashing if r else 0.0

    def _passes(self, nid: int, kind, areas, scope, now) -> bool:
        r = self.index.db.execute("SELECT kind, area, deleted FROM nodes WHERE id=?",
                                  (nid,)).fetchone()
        if r is None or r[2] or (kind is not None and r[0] != kind) or (
                areas and r[1] not in areas):
            return False
        return not (scope is not None and self._out_of_scope(scope, now, [nid]))


class MnemoSearch(IndexSearch):
    """Mnemo's exact rule over the index: ``cosine(q, v) x area weight + (useful -
    unhelpful) x 0.02`` for every live node (brute force, as Mnemo), then the same
    filters and one-hop expansion as ``IndexSearch``.

    The vectors are the index's stored hashing-v1 vectors, laid out as Mnemo's scorer
    keeps them (one row per dimension, float32) and multiplied the same way, so the
    figures are Mnemo's. With another embedder (``memory.graph.embedder``) each live
    node's text, read from the index, is embedded once per text and kept here. The
    matrix is made again when the index has moved on (a write, another process's)."""

    def __init__(self, index: Index, embedder=None, params=None):
        super().__init__(index, embedder, params)
        self.name = f"mnemo-cosine/{self.embedder.name}"
        self._at = None    # the index offset the matrix below was made at
        self._ids: list[int] = []
        self._meta: dict[int, _Row] = {}
        self._mt = None
        self._votes = None

    def _matrix(self):
        import numpy as np

        ix = self.index
        if self._at == (ix.offset, ix.ops_applied) and self._mt is not None:
            return
        ids, meta, blobs = [], {}, []
        for id, kind, area, useful, unhelpful, vec in ix.db.execute(
                "SELECT id, kind, area, useful, unhelpful, vec FROM nodes WHERE deleted=0 "
                "ORDER BY id"):
            r = _Row()
            r.id, r.kind, r.area, r.deleted, r.useful, r.unhelpful = (
                id, kind, area, 0, useful, unhelpful)
            ids.append(id)
            meta[id] = r
            blobs.append(vec)
        n = len(ids)
        if not self._other:
            mt = np.zeros((self.embedder.dim, n), dtype=np.float32)
            for j, blob in enumerate(blobs):
                if blob:
                    k = len(blob) // 5
                    mt[np.frombuffer(blob, np.uint8, k), j] = np.frombuffer(blob, "<f4", k, k)
        else:
            mt = self._embedded(ids, np)
        self._ids, self._meta, self._mt = ids, meta, mt
        self._votes = np.array([meta[i].useful - meta[i].unhelpful for i in ids],
                               dtype=np.float32)
        self._at = (ix.offset, ix.ops_applied)

    def _embedded(self, ids, np):
        """Another embedder's vectors of ``ids``, (dim, n)."""
        vecs = self.vectors(ids)
        dim = self.embedder.dim or next((len(v) for v in vecs.values() if v is not None), 0)
        mt = np.zeros((dim, len(ids)), dtype=np.float32)
        for j, i in enumerate(ids):
            v = vecs[i]
            if v is not None and len(v) == dim:
                mt[:, j] = v
        return mt

    def scores(self, query: str, prefer: list[str], discount: float) -> tuple[dict, dict]:
        import numpy as np

        self._matrix()
        ids, mt, n = self._ids, self._mt, len(self._ids)
        emb = self.embedder
        q = getattr(emb, "embed_query", emb.embed)(expand_query_aliases(query))
        dim = mt.shape[0]
        if q is None or not dim or q.shape[0] != dim:
            s = np.zeros(n, dtype=np.float32)
        else:
            nz = np.flatnonzero(q)
            s = q[nz] @ mt[nz, :n] if len(nz) * 4 < dim else q @ mt[:, :n]
            s = np.asarray(s, dtype=np.float32)
        if prefer:
            pref = set(prefer)
            s *= np.array([1.0 if self._meta[i].area in pref else discount for i in ids],
                          dtype=np.float32)
        if self._votes is not None and self._votes.any():
            s += self._votes * np.float32(USEFULNESS_BIAS)
        return dict(zip(ids, s.tolist())), self._meta

    def _own_cosine(self, nid: int) -> float:
        return 0.0  # every live node has its score already


__all__ = ["IndexSearch", "MnemoSearch"]
