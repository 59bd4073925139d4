"""Helpers shared by the loop tests (importable: conftest puts this folder on sys.path)."""
from mino_memory_graph.store import Store

GRAPH = {"memory": {"backend": "graph"}}


def journal(home):
    """The store, opened afresh."""
    return Store.open(home / "graph" / "journal.jsonl")


def graph_of(home):
    """The graph as the journal holds it now: the oracle's replay (every node listable)."""
    from oracle import replay

    return replay(home)


def mino(home, *args, cwd=None, env=None):
    """The real ``mino`` beside this interpreter, in an isolated environment for ``home``."""
    import os
    import subprocess
    import sys

    from mino_core.testing.harness import isolated_env

    e = isolated_env(home)
    e.update(env or {})
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "mino"), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd or home, env=e,
                          stdin=subprocess.DEVNULL)


def ok(home, *args):
    """``mino(home, *args)`` that must succeed with no traceback."""
    r = mino(home, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r
