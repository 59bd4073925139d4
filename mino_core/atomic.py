"""One way to replace a file: all or nothing, in the folder that was checked.

``atomic_write(path, data, root=...)`` is what the file tools, the memory files backend and
the graph cache use. It walks from ``root`` to the target's folder one name at a time with
directory file descriptors opened ``O_NOFOLLOW``, so a folder swapped for a symbolic link
between the caller's check and the write makes the write fail (:class:`PathChanged`)
instead of landing wherever the link points. The temporary file is created ``O_EXCL |
O_NOFOLLOW`` in that folder's descriptor, flushed to disk, then renamed over the target
through the same descriptor: a crash leaves the old file or the new one, never half.

Temporary names are short and fixed-length (``.mino-tmp-`` and 16 hex digits), so a target
name of any legal length (up to 255 bytes) can be written. A temporary file left by a
crashed save is removed by the next write into the same folder once it is older than
:data:`STALE_SECONDS` (a live write takes milliseconds; the margin covers a slow disk and
another process writing the same folder). :func:`clean_stale` does the same on demand.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Callable

TEMP_PREFIX = ".mino-tmp-"
STALE_SECONDS = 300
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + "[0-9a-f]{16}")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class PathChanged(OSError):
    """A folder on the way to the target is a symbolic link or not a folder (perhaps swapped
    after the caller checked the path); nothing was written."""


def atomic_write(path: "str | os.PathLike[str]", data: "bytes | str", *,
                 root: "str | os.PathLike[str] | None" = None, mode: int | None = None,
                 make_parents: bool = False, exclusive: bool = False,
                 before_replace: Callable[[], None] | None = None) -> Path:
    """Replace ``path`` with ``data`` (``str`` is written as UTF-8); returns ``path``.

    ``root``: a folder trusted as it is (opened following links); every folder between it
    and the target is opened without following links. ``path`` must lie inside it (give
    the already-resolved path). Without ``root`` the target's own folder is the root.
    ``mode``: the new file's permission bits; by default an existing file keeps its mode
    and a new one gets the umask's default. ``make_parents``: create missing folders
    (umask default) on the way. ``exclusive``: refuse to replace an existing file
    (FileExistsError). ``before_replace``: called right before the rename, when the new
    content is on disk; an exception it raises aborts the write, nothing changed.

    Raises :class:`PathChanged` for a link or non-folder on the way, ValueError for a
    ``path`` outside ``root``, and OSError as the system reports it (ENAMETOOLONG, ...).
    """
    target = Path(path)
    base = Path(root) if root is not None else target.parent
    parts = _parts_between(base, target)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd = _open_folder(base, parts[:-1], make_parents)
    try:
        _write_in(fd, parts[-1], payload, mode, exclusive, before_replace)
        clean_stale(fd)
    finally:
        os.close(fd)
    return target


def clean_stale(folder: "int | str | os.PathLike[str]", older_than: float = STALE_SECONDS) -> int:
    """Remove this helper's temporary files older than ``older_than`` seconds from ``folder``
    (a path or a directory descriptor); returns how many. Errors are ignored: cleaning is
    best effort and never fails a write."""
    removed = 0
    cutoff = time.time() - older_than
    try:
        fd = folder if isinstance(folder, int) else os.open(folder, _DIR_FLAGS)
    except OSError:
        return 0
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in entries if _TEMP_NAME.fullmatch(e.name)]
        for name in names:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    os.unlink(name, dir_fd=fd)
                    removed += 1
            except OSError:
                continue
    except OSError:
        pass
    finally:
        if not isinstance(folder, int):
            os.close(fd)
    return removed


# -- steps ------------------------------------------------------------------------------

def _parts_between(base: Path, target: Path) -> list[str]:
    """The names from ``base`` down to ``target``; refuses '..' and a target outside."""
    base_abs = Path(os.path.abspath(base))
    target_abs = Path(os.path.abspath(target if target.is_absolute() else base / target))
    try:
        rel = target_abs.relative_to(base_abs)
    except ValueError:
        raise ValueError(f"{target} is not inside {base}") from None
    parts = list(rel.parts)
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{target} does not name a file inside {base}")
    return parts


def _open_folder(base: Path, names: list[str], make_parents: bool) -> int:
    """A descriptor for ``base/names...``, each step opened without following links."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for name in names:
        try:
            child = _step(fd, name, make_parents)
        finally:
            os.close(fd)
        fd = child
    return fd


def _step(fd: int, name: str, make_parents: bool) -> int:
    """Open the folder ``name`` under ``fd``, creating it when asked."""
    try:
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not make_parents:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
            except FileExistsError:
                pass  # made meanwhile by someone else: opened without following below
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathChanged(exc.errno, f"{name!r} on the way to the file is a symbolic link "
                                         "or not a folder; nothing was written") from None
        raise
    return child


def _write_in(fd: int, name: str, payload: bytes, mode: int | None, exclusive: bool,
              before_replace: Callable[[], None] | None) -> None:
    if mode is None:
        mode = _existing_mode(fd, name)
    tmp = TEMP_PREFIX + secrets.token_hex(8)
    # A new file without a mode gets 0666 filtered by the umask, the way open() does.
    out = os.open(tmp, _TEMP_FLAGS, 0o600 if mode is not None else 0o666, dir_fd=fd)
    try:
        try:
            if mode is not None:
                os.fchmod(out, mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(out, view):]
            os.fsync(out)
        finally:
            os.close(out)
        if before_replace is not None:
            before_replace()
        if exclusive:
            _link_new(fd, tmp, name)
        else:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        try:
            os.unlink(tmp, dir_fd=fd)
        except FileNotFoundError:
            pass
    try:  # make the rename itself durable; not possible everywhere
        os.fsync(fd)
    except OSError:
        pass


def _existing_mode(fd: int, name: str) -> int | None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _link_new(fd: int, tmp: str, name: str) -> None:
    """Put ``tmp`` at ``name`` only if ``name`` does not exist (a hard link is atomic)."""
    try:
        os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "file exists", name) from None
    except OSError:
        # No hard links on this file system: check, then rename (a narrow race remains).
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            return
        raise FileExistsError(errno.EEXIST, "file exists", name) from None
