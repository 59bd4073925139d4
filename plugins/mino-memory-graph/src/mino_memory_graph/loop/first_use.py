"""The one-time notice that each user message is recorded as an episode.

A person should learn that memory keeps their messages before it has kept many, not from
the README alone: the first turn with the graph backend says so once per journal (a
marker file beside it, ``journal.noticed``), with the way to turn it off.
"""
from __future__ import annotations

import os

EPISODES_NOTICE = (
    "Memory: each message you send is recorded as an episode in {path}, so later "
    "sessions can recall it. To stop that, set `memory.graph.episodes: off` in "
    "config.yaml; `mino memory list --episodes` shows what is kept, `mino memory purge "
    "ID` removes one for good. (Shown once.)")


def episodes_notice(session) -> None:
    """Say ``EPISODES_NOTICE`` once per journal, when episodes are on (looked at once per
    session: every later turn of it costs a dictionary lookup)."""
    from .episodes import records_episodes
    from ..journal.journal import ensure_private_dir, open_private, resolve_journal_path
    from .memories import NAME

    state = session.state.setdefault(NAME, {})
    if state.get("episodes_notice_checked"):
        return
    state["episodes_notice_checked"] = True
    if not records_episodes(session.config):
        return
    path = resolve_journal_path(session.home, session.config)
    marker = path.with_suffix(".noticed")
    if marker.exists():
        return
    try:
        ensure_private_dir(marker.parent)
        fd = open_private(marker, os.O_WRONLY | os.O_EXCL)
        os.close(fd)
    except FileExistsError:
        return  # another process said it
    except OSError:
        pass  # unwritable: say it now and again next time, rather than never
    from mino_core import visible

    from ..journal.shared_url import masked, shared_url

    url = shared_url(session.config)  # then ``path`` is only this machine's copy of it
    where = f"the shared journal {masked(url)} (everyone using it reads it)" if url \
        else str(path)
    session.notice(EPISODES_NOTICE.format(path=visible(where)))
