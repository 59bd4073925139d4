import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


import pytest  # noqa: E402 - after the path set-up above


@pytest.fixture
def graph_only(monkeypatch):
    """An agent with only the core and this plugin, and no store left open by another test.

    A test module that also registers an in-process plugin extends MINO_PLUGINS itself.
    """
    from mino_memory_graph.loop import loop

    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino.skills,mino-memory-graph")
    loop.forget_open()
    yield
    loop.forget_open()


# A throwaway PostgreSQL cluster for the shared-journal tests, one per test module.
@pytest.fixture(scope="module")
def pg():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'mino-memory-graph[postgres]')")
    from pg_server import PgServer, Unavailable

    server = PgServer()
    try:
        server.start()
    except Unavailable as e:
        server.close()
        pytest.skip(f"PostgreSQL cannot start here: {e}")
    yield server
    server.close()
