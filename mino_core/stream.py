"""Reading a server-sent event stream as plain dicts, one ``json.loads`` per event.

The ``openai`` client stays the transport (auth, ``base_url``, timeouts, status errors); its
raw streaming response is read here instead of building a pydantic model per event, which
cost seconds of CPU on the first events (SPEC section 12).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

DONE = "[DONE]"


def events(lines: Iterable[str]) -> Iterator[dict[str, Any] | str]:
    """Each event's data: a dict, or ``DONE`` for ``data: [DONE]``.

    Data lines of one event are joined with newlines (the SSE rule); an event whose data
    is not a JSON object is skipped, since nothing could be done with it.
    """
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                parsed = _parse("\n".join(data))
                data = []
                if parsed is not None:
                    yield parsed
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        parsed = _parse("\n".join(data))
        if parsed is not None:
            yield parsed


def _parse(text: str) -> dict[str, Any] | str | None:
    if text.strip() == DONE:
        return DONE
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
