"""What one model response produced: its output items in order, its status and usage.

Both APIs (Responses and chat completions) end in a ``Response``, so the turn loop and the
session log see one shape. Items are plain dicts:

- ``{"type": "message", "content": str, "phase"?: str}``
- ``{"type": "function_call", "call_id": str, "name": str, "arguments": str}``
- ``{"type": "reasoning", "id": str, "summary": [...], "encrypted_content"?: str}``
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

# Shown to the model after an answer that was cut, and on screen.
REASONS = {
    "max_output_tokens": "the output limit (max_output_tokens) was reached",
    "content_filter": "the service's content filter stopped it",
    "turn_budget": "the turn's time budget ran out",
    "stream_ended": "the connection closed before the response completed",
    "interrupted": "the user interrupted it (Esc or Ctrl-C)",
    "repetition": "it was repeating itself, so mino stopped it",
    "context_window": "the server's context window was full",
    "server_limit": "the server stopped it at its own output limit",
}


def reason_text(reason: str) -> str:
    return REASONS.get(reason, reason or "no reason given")


@dataclass
class Response:
    items: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"
    # Why an incomplete response stopped (a key of REASONS, or the server's own word).
    reason: str = ""

    @property
    def text(self) -> str:
        """Every output message's text; separate messages stay separate paragraphs."""
        return "\n\n".join(i["content"] for i in self.items if i["type"] == "message" and i["content"])

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [i for i in self.items if i["type"] == "function_call"]

    def records(self, via: str) -> list[dict[str, Any]]:
        """Session-log records in output order. Reasoning items ride on the record that
        follows them (``reasoning``, with ``via`` naming the model and server that wrote
        them), so they are re-sent right before what they preceded; an incomplete answer's
        last message carries ``incomplete`` (the turn adds an empty one when there is none)."""
        out: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        for item in self.items:
            if item["type"] == "reasoning":
                pending.append(item)
                continue
            if item["type"] == "message":
                if not item["content"]:
                    continue
                record = {"type": "message", "role": "assistant", "content": item["content"]}
                if item.get("phase"):
                    record["phase"] = item["phase"]
            else:
                record = {"type": "function_call", "call_id": item["call_id"], "name": item["name"],
                          "arguments": item["arguments"]}
            if pending:
                record["reasoning"], record["via"] = pending, via
                pending = []
            out.append(record)
        if self.status == "incomplete":
            messages = [r for r in out if r["type"] == "message"]
            if messages:
                messages[-1]["incomplete"] = self.reason or "unknown"
        return out


def finish_calls(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every call an id (a server may send none, or ``""``) unique in the response,
    and string arguments."""
    seen: set[str] = set()
    for item in items:
        if item["type"] != "function_call":
            continue
        call_id = str(item.get("call_id") or item.get("id") or "")
        if not call_id or call_id in seen:
            call_id = f"call_{os.urandom(6).hex()}"
        seen.add(call_id)
        item["call_id"] = call_id
        arguments = item.get("arguments")
        if not isinstance(arguments, str):
            item["arguments"] = "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
        item["name"] = str(item.get("name") or "")
        item.pop("id", None)
    return items
