"""The agent loop keeps the derived cache fresh for the next process."""
from __future__ import annotations

from mino_memory_graph import store as store_mod

GRAPH = {"memory": {"backend": "graph"}}


def test_a_turn_saves_the_cache_after_enough_operations(make_harness, scripted_server, mino_home, monkeypatch):
    monkeypatch.setattr(store_mod, "CACHE_MIN_OPS", 5)
    # the in-memory design's cache (with the index on, a turn reads the graph from it)
    h = make_harness(config={"memory": {"backend": "graph", "graph": {"index": "off"}}})
    scripted_server.add({"text": "ok"}, {"text": "ok"})
    h.turn("first message about the deploy port")
    h.turn("second message about the deploy port")
    cache = mino_home / "graph" / "journal.cache"
    from mino_memory_graph.loop import loop

    for mem in list(loop._open.values()):
        saving = getattr(mem.store, "_saving", None)
        if saving is not None:
            saving.join(10)
    assert cache.exists() and cache.stat().st_mode & 0o777 == 0o600
