"""Context budget and compaction (filled in by the compaction work)."""
from __future__ import annotations


def maybe_compact(session, info) -> None:
    return None


def record_usage(session, usage) -> None:
    if usage:
        session.state["usage"] = usage
