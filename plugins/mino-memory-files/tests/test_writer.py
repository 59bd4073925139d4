"""Saving one memory file through the core's atomic helper."""
from __future__ import annotations

import os
import stat
import time

import pytest

from mino_core.atomic import STALE_SECONDS
from mino_memory_files import store, writer

MEMORY = store.Memory("uses-pnpm", "project", "The project uses pnpm.")


def test_a_save_is_private_and_create_never_replaces(memdir):
    memdir.parent.mkdir()
    path = writer.write(memdir, MEMORY, create=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(memdir.stat().st_mode) == 0o700
    with pytest.raises(writer.Changed):
        writer.write(memdir, MEMORY, create=True)
    with pytest.raises(writer.Changed):  # the file changed since it was shown
        writer.write(memdir, MEMORY, create=False, expected=None)
    assert os.listdir(memdir) == ["uses-pnpm.md"]


def test_temporary_files_of_crashed_saves_are_removed_by_the_next_save(memdir):
    """Before, every crashed save left a '.NAME.XXXXXXXX.tmp' in the folder for good."""
    memdir.mkdir(parents=True)
    old = time.time() - STALE_SECONDS - 1
    stale = [memdir / ".uses-pnpm.k3j_x9a2.tmp", memdir / ".mino-tmp-0123456789abcdef"]
    fresh = memdir / ".mino-tmp-fedcba9876543210"  # another process's save in progress
    for path in stale + [fresh]:
        path.write_text("half a save")
    for path in stale:
        os.utime(path, (old, old))
    writer.write(memdir, MEMORY, create=True)
    assert sorted(os.listdir(memdir)) == sorted([fresh.name, "uses-pnpm.md"])
