"""The journal file: where it lives, the advisory lock, reading, quarantine, appending.

- Path: ``MNEMO_MEMORY_JOURNAL`` (Mnemo's variable) wins, then config
  ``memory.graph.journal``, then ``<mino home>/graph/journal.jsonl``.
- Siblings replace the journal's extension, as Mnemo names them: ``journal.lock`` (the
  flock target), ``journal.corrupt`` (quarantined lines, one JSON record each);
  ``journal.reported`` (which of those a person was already told about: each once).
- Files are created 0600, folders 0700.
- Lock discipline: exclusive for a whole write request (catch up, allocate, append,
  fsync); shared for reading. Because every writer holds the exclusive lock for its
  whole append, an unterminated last line seen under *either* lock belongs to a writer
  that died mid-line: it is applied if it parses, else quarantined, and the next append
  terminates it first.
"""
from __future__ import annotations

import fcntl
import gc
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from mino_core import plugin_logger

from ..core import ops as _ops
from ..core.model import ApplyError, Graph

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr

RAW_CAP = 4096
# A journal line longer than this (newline not counted) is quarantined without being
# read whole: no operation needs it, and one such line made every open take a minute.
# Documented in the plugin README.
MAX_LINE = 1 << 20
_scan_once = json.JSONDecoder().scan_once
_validate = _ops.validate


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _Duplicate(k)
            seen.add(k)
    return d


# The per-line reader refuses what Mnemo's serde reader refuses and Python's json takes:
# a key given twice (json keeps the last) and a lone surrogate escape (json makes a str
# that cannot be encoded again, which later broke ``show`` and ``search``).
_strict = json.JSONDecoder(object_pairs_hook=_no_duplicates)
_strict_scan = _strict.scan_once
_KEY_END = '":'  # each key ends so in a compact line: counted, it finds a repeated key


def _has_surrogate(obj) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _surrogate_escape(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` may hold a surrogate escape (``\\ud800``...)."""
    if end is None:
        end = len(text)
    return text.find("\\ud", start, end) >= 0 or text.find("\\uD", start, end) >= 0


def resolve_journal_path(home: Path | str | None = None, config: dict | None = None) -> Path:
    """Where the journal lives: env ``MNEMO_MEMORY_JOURNAL``, config, or the home default.
    A shared journal (a ``postgresql://`` URL) lives in the database: this is its copy
    on this machine (``shared_url.mirror_path``), never a path made of the URL."""
    from .shared_url import mirror_path, shared_url

    url = shared_url(config)
    if url:
        return mirror_path(url, home)
    return file_journal_path(home, config)


def file_journal_path(home: Path | str | None = None, config: dict | None = None) -> Path:
    """The file journal: env ``MNEMO_MEMORY_JOURNAL``, config (a path, not a URL), or the
    home default; with a shared journal configured, the one ``mino memory push`` copies."""
    from .shared_url import is_url

    env = os.environ.get("MNEMO_MEMORY_JOURNAL")
    if env:
        return Path(env).expanduser()
    graph_cfg = ((config or {}).get("memory") or {}).get("graph") if config else None
    if (isinstance(graph_cfg, dict) and graph_cfg.get("journal")
            and not is_url(graph_cfg["journal"])):
        return Path(str(graph_cfg["journal"])).expanduser()
    if home is None:
        home = Path(os.environ.get("MINO_HOME") or Path.home() / ".mino")
    return Path(home) / "graph" / "journal.jsonl"


def kept_name(path: Path, what: str) -> Path:
    """A new name beside ``path`` for an old journal kept after ``what`` (a repair, a
    reset): ``<stem>.before-<what>-<UTC time>[-n]<suffix>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    name = path.with_name(f"{path.stem}.before-{what}-{stamp}{path.suffix}")
    n = 1
    while name.exists():
        n += 1
        name = path.with_name(f"{path.stem}.before-{what}-{stamp}-{n}{path.suffix}")
    return name


def sibling(path: Path, ext: str) -> Path:
    return path.with_suffix(ext)


def ensure_private_dir(path: Path) -> None:
    if not path.exists():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass


def open_private(path: Path, flags: int) -> int:
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    return fd


class Report:
    """What a read found: counts, and the first few quarantined/skipped lines."""

    KEEP = 50

    def __init__(self):
        self.ops = 0
        self.applied = 0
        self.quarantined = 0
        self.skipped = 0
        self.blank = 0
        self.bad: list[dict] = []      # {"offset", "reason"}
        self.skips: list[dict] = []    # {"offset", "op", "reason"}

    def merge(self, other: "Report") -> None:
        self.ops += other.ops
        self.applied += other.applied
        self.quarantined += other.quarantined
        self.skipped += other.skipped
        self.blank += other.blank
        self.bad.extend(other.bad[: max(0, self.KEEP - len(self.bad))])
        self.skips.extend(other.skips[: max(0, self.KEEP - len(self.skips))])

    def as_dict(self) -> dict:
        return {"ops": self.ops, "applied": self.applied, "quarantined": self.quarantined,
                "skipped": self.skipped, "blank": self.blank,
                "quarantined_lines": self.bad, "skipped_ops": self.skips}


def _cap_raw(raw: str, nbytes: int) -> str:
    if len(raw) <= RAW_CAP:
        return raw
    return raw[:RAW_CAP] + f" ... [truncated, {nbytes} bytes total]"


class Journal:
    """The open journal and its lock file."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.lock_path = sibling(self.path, ".lock")
        self.corrupt_path = sibling(self.path, ".corrupt")
        ensure_private_dir(self.path.parent)
        self.fd = open_private(self.path, os.O_RDWR | os.O_APPEND)
        self.lock_fd = open_private(self.lock_path, os.O_RDWR)
        self.ino = os.fstat(self.fd).st_ino

    def close(self) -> None:
        for fd in (self.fd, self.lock_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fd = self.lock_fd = -1

    def replaced(self) -> bool:
        """True when the path now names another file (rotated or recreated)."""
        try:
            return os.stat(self.path).st_ino != self.ino
        except FileNotFoundError:
            return True

    def reopen(self) -> None:
        os.close(self.fd)
        ensure_private_dir(self.path.parent)
        self.fd = open_private(self.path, os.O_RDWR | os.O_APPEND)
        self.ino = os.fstat(self.fd).st_ino

    # --- locking ------------------------------------------------------------------

    @contextmanager
    def locked(self, exclusive: bool):
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)

    # --- reading ------------------------------------------------------------------

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, offset: int, end: int | None = None) -> bytes:
        if end is None:
            end = self.size()
        n = end - offset
        if n <= 0:
            return b""
        chunks = []
        while n > 0:
            chunk = os.pread(self.fd, min(n, 1 << 30), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def last_newline(self, start: int, end: int) -> int:
        """The offset just past the last newline in ``[start, end)``; ``start`` if none."""
        hi = end
        while hi > start:
            lo = max(start, hi - (1 << 16))
            i = self.read(lo, hi).rfind(b"\n")
            if i >= 0:
                return lo + i + 1
            hi = lo
        return start

    def quarantine(self, records: list[dict]) -> int:
        """Append ``{"reason", "raw", "offset"}`` records beside the journal, each bad
        line once: a line already recorded (same offset, same text) is not recorded again
        by a later open. Returns how many were new; never fatal."""
        # ASCII-only records: raw garbage (a NUL, a U+0085 line break) stays one visible line.
        if not records:
            return 0
        try:
            fd = open_private(self.corrupt_path, os.O_RDWR | os.O_APPEND)
            try:
                # exclusive: two processes opening at once must not both add a line
                fcntl.flock(fd, fcntl.LOCK_EX)
                known = _recorded(fd)
                lines = []
                for r in records:
                    key = (r.get("offset"), r.get("raw"))
                    if key not in known:
                        known.add(key)
                        lines.append(json.dumps(r, ensure_ascii=True) + "\n")
                if lines:
                    os.write(fd, "".join(lines).encode("utf-8", "replace"))
                return len(lines)
            finally:
                os.close(fd)
        except OSError as e:  # best effort: losing the audit copy must not stop a load
            log.warning("could not write quarantine file %s: %s", self.corrupt_path, e)
            return 0

    # --- quarantine, reported once ------------------------------------------------

    @property
    def reported_path(self) -> Path:
        return sibling(self.path, ".reported")

    def unreported(self) -> list[dict]:
        """Quarantine records (``.corrupt``) not yet shown to a person: each bad line is
        reported once, by its offset and a digest of its text (``.reported`` holds
        those). Best effort: an unreadable state file means reporting again."""
        records = _records(self.corrupt_path)
        if not records:
            return []
        known = set(_read_lines(self.reported_path))
        return [r for r in records if _report_key(r) not in known]

    def mark_reported(self, records: list[dict]) -> None:
        if not records:
            return
        try:
            fd = open_private(self.reported_path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, "".join(_report_key(r) + "\n" for r in records).encode())
            finally:
                os.close(fd)
        except OSError as e:
            log.warning("could not record reported lines in %s: %s", self.reported_path, e)

    # --- rewriting (purge, repair) ---------------------------------------------------

    def rewrite(self, chunks, keep_old: Path | None = None) -> int:
        """Replace the journal with the bytes ``chunks`` yields (caller holds the
        exclusive lock): a new private file beside it, fsynced, renamed over the path,
        so a crash leaves the old journal or the new one, never half of either.
        ``keep_old``: the old journal stays under that name (a hard link, 0600).
        Returns the new size. Other processes see ``replaced()`` under the lock and
        reopen before they read or append. A journal reached through a symlink is
        replaced where it really lives: the link stays, and the old text goes."""
        replace_file(Path(os.path.realpath(self.path)), chunks, keep_old)
        self.reopen()
        return self.size()

    # --- appending ----------------------------------------------------------------

    def append(self, payload: bytes, fsync: bool = True) -> int:
        """Append complete lines (caller holds the exclusive lock); returns the new size.

        A journal whose last byte is not a newline (a writer died mid-line) is
        terminated first, so the torn bytes stay one bad line and ours stay whole.
        """
        size = self.size()
        if size and os.pread(self.fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload
        view = memoryview(payload)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        if fsync:
            os.fsync(self.fd)
        return self.size()


def replace_file(path: Path, chunks, keep_old: Path | None = None) -> None:
    """Replace ``path`` with the bytes ``chunks`` yields: a new private file beside it,
    fsynced, renamed over it, its folder fsynced, so a crash leaves the old file or the
    new one. ``keep_old``: the old file stays under that name too (a hard link, 0600)."""
    tmp = path.with_name(f"{path.name}.rewrite-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0),
                 0o600)
    try:
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if keep_old is not None:
            os.link(path, keep_old)
            os.chmod(keep_old, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _report_key(record: dict) -> str:
    import hashlib

    raw = str(record.get("raw", "")).encode("utf-8", "replace")
    return f"{record.get('offset')} {hashlib.sha256(raw).hexdigest()[:32]}"


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return []


def _records(path: Path) -> list[dict]:
    """The records of a ``.corrupt`` file (its last ``RECORDED_TAIL`` bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - RECORDED_TAIL)
        data = os.pread(fd, size - start, start) if size else b""
    finally:
        os.close(fd)
    out = []
    for line in data.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            out.append(r)
    return out


RECORDED_TAIL = 16 << 20  # of .corrupt read for what is recorded (old files repeat a lot)


def _recorded(fd: int) -> set:
    """``(offset, raw)`` of the records in the last ``RECORDED_TAIL`` bytes of an open
    ``.corrupt`` file (a line recorded only before that is recorded once more)."""
    out = set()
    size = os.fstat(fd).st_size
    start = max(0, size - RECORDED_TAIL)
    data = os.pread(fd, size - start, start) if size else b""
    for line in data.splitlines():
        try:
            r = json.loads(line)
            out.add((r.get("offset"), r.get("raw")))
        except (ValueError, AttributeError):
            continue  # a hand-edited or torn record: harmless, it only costs a repeat
    return out


FREEZE_OPS = 100_000  # a fold this big into a long-lived graph is frozen (see bulk)


@contextmanager
def bulk(graph: Graph, report: Report, long_lived: bool = False):
    """The setting of a fold: yields whether ``graph`` was empty (``fresh``).

    - Replay allocates millions of small objects and no cycles: the cyclic collector
      is off meanwhile (it would run hundreds of times for nothing, doubling replay).
    - Into an empty graph (a cold open) every node the fold leaves is new, so dirty
      marks are set once at the end instead of by every op.
    - ``long_lived``: the graph outlives the caller (a store's own graph). A fold of
      at least ``FREEZE_OPS`` ops then moves everything the process tracks into the
      collector's permanent generation (``gc.freeze``) before collection resumes:
      otherwise the first collection after a cold open walks every object it just
      built (measured: 0.8 s after a million ops, a fifth of the open), and every
      full collection after that walks them again, for nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    fresh = not graph.nodes and not graph.edges
    ops = report.ops
    try:
        yield fresh
    finally:
        if fresh:
            graph.dirty.update(graph.nodes)
        if long_lived and report.ops - ops >= FREEZE_OPS:
            gc.freeze()
        if enabled:
            gc.enable()


def fold_range(read, start: int, end: int, graph: Graph, report: Report, bad: list[dict],
               long_lived: bool = False) -> None:
    """Parse complete lines of bytes ``[start, end)`` of a file read as ``read(a, b)``, a
    window at a time, and apply them. Lines that are not UTF-8 or not an operation go to
    ``bad`` (quarantine records), a line over ``MAX_LINE`` without being held whole (see
    ``windows``); operations that cannot apply are skipped with a warning. Never raises
    for content. ``long_lived``: see ``bulk``."""
    with bulk(graph, report, long_lived) as fresh:
        for off, piece in windows(read, start, end, bad):
            _fold(piece, graph, off, report, bad, not fresh)


WINDOW = MAX_LINE + 1  # a window this long holds a newline unless its first line is too long
SCAN = 1 << 16


def windows(read, start: int, end: int, bad: list[dict]):
    """Yield ``(offset, bytes)``: the lines of ``[start, end)`` in pieces of whole lines,
    each line at most ``MAX_LINE`` bytes (the last may lack its newline at ``end``).

    A longer line is never held whole: its head is kept for the quarantine record and
    the rest is only scanned for its end, ``SCAN`` bytes at a time.
    """
    pos = start
    while pos < end:
        buf = read(pos, min(end, pos + WINDOW))
        if not buf:
            return  # the file shrank under us; the next catch-up reloads
        cut = buf.rfind(b"\n") + 1
        if cut == 0 and len(buf) < WINDOW:
            cut = len(buf)  # the unterminated last line, short enough to judge
        if cut:
            piece = buf if cut == len(buf) else buf[:cut]
            yield pos, piece
            pos += cut
            continue
        p = pos + len(buf)
        newline = 0
        while p < end and not newline:
            more = read(p, min(end, p + SCAN))
            if not more:
                break
            i = more.find(b"\n")
            if i >= 0:
                more, newline = more[:i + 1], 1
            p += len(more)
        bad.append(_too_long(pos, p - pos - newline, buf[:RAW_CAP]))
        pos = p


CHUNK = 1 << 18  # bytes decoded at once (whole lines, about 2,000 of them)


def _fold(data: bytes, graph: Graph, base: int, report: Report, bad: list[dict],
          track: bool = True) -> None:
    """Parse complete lines of ``data`` (which starts at byte ``base``) and apply them.

    Lines that are not UTF-8 or not an operation go to ``bad`` (quarantine records);
    operations that cannot apply are skipped with a warning. Never raises for content.

    Fast path: ``data`` is decoded a chunk of whole lines at a time, and each line is
    parsed where it lies (``scan_once`` at its first character; the value must end
    right at the newline, so an op is only ever judged on its own line) and goes
    straight to its replay handler, which checks the fields inline
    (``Graph.replay_handlers_for``). No line list, no per-line string: the parse is
    the only copy. A line the fast path does not take (not one JSON object with one
    key, padding, a body its handler refuses, a chunk that is not UTF-8) is judged
    alone by the per-line path (``_fold_lines``).
    """
    rh = graph.replay_handlers_for(track)
    scan = _scan_once
    popitem = dict.popitem
    applied = skipped = 0
    size = len(data)
    start = 0
    while start < size:
        stop = data.find(b"\n", start + CHUNK)
        stop = size if stop < 0 else stop + 1
        chunk = data[start:stop] if start or stop < size else data
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            lines = chunk.split(b"\n")
            if not lines[-1]:
                lines.pop()
            sk, ap = _fold_lines(lines, graph, base + start, report, bad)
            skipped += sk
            applied += ap
            start = stop
            continue
        ascii = text.isascii()
        end = len(text)
        n_lines = text.count("\n") + (not text.endswith("\n"))
        alone = sk = 0  # lines judged alone; ops skipped here
        count = text.count
        key_end = _KEY_END
        # A chunk that may hold a surrogate escape is rare (neither our writer nor
        # Mnemo's escapes non-ASCII): its lines are all judged alone, by the strict reader.
        fast = not _surrogate_escape(text)
        pos = 0
        while pos < end:
            try:
                obj, nxt = scan(text, pos)
                if text[nxt] == "\n":
                    name, body = popitem(obj)
                    # As many keys as written (json keeps a repeated key's last value);
                    # else judged alone: a PushContext (nested keys) always is.
                    if (not obj and fast and count(key_end, pos, nxt) == len(body) + 1
                            and rh[name](body) is None):
                        pos = nxt + 1
                        continue
            except ApplyError as e:
                sk += 1
                _skip(report, base + start + _bytes_at(text, pos, ascii), name, e)
                pos = nxt + 1
                continue
            except Exception:  # noqa: BLE001 - not an op as it stands: judged alone below
                pass
            nl = text.find("\n", pos)
            nl = end if nl < 0 else nl
            s1, a1 = _fold_lines((text[pos:nl],), graph,
                                 base + start + _bytes_at(text, pos, ascii), report, bad)
            skipped += s1
            applied += a1
            alone += 1
            pos = nl + 1
        applied += n_lines - alone - sk
        skipped += sk
        start = stop
    report.applied += applied
    report.skipped += skipped
    report.ops += applied + skipped


def _bytes_at(text: str, pos: int, ascii: bool) -> int:
    """Byte offset of character ``pos`` of ``text`` once encoded."""
    return pos if ascii else len(text[:pos].encode("utf-8", "surrogatepass"))


def _skip(report: Report, offset: int, name: str, e: Exception) -> None:
    if len(report.skips) < Report.KEEP:
        report.skips.append({"offset": offset, "op": name, "reason": str(e)})
    log.warning("journal: skipping unappliable %s at byte %d: %s", name, offset, e)


def _fold_lines(lines, graph: Graph, base: int, report: Report,
                bad: list[dict]) -> tuple[int, int]:
    """The per-line path (str or bytes lines): returns ``(skipped, applied)``."""
    handlers = graph.handlers
    clock = graph.clock
    scan = _strict_scan
    validate = _validate
    applied = skipped = 0
    offset = base
    for line in lines:
        start = offset
        if line.__class__ is str:
            offset += (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1
        else:
            offset += len(line) + 1
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raw = line.decode("utf-8", "replace")
                bad.append({"reason": f"not utf-8 (first bad byte at {e.start})",
                            "raw": _cap_raw(raw, len(line)), "offset": start})
                continue
        if len(line) > MAX_LINE:  # only a caller holding such a line in memory gets here
            bad.append(_too_long(start, offset - start - 1, line[:RAW_CAP]))
            continue
        try:
            obj, end = scan(line, 0)
            if end != len(line) and line[end:].strip():
                why = "trailing characters after the operation"
            else:
                why = validate(obj)
        except _Duplicate as e:
            why = _duplicate_reason(e)
        except Exception:  # noqa: BLE001 - the slow path below decides
            if not line.strip():
                report.blank += 1  # padding, not corruption
                continue
            try:
                obj = _strict.decode(line)  # e.g. leading whitespace
                why = validate(obj)
            except _Duplicate as e:
                why = _duplicate_reason(e)
            except Exception as e:  # noqa: BLE001
                why = f"not json ({type(e).__name__}: {str(e)[:120]})"
        if why is None and _surrogate_escape(line) and _has_surrogate(obj):
            why = "a lone surrogate escape (not unicode; Mnemo refuses it too)"
        if why is not None:
            bad.append({"reason": why, "raw": _cap_raw(line, offset - start - 1),
                        "offset": start})
            continue
        ((name, body),) = obj.items()
        at = body["at"]
        if at >= clock:
            clock = at + 1
        try:
            handlers[name](body)
            applied += 1
        except ApplyError as e:
            skipped += 1
            _skip(report, start, name, e)
    graph.clock = clock
    return skipped, applied


def _duplicate_reason(e: _Duplicate) -> str:
    return f"key {str(e)[:40]!r} given twice (Mnemo refuses it too)"


def _too_long(offset: int, nbytes: int, head: bytes) -> dict:
    """The quarantine record of a line over ``MAX_LINE`` (only its head was read)."""
    if head.__class__ is not str:
        head = head[:RAW_CAP].decode("utf-8", "replace")
    raw = head[:RAW_CAP]
    return {"reason": f"line over {MAX_LINE} bytes ({nbytes} bytes), not read",
            "raw": raw + f" ... [truncated, {nbytes} bytes total]", "offset": offset}


def parse_one(line: str):
    """Decode one line into ``(name, body)``; raises ``ValueError`` with the reason."""
    try:
        obj = _strict.decode(line)
    except _Duplicate as e:
        raise ValueError(_duplicate_reason(e)) from None
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"not json ({str(e)[:120]})") from None
    why = _validate(obj)
    if why is None and _surrogate_escape(line) and _has_surrogate(obj):
        why = "a lone surrogate escape (not unicode; Mnemo refuses it too)"
    if why:
        raise ValueError(why)
    ((name, body),) = obj.items()
    return name, body
