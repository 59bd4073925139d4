"""hashing-v1 against vectors derived by hand from the algorithm."""
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from mino_memory_graph.text.embed import HashingEmbedder, tokenize
from mino_memory_graph.text.siphash import rust_pair_hash, rust_str_hash, siphash13


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


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=80))
def test_vectorised_siphash_equals_scalar(datas):
    from mino_memory_graph.text.siphash import siphash13, siphash13_many

    assert siphash13_many(datas) == [siphash13(d) for d in datas]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text("aAbBc1 -\u00e9\xff\x00", max_size=40), min_size=1, max_size=90))
def test_bulk_vectors_equal_one_text_at_a_time(texts):
    """The bulk path (distinct tokens hashed vectorised, one scatter) is bit-identical
    to embedding each text alone with a fresh memo."""
    bulk = HashingEmbedder().embed_matrix(texts)
    for t, row in zip(texts, bulk):
        m = np.zeros((1, 256))
        for slot, w in HashingEmbedder().features(t).items():  # the per-text dict
            m[0, slot] = w
        norm = np.sqrt(np.einsum("ij,ij->i", m, m))
        norm[norm == 0] = 1.0
        assert (m / norm[:, None]).astype(np.float32)[0].tobytes() == row.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text("aAbBc1 -\u00e9\xff\x00xyzq", max_size=60), min_size=1, max_size=70))
def test_index_vectors_do_not_depend_on_the_batch(texts):
    """The index stores a text's vector the same whether a turn wrote it alone (pure
    Python, no numpy) or a rebuild derived it among many (numpy)."""
    from mino_memory_graph.text import vectors as index

    padded = texts * (index.BULK_TEXTS // len(texts) + 1)  # enough for the bulk path
    bulk = index._sparse(padded)[:len(texts)]
    alone = [index._sparse([t])[0] for t in texts]
    assert alone == bulk
    for t, blob in zip(texts, alone):  # and they are the embedder's unit vectors
        slots, vals = index.unpack_vector(blob)
        dense = HashingEmbedder().embed_matrix([t])[0]
        assert list(slots) == [int(i) for i in np.nonzero(dense)[0]]
        assert np.allclose(np.asarray(vals, dtype=np.float32), dense[list(slots)], atol=1e-6)
