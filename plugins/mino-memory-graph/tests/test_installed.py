"""Installed smoke test: the entry point loads, and ``mino`` lists and uses the graph."""
from __future__ import annotations

import json
import subprocess

from mino_core.testing import isolated_env, mino_command


def _mino(home, *args):
    return subprocess.run([*mino_command(), *args], env=isolated_env(home), capture_output=True,
                          text=True, timeout=60, cwd=home, stdin=subprocess.DEVNULL)


def test_installed_smoke(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    listing = _mino(home, "plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    [mine] = [p for p in data["plugins"] if p["name"] == "mino-memory-graph"]
    assert mine["status"] == "loaded" and mine["error"] == ""
    assert mine["distribution"] == "mino-memory-graph" and mine["memory_backend"] == "graph"
    assert mine["module"] == "mino_memory_graph.plugin"
    assert {"front_input", "after_turn", "register_tools"} <= set(mine["hooks"])
    assert sorted(mine["tools"]) == ["memory_save", "memory_search", "memory_view"]
    # With nothing chosen, the graph is the backend whatever else is installed.
    assert data["memory_backend"] == "graph" and data["errors"] == []
    stats = _mino(home, "memory", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert isinstance(json.loads(stats.stdout), dict)
