"""A cold open's parse on the second core: a worker process reads and parses the journal
while this process applies what it parsed.

Parsing (JSON, then ``ops.validate``) is about a third of replay, and applying the
rest is Python-bound, so one process cannot overlap them. For a big journal opened into
an empty graph, ``fold_in_worker`` starts ``python -I`` on this module, hands it the
open journal descriptor and a byte range of whole lines, and applies the worker's
frames as they come:

    frame := u64 length (little endian) + marshal((first, end, codes, fields, top))

for the whole lines in ``[first, end)``: ``codes`` holds one byte per line (the
operation's index in ``ops.OP_NAMES``, or ``ALONE`` for a line the worker did not
take) and ``fields`` each op's field values in SPECS order, what ``Graph.appliers``
take, and ``top`` their largest ``at`` (-1 for none), which moves the clock once per
frame. A zero length ends the stream. The worker checks fields with ``ops.takers``,
the same checks as the in-process fold; ALONE lines (not an op as they stand, not
UTF-8, padding) are read back and judged here by the per-line path, and a skipped op's
offset is found by reading its frame back, so quarantine and skip records are the same
either way. Replaying through the worker gives the same graph as ``fold`` (tests
compare them).

Any failure (no second core, the worker cannot start, dies, or sends something
malformed) costs nothing but time: ``fold_in_worker`` returns the offset up to which
it applied whole frames, and the caller folds the rest itself.
``MINO_GRAPH_REPLAY_WORKER=0`` turns the worker off.
"""
from __future__ import annotations

import logging
import marshal
import os
import struct
import sys
from pathlib import Path

from .ops import OP_NAMES

log = logging.getLogger("mino.memory.graph")

MIN_BYTES = 16 << 20  # below this (~140k ops) starting a worker costs more than it saves
ALONE = 255
READ = 1 << 16  # journal bytes per frame (whole lines, ~550): a frame stays in cache
PIPE_BYTES = 1 << 20  # Linux's default limit for an unprivileged process
_HEAD = struct.Struct("<Q")
_PKG_PARENT = str(Path(__file__).resolve().parent.parent)
_ENTRY = ("import sys; sys.path.insert(0, sys.argv[1]); "
          "from mino_memory_graph.feed import _worker; _worker(sys.argv[2:])")


def available() -> bool:
    """Whether a worker can help: two usable cores, an interpreter to start, not off."""
    if os.environ.get("MINO_GRAPH_REPLAY_WORKER", "").strip() == "0" or not sys.executable:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2


def fold_in_worker(journal, start: int, end: int, graph, report, bad: list[dict], *,
                   stop_after: int | None = None) -> int:
    """Apply the whole lines ``[start, end)`` of ``journal`` (a ``journal.Journal``;
    ``end`` just past a newline) to the empty ``graph``, parsed by a worker process.

    Returns the offset reached: ``end`` when the worker delivered everything, else the
    end of the last frame applied (the caller folds the rest). ``stop_after`` (tests)
    makes the worker die abruptly after that many frames.
    """
    import subprocess  # here: a store that never opens a big journal never loads it

    from .journal import MAX_LINE, RAW_CAP, _fold_lines, _skip, _too_long, bulk
    from .model import ApplyError

    argv = [sys.executable, "-I", "-c", _ENTRY, _PKG_PARENT, str(journal.fd), str(start),
            str(end)]
    if stop_after is not None:
        argv.append(str(stop_after))
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, pass_fds=(journal.fd,))
    except OSError as e:
        log.info("replay worker did not start (%s); replaying in this process", e)
        return start
    _widen(proc.stdout)
    reached = start
    done = False
    try:
        with bulk(graph, report, long_lived=True) as fresh:
            ap = graph.appliers(not fresh)
            table = [ap[name] for name in OP_NAMES]
            while True:
                frame = _next_frame(proc.stdout, reached)
                if frame is None:
                    break
                if frame is _END:
                    done = reached == end
                    break
                first, stop, codes, fields, top = frame
                offsets = _Offsets(journal, first, stop, len(codes))
                # counted for the frame, not per op: every op applies unless it is
                # skipped or is a line judged here (which counts itself)
                applied, skipped, alone, alone_skipped = len(codes), 0, 0, 0
                for code, f in zip(codes, fields):
                    if code == ALONE:  # ``f`` is the line's index in the frame
                        alone += 1
                        off, n = offsets.line(f)
                        if n - 1 > MAX_LINE:  # quarantined by its length, its head only
                            bad.append(_too_long(off, n - 1, journal.read(off, off + RAW_CAP)))
                            continue
                        line = journal.read(off, off + n)[:-1]
                        s1, a1 = _fold_lines((line,), graph, off, report, bad)
                        alone_skipped += s1
                        applied += a1
                        continue
                    try:
                        table[code](*f)
                    except ApplyError as e:
                        skipped += 1
                        i = next(k for k, x in enumerate(fields) if x is f)
                        _skip(report, offsets.line(i)[0], OP_NAMES[code], e)
                applied -= alone + skipped
                skipped += alone_skipped
                # Each op moves the clock past its ``at``, applied or not, and nothing
                # reads the clock meanwhile: the frame's largest ``at`` does it once.
                if top >= graph.clock:
                    graph.clock = top + 1
                report.applied += applied
                report.skipped += skipped
                report.ops += applied + skipped
                reached = stop
    finally:
        if not done:
            proc.kill()
        proc.stdout.close()
        rc = proc.wait()
    if not done:
        log.warning("replay worker stopped early (exit %s) at byte %d of %d; replaying "
                    "the rest in this process", rc, reached, end)
    return reached


_END = object()
_CODES = bytes(range(len(OP_NAMES))) + bytes((ALONE,))


def _widen(pipe) -> None:
    """Let the worker run some 30 frames ahead (a Linux pipe holds 64 KiB, about two):
    neither process then waits on the other's every hiccup."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # the default size works, a little slower


def _next_frame(stream, reached: int):
    """The next frame decoded whole, ``_END`` at the end marker, None when the stream
    broke off or is malformed (nothing of it has been applied)."""
    try:
        head = stream.read(8)
        if len(head) != 8:
            return None
        (size,) = _HEAD.unpack(head)
        if size == 0:
            return _END
        payload = stream.read(size)
        if len(payload) != size:
            return None
        frame = marshal.loads(payload)
        first, stop, codes, fields, top = frame
        if (top.__class__ is not int or first != reached or stop <= first or len(codes) != len(fields)
                or codes.translate(None, _CODES)):  # a byte that names no operation
            return None
        return frame
    except (ValueError, TypeError, EOFError, OSError) as e:
        log.info("replay worker sent something unreadable: %s", e)
        return None


class _Offsets:
    """Where a frame's lines lie, worked out from the journal only when asked (a
    skipped op, or a line judged here)."""

    def __init__(self, journal, first: int, stop: int, lines: int = 0):
        self.journal, self.first, self.stop, self.lines = journal, first, stop, lines
        self.starts: list[int] | None = None

    def line(self, i: int) -> tuple[int, int]:
        """(offset, byte length with its newline) of the frame's line ``i``."""
        if self.starts is None and self.lines == 1:  # e.g. an over-long line: not read
            self.starts = [0, self.stop - self.first]
        if self.starts is None:
            data = self.journal.read(self.first, self.stop)
            starts = [0]
            at = data.find(b"\n")
            while at >= 0:
                starts.append(at + 1)
                at = data.find(b"\n", at + 1)
            self.starts = starts
        a, b = self.starts[i], self.starts[i + 1]
        return self.first + a, b - a


# --- the worker -------------------------------------------------------------------------

def _worker(argv: list[str]) -> None:
    import json

    from .journal import _KEY_END, MAX_LINE, _surrogate_escape
    from .ops import takers

    fd, start, end = int(argv[0]), int(argv[1]), int(argv[2])
    stop_after = int(argv[3]) if len(argv) > 3 else -1
    scan = json.JSONDecoder().scan_once
    tk = takers()
    take = {name: (i, tk[name]) for i, name in enumerate(OP_NAMES)}
    popitem = dict.popitem
    out = sys.stdout.buffer
    frames = 0
    pos = start
    while pos < end:
        block = os.pread(fd, min(READ, end - pos), pos)
        cut = block.rfind(b"\n") + 1
        while cut == 0 and len(block) <= MAX_LINE:  # one line longer than a block
            more = os.pread(fd, min(READ, end - pos - len(block)), pos + len(block))
            if not more:
                sys.exit(3)  # the range was promised to end with a newline
            block += more
            cut = block.rfind(b"\n") + 1
        nl = block.find(b"\n")
        if nl < 0 or nl > MAX_LINE:
            # over MAX_LINE: never held whole; its end is found, and the parent, told
            # it is one line alone, quarantines it by its length without reading it
            at = pos + nl + 1
            if nl < 0:
                at = pos + len(block)
                while True:
                    more = os.pread(fd, min(READ, end - at), at)
                    if not more:
                        sys.exit(3)
                    i = more.find(b"\n")
                    if i >= 0:
                        at += i + 1
                        break
                    at += len(more)
            cut = at - pos
            block = b""
            codes, vals, top = bytearray((ALONE,)), [0], -1
        elif cut < len(block):
            block = block[:cut]
        if block:
            codes = bytearray()
            vals: list = []
            top = -1  # the largest ``at`` of the ops taken
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:  # every line of the block is judged by the parent
            n = block.count(b"\n")
            codes.extend(bytes((ALONE,)) * n)
            vals.extend(range(n))
        else:
            p, n = 0, len(text)
            count = text.count
            fast = not _surrogate_escape(text)  # the same rules as journal._fold
            while p < n:
                try:
                    obj, nxt = scan(text, p)
                    if text[nxt] == "\n":
                        name, body = popitem(obj)
                        code, t = take[name]
                        f = t(body) if (not obj and fast and count(
                            _KEY_END, p, nxt) == len(body) + 1) else None
                        if f is not None:
                            codes.append(code)
                            vals.append(f)
                            if f[-1] > top:
                                top = f[-1]
                            p = nxt + 1
                            continue
                except Exception:  # noqa: BLE001 - not an op as it stands: the parent judges
                    pass
                codes.append(ALONE)
                vals.append(len(vals))
                p = text.find("\n", p) + 1
        payload = marshal.dumps((pos, pos + cut, bytes(codes), vals, top))
        out.write(_HEAD.pack(len(payload)))
        out.write(payload)
        pos += cut
        frames += 1
        if frames == stop_after:
            out.flush()
            os._exit(9)
    out.write(_HEAD.pack(0))
    out.flush()
