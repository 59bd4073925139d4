"""The set-up as people run it: with nothing changed it finishes in seconds, says so, and
ends by telling the person how to run ``mino``. Its pins cover what it installs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(roots: dict[str, set[str]]) -> set[str]:
    """Every distribution that ``roots`` (name -> extras) need, transitively, as installed."""
    from packaging.requirements import Requirement

    seen, todo = set(), [(n, e) for n, e in roots.items()]
    while todo:
        name, extras = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for raw in metadata.requires(name) or []:
            req = Requirement(raw)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                continue
            todo.append((_norm(req.name), set(req.extras)))
    return seen


def test_constraints_pin_what_the_set_up_installs():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[_norm(name)] = version
    ours = {"mino-core", "mino-tools-fs", "mino-memory-files", "mino-memory-graph", "mino-mcp",
            "mino-mcp-memory"}
    assert not ours & set(pins), "constraints.txt pins only third-party packages"
    assert {"setuptools", "wheel"} <= set(pins)  # the set-up builds with these
    needed = _closure({"mino-core": {"test"}, **{n: {"test"} for n in ours - {"mino-core"}}}) - ours
    assert {"openai", "pluggy", "click", "pyyaml", "numpy", "pytest", "pydantic"} <= needed
    for name in sorted(needed):
        assert pins.get(name) == metadata.version(name), \
            f"{name} {metadata.version(name)} is installed but constraints.txt pins {pins.get(name)}"


def test_setup_with_nothing_changed_is_quick_and_says_how_to_run_mino():
    stamp = VENV / ".mino-setup-stamp"
    if Path(sys.prefix) != VENV or not stamp.exists():
        pytest.skip("this .venv was not made by scripts/setup.sh --test (running it would install)")
    before = stamp.read_text()
    started = time.monotonic()
    done = subprocess.run(["bash", "scripts/setup.sh", "--test"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "HOME": str(ROOT / ".venv")})  # no ~/.local/bin
    took = time.monotonic() - started
    if "up to date" not in done.stdout:
        pytest.skip("an input changed since the last set-up, which just reinstalled")
    assert done.returncode == 0, done.stderr
    assert took < 10, f"set-up with nothing to do took {took:.1f} s"
    lines = done.stdout.strip().splitlines()
    assert all(line.startswith("setup: ") for line in lines), done.stdout
    assert f"Run mino as {VENV / 'bin' / 'mino'}" in done.stdout
    assert "bash scripts/setup.sh --link" in done.stdout and "export PATH=" in done.stdout
    assert stamp.read_text() == before
