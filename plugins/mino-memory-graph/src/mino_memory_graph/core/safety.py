"""What may never be remembered, and redaction before anything is sent or stored.

``refusal(text)`` says why a piece of text must not be written to memory (or None). It is
the reflection's filter: a reflection is the model summarising a run in which files, web
pages and tool output were read, so anything in it may carry someone else's instruction.
The filter refuses, by pattern:

- instruction-like text: override phrases ("ignore previous instructions"), persona
  changes ("you are now ..."), standing orders ("before any work, run ...", "every
  session must ..."), attempts to skip the user ("without asking", "do not tell the user");
- claims of authority the text cannot have: "approved by the user", "the user
  authorized ...", flags that switch checks off (``--trust-all``, ``--dangerously-...``):
  text the model wrote is never the person's approval;
- requests to send data to a URL;
- curl-to-shell: a download piped into an interpreter, ``bash <(curl ...)``, ``eval
  "$(curl ...)"``;
- invisible or lookalike characters: control, zero-width, direction-changing, private-use
  and non-ASCII space characters; Latin words mixed with Cyrillic or Greek letters;
  full-width ASCII;
- markup: chat-template and prompt tags (``<system>``, ``<|im_start|>``, ``[INST]``),
  HTML elements that execute or load (``<script``, ``<img``, ``<iframe``...), and markdown
  image links that carry data in their query string.

It errs on the side of refusing: a refused item is simply not stored, and the user is told
how many were refused and why. Secrets are not a reason to refuse: ``redact(text)``
replaces each secret (``mino_core.secret_scan``: the one token, not the line) with
``[redacted]``, so a fix keeps its flags (issue 25: ``NODE_OPTIONS=--max-old-space-size=4096``
was once dropped whole). The reflection's input is redacted before it leaves the machine,
every journal write is redacted (``store.Request.apply``), and ``shown(text)`` filters,
redacts and escapes every recalled text again when a block is rendered: a line another
program, a teammate or an import wrote passes the same checks as our own.
"""
from __future__ import annotations

# The filter itself is the core's (one filter for every memory backend); these names are
# the graph's since its first version.
from mino_core import (AUTHORITY, CURL_TO_SHELL, EXFILTRATION,  # noqa: F401
                                     INSTRUCTION, MARKUP, escape, observed, refusal, shown)

REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted]`` (``mino_core.secret_scan``)."""
    if not text:
        return text
    from mino_core import redact_secrets

    return redact_secrets(text)


# The fields of a journal operation that hold text (ops.py); ids, kinds and numbers never do.
OP_TEXT_FIELDS = ("label", "key", "value", "new_key", "new_value", "detail")
_OP_CACHE: dict[str, str] = {}  # the same short texts recur (log kinds, "ok", ids)


def _redacted_cached(text: str) -> str:
    hit = _OP_CACHE.get(text)
    if hit is None:
        hit = redact(text)
        if len(text) <= 256:
            if len(_OP_CACHE) >= 4096:
                _OP_CACHE.clear()
            _OP_CACHE[text] = hit
    return hit


def redact_op(body: dict) -> dict:
    """A journal operation's body with its texts redacted (the same dict when nothing
    changes, so the common case copies nothing). A ``PushContext`` chunk's note too."""
    out = body
    for key in OP_TEXT_FIELDS:
        value = body.get(key)
        if isinstance(value, str) and value:
            clean = _redacted_cached(value)
            if clean != value:
                if out is body:
                    out = dict(body)
                out[key] = clean
    chunk = body.get("chunk")
    note = chunk.get("note") if isinstance(chunk, dict) else None
    if isinstance(note, str) and note and _redacted_cached(note) != note:
        out = dict(out) if out is body else out
        out["chunk"] = {**chunk, "note": _redacted_cached(note)}
    return out
