"""Paths a plugin declares the sandbox must hide or keep read-only (``protected_paths``).

The core collects what every loaded plugin declared (an inactive memory backend too: its
files stay on disk) and hands it to tools (``ToolContext.protected``) and to the default
policy, which treats a write there as never an ordinary project edit. The core knows no
plugin's files; each plugin names its own.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

HIDDEN, READ_ONLY = "hidden", "read-only"


@dataclass(frozen=True)
class ProtectedPath:
    """``path`` hidden (not readable, not writable) or ``read-only`` inside the sandbox."""

    path: Path
    access: str = HIDDEN
    plugin: str = ""

    def __post_init__(self) -> None:
        if self.access not in (HIDDEN, READ_ONLY):
            raise ValueError(f"access must be {HIDDEN!r} or {READ_ONLY!r}, not {self.access!r}")


def normalise(plugin: str, declared: Any) -> tuple[list[ProtectedPath], list[str]]:
    """One plugin's answer as ProtectedPath items, and what was wrong with it.

    Accepted items: a ProtectedPath, a path (hidden), or a (path, access) pair."""
    items: Iterable[Any] = declared if isinstance(declared, (list, tuple, set)) else [declared]
    found, problems = [], []
    for item in items:
        try:
            if isinstance(item, ProtectedPath):
                path, access = item.path, item.access
            elif isinstance(item, (str, os.PathLike)):
                path, access = item, HIDDEN
            else:
                path, access = item
            found.append(ProtectedPath(Path(os.path.expanduser(os.fspath(path))), access, plugin))
        except (TypeError, ValueError) as exc:
            problems.append(f"plugin {plugin} declared a protected path mino cannot use: {item!r} ({exc})")
    return found, problems
