"""Embedders: ``hashing-v1`` (the default, offline, Mnemo's bit for bit) and an opt-in
OpenAI-compatible ``/v1/embeddings`` client.

An embedder has ``name`` (journals never record it: vectors are derived), ``dim`` (0 when
not known until the first vector) and::

    embed(text) -> numpy float32 vector, or None for "no vector" (scores 0)
    embed_query(text) -> the same for a search query (asymmetric models embed it apart)
    embed_many(texts) -> list of the same, in order

``hashing-v1``: split on every char that is not ASCII alphanumeric, drop tokens of one
byte or less, ASCII-lowercase; count tokens; weight ``1 + ln(count)`` at slot
``H(tok) % 256`` and half that at ``H((tok, "salt")) % 256``; L2-normalise (a zero
vector stays zero). ``H`` is SipHash-1-3, keys (0, 0), over Rust's hash framing (see
``siphash``). Slots are exact; values can differ from Rust's in the last float32 bit
(Rust sums in its HashMap's random order).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections import Counter
from itertools import chain, islice
from pathlib import Path

from mino_core import plugin_logger

from .siphash import rust_pair_hash, rust_str_hash, siphash13_many

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr

DIM = 256
_TOKEN = re.compile(rb"[a-z0-9]{2,}")
_TOKEN_OR_SEP = re.compile(rb"[a-z0-9]{2,}|\xff")
_SLOT_CACHE_MAX = 1 << 20


def tokenize(text: str) -> list[bytes]:
    """Mnemo's tokens as ASCII bytes (bytes.lower() folds only A-Z, as Rust does)."""
    return _TOKEN.findall(text.encode("utf-8", "surrogatepass").lower())


class HashingEmbedder:
    """``hashing-v1``: 256-dim feature hashing, deterministic and offline."""

    name = "hashing-v1"
    dim = DIM

    def __init__(self):
        self._slots: dict[bytes, tuple[int, int]] = {}

    def slots(self, tok: bytes) -> tuple[int, int]:
        s = self._slots.get(tok)
        if s is None:
            if len(self._slots) >= _SLOT_CACHE_MAX:
                self._slots.clear()
            s = (rust_str_hash(tok) % DIM, rust_pair_hash(tok) % DIM)
            self._slots[tok] = s
        return s

    def _add_slots(self, toks: list) -> None:
        """``slots`` of many new tokens at once (same numbers, one numpy pass)."""
        if len(self._slots) + len(toks) > _SLOT_CACHE_MAX:
            return  # the memo would overflow: let ``slots`` evict as it does
        h1 = siphash13_many([t + b"\xff" for t in toks])
        h2 = siphash13_many([t + b"\xffsalt\xff" for t in toks])
        self._slots.update(zip(toks, [(a % DIM, b % DIM) for a, b in zip(h1, h2)]))

    def features(self, text: str) -> dict[int, float]:
        """Unnormalised slot -> weight map of one text."""
        out: dict[int, float] = {}
        get = self._slots.get
        for tok, c in Counter(tokenize(text)).items():
            s = get(tok) or self.slots(tok)
            w = 1.0 + math.log(c) if c > 1 else 1.0
            out[s[0]] = out.get(s[0], 0.0) + w
            out[s[1]] = out.get(s[1], 0.0) + 0.5 * w
        return out

    def embed(self, text: str):
        # one code path for one text and for many, so incremental and bulk indexing
        # give bit-identical vectors
        return self.embed_matrix([text])[0]

    def embed_query(self, text: str):
        return self.embed(text)  # symmetric: a query is a text like any other

    def embed_many(self, texts):
        m = self.embed_matrix(texts)
        return list(m)

    def embed_matrix(self, texts):
        """Rows of a float32 (len(texts), 256) matrix: ``weight_matrix``, each row
        divided by its Euclidean norm."""
        import numpy as np

        m = self.weight_matrix(texts)
        norms = np.sqrt(np.einsum("ij,ij->i", m, m))
        norms[norms == 0] = 1.0
        m /= norms[:, None]
        return m.astype(np.float32)

    def weight_matrix(self, texts):
        """The unnormalised float64 (len(texts), 256) weights, built in one pass.

        Bulk form of ``features``: every text is tokenised in one regex pass (texts
        joined by 0xFF, a byte UTF-8 never contains), each distinct token is hashed once
        (memoised slots), counted per text with one sort, and all weights land through
        one ``bincount``. Contributions keep ``features``' order (per text, tokens by
        first appearance, slot then salted slot), and bincount adds them in that order
        from 0.0 as the per-text dict did, so every vector is bit-identical to it.
        """
        import numpy as np

        n = len(texts)
        if not n:
            return np.zeros((0, DIM))
        blob = b"\xff".join(t.encode("utf-8", "surrogatepass") if t else b"" for t in texts)
        toks = _TOKEN_OR_SEP.findall(blob.lower())
        if not toks or len(toks) == n - 1:  # no token at all: only separators
            return np.zeros((n, DIM))
        # distinct tokens -> ids by first appearance, the separator first (id 0)
        vocab = dict.fromkeys(chain((b"\xff",), toks))
        slot0 = [0]
        slot1 = [0]
        get = self._slots.get
        new = [tok for tok in islice(vocab, 1, None) if get(tok) is None]
        if len(new) >= 64:  # a first indexing: hash the new tokens vectorised
            self._add_slots(new)
        for i, tok in enumerate(vocab):
            vocab[tok] = i
            if i:
                s = get(tok) or self.slots(tok)
                slot0.append(s[0])
                slot1.append(s[1])
        ids = np.fromiter(map(vocab.__getitem__, toks), dtype=np.int64, count=len(toks))
        is_sep = ids == 0
        row = np.cumsum(is_sep)
        keep = ~is_sep
        v = len(vocab)
        key = row[keep] * v + ids[keep]
        # each (text, token) once, in order of first appearance, with its count
        uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        uniq, counts = uniq[order], counts[order]
        rows, tok = np.divmod(uniq, v)
        logw = [1.0] + [1.0 + math.log(c) if c > 1 else 1.0 for c in range(1, int(counts.max()) + 1)]
        w = np.asarray(logw, dtype=np.float64)[counts]
        base = rows * DIM
        idx = np.empty(2 * len(uniq), dtype=np.int64)
        idx[0::2] = base + np.asarray(slot0, dtype=np.int64)[tok]
        idx[1::2] = base + np.asarray(slot1, dtype=np.int64)[tok]
        val = np.empty(2 * len(uniq), dtype=np.float64)
        val[0::2] = w
        val[1::2] = 0.5 * w
        return np.bincount(idx, weights=val, minlength=n * DIM).reshape(n, DIM)


# How an asymmetric model is told a query from a document. ``field``: the request's
# ``input_type`` (NVIDIA NIM, Cohere, Voyage and vLLM-served E5/BGE models take it);
# ``prefix``: E5's documented text prefixes; ``none``: neither (OpenAI's models are
# symmetric). ``auto``: ``none`` for OpenAI itself, else ``field``, and ``prefix`` from the
# first time a server refuses the field.
INPUT_TYPES = ("auto", "field", "prefix", "none")
PREFIXES = {"query": "query: ", "document": "passage: "}
BATCH = 64  # texts per request: one request per text made a cold store take minutes


class OpenAIEmbedder:
    """Opt-in embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint.

    Bounded: ``timeout`` seconds per attempt, at most ``attempts`` attempts, retried
    only on 429 and 503 with ``backoff`` seconds between. A failure returns None (no
    vector) and records a notice; it never raises. Texts not cached are sent ``batch`` at
    a time. Vectors are cached on disk, keyed by hex(sha256(model 0x00 text)) for a
    document and hex(sha256(model 0x00 "query" 0x00 text)) for a query when the two are
    embedded apart, one JSON line per entry.
    """

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key: str | None = None, cache_dir: Path | str | None = None,
                 timeout: float = 10.0, attempts: int = 2, backoff: float = 1.0,
                 input_type: str = "auto", batch: int = BATCH):
        if input_type not in INPUT_TYPES:
            raise ValueError(f"memory.graph.embedder.input_type must be one of "
                             f"{', '.join(INPUT_TYPES)}, not {input_type!r}")
        self.model = model
        self.name = f"openai:{model}"
        self.dim = 0
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.batch = max(1, int(batch))
        if input_type == "auto":
            official = not base_url or "api.openai.com" in base_url
            input_type = "none" if official else "field"
            self._may_fall_back = not official
        else:
            self._may_fall_back = False
        self.input_type = input_type
        self.notices: list[str] = []
        self._client = None
        self._cache: dict[str, list[float]] = {}
        self._cache_path = Path(cache_dir) / "embed-cache.jsonl" if cache_dir else None
        self._load_cache()

    # --- cache --------------------------------------------------------------------

    def cache_key(self, text: str, kind: str = "document") -> str:
        h = hashlib.sha256()
        h.update(self.model.encode("utf-8"))
        h.update(b"\x00")
        if kind == "query" and self.input_type != "none":
            h.update(b"query\x00")
        h.update(text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def _load_cache(self) -> None:
        p = self._cache_path
        if p is None or not p.exists():
            return
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                        self._cache[rec["k"]] = rec["v"]
                    except (ValueError, KeyError, TypeError):
                        continue  # a damaged cache line costs one re-embed
        except OSError as e:
            log.warning("embedding cache unreadable (%s); starting empty", e)

    def _store(self, entries: list[tuple[str, list[float]]]) -> None:
        for key, vec in entries:
            self._cache[key] = vec
        p = self._cache_path
        if p is None or not entries:
            return
        try:
            if not p.parent.exists():
                p.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, "".join(json.dumps({"k": k, "v": v}) + "\n"
                                     for k, v in entries).encode())
            finally:
                os.close(fd)
        except OSError as e:
            log.warning("could not write embedding cache: %s", e)

    # --- calls --------------------------------------------------------------------

    def _get_client(self):
        if self._client is None:
            import openai  # imported here: about half a second, only when opted in

            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or
                                         os.environ.get("OPENAI_API_KEY") or "none",
                                         timeout=self.timeout, max_retries=0)
        return self._client

    def _notice(self, msg: str) -> None:
        self.notices.append(msg)
        del self.notices[:-20]
        log.warning("%s", msg)

    def embed(self, text: str):
        return self._embed([text], "document")[0]

    def embed_query(self, text: str):
        return self._embed([text], "query")[0]

    def embed_many(self, texts):
        return self._embed(list(texts), "document")

    def _embed(self, texts: list[str], kind: str) -> list:
        import numpy as np

        keys = [self.cache_key(t, kind) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            text_of = dict(zip(keys, texts))
            for start in range(0, len(missing), self.batch):
                chunk = missing[start:start + self.batch]
                vectors = self._fetch([text_of[k] for k in chunk], kind)
                if vectors is not None:
                    self._store(list(zip(chunk, vectors)))
        out = []
        for key in keys:
            vec = self._cache.get(key)
            if vec is None:
                out.append(None)
                continue
            arr = np.asarray(vec, dtype=np.float32)
            if not self.dim:
                self.dim = int(arr.shape[0])
            if arr.shape[0] != self.dim:
                self._notice(f"embedding of unexpected size {arr.shape[0]} (expected "
                             f"{self.dim}); ignored")
                out.append(None)
                continue
            out.append(arr)
        return out

    def _request(self, texts: list[str], kind: str) -> dict:
        if self.input_type == "prefix":
            return {"input": [PREFIXES[kind] + t for t in texts]}
        if self.input_type == "field":
            return {"input": texts, "extra_body": {"input_type": kind}}
        return {"input": texts}

    def _fetch(self, texts: list[str], kind: str) -> list[list[float]] | None:
        """Vectors for ``texts`` in order, or None (with a notice) when the server fails."""
        try:
            client = self._get_client()
        except Exception as e:  # noqa: BLE001 - no client means no vector, not a crash
            self._notice(f"embeddings unavailable ({type(e).__name__}: {e}); using no vector")
            return None
        last = ""
        attempt = 0
        while attempt < self.attempts:
            try:
                resp = client.embeddings.create(model=self.model, **self._request(texts, kind))
                data = sorted(resp.data, key=lambda d: d.index)
                if len(data) != len(texts):
                    self._notice(f"embedding server answered {len(data)} vectors for "
                                 f"{len(texts)} texts; these texts have no vector")
                    return None
                return [[float(x) for x in d.embedding] for d in data]
            except Exception as e:  # noqa: BLE001
                status = getattr(e, "status_code", None)
                if status in (400, 422) and self._may_fall_back and "input_type" in str(e):
                    # The server does not take the field: E5's prefixes from now on.
                    self._may_fall_back = False
                    self.input_type = "prefix"
                    self._notice("the embedding server refused input_type; queries and "
                                 "documents are told apart by text prefixes instead")
                    continue
                last = f"{type(e).__name__}" + (f" {status}" if status else "")
                attempt += 1
                if status in (429, 503) and attempt < self.attempts:
                    time.sleep(self.backoff)
                    continue
                break
        self._notice(f"embedding request failed ({last}); {len(texts)} text(s) have no vector")
        return None


def embedder_from_config(cfg: dict | None, cache_dir: Path | None = None):
    """``memory.graph.embedder``: absent or ``hashing-v1`` gives the default; a mapping
    ``{kind: openai, model, base_url, api_key_env, timeout, input_type, batch}`` opts in to
    a server."""
    if not cfg or cfg == "hashing-v1" or cfg == "hashing":
        return HashingEmbedder()
    if isinstance(cfg, dict) and cfg.get("kind") == "openai" and cfg.get("model"):
        key_env = cfg.get("api_key_env") or "OPENAI_API_KEY"
        return OpenAIEmbedder(str(cfg["model"]), base_url=cfg.get("base_url"),
                              api_key=os.environ.get(key_env),
                              cache_dir=cache_dir, timeout=float(cfg.get("timeout", 10.0)),
                              input_type=str(cfg.get("input_type", "auto")),
                              batch=int(cfg.get("batch", BATCH)))
    if isinstance(cfg, dict) and cfg.get("kind") == "local" and cfg.get("path"):
        from .embed_local import LocalEmbedder, StaticEmbedder  # numpy; opt-in (issue 25)

        folder = Path(str(cfg["path"])).expanduser()
        if cfg.get("table"):  # static vectors distilled from that encoder
            return StaticEmbedder(folder, Path(str(cfg["table"])).expanduser())
        return LocalEmbedder(folder)
    raise ValueError(f"unknown memory.graph.embedder setting {cfg!r}; "
                     "use hashing-v1, {kind: openai, model: ...} or {kind: local, path: ...}")
