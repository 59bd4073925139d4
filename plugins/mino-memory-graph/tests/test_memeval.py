"""Mnemo's retrieval gate: the exact scorer reproduces memeval's hashing pins."""
from memeval_corpus import T, corpus_ops, evaluate

from mino_memory_graph.core.model import Graph
from oracle_recall import RecallEngine
from mino_memory_graph.store import Store


def _run(search, label):
    return evaluate(search, label)


def test_memeval_pins_on_engine():
    g = Graph()
    for op in corpus_ops():
        g.apply(*op)
    eng = RecallEngine(g)
    res = evaluate(lambda q: [h.node for h in eng.search(q, 5, kind="Aspect", now=T + 200).hits],
                   lambda i: g.nodes[i].label)
    assert (res["hits_at_1"], res["hits_at_3"]) == (16, 22 - 5)
    assert round(res["mrr"] * 1000) == 743
    assert abs(res["mrr"] - 0.7427) < 5e-5
    # deterministic: a second run gives the same ranks
    res2 = evaluate(lambda q: [h.node for h in eng.search(q, 5, kind="Aspect", now=T + 200).hits],
                    lambda i: g.nodes[i].label)
    assert res2 == res


def test_memeval_pins_through_a_journal(tmp_path):
    """Written as journal lines, replayed by a fresh store: same pins."""
    from mino_memory_graph.core import ops
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b"".join(ops.encode(*op) for op in corpus_ops()))
    s = Store.open(p, scorer="mnemo")
    assert s.scorer.name == "mnemo-cosine/hashing-v1"
    res = evaluate(lambda q: [h.node for h in s.search(q, 5, kind="aspect").hits],
                   lambda i: s.graph.nodes[i].label)
    assert (res["hits_at_1"], res["hits_at_3"]) == (16, 17)
    assert abs(res["mrr"] - 0.7427) < 5e-5


def test_memeval_default_scorer_is_hybrid_and_not_worse(tmp_path):
    """The default (hybrid-v1) on Mnemo's own gate: no worse than the pins above."""
    from mino_memory_graph.core import ops
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b"".join(ops.encode(*op) for op in corpus_ops()))
    s = Store.open(p)
    assert s.scorer.name.startswith("hybrid-v1")
    res = evaluate(lambda q: [h.node for h in s.search(q, 5, kind="aspect").hits],
                   lambda i: s.graph.nodes[i].label)
    assert res["hits_at_1"] >= 16 and res["hits_at_3"] >= 17 and res["mrr"] >= 0.7427 - 5e-5


def test_the_index_mnemo_scorer_ranks_and_scores_as_the_oracle(tmp_path):
    """Mnemo's rule over the index's stored vectors gives the in-memory oracle's hits,
    scores and all, on every memeval query, filtered by kind or not."""
    from mino_memory_graph.core import ops
    from memeval_corpus import CASES
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b"".join(ops.encode(*op) for op in corpus_ops()))
    g = Graph()
    for op in corpus_ops():
        g.apply(*op)
    eng = RecallEngine(g)
    s = Store.open(p, scorer="mnemo")
    for q, _ in CASES:
        for kind in ("Aspect", None):
            want = [(h.node, h.score, h.via_graph) for h in eng.search(q, 8, kind=kind).hits]
            got = [(h.node, h.score, h.via_graph) for h in s.search(q, 8, kind=kind).hits]
            assert got == want, q


def test_scorer_from_config_name(tmp_path):
    from mino_memory_graph.recall.search import IndexSearch, MnemoSearch

    p = tmp_path / "journal.jsonl"
    cfg = {"memory": {"graph": {"scorer": "mnemo"}}}
    assert isinstance(Store.open(p, config=cfg).scorer, MnemoSearch)
    assert isinstance(Store.open(p).scorer, IndexSearch)  # the default, from the index
    import pytest
    with pytest.raises(ValueError):
        Store.open(p, scorer="no-such-scorer")
