from __future__ import annotations

import shutil

import pytest

from mino_core import ToolContext
from mino_tools_fs import sandbox


@pytest.fixture
def ctx(project, tmp_path):
    """A ToolContext on an empty temporary project (``ctx.config`` may be edited)."""
    return ToolContext(project_root=project, home=tmp_path / "home", session_id="test",
                       mode="manual", config={})


@pytest.fixture
def outside(tmp_path):
    """A folder next to the project, with a file in it, that no tool may touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("outside secret\n")
    return folder


@pytest.fixture
def bwrap():
    """Skips the test where bubblewrap is missing or unusable (CI installs it)."""
    box = sandbox.detect()
    if shutil.which("bwrap") is None or box is None or box.kind != "bubblewrap":
        pytest.skip("bubblewrap is not installed or not usable here")
    return box
