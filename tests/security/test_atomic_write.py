"""The core's one atomic-write helper: lands in the folder that was checked, or nowhere."""
from __future__ import annotations

import os
import stat
import time

import pytest

from mino_core import PathChanged, atomic_write
from mino_core.atomic import STALE_SECONDS, TEMP_PREFIX, clean_stale


def test_writes_through_new_folders_and_keeps_an_existing_mode(tmp_path):
    target = tmp_path / "a" / "b" / "c.txt"
    atomic_write(target, "one", root=tmp_path, make_parents=True)
    assert target.read_text() == "one"
    os.chmod(target, 0o640)
    atomic_write(target, b"two", root=tmp_path)
    assert target.read_bytes() == b"two" and stat.S_IMODE(target.stat().st_mode) == 0o640
    atomic_write(target, "three", root=tmp_path, mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(target.parent) == ["c.txt"]


def test_a_link_on_the_way_is_refused_and_nothing_lands_behind_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "d").symlink_to(outside)
    with pytest.raises(PathChanged, match="'d' on the way"):
        atomic_write(root / "d" / "f.txt", "x", root=root, make_parents=True)
    (root / "file").write_text("")
    with pytest.raises(PathChanged):
        atomic_write(root / "file" / "f.txt", "x", root=root)
    assert os.listdir(outside) == []


def test_a_path_outside_the_root_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not inside"):
        atomic_write(tmp_path / "x", "x", root=tmp_path / "sub")
    with pytest.raises(ValueError):
        atomic_write(tmp_path / "sub" / ".." / "x", "x", root=tmp_path / "sub")


def test_a_final_link_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    (root / "f").symlink_to(outside)
    atomic_write(root / "f", "new", root=root)
    assert outside.read_text() == "keep"
    assert not (root / "f").is_symlink() and (root / "f").read_text() == "new"


def test_exclusive_and_before_replace_leave_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "m.md"
    atomic_write(target, "first", exclusive=True)
    with pytest.raises(FileExistsError):
        atomic_write(target, "second", exclusive=True)

    def refuse():
        raise RuntimeError("changed")

    with pytest.raises(RuntimeError):
        atomic_write(target, "third", before_replace=refuse)
    assert target.read_text() == "first" and os.listdir(tmp_path) == ["m.md"]


@pytest.mark.parametrize("length", [236, 237, 255])
def test_names_up_to_255_bytes_are_written(tmp_path, length):
    """The old temporary name was the target's plus 18 characters: 237+ crashed."""
    target = tmp_path / ("n" * length)
    atomic_write(target, "x")
    assert target.read_text() == "x"
    with pytest.raises(OSError, match="too long"):
        atomic_write(tmp_path / ("n" * 256), "x")


def test_stale_temporary_files_are_cleaned_by_the_next_write(tmp_path):
    stale = tmp_path / f"{TEMP_PREFIX}0123456789abcdef"
    fresh = tmp_path / f"{TEMP_PREFIX}fedcba9876543210"
    stale.write_text("left by a crash")
    fresh.write_text("another writer's, in progress")
    old = time.time() - STALE_SECONDS - 10
    os.utime(stale, (old, old))
    mine = tmp_path / ".mino-tmp-notes.txt"  # a user's file: not exactly our name shape
    mine.write_text("user's")
    os.utime(mine, (old, old))
    atomic_write(tmp_path / "f.txt", "x")
    assert sorted(os.listdir(tmp_path)) == sorted([fresh.name, mine.name, "f.txt"])
    os.utime(fresh, (old, old))
    assert clean_stale(tmp_path) == 1
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, "f.txt"])


def test_swapping_a_folder_for_a_link_never_puts_a_write_outside(tmp_path):
    """The race the resolve-then-write code lost: writes run while another process swaps a
    folder for a symbolic link to an outside folder and back."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    swapper = start_swapper(root / "d", outside)
    refused = written = 0
    deadline = time.monotonic() + 2.0
    try:
        while time.monotonic() < deadline:
            try:
                atomic_write(root / "d" / "f.txt", "x", root=root, make_parents=True)
                written += 1
            except (PathChanged, FileNotFoundError, NotADirectoryError):
                refused += 1
    finally:
        swapper.kill()
        swapper.wait()
    assert os.listdir(outside) == []
    assert written and refused  # both sides of the race really happened


SWAPPER = """
import os, sys
folder, parked, outside = sys.argv[1:4]
n = 0
while True:
    n += 1  # a fresh parking name: when the writer's mkdir wins, the old one stays put
    for step in (lambda: os.rename(folder, f"{parked}{n}"), lambda: os.symlink(outside, folder),
                 lambda: os.unlink(folder), lambda: os.rename(f"{parked}{n}", folder)):
        try:
            step()
        except OSError:  # each step can lose a race with the writer's mkdir
            pass
"""


def start_swapper(folder, outside):
    """Another process (real parallelism, not the GIL's turns) that swaps ``folder`` for a
    link to ``outside`` and back, forever."""
    import subprocess
    import sys

    parked = folder.with_name(folder.name + ".parked")
    return subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(parked), str(outside)])
