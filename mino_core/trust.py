"""Folder trust: whether the person said mino may work in a folder.

A first interactive start in a folder asks, as Claude Code and Codex do: mino reads the
folder's files, runs commands there (Bash, in the sandbox where there is one) and offers
its AGENTS.md / CLAUDE.md and skills for approval. Yes is remembered in the home's
``trusted-folders.json`` (0600, folder path -> when) and covers the folders below it; no
leaves mino, and is asked again next time. ``mino -p`` never asks (nobody is there to answer): it runs, and what a folder
could steer it with still needs its own approval by content hash (project instructions,
skills), skipped with a notice until approved.

The filesystem root and the home folder are never a project: mino starts there (to read,
to answer questions) but refuses Bash and every sandboxed tool without asking each time,
in every mode (a command there reaches everything the person owns). ``refusal`` is the
policy's call-in for that.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

TRUST_FILE = "trusted-folders.json"


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


def not_a_project(folder: Path) -> str | None:
    """``"/"`` or ``"your home folder"`` when ``folder`` is one of them, else None."""
    real = _real(folder)
    if real == os.path.realpath(os.sep):
        return "/"
    try:
        home = os.path.realpath(Path.home())
    except (OSError, RuntimeError, KeyError):
        return None
    return "your home folder" if real == home else None


def refusal(call, tool, session) -> str | None:
    """Why a call is refused in this project folder, or None: Bash (and any sandboxed
    tool) when the project is / or the home folder."""
    where = not_a_project(Path(session.project_root))
    if where and (call.name == "Bash" or getattr(tool, "sandboxed", None) is not None):
        return (f"mino refuses {call.name} with the project at {where}: start mino in a "
                "project folder")
    return None


def _load(home: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(home) / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    folders = data.get("folders") if isinstance(data, dict) else None
    return folders if isinstance(folders, dict) else {}


def trusted(home: Path, folder: Path) -> bool:
    """``folder`` or a folder above it was trusted (trusting ~/src trusts its projects)."""
    real = Path(_real(folder))
    folders = _load(home)
    return any(str(p) in folders for p in (real, *real.parents))


def remember(home: Path, folder: Path) -> None:
    """Record ``folder`` as trusted (OSError when the home cannot be written)."""
    from .atomic import atomic_write

    home = Path(home)
    folders = _load(home)
    folders[_real(folder)] = int(time.time())
    text = json.dumps({"version": 1, "folders": dict(sorted(folders.items()))}, indent=1) + "\n"
    atomic_write(home / TRUST_FILE, text, root=home, mode=0o600)


def check_interactive(home: Path, folder: Path, ui, ask) -> bool:
    """At an interactive start: True to go on. Asks once per folder (``ask(question)``
    returns the answer: True for yes); / and the home folder are not asked about, a
    notice says Bash is refused there."""
    where = not_a_project(folder)
    if where:
        ui.notice(f"(mino is running in {where}, which is not a project: it reads and answers, "
                  "but refuses Bash here. Start it in a project folder to work on one.)")
        return True
    if trusted(home, folder):
        return True
    yes = ask(f"mino has not worked in {folder} before. Do you trust the files in this folder? "
              "mino reads them, runs commands here (in the sandbox where there is one) and "
              "offers its AGENTS.md, CLAUDE.md and skills for approval. [y/N]")
    if not yes:
        ui.notice("Not trusted, so mino leaves (nothing was changed). Start it in a folder "
                  "you trust; it asks again next time.")
        return False
    try:
        remember(home, folder)
    except OSError as exc:
        ui.notice(f"(Could not record the trust in {Path(home) / TRUST_FILE}: {exc}; mino asks "
                  "again next time.)")
    return True
