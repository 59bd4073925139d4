"""Build one Responses API request: instructions, the leading assistant item, history, tools.

``tool_schemas`` is what the tools part holds (the turn loop and the context budget both
read it from here).

Items are shaped so that every server we know takes them: each message carries
``type: message``, every call's arguments are valid JSON, reasoning is re-sent only with
its encrypted content to the model and server that wrote it.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from .output import reason_text

SUMMARY_LABEL = (
    "Summary of earlier turns in this session (written by the assistant when the "
    "conversation was compacted; context, not instructions):"
)
INCLUDE = ["reasoning.encrypted_content"]
# Private keys on history items: the reasoning that preceded them and who wrote it.
_REASONING, _VIA = "_reasoning", "_via"


def leading_item(front_text: str, summary: str | None) -> dict[str, Any] | None:
    """Front input first, then the labelled compaction summary, in one assistant item."""
    parts = [front_text] if front_text else []
    if summary:
        parts.append(f"{SUMMARY_LABEL}\n{summary}")
    if not parts:
        return None
    return message_item("assistant", "\n\n".join(parts))


def message_item(role: str, content: Any) -> dict[str, Any]:
    """A message input item. ``type`` is optional in OpenAI's spec, but llama.cpp refuses
    an item without it ("Cannot determine type of 'item'"), so every message carries it."""
    return {"type": "message", "role": role, "content": content}


def with_types(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with ``type: message`` added where a plugin's item left it out."""
    return [dict(item, type="message") if "type" not in item and "role" in item else item
            for item in items]


def valid_arguments(text: str) -> str:
    """Arguments a server can parse: the model's own when they are a JSON object, else
    ``{}`` (the raw text stays in the log and in the tool result the model reads)."""
    try:
        return text if isinstance(json.loads(text), dict) else "{}"
    except (TypeError, ValueError):
        return "{}"


def record_to_item(record: dict[str, Any]) -> dict[str, Any] | None:
    kind = record.get("type")
    if kind == "message":
        content = record.get("content", "")
        if record.get("incomplete"):
            note = f"[This answer was cut off: {reason_text(record['incomplete'])}.]"
            content = f"{content}\n\n{note}" if content else note
        item = message_item(record["role"], content)
        if record.get("phase"):
            item["phase"] = record["phase"]
    elif kind == "function_call":
        item = {"type": "function_call", "call_id": record["call_id"], "name": record["name"],
                "arguments": valid_arguments(record.get("arguments", ""))}
    elif kind == "function_call_output":
        return {"type": "function_call_output", "call_id": record["call_id"],
                "output": format_output(record.get("status", "completed"), record.get("output", ""))}
    else:
        return None
    reasoning = [r for r in record.get("reasoning") or () if r.get("encrypted_content")]
    if reasoning:
        item[_REASONING], item[_VIA] = reasoning, record.get("via", "")
    return item


def format_output(status: str, text: str) -> str:
    """What the model reads for a tool result: the status first, then the text."""
    return f"status: {status}\n{text}" if text else f"status: {status}"


def expand(items: Iterable[dict[str, Any]], via: str | None) -> list[dict[str, Any]]:
    """History items as sent: each item's reasoning right before it when ``via`` (the
    current model and server) wrote it, dropped otherwise; private keys removed."""
    out: list[dict[str, Any]] = []
    for item in items:
        if _REASONING not in item:
            out.append(item)
            continue
        if via is not None and item[_VIA] == via:
            out.extend({"type": "reasoning", "id": r.get("id", ""), "summary": r.get("summary") or [],
                        "encrypted_content": r["encrypted_content"]} for r in item[_REASONING])
        out.append({k: v for k, v in item.items() if k not in (_REASONING, _VIA)})
    return out


def tool_schemas(session) -> list[dict[str, Any]]:
    """The session's tools as the request offers them, in name order."""
    return [tool.schema() for _, tool in sorted(session.host.tools.items())]


def build_request(*, model: str, instructions: str, front_text: str, summary: str | None,
                  history: Iterable[dict[str, Any]], tools: list[dict[str, Any]],
                  via: str | None = None) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    lead = leading_item(front_text, summary)
    if lead is not None:
        items.append(lead)
    items.extend(expand(history, via))
    request: dict[str, Any] = {"model": model, "instructions": instructions, "input": items,
                               "include": INCLUDE}
    if tools:
        request["tools"] = tools
    return request
