"""Search over the memory files, for a caller outside a turn (the ``memory_search`` hook).

A turn sees every memory in the index; a program asking over MCP sees only what it asks
for: the memories sharing the most words with the query (name, summary and details), each
as its index line, with its file as the source.
"""
from __future__ import annotations

import re
from pathlib import Path

from . import store

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1 or w.isdigit()}


def search(home: Path, query: str, limit: int) -> list:
    from mino_core import MemoryHit

    wanted = _words(query)
    if not wanted:
        return []
    directory = store.memory_dir(home)
    ranked = []
    for memory in store.scan(directory).memories:
        head = _words(f"{memory.name.replace('-', ' ')} {memory.summary}")
        body = _words(memory.details)
        score = (2 * len(wanted & head) + len(wanted & body)) / (2 * len(wanted))
        if score > 0:
            ranked.append((score, memory))
    ranked.sort(key=lambda pair: (-pair[0], pair[1].name))
    return [MemoryHit(ref=m.name, text=m.line(), score=round(s, 3),
                      source=f"memory file {directory / (m.name + store.SUFFIX)}")
            for s, m in ranked[:limit]]
