"""Fixtures for the files backend's tests (the shared ones come from mino_core.testing)."""
from __future__ import annotations

import pytest

from mino_core import ToolContext
from mino_memory_files import store

FILES = {"memory": {"backend": "files"}}


@pytest.fixture
def memdir(tmp_path):
    return tmp_path / "home" / "memory"


@pytest.fixture
def put():
    """put(directory, name, type, summary, details="", file=None): write a memory file."""

    def write(directory, name, kind="project", summary="A fact.", details="", file=None):
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / (file or f"{name}.md")
        path.write_text(store.format_memory(store.Memory(name, kind, summary, details)),
                        encoding="utf-8")
        return path

    return write


@pytest.fixture
def ctx(tmp_path, project):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return ToolContext(project_root=project, home=home, session_id="test", mode="manual",
                       config=dict(FILES))
