"""The tests' and the benchmarks' in-memory hybrid-v1 (the oracle of ``search.IndexSearch``;
no longer a product path).

hybrid-v1: the default offline recall scorer of the graph memory.

Mnemo ranks nodes by the cosine of 256-slot word-hash vectors (``hashing-v1``).
That vector is kept exactly (journals and vectors stay compatible) and becomes
one signal among several here.  Everything is numpy + stdlib, offline and
deterministic; there is no model and no download.

Signals, all learned from the graph itself and kept up to date node by node:

lexical
    BM25 (k1 1.2, b 0.75) over each node's text, with the document frequencies
    and the average length maintained incrementally.  Tokens are lowercased
    ASCII alphanumerics, English stopwords are dropped and a small suffix
    stripper (plural ``s``/``ies``, ``ing``, ``ed``) folds word forms.  The
    lexical score is divided by its maximum over the graph for the query, so
    it lies in [0, 1].
neighbour
    Nodes that are PartOf the same parent form an ordered cluster (by node
    id, i.e. creation order).  A node gains ``neighbour`` times the best
    lexical score of its previous and next sibling: in a conversation the
    question often sits in the turn before its answer.
cluster
    The parent's cluster is also indexed as one document (the sum of its
    members' term counts), scored by BM25 over clusters and normalised the
    same way; each member gains ``cluster`` times its cluster's score.
hashing
    ``hashing`` times the hashing-v1 cosine (the exact Mnemo vectors, when an
    embedder or vectors are supplied).  It decides alone when no query word
    occurs in the graph, so the scorer degrades to Mnemo's ranking.
entity (off by default; only for callers that name entities)
    A caller may name each node's entity (``upsert(..., entity=)``, e.g. the
    speaker of a benchmark turn).  When the query names exactly one known
    entity, that entity's nodes are multiplied by ``1 + entity``.  The agent's
    recall names none (``HybridScorer``, ``search.IndexSearch``): mino writes no
    speaker facts, so the signal could not fire on its graph (issue 16).
temporal
    When the query asks for a time ("when ...", "what year ..."), nodes whose
    text holds a relative time expression (yesterday, last week, ago ...) are
    multiplied by ``1 + temporal``.

The sum of the additive signals is divided, per node, by the weights of the
signals that can apply to it (``1 + hashing``, plus ``neighbour`` when it has a
sibling and ``cluster`` when it is in a cluster), so that a node matching
everything it can match scores about 1, in the same range as Mnemo's cosine
(area discount, usefulness bias and the recall block's floor keep their
meaning).  A fixed ``1 + neighbour + cluster + hashing`` held a node outside
any cluster (a saved fact, a pain marker) near 0.5 however well it matched.

Weights sit in the middle of a flat plateau measured on the whole LoCoMo
development half (see ``bench/locomo_recall.py`` for the figures and the
ablation of each signal); none was tuned to single questions.  Issue 16 kept
them and checked each signal on the graph mino's own loop stores (``--through-loop
--ablate``): neighbour and cluster earn their place there, temporal and hashing
are neutral, entity could not fire (see above).

Incremental contract: :meth:`HybridIndex.upsert` adds or replaces one node,
:meth:`HybridIndex.remove` drops it, :meth:`HybridIndex.set_parent` moves it
between clusters.  Each costs O(tokens of the node) plus small bookkeeping;
nothing is rebuilt per query.  Per query the work is one pass over the
postings of the query's words plus a few vector operations over the live
rows.
"""

from __future__ import annotations

import bisect
import math
import re
from itertools import chain, islice
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "SCORER_NAME",
    "HybridParams",
    "HybridIndex",
    "tokenize",
    "stem",
    "STOPWORDS",
]

SCORER_NAME = "hybrid-v1"

from mino_memory_graph.text.words import (_RELATIVE_TIME, _RELATIVE_TIME_STEMS, _STEMS, _TEMPORAL_QUERY,  # noqa: F401
                    _WORD, _WORD_OR_NUL, STOPWORDS, HybridParams,
                    is_temporal_query, stem, tokenize)


_EPISODE = 1  # results.KIND_CODE["TaskEpisode"]: the row kinds a Query carries
_BASE = object()  # "not materialised yet: read it from the loaded state"


class _Postings:
    """term -> {row: tf}, with numpy views built lazily for the terms a query touches.

    After ``load`` the postings sit in frozen CSC arrays (one slice per term); a term's
    dict is materialised only when a mutation touches it, and a query reads the frozen
    slice directly.
    """

    __slots__ = ("terms", "_arrays", "_base", "_base_ix")

    def __init__(self) -> None:
        self.terms: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._base: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._base_ix: dict[str, int] = {}

    def load(self, vocab: Sequence[str], ptr: np.ndarray, rows: np.ndarray, tfs: np.ndarray) -> None:
        self.terms = {}
        self._arrays = {}
        self._base = (ptr, rows.astype(np.int64), tfs.astype(np.float64))
        nz = np.flatnonzero(np.diff(ptr)).tolist()
        self._base_ix = dict(zip([vocab[i] for i in nz], nz))

    def _plist(self, term: str, create: bool) -> dict[int, int] | None:
        plist = self.terms.get(term)
        if plist is None:
            i = self._base_ix.pop(term, None)
            if i is not None:
                ptr, rows, tfs = self._base
                a, b = int(ptr[i]), int(ptr[i + 1])
                plist = self.terms[term] = dict(zip(rows[a:b].tolist(), tfs[a:b].astype(np.int64).tolist()))
            elif create:
                plist = self.terms[term] = {}
        return plist

    def add(self, row: int, counts: Mapping[str, int]) -> None:
        for term, tf in counts.items():
            self._plist(term, True)[row] = tf
            self._arrays.pop(term, None)

    def sub(self, row: int, terms: Iterable[str]) -> None:
        for term in terms:
            plist = self._plist(term, False)
            if plist is None:
                continue
            plist.pop(row, None)
            if not plist:
                del self.terms[term]
            self._arrays.pop(term, None)

    def df(self, term: str) -> int:
        plist = self.terms.get(term)
        if plist is not None:
            return len(plist)
        i = self._base_ix.get(term)
        return 0 if i is None else int(self._base[0][i + 1] - self._base[0][i])

    def arrays(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        got = self._arrays.get(term)
        if got is None:
            plist = self.terms.get(term)
            if plist:
                rows = np.fromiter(plist.keys(), dtype=np.int64, count=len(plist))
                tfs = np.fromiter(plist.values(), dtype=np.float64, count=len(plist))
            else:
                i = self._base_ix.get(term)
                if i is None:
                    return None
                ptr, brows, btfs = self._base
                a, b = int(ptr[i]), int(ptr[i + 1])
                rows, tfs = brows[a:b], btfs[a:b]
            got = self._arrays[term] = (rows, tfs)
        return got


def _csr_to_csc(ptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_cols: int):
    """Transpose a CSR (rows -> (col, val)) into CSC (col -> (row, val)), rows ascending."""
    rows = np.repeat(np.arange(len(ptr) - 1, dtype=np.int32), np.diff(ptr))
    order = np.argsort(cols, kind="stable")
    cptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=cptr[1:])
    return cptr, rows[order], vals[order]


def _bm25(post: _Postings, terms: Iterable[str], n_docs: int, lengths: np.ndarray,
          avg_len: float, k1: float, b: float, size: int) -> np.ndarray:
    out = np.zeros(size)
    if n_docs == 0 or avg_len <= 0:
        return out
    for term in terms:
        got = post.arrays(term)
        if got is None:
            continue
        rows, tf = got
        df = len(rows)
        idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[rows] / avg_len)
        out[rows] += idf * tf * (k1 + 1.0) / (tf + norm)
    return out


class HybridIndex:
    """Incremental hybrid scorer over graph nodes (keyed by node id).

    ``embed`` is the hashing-v1 embedder (text -> unit vector); when given,
    nodes upserted without a ``vector`` are embedded with it and queries are
    embedded with it.  Without it, the hashing signal uses only vectors passed
    in explicitly (and ``query_vector`` at query time).  ``dim=0`` keeps no
    vectors at all: the caller passes the hashing cosine per row to ``scores``
    (``hashing=``), as ``HybridScorer`` does from Mnemo's own vector matrix.

    Rows: by default the index allocates rows itself and reuses freed ones.  With
    ``reuse_rows=False`` the caller names each node's row (``upsert(..., row=)``),
    e.g. the recall engine's row, so scores need no re-mapping.

    ``state()`` / ``load_state()`` save and restore the whole index as numpy arrays
    and plain values (the derived cache); a loaded index keeps its term counts,
    postings and cluster members in frozen arrays and materialises a node's or a
    term's Python dict only when a later change touches it.
    """

    STATE_FORMAT = 1

    def __init__(self, params: HybridParams | None = None, *,
                 embed: Callable[[str], np.ndarray] | None = None, dim: int = 256,
                 reuse_rows: bool = True) -> None:
        self.params = params or HybridParams()
        self.embed = embed
        self.dim = dim
        self.reuse_rows = reuse_rows
        self._row_of: dict[int, int] = {}
        self._cap = 0
        self._n = 0  # rows ever allocated (rows are not reused)
        self._free: list[int] = []
        self._ids = np.zeros(0, dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        self._len = np.zeros(0)
        self._cid = np.zeros(0, dtype=np.int64)  # cluster index, -1 for none
        self._prev = np.zeros(0, dtype=np.int64)  # row of previous sibling, or own row
        self._next = np.zeros(0, dtype=np.int64)
        self._ent = np.zeros(0, dtype=np.int64)  # entity index, -1 for none
        self._temporal = np.zeros(0, dtype=bool)
        self._vec = np.zeros((0, dim), dtype=np.float32)
        self._counts: list = []  # per row: {term: tf}, None (dead) or _BASE
        self._counts_base = None  # (ptr, term ids, tfs, vocab) after load_state
        self._live = 0
        self._total_len = 0.0
        self._post = _Postings()
        # clusters (PartOf parents)
        self._cluster_of_parent: dict[int, int] = {}
        self._cluster_members: list = []  # per cluster: sorted [(node_id, row)] or _BASE
        self._members_base = None
        self._cluster_counts: list = []  # per cluster: {term: tf} or _BASE
        self._ccounts_base = None
        self._cluster_len: list[float] = []
        self._cpost = _Postings()
        self._clusters_live = 0
        self._cluster_total_len = 0.0
        self._parent_of: dict[int, int] = {}
        # entities
        self._entity_index: dict[str, int] = {}
        self._entity_tokens: list[tuple[str, ...]] = []
        self._entity_refs: list[int] = []

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return self._live

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._row_of

    def _grow(self, need: int = 0) -> None:
        cap = max(64, self._cap * 2, need)

        def grown(arr: np.ndarray, fill) -> np.ndarray:
            new = np.full((cap,) + arr.shape[1:], fill, dtype=arr.dtype)
            new[: self._cap] = arr[: self._cap]
            return new

        self._ids = grown(self._ids, -1)
        self._alive = grown(self._alive, False)
        self._len = grown(self._len, 0.0)
        self._cid = grown(self._cid, -1)
        self._prev = grown(self._prev, 0)
        self._next = grown(self._next, 0)
        self._ent = grown(self._ent, -1)
        self._temporal = grown(self._temporal, False)
        self._vec = grown(self._vec, 0.0)
        self._cap = cap

    # ---------------------------------------------------- lazily loaded parts
    def _row_counts(self, row: int) -> dict[str, int]:
        c = self._counts[row]
        if c is _BASE:
            ptr, tids, tfs, vocab = self._counts_base
            a, b = int(ptr[row]), int(ptr[row + 1])
            c = self._counts[row] = dict(zip([vocab[i] for i in tids[a:b].tolist()], tfs[a:b].tolist()))
        return c or {}

    def _members(self, cid: int) -> list[tuple[int, int]]:
        m = self._cluster_members[cid]
        if m is _BASE:
            ptr, ids, rows = self._members_base
            a, b = int(ptr[cid]), int(ptr[cid + 1])
            m = self._cluster_members[cid] = list(zip(ids[a:b].tolist(), rows[a:b].tolist()))
        return m

    def _ccounts(self, cid: int) -> dict[str, int]:
        c = self._cluster_counts[cid]
        if c is _BASE:
            ptr, tids, tfs, vocab = self._ccounts_base
            a, b = int(ptr[cid]), int(ptr[cid + 1])
            c = self._cluster_counts[cid] = dict(zip([vocab[i] for i in tids[a:b].tolist()], tfs[a:b].tolist()))
        return c

    # ------------------------------------------------------------ mutation
    def upsert(self, node_id: int, text: str, *, vector: np.ndarray | Sequence[float] | None = None,
               parent: int | None = None, entity: str | None = None, row: int | None = None) -> None:
        """Add node ``node_id`` or replace its text, vector, parent and entity.

        ``row`` (only with ``reuse_rows=False``) names the row to use.
        """
        if node_id in self._row_of:
            self.remove(node_id)
        if row is not None:
            if self.reuse_rows:
                raise ValueError("row= needs an index made with reuse_rows=False")
            if row >= self._cap:
                self._grow(row + 1)
            while self._n <= row:
                self._counts.append(None)
                self._n += 1
        elif self._free:
            row = self._free.pop()
        else:
            if self._n == self._cap:
                self._grow()
            row = self._n
            self._n += 1
            self._counts.append(None)
        self._row_of[node_id] = row
        toks = tokenize(text)
        counts: dict[str, int] = {}
        for t in toks:
            counts[t] = counts.get(t, 0) + 1
        self._counts[row] = counts
        self._ids[row] = node_id
        self._alive[row] = True
        self._len[row] = len(toks)
        self._temporal[row] = any(t in _RELATIVE_TIME_STEMS for t in counts)
        self._prev[row] = row
        self._next[row] = row
        self._cid[row] = -1
        self._live += 1
        self._total_len += len(toks)
        self._post.add(row, counts)
        if self.dim:
            if vector is None and self.embed is not None:
                vector = self.embed(text)
            if vector is not None and len(vector) == self.dim:
                self._vec[row] = np.asarray(vector, dtype=np.float32)
            else:
                self._vec[row] = 0.0
        self._ent[row] = self._entity_ref(entity) if entity else -1
        if parent is not None:
            self._attach(node_id, row, parent)

    def add_many(self, node_ids: Sequence[int], texts: Sequence[str], *,
                 parents: Sequence[int | None] | None = None,
                 entities: Sequence[str | None] | None = None,
                 rows: Sequence[int] | None = None) -> None:
        """``upsert`` of many nodes at once (new ids, ascending rows); same index.

        Into an empty index (a first indexing) everything is built in bulk: one
        tokenising pass over all texts, (row, term, tf) triples counted with one
        sort, term counts, postings and clusters laid out directly in the frozen
        arrays ``load_state`` reads (a row's or term's dict is made only when a later
        change touches it). Otherwise, one ``upsert`` per node.
        """
        m = len(node_ids)
        parents = parents if parents is not None else [None] * m
        entities = entities if entities is not None else [None] * m
        if rows is not None and self.reuse_rows:
            raise ValueError("rows= needs an index made with reuse_rows=False")
        rows = list(range(m)) if rows is None else list(rows)
        fresh = (self._n == 0 and not self._row_of and not self._cluster_members
                 and not self._entity_index)
        if (not fresh or m < 2 or any(b <= a for a, b in zip(rows, rows[1:]))
                or len(set(node_ids)) != m):
            for i in range(m):
                self.upsert(node_ids[i], texts[i], parent=parents[i], entity=entities[i],
                            row=None if self.reuse_rows else rows[i])
            return
        self._bulk(list(node_ids), list(texts), list(parents), list(entities), rows)

    def _bulk(self, ids: list, texts: list, parents: list, entities: list, rows: list) -> None:
        m = len(ids)
        n = rows[-1] + 1
        # --- terms: one regex pass over all texts (NUL-joined; lowering is per char)
        joined = "\x00".join(texts).lower()
        if joined.count("\x00") == m - 1:
            words = _WORD_OR_NUL.findall(joined)
        else:  # a text holds a NUL itself: tokenise text by text
            words = []
            for t in texts:
                words.extend(_WORD.findall(t.lower()))
                words.append("\x00")
            words.pop()
        memo = _STEMS
        vocab: dict[str, int] = {}
        word_term = dict.fromkeys(chain(("\x00",), words))
        word_term["\x00"] = -2
        for w in islice(word_term, 1, None):
            s = memo.get(w, w)
            if s is w:  # not seen yet (see ``tokenize``)
                s = stem(w)
                if len(memo) < 1 << 20:
                    memo[w] = s
            if s is None:
                word_term[w] = -1  # a stopword
            else:
                t = vocab.get(s)
                if t is None:
                    t = vocab[s] = len(vocab)
                word_term[w] = t
        tid = np.fromiter(map(word_term.__getitem__, words), dtype=np.int64, count=len(words))
        sep = tid == -2
        item = np.cumsum(sep)
        keep = tid >= 0
        item, tid = item[keep], tid[keep]
        v = max(len(vocab), 1)
        lens = np.bincount(item, minlength=m).astype(np.float64)
        pair, tf = np.unique(item * v + tid, return_counts=True)  # by item, then term
        p_item, p_term = np.divmod(pair, v)
        row_arr = np.asarray(rows, dtype=np.int64)
        p_row = row_arr[p_item]
        rptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(p_row, minlength=n), out=rptr[1:])
        rterm = p_term.astype(np.int32)
        rtf = tf.astype(np.int32)
        vocab_list = list(vocab)
        temporal_term = np.fromiter((t in _RELATIVE_TIME_STEMS for t in vocab_list), dtype=bool,
                                    count=len(vocab_list))
        temporal = np.zeros(n, dtype=bool)
        if len(p_term):
            temporal[np.unique(p_row[temporal_term[p_term]])] = True
        alive = np.zeros(n, dtype=bool)
        alive[row_arr] = True
        ids_arr = np.full(n, -1, dtype=np.int64)
        ids_arr[row_arr] = ids
        length = np.zeros(n)
        length[row_arr] = lens
        ent = np.full(n, -1, dtype=np.int64)
        for i, e in enumerate(entities):
            if e:
                ent[rows[i]] = self._entity_ref(e)
        # --- clusters: numbered by first member in row order, as one upsert at a time
        cluster_of: dict[int, int] = {}
        cid_item = np.full(m, -1, dtype=np.int64)
        for i, p in enumerate(parents):
            if p is not None:
                c = cluster_of.get(p)
                if c is None:
                    c = cluster_of[p] = len(cluster_of)
                cid_item[i] = c
        n_cl = len(cluster_of)
        cid = np.full(n, -1, dtype=np.int64)
        cid[row_arr] = cid_item
        prev = np.arange(n, dtype=np.int64)
        nxt = prev.copy()
        members = np.flatnonzero(cid_item >= 0)
        ids_item = np.asarray(ids, dtype=np.int64)
        # members of each cluster by (node id, row): siblings are neighbours
        members = members[np.lexsort((row_arr[members], ids_item[members], cid_item[members]))]
        m_c = cid_item[members]
        m_r = row_arr[members]
        same = m_c[1:] == m_c[:-1]
        prev[m_r[1:][same]] = m_r[:-1][same]
        nxt[m_r[:-1][same]] = m_r[1:][same]
        mptr = np.zeros(n_cl + 1, dtype=np.int64)
        np.cumsum(np.bincount(m_c, minlength=n_cl), out=mptr[1:])
        cluster_len = np.bincount(m_c, weights=lens[members], minlength=n_cl).astype(np.float64)
        in_cl = cid_item[p_item] >= 0
        cpair, cinv = np.unique(cid_item[p_item[in_cl]] * v + p_term[in_cl], return_inverse=True)
        ctf = np.bincount(cinv.reshape(-1), weights=tf[in_cl], minlength=len(cpair)).astype(np.int32)
        c_cl, c_term = np.divmod(cpair, v)
        cptr = np.zeros(n_cl + 1, dtype=np.int64)
        np.cumsum(np.bincount(c_cl, minlength=n_cl), out=cptr[1:])
        st = {
            "format": self.STATE_FORMAT, "params": dict(self.params.__dict__), "dim": self.dim,
            "reuse_rows": self.reuse_rows, "n": n, "free": [],
            "live": m, "total_len": float(lens.sum()),
            "ids": ids_arr, "alive": alive, "len": length, "cid": cid, "prev": prev,
            "next": nxt, "ent": ent, "temporal": temporal,
            "vocab": "\n".join(vocab_list), "n_vocab": len(vocab_list),
            "rptr": rptr, "rterm": rterm, "rtf": rtf,
            "cluster_parents": list(cluster_of), "cluster_len": cluster_len,
            "clusters_live": n_cl, "cluster_total_len": float(cluster_len.sum()),
            "cptr": cptr, "cterm": c_term.astype(np.int32), "ctf": ctf,
            "mptr": mptr, "mids": ids_item[members], "mrows": m_r,
            "entities": list(self._entity_index), "entity_refs": list(self._entity_refs),
        }
        st["pptr"], st["prows"], st["ptf"] = _csr_to_csc(rptr, rterm, rtf, len(vocab_list))
        st["qptr"], st["qrows"], st["qtf"] = _csr_to_csc(cptr, st["cterm"], ctf, len(vocab_list))
        if self.dim:
            vec = np.zeros((n, self.dim), dtype=np.float32)
            if self.embed is not None:
                for r, t in zip(rows, texts):
                    x = self.embed(t)
                    if x is not None and len(x) == self.dim:
                        vec[r] = np.asarray(x, dtype=np.float32)
            st["vec"] = vec
        if not self.load_state(st):  # cannot happen: the state is our own
            raise RuntimeError("bulk index state refused")

    def remove(self, node_id: int) -> None:
        """Drop a node (deleted, or about to be replaced).  Unknown ids are ignored."""
        row = self._row_of.pop(node_id, None)
        if row is None:
            return
        self._detach(node_id, row)
        counts = self._row_counts(row)
        self._post.sub(row, counts)
        self._counts[row] = None
        self._live -= 1
        self._total_len -= self._len[row]
        self._alive[row] = False
        self._len[row] = 0.0
        if self.dim:
            self._vec[row] = 0.0
        ent = int(self._ent[row])
        if ent >= 0:
            self._entity_refs[ent] -= 1
        self._ent[row] = -1
        self._temporal[row] = False
        if self.reuse_rows:
            self._free.append(row)

    def set_parent(self, node_id: int, parent: int | None) -> None:
        """Move a node into the cluster of ``parent`` (a PartOf edge), or out of any."""
        row = self._row_of.get(node_id)
        if row is None:
            return
        if self._parent_of.get(node_id) == parent:
            return
        self._detach(node_id, row)
        if parent is not None:
            self._attach(node_id, row, parent)

    def parent_of(self, node_id: int) -> int | None:
        return self._parent_of.get(node_id)

    def _entity_ref(self, entity: str) -> int:
        key = " ".join(_WORD.findall(entity.lower()))
        if not key:
            return -1
        idx = self._entity_index.get(key)
        if idx is None:
            idx = self._entity_index[key] = len(self._entity_tokens)
            self._entity_tokens.append(tuple(key.split()))
            self._entity_refs.append(0)
        self._entity_refs[idx] += 1
        return idx

    def _attach(self, node_id: int, row: int, parent: int) -> None:
        cid = self._cluster_of_parent.get(parent)
        if cid is None:
            cid = self._cluster_of_parent[parent] = len(self._cluster_members)
            self._cluster_members.append([])
            self._cluster_counts.append({})
            self._cluster_len.append(0.0)
        members = self._members(cid)
        pos = bisect.bisect_left(members, (node_id, row))
        members.insert(pos, (node_id, row))
        self._relink(members, pos)
        self._parent_of[node_id] = parent
        self._cid[row] = cid
        if len(members) == 1:
            self._clusters_live += 1
        ccounts = self._ccounts(cid)
        rcounts = self._row_counts(row)
        for term, tf in rcounts.items():
            ccounts[term] = ccounts.get(term, 0) + tf
        self._cpost.add(cid, {t: ccounts[t] for t in rcounts})
        self._cluster_len[cid] += self._len[row]
        self._cluster_total_len += self._len[row]

    def _detach(self, node_id: int, row: int) -> None:
        parent = self._parent_of.pop(node_id, None)
        if parent is None:
            return
        cid = self._cluster_of_parent[parent]
        members = self._members(cid)
        pos = bisect.bisect_left(members, (node_id, row))
        del members[pos]
        self._prev[row] = row
        self._next[row] = row
        if members:
            self._relink(members, min(pos, len(members) - 1))
            if pos > 0:
                self._relink(members, pos - 1)
        else:
            self._clusters_live -= 1
        self._cid[row] = -1
        ccounts = self._ccounts(cid)
        changed: dict[str, int] = {}
        gone: list[str] = []
        for term, tf in self._row_counts(row).items():
            left = ccounts.get(term, 0) - tf
            if left > 0:
                ccounts[term] = changed[term] = left
            else:
                ccounts.pop(term, None)
                gone.append(term)
        self._cpost.sub(cid, gone)
        self._cpost.add(cid, changed)
        self._cluster_len[cid] -= self._len[row]
        self._cluster_total_len -= self._len[row]

    def _relink(self, members: list[tuple[int, int]], pos: int) -> None:
        """Fix prev/next of members[pos] and of its two neighbours."""
        for i in (pos - 1, pos, pos + 1):
            if 0 <= i < len(members):
                r = members[i][1]
                self._prev[r] = members[i - 1][1] if i > 0 else r
                self._next[r] = members[i + 1][1] if i + 1 < len(members) else r

    # ------------------------------------------------------------ derived cache
    def state(self) -> dict:
        """The whole index as numpy arrays and plain values (see ``load_state``)."""
        n = self._n
        vocab_ix: dict[str, int] = {}

        def csr(items: Iterable[dict[str, int] | None]):
            ptr = [0]
            tids: list[int] = []
            tfs: list[int] = []
            get = vocab_ix.get
            for c in items:
                if c:
                    for t, tf in c.items():
                        j = get(t)
                        if j is None:
                            j = vocab_ix[t] = len(vocab_ix)
                        tids.append(j)
                        tfs.append(tf)
                ptr.append(len(tids))
            return (np.asarray(ptr, dtype=np.int64), np.asarray(tids, dtype=np.int32),
                    np.asarray(tfs, dtype=np.int32))

        rptr, rterm, rtf = csr(self._row_counts(r) if self._counts[r] is not None else None
                               for r in range(n))
        n_cl = len(self._cluster_members)
        cptr, cterm, ctf = csr(self._ccounts(c) for c in range(n_cl))
        members = [self._members(c) for c in range(n_cl)]
        mptr = np.zeros(n_cl + 1, dtype=np.int64)
        np.cumsum([len(m) for m in members], out=mptr[1:])
        vocab = list(vocab_ix)
        parents = [0] * n_cl
        for p, c in self._cluster_of_parent.items():
            parents[c] = p
        st = {
            "format": self.STATE_FORMAT, "params": dict(self.params.__dict__), "dim": self.dim,
            "reuse_rows": self.reuse_rows, "n": n, "free": list(self._free),
            "live": self._live, "total_len": float(self._total_len),
            "ids": self._ids[:n], "alive": self._alive[:n], "len": self._len[:n],
            "cid": self._cid[:n], "prev": self._prev[:n], "next": self._next[:n],
            "ent": self._ent[:n], "temporal": self._temporal[:n],
            "vocab": "\n".join(vocab), "n_vocab": len(vocab),
            "rptr": rptr, "rterm": rterm, "rtf": rtf,
            "cluster_parents": parents, "cluster_len": np.asarray(self._cluster_len, dtype=np.float64),
            "clusters_live": self._clusters_live, "cluster_total_len": float(self._cluster_total_len),
            "cptr": cptr, "cterm": cterm, "ctf": ctf,
            "mptr": mptr,
            "mids": np.asarray([i for m in members for i, _ in m], dtype=np.int64),
            "mrows": np.asarray([r for m in members for _, r in m], dtype=np.int64),
            "entities": list(self._entity_index), "entity_refs": list(self._entity_refs),
        }
        # postings are the transposed counts; stored so that loading sorts nothing
        st["pptr"], st["prows"], st["ptf"] = _csr_to_csc(rptr, rterm, rtf, len(vocab))
        st["qptr"], st["qrows"], st["qtf"] = _csr_to_csc(cptr, cterm, ctf, len(vocab))
        if self.dim:
            st["vec"] = self._vec[:n]
        return st

    def load_state(self, st: Mapping) -> bool:
        """Restore what ``state`` returned (arrays may be read-only views); False when
        the state is of another format, parameters or vector size."""
        if (st.get("format") != self.STATE_FORMAT or st.get("params") != dict(self.params.__dict__)
                or st.get("dim") != self.dim or st.get("reuse_rows") != self.reuse_rows):
            return False
        n = int(st["n"])
        self._cap = 0
        self._grow(max(n, 64))
        for name in ("ids", "alive", "len", "cid", "prev", "next", "ent", "temporal"):
            getattr(self, "_" + name)[:n] = st[name]
        if self.dim:
            self._vec[:n] = st["vec"]
        self._n = n
        self._free = list(st["free"])
        self._live = int(st["live"])
        self._total_len = float(st["total_len"])
        vocab = st["vocab"].split("\n") if st["n_vocab"] else []
        alive = self._alive[:n]
        self._counts = [_BASE] * n
        for r in np.flatnonzero(~alive).tolist():
            self._counts[r] = None
        self._counts_base = (st["rptr"], st["rterm"], st["rtf"], vocab)
        self._post.load(vocab, st["pptr"], st["prows"], st["ptf"])
        parents = list(st["cluster_parents"])
        n_cl = len(parents)
        self._cluster_of_parent = dict(zip(parents, range(n_cl)))
        self._cluster_members = [_BASE] * n_cl
        self._members_base = (st["mptr"], st["mids"], st["mrows"])
        self._cluster_counts = [_BASE] * n_cl
        self._ccounts_base = (st["cptr"], st["cterm"], st["ctf"], vocab)
        self._cluster_len = st["cluster_len"].tolist()
        self._cpost.load(vocab, st["qptr"], st["qrows"], st["qtf"])
        self._clusters_live = int(st["clusters_live"])
        self._cluster_total_len = float(st["cluster_total_len"])
        live_rows = np.flatnonzero(alive)
        ids = self._ids[live_rows].tolist()
        self._row_of = dict(zip(ids, live_rows.tolist()))
        cids = self._cid[live_rows]
        inc = cids >= 0
        pc = np.asarray(parents, dtype=object)[cids[inc]].tolist() if n_cl else []
        self._parent_of = dict(zip(self._ids[live_rows[inc]].tolist(), pc))
        self._entity_index = {k: i for i, k in enumerate(st["entities"])}
        self._entity_tokens = [tuple(k.split()) for k in st["entities"]]
        self._entity_refs = list(st["entity_refs"])
        return True

    # --------------------------------------------------------------- query
    def signals(self, query: str, *, query_vector: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each raw signal over the rows (for ablations and debugging)."""
        p = self.params
        n = self._n
        terms = set(tokenize(query))
        avg = self._total_len / self._live if self._live else 0.0
        lex = _bm25(self._post, terms, self._live, self._len[:n], avg, p.k1, p.b, n)
        top = lex.max() if n else 0.0
        if top > 0:
            lex /= top
        out = {"lexical": lex}
        idx = np.arange(n)
        prev, nxt = self._prev[:n], self._next[:n]
        out["neighbour"] = np.maximum(np.where(prev != idx, lex[prev], 0.0), np.where(nxt != idx, lex[nxt], 0.0))
        n_cl = len(self._cluster_members)
        if n_cl and self._clusters_live:
            clen = np.asarray(self._cluster_len)
            cavg = self._cluster_total_len / self._clusters_live
            cs = _bm25(self._cpost, terms, self._clusters_live, clen, cavg, p.k1, p.b, n_cl)
            ctop = cs.max()
            if ctop > 0:
                cs /= ctop
            cid = self._cid[:n]
            out["cluster"] = np.where(cid >= 0, cs[np.maximum(cid, 0)], 0.0)
        else:
            out["cluster"] = np.zeros(n)
        if query_vector is None and self.embed is not None and p.hashing and self.dim:
            query_vector = self.embed(query)
        if query_vector is not None and self.dim and len(query_vector) == self.dim:
            out["hashing"] = self._vec[:n] @ np.asarray(query_vector, dtype=np.float32)
        else:
            out["hashing"] = np.zeros(n)
        ent = self._query_entities(query)
        out["entity"] = np.isin(self._ent[:n], ent) if len(ent) == 1 else np.zeros(n, dtype=bool)
        out["temporal"] = self._temporal[:n] if is_temporal_query(query) else np.zeros(n, dtype=bool)
        return out

    def _query_entities(self, query: str) -> list[int]:
        words = set(_WORD.findall(query.lower()))
        return [i for i, toks in enumerate(self._entity_tokens)
                if self._entity_refs[i] > 0 and all(t in words for t in toks)]

    def denominators(self, params: HybridParams | None = None) -> np.ndarray:
        """Per row, the weights of the signals that can apply to it: the lexical score and
        the hashing cosine always, the neighbour share when the node has a sibling, the
        cluster share when it is in a cluster. A node matching everything it can match
        scores about 1 (a node in no cluster is not held to a signal it cannot have)."""
        p = params or self.params
        n = self._n
        rows = np.arange(n)
        sib = (self._prev[:n] != rows) | (self._next[:n] != rows)
        return 1.0 + p.hashing + p.neighbour * sib + p.cluster * (self._cid[:n] >= 0)

    def combine(self, sig: Mapping[str, np.ndarray], params: HybridParams | None = None) -> np.ndarray:
        p = params or self.params
        s = sig["lexical"] + p.neighbour * sig["neighbour"] + p.cluster * sig["cluster"] + p.hashing * sig["hashing"]
        s = s / self.denominators(p)[: len(s)]
        if p.entity:
            s = s * np.where(sig["entity"], 1.0 + p.entity, 1.0)
        if p.temporal:
            s = s * np.where(sig["temporal"], 1.0 + p.temporal, 1.0)
        return np.where(self._alive[: len(s)], s, 0.0)

    def scores(self, query: str, *, query_vector: np.ndarray | None = None,
               hashing: np.ndarray | None = None) -> np.ndarray:
        """Final score of every row (dead rows score 0); equals ``combine(signals(...))``.

        The fused path: one dense matrix-vector product for hashing-v1 (or the
        caller's ``hashing`` cosine per row), the lexical score accumulated from the
        query words' postings, neighbour boosts scattered from the lexical hits only,
        one gather for the cluster score.
        """
        p = self.params
        n = self._n
        out = np.zeros(n)
        if n == 0 or self._live == 0:
            return out
        if p.hashing and hashing is not None:
            m = min(n, len(hashing))
            out[:m] = np.where(self._alive[:m], hashing[:m], 0.0)
            out *= p.hashing
        elif p.hashing and self.dim:
            if query_vector is None and self.embed is not None:
                query_vector = self.embed(query)
            if query_vector is not None and len(query_vector) == self.dim:
                out += self._vec[:n] @ np.asarray(query_vector, dtype=np.float32)
                out *= p.hashing
        terms = set(tokenize(query))
        avg = self._total_len / self._live
        lex = _bm25(self._post, terms, self._live, self._len[:n], avg, p.k1, p.b, n)
        hits = np.flatnonzero(lex)
        if len(hits):
            lex /= lex[hits].max()
            out += lex
            if p.neighbour:
                vals = lex[hits]
                nb = np.zeros(n)
                for side in (self._prev, self._next):
                    to = side[hits]
                    moved = to != hits
                    np.maximum.at(nb, to[moved], vals[moved])
                nb *= p.neighbour
                out += nb
            if p.cluster and self._clusters_live:
                n_cl = len(self._cluster_members)
                cavg = self._cluster_total_len / self._clusters_live
                cs = _bm25(self._cpost, terms, self._clusters_live, np.asarray(self._cluster_len), cavg,
                           p.k1, p.b, n_cl)
                ctop = cs.max()
                if ctop > 0:
                    padded = np.zeros(n_cl + 1)
                    padded[1:] = cs * (p.cluster / ctop)
                    out += padded[self._cid[:n] + 1]
        out /= self.denominators(p)
        if p.entity:
            ent = self._query_entities(query)
            if len(ent) == 1:
                out[self._ent[:n] == ent[0]] *= 1.0 + p.entity
        if p.temporal and is_temporal_query(query):
            out[self._temporal[:n]] *= 1.0 + p.temporal
        return out

    def score_all(self, query: str, *, query_vector: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(node_ids, scores) of every live node, in no particular order."""
        n = self._n
        s = self.scores(query, query_vector=query_vector)
        alive = self._alive[:n]
        return self._ids[:n][alive], s[alive]

    def score_map(self, query: str, *, query_vector: np.ndarray | None = None,
                  min_score: float = 1e-6) -> dict[int, float]:
        """{node_id: score} for live nodes scoring above ``min_score``."""
        ids, s = self.score_all(query, query_vector=query_vector)
        keep = s > min_score
        return dict(zip(ids[keep].tolist(), s[keep].tolist()))

    def top(self, query: str, k: int = 5, *, query_vector: np.ndarray | None = None,
            allowed: Callable[[int], bool] | None = None, min_score: float = 1e-6) -> list[tuple[int, float]]:
        """Best ``k`` (node_id, score), score descending, ties by node id; ``allowed`` filters ids."""
        s = self.scores(query, query_vector=query_vector)
        rows = np.flatnonzero(s > min_score)
        m = max(4 * k, 64)
        if allowed is None and len(rows) > m:
            # every row at or above the m-th best score, ties included (deterministic)
            sub = s[rows]
            cut = np.partition(sub, len(sub) - m)[len(sub) - m]
            rows = rows[sub >= cut]
        ids, sc = self._ids[rows], s[rows]
        order = np.lexsort((ids, -sc))
        out: list[tuple[int, float]] = []
        for i in order:
            nid = int(ids[i])
            if allowed is not None and not allowed(nid):
                continue
            out.append((nid, float(sc[i])))
            if len(out) >= k:
                break
        return out


# ---------------------------------------------------------------- recall-engine adapter


class HybridScorer:
    """hybrid-v1 behind the recall engine's ``Scorer`` interface (see ``recall``).

    The engine hands a scorer only (row, node id, text); the graph structure the
    hybrid uses is read from ``graph`` when a node is added, updated or touched:

    - parent: the newest live PartOf edge from the node to a live non-project node
      (project PartOf edges are scope, not clusters): a turn's session node.

    No entity is read: mino writes no speaker facts, so the boost could not fire on
    its graph (issue 16); only a caller that names entities itself (the LoCoMo
    benchmark's own graph) gets it.

    The engine calls ``touch(row, node_id)`` for every node an operation changed
    without changing its text (an edge of it was linked, unlinked, reweighted or
    had an outcome recorded, a neighbour was deleted), so edges that die reach the
    clusters.  Edges created after their source node are also picked up at the
    next ``scores`` call by scanning only edge ids not seen yet (edge ids only grow).

    Hashing-v1 cosine comes from an inner ``MnemoScorer`` (Mnemo's exact vectors,
    kept once, in the engine's row space; the index keeps no second copy); the area
    weight and usefulness bias are applied after the hybrid score exactly as Mnemo
    applies them to the cosine.  Index rows are the engine's rows.

    ``state()`` / ``load_state()`` cover both the vectors and the whole index, so the
    derived cache restores the scorer without re-tokenising any node.
    """

    name = SCORER_NAME

    def __init__(self, graph, params: HybridParams | None = None, *, embedder=None):
        from oracle_recall import MnemoScorer

        self.graph = graph
        self.params = params or HybridParams()
        self.mnemo = MnemoScorer(embedder)
        self.name = f"{SCORER_NAME}+{self.mnemo.name}"
        self.index = HybridIndex(params, dim=0, reuse_rows=False)
        self._edges_seen = getattr(graph, "next_edge", 1)

    @property
    def row_of(self) -> dict[int, int]:
        """node id -> row, for the nodes the index holds."""
        return self.index._row_of

    # structure read from the graph
    def _parent(self, node_id: int) -> int | None:
        g = self.graph
        best = None
        now = g.clock
        nodes = g.nodes
        for eid in g.adj.get(node_id, ()):
            e = g.edges[eid]
            if e.kind != "PartOf" or e.src != node_id or e.dst in g.projects:
                continue
            if e.invalid_at is None and now >= e.valid_from and e.weight > 0.0:
                p = nodes.get(e.dst)
                if p is None or p.deleted:
                    continue
                if best is None or eid > best:
                    best = eid
        return g.edges[best].dst if best is not None else None

    def _upsert(self, row: int, node_id: int, text: str | None) -> None:
        node = self.graph.nodes.get(node_id)
        if node is None or text is None:
            self.index.remove(node_id)
            return
        self.index.upsert(node_id, text, parent=self._parent(node_id), row=row)

    # Scorer interface
    def add(self, row: int, node_id: int, text: str) -> None:
        self.mnemo.add(row, node_id, text)
        self._upsert(row, node_id, text)

    def update(self, row: int, node_id: int, text: str) -> None:
        self.mnemo.update(row, node_id, text)
        self._upsert(row, node_id, text)

    def remove(self, row: int, node_id: int) -> None:
        self.mnemo.remove(row, node_id)
        self.index.remove(node_id)

    def add_many(self, rows, node_ids, texts) -> None:
        self.mnemo.add_many(rows, node_ids, texts)
        nodes = self.graph.nodes
        keep = [k for k, (i, t) in enumerate(zip(node_ids, texts))
                if t is not None and nodes.get(i) is not None]
        if len(keep) < len(rows):  # as _upsert would: nothing to index for these
            for k in range(len(rows)):
                if texts[k] is None or nodes.get(node_ids[k]) is None:
                    self.index.remove(node_ids[k])
        ids = [node_ids[k] for k in keep]
        self.index.add_many(ids, [texts[k] for k in keep],
                            parents=[self._parent(i) for i in ids],
                            rows=[rows[k] for k in keep])

    def touch(self, row: int, node_id: int) -> None:
        """Re-read a node's parent (an edge of it or its parent changed liveness)."""
        if node_id in self.index:
            self.index.set_parent(node_id, self._parent(node_id))

    def _scan_new_edges(self) -> None:
        g = self.graph
        end = getattr(g, "next_edge", self._edges_seen)
        if end <= self._edges_seen:
            return
        for eid in range(self._edges_seen, end):
            e = g.edges.get(eid)
            if e is not None and e.kind == "PartOf" and e.src in self.index:
                self.index.set_parent(e.src, self._parent(e.src))
        self._edges_seen = end

    def scores(self, query) -> np.ndarray:
        from dataclasses import replace

        self._scan_new_edges()
        n = query.n
        cos = self.mnemo.scores(replace(query, area_weight=None, bias=None))
        hybrid = self.index.scores(query.expanded, hashing=cos)
        out = np.zeros(n, dtype=np.float32)
        m = min(n, len(hybrid))
        out[:m] = hybrid[:m]
        if query.kind is not None and self.params.episode != 1.0:  # see HybridParams.episode
            out[query.kind[:n] == _EPISODE] *= np.float32(self.params.episode)
        if query.area_weight is not None:
            out *= query.area_weight
        if query.bias is not None:
            out += query.bias
        if query.kind is not None and self.params.episode != 1.0:
            self._lift_saved(out, query.kind[:n])
        return out

    def _lift_saved(self, out: np.ndarray, kinds: np.ndarray) -> None:
        """``results.lift_saved`` over the best ``SAVED_TOP`` rows (engine rows)."""
        from mino_memory_graph.recall.results import SAVED_TOP, current_fact, lift_saved, saved_pairs

        n = len(out)
        if not n:
            return
        top = np.argpartition(-out, min(SAVED_TOP, n) - 1)[:SAVED_TOP] if n > SAVED_TOP \
            else np.arange(n)
        top = top[(out[top] > 0) & (kinds[top] == _EPISODE)]
        if not len(top):
            return
        ids = self.index._ids
        nodes = self.graph.nodes
        saved = {}
        for r in top.tolist():
            node = nodes.get(int(ids[r]))
            f = node.fact("saved") if node is not None else None
            pairs = saved_pairs(f.value) if f is not None else []
            if pairs:
                saved[int(ids[r])] = pairs
        if not saved:
            return
        row_of = self.index._row_of
        scores = {int(ids[r]): float(out[r]) for r in top.tolist()}
        for ps in saved.values():
            for nid, _ in ps:
                r = row_of.get(nid)
                if r is not None and r < n:
                    scores[nid] = max(float(out[r]), 0.0)

        def current(nid, fid):
            node = nodes.get(nid)
            return node is not None and not node.deleted and current_fact(
                [(f.id, f.key, None, None, f.active) for f in node.facts], fid)
        lift_saved(scores, saved, current, self.params.episode, lambda x: float(np.float32(x)))
        for nid, s in scores.items():
            out[row_of[nid]] = np.float32(s)

    # derived cache
    def state(self, n: int) -> dict:
        return {"name": self.name, "mnemo": self.mnemo.state(n), "index": self.index.state(),
                "edges_seen": self._edges_seen}

    def load_state(self, st: Mapping, n: int) -> bool:
        if st.get("name") != self.name or "index" not in st:
            return False
        if not self.mnemo.load_state(st["mnemo"], n):
            return False
        if not self.index.load_state(st["index"]):
            return False
        self._edges_seen = int(st["edges_seen"])
        return True

    def release(self) -> None:
        pass
