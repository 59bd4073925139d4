"""Helpers shared by the loop tests (importable: conftest puts this folder on sys.path)."""
from mino_memory_graph.store import Store

GRAPH = {"memory": {"backend": "graph"}}


def journal(home):
    """The graph as the journal holds it now, opened afresh (no derived cache)."""
    return Store.open(home / "graph" / "journal.jsonl", use_cache=False)
