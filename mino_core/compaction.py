"""The context budget and compaction.

Budget: the next request's size in tokens. When the service reported usage for the last
response, the estimate is that response's input plus output tokens plus the records
added since, at 4 characters a token; otherwise the whole request at 4 characters a
token (a documented rough estimate, never sent anywhere).

Compaction replaces older turns with a summary written by a separate request that carries
no front input (no memory index, no recall) and no tools. It never summarises the turn in
progress or the two turns before it. The summary is logged as a ``compaction`` record
with ``cut``, the number of conversation records it replaces; history after that record
starts at ``cut``, so a resumed session rebuilds the same request.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from .logs import get_logger
from .model import ModelError
from .request import message_item, record_to_item, tool_schemas
from .sessionlog import CONVERSATION

DEFAULT_WINDOW = 128_000
DEFAULT_THRESHOLD = 0.8
KEEP_TURNS = 2  # turns before the one in progress that are never summarised
CHARS_PER_TOKEN = 4
log = get_logger("compaction")

SUMMARY_INSTRUCTIONS = """\
You summarise the earlier part of a coding session so that it can continue without it.
Write a compact summary of what the user asked for, what was done (files read and changed,
commands run and their results), decisions made, and what is still open. Keep exact file
paths, names, commands and error messages. Do not add advice or instructions of your own.
Reply with the summary text only."""


def window(session) -> int:
    config = session.config
    model = session.client.settings.model if session.client else ""
    per_model = (config.get("models") or {}).get(model) if isinstance(config.get("models"), dict) else None
    for source in (per_model, config):
        if isinstance(source, dict) and source.get("context_window"):
            try:
                return max(1024, int(source["context_window"]))
            except (TypeError, ValueError):
                pass
    from .context_window import learn, lookup

    learned = session.log.latest("context_window")  # a server's refusal named it
    if learned and session.client is not None and learned.get("via") == session.client.via:
        try:
            size = max(256, int(learned["tokens"]))
        except (KeyError, TypeError, ValueError):
            size = 0
        if size:
            learn(session.client, size)  # so a cut at the context's end is seen (mark_cut)
            return size
    # What the server says (context_window.py): asked once a session has history to fit
    # (a first turn has nothing to compact, and a server that is not there is not waited for).
    from .context_window import known

    found = lookup(session.client) if session.turns > 1 else known(session.client)
    return found or DEFAULT_WINDOW


def threshold(session) -> float:
    section = session.config.get("compaction")
    try:
        value = float((section or {}).get("threshold", DEFAULT_THRESHOLD)) if isinstance(section, dict) \
            else DEFAULT_THRESHOLD
    except (TypeError, ValueError):
        value = DEFAULT_THRESHOLD
    return min(max(value, 0.05), 1.0)


def tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _json_tokens(value: Any) -> int:
    return tokens(json.dumps(value, ensure_ascii=False))


def breakdown(session, front_text: str | None = None) -> dict[str, int]:
    """Estimated tokens per part of the next request."""
    front = session.state.get("front_text", "") if front_text is None else front_text
    summary = session.summary() or ""
    return {
        "instructions": tokens(session.instructions()),
        "front input": tokens(front) + tokens(summary),
        "history": _json_tokens(session.history()),
        "tools": _json_tokens(tool_schemas(session)),
    }


def estimate(session, front_text: str | None = None) -> int:
    usage = session.state.get("usage_at")
    if usage:
        seen, reported = usage
        added = session.log.records[seen:]
        return reported + sum(_json_tokens(record_to_item(r) or {}) for r in added
                              if r.get("type") in CONVERSATION)
    return sum(breakdown(session, front_text).values())


def record_usage(session, usage: dict[str, Any] | None) -> None:
    if not usage:
        return
    session.state["usage"] = usage
    reported = int(usage.get("input_tokens", 0) or 0) + int(usage.get("output_tokens", 0) or 0)
    if reported:
        # Records appended from here on are counted on top of the reported figure.
        session.state["usage_at"] = (len(session.log.records), reported)


def context_report(session) -> str:
    parts = breakdown(session)
    total = sum(parts.values())
    size = window(session)
    lines = [f"Context: about {total:,} of {size:,} tokens ({100 * total / size:.1f}%); "
             f"compaction at {threshold(session):.0%}."]
    for name, count in parts.items():
        share = 100 * count / total if total else 0.0
        lines.append(f"  {name:<13} {count:>8,} tokens  {share:5.1f}%")
    if session.state.get("usage"):
        usage = session.state["usage"]
        lines.append(f"  last response: {usage.get('input_tokens', 0):,} in, "
                     f"{usage.get('output_tokens', 0):,} out (reported by the service)")
    return "\n".join(lines)


def _turn_starts(conversation: list[dict[str, Any]]) -> list[int]:
    return [i for i, r in enumerate(conversation)
            if r.get("type") == "message" and r.get("role") == "user"]


def plan_cut(session, in_turn: bool, keep_turns: int = KEEP_TURNS) -> tuple[int, int]:
    """(previous cut, new cut) in conversation records; new <= previous means nothing to do."""
    conversation = list(session.log.conversation())
    previous = session.log.latest("compaction")
    before = int(previous.get("cut", 0)) if previous else 0
    starts = _turn_starts(conversation)
    keep = keep_turns + (1 if in_turn else 0)
    if len(starts) <= keep:
        return before, before
    return before, starts[-keep]


def _transcript(records: list[dict[str, Any]]) -> str:
    lines = []
    for r in records:
        kind = r.get("type")
        if kind == "message":
            lines.append(f"{r.get('role')}: {r.get('content', '')}")
        elif kind == "function_call":
            lines.append(f"tool call {r.get('name')}: {r.get('arguments', '')}")
        elif kind == "function_call_output":
            output = str(r.get("output", ""))
            if len(output) > 2000:
                output = output[:2000] + f" ... ({len(output) - 2000} more characters)"
            lines.append(f"tool result ({r.get('status')}): {output}")
    return "\n".join(lines)


def compact(session, *, in_turn: bool, keep: int = KEEP_TURNS) -> str:
    """Summarise older turns; returns a line for the person. Leaves history alone on failure,
    and when the summary is no shorter than what it would replace. ``keep``: turns before
    the one in progress kept whole (none after the server refused a request as too large)."""
    before, cut = plan_cut(session, in_turn, keep)
    if cut <= before:
        if keep == 0:
            return "Nothing to compact: the turn in progress is the only one"
        return ("Nothing to compact: the turn in progress and the two turns before it are "
                "always kept whole.")
    conversation = list(session.log.conversation())
    refused = [(int(r.get("start", 0)), int(r.get("end", 0))) for r in session.log.records
               if r.get("type") == "refused"]  # never sent again, so never summarised
    older = [r for k, r in enumerate(conversation[before:cut], before)
             if not any(start <= k < end for start, end in refused)]
    if not older:
        return "Nothing to compact: the older turns were refused by the server and are not sent"
    previous = session.summary()
    text = _transcript(older)
    if previous:
        text = f"Summary of the turns before these:\n{previous}\n\nThe turns to add:\n{text}"
    # The summary request must fit the window too: the newest part of a long transcript.
    room = max(256, int(window(session) * 0.6) - tokens(SUMMARY_INSTRUCTIONS)) * CHARS_PER_TOKEN
    if len(text) > room:
        text = "[... the oldest part left out ...]\n" + text[-room:]
    replaced = _json_tokens([record_to_item(r) for r in older if record_to_item(r)]) + \
        (tokens(previous) if previous else 0)
    request_input = [message_item("user", text)]
    try:
        summary = session.complete(SUMMARY_INSTRUCTIONS, request_input).strip()
    except ModelError as exc:
        log.warning("compaction_failed", error=str(exc))
        return f"Compaction failed ({exc}); the history is unchanged."
    if not summary:
        return "Compaction failed (the summary came back empty); the history is unchanged."
    if tokens(summary) >= replaced:
        log.warning("compaction_not_shorter", summary=tokens(summary), replaced=replaced)
        return (f"Compaction not kept: the summary ({tokens(summary):,} tokens) was not shorter "
                f"than the {replaced:,} tokens it would replace; the history is unchanged.")
    turns = len(_turn_starts(older))
    session.log.append({"type": "compaction", "summary": summary, "cut": cut, "turns": turns})
    session.state.pop("usage_at", None)
    return f"Compacted {turns} turn(s) into a summary of {tokens(summary):,} tokens."


def compact_command(session) -> None:
    """``/compact``: between turns, keeps the last two turns whole."""
    session.ui.line(compact(session, in_turn=False))


def maybe_compact(session, info) -> None:
    """At a turn's start, before its front input is fixed: compact past the configured share.

    The estimate counts the previous turn's front input (the index changes little from one
    turn to the next), so the check costs no extra rendering.
    """
    if estimate(session) <= threshold(session) * window(session):
        return
    before, cut = plan_cut(session, True)
    if cut <= before:  # nothing older to summarise yet: an overflow still compacts (keep=0)
        log.info("compaction_nothing_to_do", estimate=estimate(session), window=window(session))
        return
    session.ui.notice("(context is nearly full; compacting older turns)")
    session.ui.notice(compact(session, in_turn=True))


def respond(session, request: dict[str, Any], rebuild: Callable[[], dict[str, Any]], deadline=None):
    """``session.client.respond``, and on an overflow (the server's refusal, recognised by
    ``context_window.overflow``): learn the window, compact older turns (all of them: the
    window is smaller than was assumed) and send once more."""
    from .context_window import learn
    from .model import ContextOverflow

    client = session.client
    try:
        return client.respond(request, session.ui, deadline=deadline)
    except ContextOverflow as exc:
        first = exc

    if first.window:
        learn(client, first.window)
        # Kept with the session, so a resumed one (mino -p -c) compacts in time.
        session.log.append({"type": "context_window", "tokens": first.window,
                            "via": client.via})
    size = f"{first.window:,} tokens" if first.window else "smaller than this request"
    used = f" and the request {first.used:,}" if first.used else ""
    said = compact(session, in_turn=True, keep=0)
    if not said.startswith("Compacted"):
        why = "there is nothing older to compact" if said.startswith("Nothing") else \
            f"compacting did not help ({said[0].lower()}{said[1:].rstrip('.')})"
        raise ModelError(f"{first} The server's context is {size}{used}; {why}. Send a shorter "
                         "message, or give the server a larger context (llama.cpp: -c).",
                         refused=True) from None
    session.ui.notice(f"(The server's context is {size}{used}: {said[0].lower()}{said[1:].rstrip('.')}, "
                      "and sent it again.)")
    request = rebuild()
    session.state["last_request"] = request
    try:
        return client.respond(request, session.ui, deadline=deadline)
    except ContextOverflow as exc:
        raise ModelError(f"{exc} It still does not fit the server's context ({size}) after "
                         "compacting: send a shorter message, or give the server a larger "
                         "context (llama.cpp: -c).", refused=True) from None
