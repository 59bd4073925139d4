"""Stored vectors: each text's hashing-v1 vector as its nonzero slots and their float32
values, derived the same way in one process and in the rebuild's worker (``text_worker``),
so a vector never depends on the batch it was derived in.
"""
from __future__ import annotations

import math
import sys
from array import array

_EMBEDDER = []


BULK_TEXTS = 32  # fewer texts (a turn's writes): pure Python, no numpy import (70 ms)


def _embedder():
    if not _EMBEDDER:
        from .embed import HashingEmbedder

        _EMBEDDER.append(HashingEmbedder())
    return _EMBEDDER[0]


def _sparse(texts: list[str]) -> list[bytes]:
    """The hashing-v1 vectors of ``texts``, each as its nonzero slots (one byte each)
    followed by their float32 values: what ``Index.vector`` reads back.

    The weights are ``HashingEmbedder.features`` (bit-identical to its bulk
    ``weight_matrix``); each row's norm is the square root of its squares added in slot
    order, which both paths do the same way (numpy column by column over a window's
    rows; Python over one text's slots), so a vector never depends on the batch it was
    derived in."""
    if not texts:
        return []
    emb = _embedder()
    if len(texts) < BULK_TEXTS:
        return [_packed(sorted(emb.features(t).items())) for t in texts]
    import numpy as np

    m = emb.weight_matrix(texts)
    squares = np.zeros(len(texts))
    for j in range(m.shape[1]):  # slot order; an absent slot adds 0.0, which changes nothing
        col = m[:, j]
        squares += col * col
    norms = np.sqrt(squares)
    norms[norms == 0] = 1.0
    rows, cols = np.nonzero(m)  # row-major: each row's slots ascending
    slots = cols.astype(np.uint8).tobytes()
    vals = (m[rows, cols] / norms[rows]).astype("<f4").tobytes()
    ends = np.cumsum(np.bincount(rows, minlength=len(texts))).tolist()
    out, a = [], 0
    for b in ends:
        out.append(slots[a:b] + vals[4 * a:4 * b])
        a = b
    return out


def _packed(items: list[tuple[int, float]]) -> bytes:
    """One text's ``(slot, weight)`` pairs, slots ascending, as ``_sparse`` stores them."""
    if not items:
        return b""
    squares = 0.0
    for _, w in items:
        squares += w * w
    norm = math.sqrt(squares)
    vals = array("f", [w / norm for _, w in items])
    if sys.byteorder != "little":
        vals.byteswap()
    return bytes(s for s, _ in items) + vals.tobytes()


def unpack_vector(blob: bytes | None):
    """``(slots, values)`` of a stored vector (see ``_sparse``)."""
    if not blob:
        return b"", ()
    n = len(blob) // 5
    vals = array("f")
    vals.frombytes(blob[n:])
    if sys.byteorder != "little":
        vals.byteswap()
    return blob[:n], vals
