"""A rebuild's text work (lexical words, hashing-v1 vectors) on a second core.

Rebuilding the index of a large journal spends about a quarter of its time turning node
texts into the words the lexical index holds and the hashing-v1 vectors. Both depend on
the text alone, so while this process replays window ``i + 1`` a second process derives
window ``i``'s texts. The parent collects a window's results before it sends the next
one, so neither process ever writes into a full pipe while the other is writing too.

``Deferred`` is what a rebuild into a fresh file uses: ``submit`` a window's
``(ids, texts)``, ``collect`` them back as ``(ids, rows)`` at the next flush. It starts
the worker only for a journal worth it (``WORKER_BYTES``) on a machine with a second
core, and ``MINO_GRAPH_REBUILD_WORKER=0`` keeps everything in-process. A worker that
cannot start or dies mid-way costs nothing but the speed: its window is derived
in-process and so is the rest of the rebuild.

Frames both ways: a 4-byte little-endian length, then ``marshal`` of a list (texts in;
``[words, wlen, temporal, vector]`` rows out). marshal carries only str, bytes and int
lists here, between two processes of the same program and Python.
"""
from __future__ import annotations

import marshal
import os
import struct
import subprocess
import sys

WORKER_BYTES = 16 << 20  # journals smaller than this rebuild in a second or so: in-process
_HEAD = struct.Struct("<I")


def derive(texts: list[str]) -> list[list]:
    """``[words, wlen, temporal, vector]`` of each text, as ``index._Sink.flush`` stores them."""
    from . import words as _words
    from .vectors import _sparse

    out = []
    relative = _words._RELATIVE_TIME_STEMS
    for text, vec in zip(texts, _sparse(texts)):
        toks = _words.tokenize(text)
        out.append([" ".join(toks), len(toks), int(not relative.isdisjoint(toks)), vec])
    return out


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Deferred:
    """A rebuild's texts, derived one window behind (see the module docstring)."""

    def __init__(self, journal_bytes: int):
        self.proc: subprocess.Popen | None = None
        self.pending: tuple[list, list] | None = None
        self.sent = False  # the pending window is with the worker
        if (journal_bytes >= WORKER_BYTES and _cores() > 1
                and os.environ.get("MINO_GRAPH_REBUILD_WORKER", "1") != "0"):
            self._start()

    def _start(self) -> None:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mino_memory_graph.text.text_worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env, close_fds=True)
        except OSError:
            self.proc = None

    def submit(self, ids: list, texts: list) -> None:
        assert self.pending is None, "collect the last window first"
        self.pending, self.sent = (ids, texts), False
        if self.proc is not None and texts:
            try:
                payload = marshal.dumps(texts)
                self.proc.stdin.write(_HEAD.pack(len(payload)) + payload)
                self.proc.stdin.flush()
                self.sent = True
            except (OSError, ValueError):
                self._lost()

    def collect(self) -> tuple[list, list]:
        """The last window's ``(ids, rows)`` (empty lists when none is pending)."""
        if self.pending is None:
            return [], []
        ids, texts = self.pending
        self.pending = None
        rows = None
        if self.sent:
            try:
                head = self.proc.stdout.read(_HEAD.size)
                (n,) = _HEAD.unpack(head)
                rows = marshal.loads(self.proc.stdout.read(n))
                if len(rows) != len(texts):
                    rows = None
            except (OSError, ValueError, EOFError, TypeError, struct.error):
                rows = None
            if rows is None:
                self._lost()
        if rows is None:
            rows = derive(texts) if texts else []
        return ids, rows

    def _lost(self) -> None:
        """The worker is gone or confused: the rest of the rebuild runs in-process."""
        proc, self.proc, self.sent = self.proc, None, False
        if proc is not None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


def main() -> None:
    """The worker: frames of texts in on stdin, frames of derived rows out on stdout."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = inp.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        (n,) = _HEAD.unpack(head)
        payload = marshal.dumps(derive(marshal.loads(inp.read(n))))
        out.write(_HEAD.pack(len(payload)) + payload)
        out.flush()


if __name__ == "__main__":
    main()
