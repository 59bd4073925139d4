"""The opt-in server embedder against the scripted server on loopback: texts go in batches,
queries and documents are told apart (``input_type``, or E5's prefixes where the server
refuses the field), and the disk cache keeps the two apart."""
from mino_core.testing.server import fake_embedding

from mino_memory_graph.text.embed import OpenAIEmbedder, embedder_from_config


def _embedder(server, tmp_path, **kw):
    return OpenAIEmbedder("e5-small", base_url=server.base_url, api_key="x",
                          cache_dir=tmp_path / "embed", **kw)


def test_texts_not_cached_go_in_batches(scripted_server, tmp_path):
    emb = _embedder(scripted_server, tmp_path, batch=64)
    texts = [f"memory number {i}" for i in range(100)]
    vectors = emb.embed_many(texts)
    assert [len(r["input"]) for r in scripted_server.embedding_requests] == [64, 36]
    assert all(v is not None for v in vectors)
    assert list(vectors[7]) == [float(x) for x in _f32(fake_embedding("memory number 7"))]
    # A second pass is served from the cache, on disk too.
    again = _embedder(scripted_server, tmp_path, batch=64)
    again.embed_many(texts + ["one more"])
    assert [len(r["input"]) for r in scripted_server.embedding_requests] == [64, 36, 1]


def test_queries_and_documents_are_sent_with_their_input_type(scripted_server, tmp_path):
    emb = _embedder(scripted_server, tmp_path)
    assert emb.input_type == "field"  # auto, and not OpenAI itself
    emb.embed("deploys run through helm")
    emb.embed_query("deploys run through helm")
    kinds = [r.get("input_type") for r in scripted_server.embedding_requests]
    assert kinds == ["document", "query"]  # the same text twice: cached apart


def test_a_server_that_refuses_the_field_gets_prefixes(scripted_server, tmp_path):
    scripted_server.embedding_fields_refused = {"input_type"}
    emb = _embedder(scripted_server, tmp_path)
    assert emb.embed_query("why did the deploy 404") is not None
    assert emb.embed_many(["the deploy 404 was a stale route"])[0] is not None
    sent = [r for r in scripted_server.embedding_requests if "input_type" not in r]
    assert [r["input"] for r in sent] == [["query: why did the deploy 404"],
                                          ["passage: the deploy 404 was a stale route"]]
    assert any("refused input_type" in n for n in emb.notices)


def test_openai_itself_is_sent_neither(tmp_path):
    emb = OpenAIEmbedder("text-embedding-3-small", api_key="x", cache_dir=tmp_path)
    assert emb.input_type == "none"
    assert emb._request(["a"], "query") == {"input": ["a"]}


def test_a_failing_server_means_no_vector_and_a_notice(scripted_server, tmp_path):
    scripted_server.embedding_fields_refused = {"input"}  # every request is a 400
    emb = _embedder(scripted_server, tmp_path, input_type="none")
    assert emb.embed_many(["a", "b"]) == [None, None]
    assert any("2 text(s) have no vector" in n for n in emb.notices)


def test_the_mnemo_scorer_embeds_documents_once_and_the_query_as_a_query(
        scripted_server, tmp_path):
    from mino_memory_graph.store import Store

    config = {"memory": {"graph": {"scorer": "mnemo", "embedder": {
        "kind": "openai", "model": "e5-small", "base_url": scripted_server.base_url}}}}
    path = tmp_path / "graph" / "journal.jsonl"
    path.parent.mkdir()
    store = Store.open(path, config=config, fsync=False)
    with store.write() as w:
        for i in range(10):
            w.create_node("Aspect", f"fact {i} about the helm deploy")
    assert store.search("helm deploy", 3).hits
    scripted_server.embedding_requests.clear()
    fresh = Store.open(path, config=config, fsync=False)
    found = fresh.search("what was the helm deploy fact", 3)
    documents = [r for r in scripted_server.embedding_requests if r.get("input_type") == "document"]
    queries = [r for r in scripted_server.embedding_requests if r.get("input_type") == "query"]
    assert documents == []  # a rebuild is served by the cache on disk
    assert len(queries) == 1 and "helm deploy fact" in queries[0]["input"][0]
    assert found.hits


def test_config_names_the_input_type_and_batch(tmp_path):
    emb = embedder_from_config({"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                                "input_type": "prefix", "batch": 8}, tmp_path)
    assert (emb.input_type, emb.batch) == ("prefix", 8)


def _f32(values):
    import numpy as np

    return np.asarray(values, dtype=np.float32)
