"""pytest fixtures shared by the core's and every plugin's tests.

- ``scripted_server``: a started ScriptedServer (add answers with ``.add``).
- ``mino_home`` / ``project``: empty temporary folders; ``MINO_HOME`` points at the home.
- ``make_harness(**kw)``: an in-process agent against the scripted server.
"""
from __future__ import annotations

import pytest

from .harness import Harness
from .server import ScriptedServer


@pytest.fixture
def scripted_server():
    server = ScriptedServer().start()
    yield server
    server.stop()


@pytest.fixture
def mino_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MINO_HOME", str(home))
    for key in ("MINO_PLUGINS", "MINO_DISABLE_PLUGINS", "MINO_MEMORY_BACKEND", "MINO_MODEL",
                "MINO_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "MNEMO_MEMORY_JOURNAL",
                "MINO_GRAPH_URL"):
        monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def make_harness(scripted_server, mino_home, project):
    def make(**kwargs) -> Harness:
        return Harness(scripted_server, mino_home, project, **kwargs)

    return make
