"""How the person started mino, so every hint names a command they can run as it is.

After ``bash scripts/setup.sh`` mino lives in ``.venv/bin/mino`` and is not on PATH: a
hint saying ``mino --resume ID`` would fail with "command not found". The command is the
one this process was started as (``sys.argv[0]``, as the shell gave it), unless ``mino``
on PATH is that same file.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys


def program() -> str:
    """``mino``, or the path this process was started as (``.venv/bin/mino``)."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not argv0 or os.path.basename(argv0) != "mino" or os.sep not in argv0:
        return "mino"  # run as `mino` (found on PATH), or not as the console script at all
    found = shutil.which("mino")
    try:
        if found and os.path.samefile(found, argv0):
            return "mino"
    except OSError:
        pass
    return shlex.quote(argv0)


def command(args: str = "") -> str:
    """The command line to show: ``program()`` and ``args``."""
    return f"{program()} {args}".rstrip()
