"""Confinement: every path a tool touches must resolve inside the project root."""
from __future__ import annotations

import os
from pathlib import Path

from mino_core import InvalidArguments


class OutsideProject(InvalidArguments):
    """A path that leads outside the project; the message says how and what to do."""


def project_real(root: Path) -> Path:
    return Path(os.path.realpath(root))


def is_inside(path: Path, root: Path) -> bool:
    """Whether the already-resolved ``path`` lies in the already-resolved ``root``."""
    return path == root or root in path.parents


def resolve(root: Path, path: str) -> Path:
    """The real path (symbolic links resolved) of ``path`` taken relative to ``root``.

    Raises OutsideProject when it is outside the root: directly (an absolute path),
    through ``..``, or through a symbolic link anywhere along the way. A path that does
    not exist yet resolves as far as it exists, so a new file's folder is checked too.
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidArguments("path is empty; give a path relative to the project root.")
    if "\x00" in path:
        raise InvalidArguments("path contains a NUL character.")
    base = project_real(root)
    given = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
    joined = given if given.is_absolute() else base / given
    lexical = Path(os.path.normpath(joined))
    if not is_inside(lexical, base) and not is_inside(lexical, Path(os.path.abspath(root))):
        how = "is an absolute path" if given.is_absolute() else "climbs out through '..'"
        raise OutsideProject(
            f"Refused: {path!r} {how} and lies outside the project ({base}). "
            "Only files inside the project can be used; give a path relative to the project root.")
    try:
        real = Path(os.path.realpath(joined))
    except OSError as exc:  # a link removed while realpath followed it
        raise InvalidArguments(f"{path!r} changed while it was being checked ({exc.strerror}); "
                               "try again.") from None
    if not is_inside(real, base):
        raise OutsideProject(
            f"Refused: {path!r} passes through a symbolic link that leads outside the project "
            f"(to {real}). Only files inside the project can be used.")
    return real


def relative(root: Path, real: Path) -> str:
    """How a resolved path is shown to the model and the user: relative, with '/'."""
    rel = os.path.relpath(real, project_real(root))
    return "." if rel == "." else rel.replace(os.sep, "/")
