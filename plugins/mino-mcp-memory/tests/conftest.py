"""Fixtures: the installed ``mino mcp serve``, reached with the SDK's own client."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture
def home(mino_home):
    """A home whose config picks the backend a test names (graph unless told)."""
    return mino_home
