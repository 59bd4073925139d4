"""Recall engine: expansion equals Mnemo's full rule, filters, scope, routing, block text."""
import random

import pytest

from mino_memory_graph.core import ops
from mino_memory_graph.core.model import EXPANSION_KINDS, Graph, f32
from oracle_recall import RecallEngine
from mino_memory_graph.recall.routing import expand_query_aliases, route_explained
from oracle import replay


def route_query(query: str) -> list[str]:
    return [a for a, _ in route_explained(query)]

WORDS = "alpha beta gamma delta helm ingress port deploy error crash repo path plan".split()


def reference_expand(g, eng, s, k, kind=None, areas=(), exclude=(), now=None):
    """Mnemo's expand() verbatim in spirit: every seed, every edge, ties by id."""
    now = g.clock if now is None else now

    def passes(i):
        n = g.nodes.get(i)
        return (n is not None and not n.deleted and (kind is None or n.kind == kind)
                and (not areas or n.area in areas) and i not in exclude)
    seeds = sorted(((float(s[r]), int(eng.ids[r])) for r in range(len(s)) if s[r] > 1e-6),
                   key=lambda x: (-x[0], x[1]))
    out = {}
    for sc, nid in seeds:
        out[nid] = [sc, False]
        for e in sorted(replay(g).edges.values(), key=lambda e: e.id):
            if not e.alive_at(now) or e.kind not in EXPANSION_KINDS:
                continue
            nb = e.dst if e.src == nid else e.src if e.dst == nid else None
            if nb is None or not passes(nb):
                continue
            boosted = f32(sc * 0.5 * max(e.weight, f32(0.1)))
            cur = out.setdefault(nb, [0.0, True])
            if boosted > cur[0]:
                cur[0], cur[1] = boosted, True
    return sorted(((i, v[0], v[1]) for i, v in out.items()), key=lambda x: (-x[1], x[0]))[:k]


def random_graph(rnd, n=60):
    g = Graph()
    at = 1_700_000_000_001
    for i in range(1, n + 1):
        g.apply(*ops.create_node(i, rnd.choice(["Aspect", "Entity", "TaskEpisode"]),
                                 " ".join(rnd.sample(WORDS, 2)), at))
        if rnd.random() < 0.3:
            g.apply(*ops.set_area(i, rnd.choice(["Salience", "Executive", "Spatial"]), at))
        if rnd.random() < 0.2:
            g.apply(*ops.record_usefulness(i, rnd.random() < 0.7, at))
    for e in range(1, 3 * n):
        g.apply(*ops.link(e, rnd.randint(1, n), rnd.randint(1, n),
                          rnd.choice(["PartOf", "SuppliesContext", "DerivedFrom",
                                      "Supersedes"]), at))
        for _ in range(rnd.randint(0, 6)):
            g.apply(*ops.record_outcome(e, rnd.random() < 0.3, at))
        if rnd.random() < 0.1:
            g.apply(*ops.unlink(e, at))
    for i in rnd.sample(range(1, n + 1), 5):
        g.apply(*ops.delete_node(i, rnd.random() < 0.5, at))
    return g


@pytest.mark.parametrize("seed", range(25))
def test_expansion_matches_mnemos_rule(seed):
    rnd = random.Random(seed)
    g = random_graph(rnd)
    eng = RecallEngine(g)
    seen = {}
    orig = eng._expand

    def spy(s, k, kind, areas, exclude, now):
        seen["s"] = s.copy()
        return orig(s, k, kind, areas, exclude, now)
    eng._expand = spy
    for _ in range(6):
        q = " ".join(rnd.sample(WORDS, 3))
        k = rnd.choice([1, 3, 5, 10])
        kind = rnd.choice([None, None, "Aspect"])
        got = eng.search(q, k, kind=kind).hits
        ref = reference_expand(g, eng, seen["s"], k, kind=kind)
        assert [(h.node, h.score, h.via_graph) for h in got] == ref


def test_filters_never_leak_through_expansion():
    g = Graph()
    at = 1_700_000_000_001
    g.apply(*ops.create_node(1, "Aspect", "helm rollback", at))
    g.apply(*ops.create_node(2, "Entity", "kubernetes", at))
    g.apply(*ops.link(1, 1, 2, "PartOf", at))
    eng = RecallEngine(g)
    assert [h.node for h in eng.search("helm rollback").hits] == [1, 2]
    assert [h.node for h in eng.search("helm rollback", kind="Aspect").hits] == [1]
    assert [h.node for h in eng.search("helm rollback", areas=["Spatial"]).hits] == []


def test_project_scope_via_partof():
    g = Graph()
    at = 1_700_000_000_001
    for i, label, kind in ((1, "project git:a", "Entity"), (2, "project git:b", "Entity"),
                           (3, "deploy port a", "Aspect"), (4, "deploy port b", "Aspect"),
                           (5, "deploy port global", "Aspect")):
        g.apply(*ops.create_node(i, kind, label, at))
    g.apply(*ops.link(1, 3, 1, "PartOf", at))
    g.apply(*ops.link(2, 4, 2, "PartOf", at))
    eng = RecallEngine(g)
    got = {h.node for h in eng.search("deploy port", 10, scope=1).hits}
    assert 4 not in got and {3, 5} <= got


def test_routing_and_aliases():
    assert route_query("the build failed with an error") == ["Salience", "Procedural"]
    assert route_query("hello there") == []
    assert route_explained("which file path")[0] == ("Spatial", ["path", "file"])
    assert expand_query_aliases("Who gets PAGED") == "who gets paged page on-call"
    assert expand_query_aliases("pages") == "pages"


def test_routing_is_a_bias_and_votes_break_ties():
    g = Graph()
    at = 1_700_000_000_001
    g.apply(*ops.create_node(1, "Aspect", "cart deploy", at))
    g.apply(*ops.create_node(2, "Aspect", "cart deploy", at))
    g.apply(*ops.set_area(2, "Salience", at))
    g.apply(*ops.create_node(3, "Aspect", "unrelated words", at))
    eng = RecallEngine(g)
    # both texts differ only by the area_set log line; routing to Salience favours 2
    hits = eng.search("cart deploy error").hits
    assert hits[0].node == 2 and {h.node for h in hits} >= {1, 2}
    found = eng.search("cart deploy error")
    assert found.routed == ["Salience"] and "error" in found.why
    g.apply(*ops.create_node(4, "Aspect", "same text", at))
    g.apply(*ops.create_node(5, "Aspect", "same text", at))
    assert [h.node for h in eng.search("same text").hits][:2] == [4, 5]  # ties by id
    for _ in range(5):
        g.apply(*ops.record_usefulness(5, True, at))
    assert [h.node for h in eng.search("same text").hits][:2] == [5, 4]


def test_incremental_vectors_equal_fresh_build():
    rnd = random.Random(3)
    g = random_graph(rnd, 80)
    live = RecallEngine(g)
    live.search("alpha")
    for i in range(20):
        nid = rnd.randint(1, 80)
        if nid in g.nodes:
            g.apply(*ops.add_fact(nid, 1000 + i, "k", " ".join(rnd.sample(WORDS, 3)), g.clock))
        live.search("beta")
    fresh = RecallEngine(g)
    for q in ("alpha beta", "helm port", "error crash repo"):
        assert ([(h.node, h.score) for h in live.search(q, 10).hits]
                == [(h.node, h.score) for h in fresh.search(q, 10).hits])
