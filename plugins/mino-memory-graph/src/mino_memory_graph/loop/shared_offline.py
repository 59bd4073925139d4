"""A turn while the shared journal's server is away: recall from this machine's copy.

The loop's ``begin`` records the turn's episode in the same breath as it recalls; with a
shared journal whose server cannot be reached that write fails (``SharedJournalError``).
``begin`` here wraps it (and names the session in the rows this turn writes).
The turn still gets its recall block, read from the local mirror, with one line saying
memory is read-only for now; nothing is recorded for the turn (``observe`` and ``end``
see no episode and do nothing), and the next turn tries the server again.
"""
from __future__ import annotations

from .memories import memory_for, identity_of
from ..core.provenance import origins_for
from .recall_block import recall_hits, render

NOTE = ("(Shared memory is read-only for now: its server cannot be reached; this turn "
        "is not recorded.)")


def begin(turn, begin_turn):
    """``begin_turn(turn)`` (the loop's ``begin``); with a shared journal its rows name
    this session, and a write refused because the server is away leaves the turn its
    recall (``recall_only``). A file journal's errors are untouched."""
    session = turn.session
    journal = memory_for(session.home, session.config).store.journal
    shared = getattr(journal, "shared", False)
    if shared:
        journal.session = str(session.id)
    try:
        return begin_turn(turn)
    except OSError as e:
        if not shared:
            raise
        from ..journal.journal_pg import SharedJournalError  # loaded already: the journal is one

        if not isinstance(e, SharedJournalError):  # this machine's copy (a full disk)
            raise
        return recall_only(turn)


def recall_only(turn) -> str | None:
    """The recall block of ``turn`` without writing anything."""
    session = turn.session
    mem = memory_for(session.home, session.config)
    g = mem.store.graph
    project = mem.standing.project_id(g, identity_of(session))
    user = mem.standing.user_id(g)
    hits = recall_hits(mem, turn.user_text or "", project, session=str(session.id))
    hits = [(nid, s) for nid, s in hits if g.live(nid) is not None]
    block = render(g, user, project, hits, origins_for(mem.store, session.home))
    return f"{block}\n{NOTE}" if block else None
