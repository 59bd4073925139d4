"""What a memory backend says about itself, and how the host chooses the active one.

The core names no backend: each declares its name, its priority and the folders it keeps
under the home folder through ``memory_backend()``. ``memory.backend`` in config.yaml (or
``MINO_MEMORY_BACKEND``) chooses by name among the installed ones; without a choice the
highest priority wins (ties: the name first in alphabetical order).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class MemoryBackend:
    """A memory backend's declaration.

    ``name``: what ``memory.backend`` says to choose it. ``priority``: chosen without
    config when no installed backend has a higher one (the graph backend declares 100,
    the files backend 10). ``folders``: folders under the home folder it keeps its memory
    in, relative names; start-up checks that none of them is a file, and the backend makes
    them itself when it first saves.
    """

    name: str
    priority: int = 0
    folders: tuple[str, ...] = ()
    description: str = ""


def declared(host: Any, results: list[tuple[str, Any]]) -> dict[str, MemoryBackend]:
    """Every backend the plugins declared, by name; each plugin's ``backend`` set. A
    malformed declaration or a name two plugins declare is one line in ``host.errors``."""
    out: dict[str, MemoryBackend] = {}
    owner: dict[str, str] = {}
    for plugin, value in results:
        if isinstance(value, str) and value.strip():
            value = MemoryBackend(value.strip())
        if not isinstance(value, MemoryBackend) or not _valid(value):
            host.errors.append(f"Plugin {plugin} returned {value!r} from memory_backend, not a "
                               "mino_core.MemoryBackend with a name, a whole-number priority and "
                               "relative folder names; it is not offered as a backend.")
            continue
        if value.name in out:
            host.errors.append(f"Memory backend {value.name!r} is declared by both {owner[value.name]} "
                               f"and {plugin}; the first (by plugin name) is used. Uninstall one.")
            continue
        out[value.name], owner[value.name] = value, plugin
        host.plugins[plugin].backend = value.name
    return out


def _valid(backend: MemoryBackend) -> bool:
    if not backend.name or not isinstance(backend.priority, int) or isinstance(backend.priority, bool):
        return False
    folders = backend.folders
    return isinstance(folders, (tuple, list)) and all(
        isinstance(f, str) and f and not f.startswith(("/", "~")) and ".." not in f.split("/")
        for f in folders)


def wanted(config: dict[str, Any]) -> tuple[str, str]:
    """The backend name the person chose, and where the choice came from ("" when none)."""
    name = os.environ.get("MINO_MEMORY_BACKEND", "").strip()
    if name:
        return name, "MINO_MEMORY_BACKEND"
    memory = config.get("memory")
    name = str((memory or {}).get("backend") or "").strip() if isinstance(memory, dict) else ""
    return name, "memory.backend in config.yaml"


def choose(host: Any, backends: dict[str, MemoryBackend]) -> tuple[str | None, str]:
    """The active backend's name (None: no memory) and why, as ``mino plugins`` shows it."""
    name, source = wanted(host.context.config)
    if name:
        if name in backends:
            return name, f"chosen by {source}"
        have = ", ".join(sorted(backends)) or "none"
        host.errors.append(f"{source} asks for memory backend {name!r}, which is not installed "
                           f"(installed: {have}). Running without memory.")
        return None, f"{name!r} from {source} is not installed"
    if not backends:
        return None, "no memory backend is installed"
    best = sorted(backends.values(), key=lambda b: (-b.priority, b.name))[0]
    if len(backends) == 1:
        return best.name, "the only memory backend installed"
    return best.name, (f"the highest priority installed ({best.priority}) and nothing "
                       "chose another")


def folders(backends: dict[str, MemoryBackend]) -> list[str]:
    """Every folder the installed backends keep under the home folder."""
    return sorted({f for b in backends.values() for f in b.folders})


def check_folders(home: Path, backends: dict[str, MemoryBackend]) -> None:
    """A folder an installed backend declared that is a file is a ConfigError naming it
    (the backend makes its folders itself, when it first saves)."""
    from .config import ConfigError

    where = "MINO_HOME" if os.environ.get("MINO_HOME") else "the home folder"
    for backend in sorted(backends.values(), key=lambda b: b.name):
        for folder in backend.folders:
            path = home / folder
            if path.exists() and not path.is_dir():
                raise ConfigError(f"{path} (in {where}) is a file, not a folder: memory backend "
                                  f"{backend.name} keeps its memory there. Move it away.")
