"""embed_local: the opt-in numpy BERT sentence encoder and its distilled static vectors,
on a tiny model this test makes (real safetensors file, vocabulary, config; no download)."""
import json

import numpy as np
import pytest

from mino_memory_graph.text.embed import embedder_from_config
from mino_memory_graph.text.embed_local import (LocalEmbedder, StaticEmbedder, WordPiece,
                                           distil_static, read_safetensors)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "mail", "##s", "e", "##mail", "the", "relay",
         "port", ",", "!", "un", "##aff", "##able", "cache"]


def _write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(blobs))


@pytest.fixture
def tiny(tmp_path):
    rng = np.random.default_rng(7)
    d, inner, layers = 8, 16, 2
    t = {"embeddings.word_embeddings.weight": rng.normal(size=(len(VOCAB), d)),
         "embeddings.position_embeddings.weight": rng.normal(size=(32, d)),
         "embeddings.token_type_embeddings.weight": rng.normal(size=(2, d)),
         "embeddings.LayerNorm.weight": np.ones(d), "embeddings.LayerNorm.bias": np.zeros(d)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for k in ("query", "key", "value"):
            t[p + f"attention.self.{k}.weight"] = rng.normal(size=(d, d)) * 0.3
            t[p + f"attention.self.{k}.bias"] = np.zeros(d)
        t[p + "attention.output.dense.weight"] = rng.normal(size=(d, d)) * 0.3
        t[p + "attention.output.dense.bias"] = np.zeros(d)
        t[p + "attention.output.LayerNorm.weight"] = np.ones(d)
        t[p + "attention.output.LayerNorm.bias"] = np.zeros(d)
        t[p + "intermediate.dense.weight"] = rng.normal(size=(inner, d)) * 0.3
        t[p + "intermediate.dense.bias"] = np.zeros(inner)
        t[p + "output.dense.weight"] = rng.normal(size=(d, inner)) * 0.3
        t[p + "output.dense.bias"] = np.zeros(d)
        t[p + "output.LayerNorm.weight"] = np.ones(d)
        t[p + "output.LayerNorm.bias"] = np.zeros(d)
    _write_safetensors(tmp_path / "model.safetensors", t)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_attention_heads": 2, "num_hidden_layers": layers, "hidden_size": d}))
    return tmp_path


def test_safetensors_round_trip(tiny):
    t = read_safetensors(tiny / "model.safetensors")
    assert t["embeddings.word_embeddings.weight"].shape == (len(VOCAB), 8)
    assert t["encoder.layer.1.output.dense.bias"].dtype == np.float32


def test_wordpiece_is_berts_uncased_longest_match(tiny):
    tok = WordPiece(tiny / "vocab.txt")
    ids = tok.ids("The E-mails, UNAFFABLE!")
    names = [VOCAB[i] for i in ids]
    assert names == ["[CLS]", "the", "e", "[UNK]", "mail", "##s", ",", "un", "##aff", "##able",
                     "!", "[SEP]"]
    assert [VOCAB[i] for i in tok.ids("Émail")][1:-1] == ["e", "##mail"]  # accent stripped


def test_vectors_are_unit_deterministic_and_differ_by_text(tiny):
    e = LocalEmbedder(tiny)
    a, b = e.embed("the mail relay"), e.embed("cache port")
    assert a.shape == (8,) and abs(float(np.linalg.norm(a)) - 1) < 1e-5
    assert np.array_equal(a, LocalEmbedder(tiny).embed("the mail relay"))
    assert float(a @ b) < 0.999


def test_static_table_and_config(tiny, tmp_path):
    table = distil_static(tiny, tmp_path / "static.npy", batch=5)
    s = StaticEmbedder(tiny, table)
    assert s.table.shape == (len(VOCAB), 8)
    v = s.embed("mail relay")
    assert abs(float(np.linalg.norm(v)) - 1) < 1e-3
    # a piece alone is its distilled row
    row = s.table[VOCAB.index("relay")]
    assert float(s.embed("relay") @ (row / np.linalg.norm(row))) > 0.999
    assert isinstance(embedder_from_config({"kind": "local", "path": str(tiny)}), LocalEmbedder)
    assert isinstance(embedder_from_config({"kind": "local", "path": str(tiny),
                                            "table": str(table)}), StaticEmbedder)
