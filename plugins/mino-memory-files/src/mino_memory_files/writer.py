"""Writing one memory file: all or nothing, private to the user."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .names import SUFFIX
from .store import Memory, fingerprint, format_memory


class Changed(Exception):
    """The target file is no longer what the caller expected; nothing was written."""


def ensure_dir(directory: Path) -> None:
    """Create the memory folder readable by the user alone (0700) when it is missing."""
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        return
    # mkdir's mode is filtered by the umask; set it exactly.
    os.chmod(directory, 0o700)


def write(directory: Path, memory: Memory, *, create: bool, expected: object = ...) -> Path:
    """Write ``memory`` as ``NAME.md`` in ``directory`` through a temporary file.

    ``create`` refuses to replace an existing file (checked atomically with a hard link
    where the file system has them). ``expected``, when given, is the fingerprint the file
    must still have right before the replace; otherwise :class:`Changed` is raised.
    A crash at any point leaves either the old file or the new one, never a mix.
    """
    ensure_dir(directory)
    target = directory / f"{memory.name}{SUFFIX}"
    data = format_memory(memory).encode("utf-8")
    # A dot name: the loader ignores it, so a leftover from a crash never reaches the index.
    fd, tmp = tempfile.mkstemp(prefix=f".{memory.name}.", suffix=".tmp", dir=directory)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if expected is not ... and fingerprint(target) != expected:
            raise Changed(target)
        if create:
            _link_new(tmp, target)
        else:
            os.replace(tmp, target)
        _sync_dir(directory)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return target


def _link_new(tmp: str, target: Path) -> None:
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise Changed(target) from None
    except OSError:
        # No hard links on this file system: check, then rename (a narrow race remains).
        if os.path.lexists(target):
            raise Changed(target) from None
        os.replace(tmp, target)


def _sync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
