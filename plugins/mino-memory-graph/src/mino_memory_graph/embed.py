"""Embedders: ``hashing-v1`` (the default, offline, Mnemo's bit for bit) and an opt-in
OpenAI-compatible ``/v1/embeddings`` client.

An embedder has ``name`` (journals never record it: vectors are derived), ``dim`` (0 when
not known until the first vector) and::

    embed(text) -> numpy float32 vector, or None for "no vector" (scores 0)
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
import logging
import math
import os
import re
import time
from collections import Counter
from itertools import chain, islice
from pathlib import Path

from .siphash import rust_pair_hash, rust_str_hash, siphash13_many

log = logging.getLogger("mino.memory.graph")

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

    def embed_many(self, texts):
        m = self.embed_matrix(texts)
        return list(m)

    def embed_matrix(self, texts):
        """Rows of a float32 (len(texts), 256) matrix, built in one pass.

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
            return np.zeros((0, DIM), dtype=np.float32)
        blob = b"\xff".join(t.encode("utf-8", "surrogatepass") if t else b"" for t in texts)
        toks = _TOKEN_OR_SEP.findall(blob.lower())
        if not toks or len(toks) == n - 1:  # no token at all: only separators
            return np.zeros((n, DIM), dtype=np.float32)
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
        m = np.bincount(idx, weights=val, minlength=n * DIM).reshape(n, DIM)
        norms = np.sqrt(np.einsum("ij,ij->i", m, m))
        norms[norms == 0] = 1.0
        m /= norms[:, None]
        return m.astype(np.float32)


class OpenAIEmbedder:
    """Opt-in embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint.

    Bounded: ``timeout`` seconds per attempt, at most ``attempts`` attempts, retried
    only on 429 and 503 with ``backoff`` seconds between. A failure returns None (no
    vector) and records a notice; it never raises. Vectors are cached on disk, keyed by
    hex(sha256(model 0x00 text)), one JSON line per entry.
    """

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key: str | None = None, cache_dir: Path | str | None = None,
                 timeout: float = 10.0, attempts: int = 2, backoff: float = 1.0):
        self.model = model
        self.name = f"openai:{model}"
        self.dim = 0
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.notices: list[str] = []
        self._client = None
        self._cache: dict[str, list[float]] = {}
        self._cache_path = Path(cache_dir) / "embed-cache.jsonl" if cache_dir else None
        self._load_cache()

    # --- cache --------------------------------------------------------------------

    def cache_key(self, text: str) -> str:
        h = hashlib.sha256()
        h.update(self.model.encode("utf-8"))
        h.update(b"\x00")
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

    def _store(self, key: str, vec: list[float]) -> None:
        self._cache[key] = vec
        p = self._cache_path
        if p is None:
            return
        try:
            if not p.parent.exists():
                p.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (json.dumps({"k": key, "v": vec}) + "\n").encode())
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
        import numpy as np

        key = self.cache_key(text)
        vec = self._cache.get(key)
        if vec is None:
            vec = self._fetch(text)
            if vec is None:
                return None
            self._store(key, vec)
        arr = np.asarray(vec, dtype=np.float32)
        if not self.dim:
            self.dim = int(arr.shape[0])
        if arr.shape[0] != self.dim:
            self._notice(f"embedding of unexpected size {arr.shape[0]} (expected {self.dim});"
                         " ignored")
            return None
        return arr

    def embed_many(self, texts):
        return [self.embed(t) for t in texts]

    def _fetch(self, text: str) -> list[float] | None:
        try:
            client = self._get_client()
        except Exception as e:  # noqa: BLE001 - no client means no vector, not a crash
            self._notice(f"embeddings unavailable ({type(e).__name__}: {e}); using no vector")
            return None
        last = ""
        for attempt in range(self.attempts):
            try:
                resp = client.embeddings.create(model=self.model, input=text)
                return [float(x) for x in resp.data[0].embedding]
            except Exception as e:  # noqa: BLE001
                status = getattr(e, "status_code", None)
                last = f"{type(e).__name__}" + (f" {status}" if status else "")
                if status in (429, 503) and attempt + 1 < self.attempts:
                    time.sleep(self.backoff)
                    continue
                break
        self._notice(f"embedding request failed ({last}); this text has no vector")
        return None


def embedder_from_config(cfg: dict | None, cache_dir: Path | None = None):
    """``memory.graph.embedder``: absent or ``hashing-v1`` gives the default; a mapping
    ``{kind: openai, model, base_url, api_key_env, timeout}`` opts in to a server."""
    if not cfg or cfg == "hashing-v1" or cfg == "hashing":
        return HashingEmbedder()
    if isinstance(cfg, dict) and cfg.get("kind") == "openai" and cfg.get("model"):
        key_env = cfg.get("api_key_env") or "OPENAI_API_KEY"
        return OpenAIEmbedder(str(cfg["model"]), base_url=cfg.get("base_url"),
                              api_key=os.environ.get(key_env),
                              cache_dir=cache_dir, timeout=float(cfg.get("timeout", 10.0)))
    raise ValueError(f"unknown memory.graph.embedder setting {cfg!r}; "
                     "use hashing-v1 or {kind: openai, model: ...}")
