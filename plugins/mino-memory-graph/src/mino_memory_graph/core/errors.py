"""The graph memory's errors, at the bottom of its imports (the store, the journals and
the commands all raise or catch them)."""
from __future__ import annotations


class MemoryError_(Exception):
    """A request that cannot be done (unknown node, bad kind...): one line for people."""


class SharedJournalError(OSError, MemoryError_):
    """The shared journal cannot do what was asked: one line for people, no password.
    An ``OSError`` for the paths that write (the tools say "nothing was saved", unless
    ``maybe_saved``: the connection went during the commit), and a ``MemoryError_`` for
    the ``mino memory`` commands, which print those in one line."""

    maybe_saved = False


class IndexUnavailable(OSError, MemoryError_):
    """The on-disk index can neither be opened nor made again from the journal (a full
    disk, a folder that cannot be written): one line for people; the journal is intact."""
