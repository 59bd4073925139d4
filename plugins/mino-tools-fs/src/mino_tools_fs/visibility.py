"""What the sandbox shows of the home folders, and what it keeps read-only of mino itself.

Homes: the person's home, ``/root`` and ``/home`` are empty folders inside the sandbox
(so ``~/.git-credentials``, ``~/.npmrc``, ``~/.kube``, shell history and whatever else
lies there are not readable, listed or not). Visible again, read-only: the folders the
person opts in (``tools-fs: {home_read: [...]}``; ``home_write: [...]`` for writable
ones, such as a cache a build fills), the ``PATH`` entries that lie in a home (the
toolchains the person runs, ``~/.cargo/bin``), and what Python loads mino from.

mino's own code (:func:`own_code`): ``sys.prefix`` and the base interpreter, every
``sys.path`` folder (site-packages, where a planted ``.pth`` file would run at mino's
next start; editable source folders), the folders of the modules loaded from files, and
the script that started mino. Read-only inside the sandbox, also when they lie in the
project (``scripts/setup.sh && .venv/bin/mino`` in a clone). A folder that contains the
project itself cannot be made read-only; the modules loaded from it still are.
"""
from __future__ import annotations

import os
import site
import sys
from pathlib import Path

HOMES = ("/root", "/home")


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def homes() -> list[Path]:
    """The home folders to empty: the person's own, /root and /home (other people's)."""
    found: list[Path] = []
    for path in [Path.home(), *map(Path, HOMES)]:
        try:
            real = _real(path)
            if real != Path("/") and real.is_dir() and real not in found:
                found.append(real)
        except OSError:
            continue
    return found


def parse_paths(value: object, key: str) -> tuple[list[Path], list[str]]:
    """``tools-fs.home_read`` / ``home_write``: a list of paths (``~`` expanded)."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [f"tools-fs.{key} must be a list of paths, not {type(value).__name__}"]
    paths, problems = [], []
    for item in value:
        if not isinstance(item, str) or not item.strip() or "\0" in item:
            problems.append(f"tools-fs.{key}: {item!r} is not a path")
            continue
        path = Path(item.strip()).expanduser()
        if not path.is_absolute():
            path = Path.home() / path
        paths.append(path)
    return paths, problems


def path_entries_in(folders: list[Path], environ: dict[str, str]) -> list[Path]:
    """The toolchains of the ``PATH`` folders that lie in one of ``folders``: the first
    folder below the home (``~/.cargo`` for ``~/.cargo/bin``, ``~/.pyenv`` for its shims,
    which run ``~/.pyenv/libexec``), or the entry itself under ``~/.local``."""
    found = []
    for entry in environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        try:
            real = _real(entry)
            if not real.is_dir():
                continue
        except OSError:  # a folder this user cannot enter
            continue
        home = next((f for f in folders if f in real.parents), None)
        if home is None:
            continue
        top = home / real.relative_to(home).parts[0]
        found.append(real if top.name == ".local" else top)
    return list(dict.fromkeys(found))


_OWN: list[Path] = []


def own_code() -> list[Path]:
    """Everything Python loads mino from (see the module text), computed once."""
    if _OWN:
        return list(_OWN)
    candidates: list[str] = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                             os.path.dirname(sys.executable)]
    candidates += [p for p in sys.path if p and os.path.isabs(p)]
    try:
        candidates += site.getsitepackages() + [site.getusersitepackages()]
    except (AttributeError, OSError):
        pass
    if sys.argv and sys.argv[0] and os.path.isabs(sys.argv[0]):
        candidates.append(sys.argv[0])
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not isinstance(file, str) or not os.path.isabs(file):
            continue
        candidates.append(os.path.dirname(file) if file.endswith("__init__.py") else file)
    seen: list[Path] = []
    for item in candidates:
        try:
            real = _real(item)
        except (OSError, ValueError):
            continue
        if real != Path("/") and os.path.lexists(real) and real not in seen:
            seen.append(real)
    # one mount for a folder and all in it
    outer = [p for p in seen if not any(o != p and o in p.parents for o in seen)]
    _OWN.extend(outer)
    return list(outer)
