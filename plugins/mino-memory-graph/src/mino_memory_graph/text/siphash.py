"""SipHash-1-3 with zero keys over Rust's ``Hash`` byte stream (for ``hashing-v1``).

Rust's ``DefaultHasher::new()`` is SipHash-1-3 keyed (0, 0). Hashing a ``str`` feeds its
UTF-8 bytes and then one ``0xFF`` byte; a tuple feeds its members in order. So token
``t`` hashes the stream ``t 0xFF`` and the pair ``(t, "salt")`` hashes
``t 0xFF salt 0xFF``. Rust does not promise this hasher is stable across releases, so
this module freezes today's behaviour as the format ``hashing-v1``.
"""
from __future__ import annotations

_M = 0xFFFFFFFFFFFFFFFF


def siphash13(data: bytes, k0: int = 0, k1: int = 0) -> int:
    """SipHash-1-3 of ``data`` as an unsigned 64-bit integer."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    end = n - (n % 8)
    frombytes = int.from_bytes
    for i in range(0, end + 8, 8):
        if i < end:
            m = frombytes(data[i:i + 8], "little")
        else:  # the last block carries the length in its top byte
            m = frombytes(data[end:], "little") | ((n & 0xFF) << 56)
        v3 ^= m
        # one compression round
        v0 = (v0 + v1) & _M
        v1 = ((v1 << 13) | (v1 >> 51)) & _M
        v1 ^= v0
        v0 = ((v0 << 32) | (v0 >> 32)) & _M
        v2 = (v2 + v3) & _M
        v3 = ((v3 << 16) | (v3 >> 48)) & _M
        v3 ^= v2
        v0 = (v0 + v3) & _M
        v3 = ((v3 << 21) | (v3 >> 43)) & _M
        v3 ^= v0
        v2 = (v2 + v1) & _M
        v1 = ((v1 << 17) | (v1 >> 47)) & _M
        v1 ^= v2
        v2 = ((v2 << 32) | (v2 >> 32)) & _M
        v0 ^= m
    v2 ^= 0xFF
    for _ in range(3):  # three finalization rounds
        v0 = (v0 + v1) & _M
        v1 = ((v1 << 13) | (v1 >> 51)) & _M
        v1 ^= v0
        v0 = ((v0 << 32) | (v0 >> 32)) & _M
        v2 = (v2 + v3) & _M
        v3 = ((v3 << 16) | (v3 >> 48)) & _M
        v3 ^= v2
        v0 = (v0 + v3) & _M
        v3 = ((v3 << 21) | (v3 >> 43)) & _M
        v3 ^= v0
        v2 = (v2 + v1) & _M
        v1 = ((v1 << 17) | (v1 >> 47)) & _M
        v1 ^= v2
        v2 = ((v2 << 32) | (v2 >> 32)) & _M
    return v0 ^ v1 ^ v2 ^ v3


def rust_str_hash(token: bytes) -> int:
    """Rust ``DefaultHasher`` of a ``str``: its bytes, then 0xFF."""
    return siphash13(token + b"\xff")


def rust_pair_hash(token: bytes, second: bytes = b"salt") -> int:
    """Rust ``DefaultHasher`` of the tuple ``(token, second)``."""
    return siphash13(token + b"\xff" + second + b"\xff")


def siphash13_many(datas) -> "list[int]":
    """``siphash13`` (keys 0, 0) of many byte strings at once, vectorised with numpy.

    Same numbers as ``siphash13``: numpy's uint64 arithmetic wraps modulo 2**64 as the
    masks above do. Strings are grouped by their count of 8-byte blocks so that each
    group runs the rounds as a few whole-array operations.
    """
    import numpy as np

    out = [0] * len(datas)
    groups: dict[int, list[int]] = {}
    for i, d in enumerate(datas):
        groups.setdefault(len(d) // 8 + 1, []).append(i)
    with np.errstate(over="ignore"):
        for nb, idx in groups.items():
            padded = []
            for i in idx:
                d = datas[i]
                # zero padding, then the length in the top byte of the last block
                padded.append(d + b"\0" * (8 * nb - 1 - len(d)) + bytes((len(d) & 0xFF,)))
            m = np.frombuffer(b"".join(padded), dtype="<u8").reshape(len(idx), nb)
            h = _rounds(m, np)
            for j, i in enumerate(idx):
                out[i] = int(h[j])
    return out


def _rounds(m, np):
    u = np.uint64
    v0 = np.full(m.shape[0], 0x736F6D6570736575, dtype=u)
    v1 = np.full(m.shape[0], 0x646F72616E646F6D, dtype=u)
    v2 = np.full(m.shape[0], 0x6C7967656E657261, dtype=u)
    v3 = np.full(m.shape[0], 0x7465646279746573, dtype=u)

    def rotl(x, b):
        return (x << u(b)) | (x >> u(64 - b))

    def sipround(v0, v1, v2, v3):
        v0 = v0 + v1
        v1 = rotl(v1, 13) ^ v0
        v0 = rotl(v0, 32)
        v2 = v2 + v3
        v3 = rotl(v3, 16) ^ v2
        v0 = v0 + v3
        v3 = rotl(v3, 21) ^ v0
        v2 = v2 + v1
        v1 = rotl(v1, 17) ^ v2
        v2 = rotl(v2, 32)
        return v0, v1, v2, v3

    for k in range(m.shape[1]):
        w = m[:, k]
        v3 = v3 ^ w
        v0, v1, v2, v3 = sipround(v0, v1, v2, v3)
        v0 = v0 ^ w
    v2 = v2 ^ u(0xFF)
    for _ in range(3):
        v0, v1, v2, v3 = sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
