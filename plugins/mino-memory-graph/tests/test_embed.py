"""hashing-v1 against vectors derived by hand from the algorithm."""
import math

import numpy as np

from mino_memory_graph.embed import HashingEmbedder, tokenize
from mino_memory_graph.siphash import rust_pair_hash, rust_str_hash, siphash13


def test_check_value_helm_slots():
    assert rust_str_hash(b"helm") % 256 == 91
    assert rust_pair_hash(b"helm") % 256 == 200


def test_rust_framing_is_bytes_then_ff():
    assert rust_str_hash(b"abc") == siphash13(b"abc\xff")
    assert rust_pair_hash(b"abc") == siphash13(b"abc\xffsalt\xff")
    # long input crosses several 8-byte blocks
    assert siphash13(b"x" * 17) != siphash13(b"x" * 16)


def test_tokenizer_rules():
    # non-ASCII letters separate; one-byte tokens drop; ASCII lowercase only
    assert tokenize("Helm rollback, a B2 naïve K\u212a ok") == [
        b"helm", b"rollback", b"b2", b"na", b"ve", b"ok"]


def test_single_token_vector_by_hand():
    v = HashingEmbedder().embed("helm")
    expect = np.zeros(256)
    expect[91] += 1.0
    expect[200] += 0.5
    expect /= math.sqrt(1.25)
    assert np.allclose(v, expect, atol=1e-7)
    assert v.dtype == np.float32


def test_sublinear_counts_and_collisions_by_hand():
    text = "helm helm helm chart"
    e = HashingEmbedder()
    expect = np.zeros(256)
    for tok, c in (("helm", 3), ("chart", 1)):
        w = 1 + math.log(c)
        expect[rust_str_hash(tok.encode()) % 256] += w
        expect[rust_pair_hash(tok.encode()) % 256] += 0.5 * w
    expect /= np.linalg.norm(expect)
    assert np.allclose(e.embed(text), expect, atol=1e-6)
    assert np.allclose(e.embed_matrix([text, "", "helm"])[0], expect, atol=1e-6)


def test_empty_text_is_zero_vector():
    e = HashingEmbedder()
    assert not e.embed("é ! a").any()
    assert not e.embed_matrix(["", "x"]).any()
