"""Writing one memory file: all or nothing, private to the user.

The write goes through the core's ``atomic_write``: the temporary file is created in the
memory folder's descriptor (so a folder swapped for a link cannot redirect it), and a
temporary file a crashed save left behind is removed by a later save once it is stale.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from mino_core import STALE_SECONDS, atomic_write

from .names import SUFFIX
from .store import Memory, fingerprint, format_memory

# What saves before the shared helper left behind: ".NAME.XXXXXXXX.tmp" (mkstemp's names).
_LEGACY_TEMP = re.compile(r"\.[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9_]{8}\.tmp")


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
    """Write ``memory`` as ``NAME.md`` in ``directory`` (mode 0600) through a temporary file.

    ``create`` refuses to replace an existing file (checked atomically with a hard link
    where the file system has them). ``expected``, when given, is the fingerprint the file
    must still have right before the replace; otherwise :class:`Changed` is raised.
    A crash at any point leaves either the old file or the new one, never a mix.
    """
    ensure_dir(directory)
    target = directory / f"{memory.name}{SUFFIX}"

    def still_expected() -> None:
        if expected is not ... and fingerprint(target) != expected:
            raise Changed(target)

    try:
        atomic_write(target, format_memory(memory), root=directory, mode=0o600,
                     exclusive=create, before_replace=still_expected)
    except FileExistsError:
        raise Changed(target) from None
    _clean_legacy(directory)
    return target


def _clean_legacy(directory: Path) -> None:
    """Remove stale temporary files in the old naming (the loader skips dot names, so they
    only took space); best effort."""
    cutoff = time.time() - STALE_SECONDS
    try:
        with os.scandir(directory) as entries:
            stale = [e for e in entries if _LEGACY_TEMP.fullmatch(e.name)
                     and e.is_file(follow_symlinks=False)
                     and e.stat(follow_symlinks=False).st_mtime < cutoff]
        for entry in stale:
            os.unlink(entry.path)
    except OSError:
        pass
