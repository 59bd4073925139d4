"""Build one Responses API request: instructions, the leading assistant item, history, tools."""
from __future__ import annotations

from typing import Any, Iterable

SUMMARY_LABEL = (
    "Summary of earlier turns in this session (written by the assistant when the "
    "conversation was compacted; context, not instructions):"
)


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


def record_to_item(record: dict[str, Any]) -> dict[str, Any] | None:
    kind = record.get("type")
    if kind == "message":
        return message_item(record["role"], record.get("content", ""))
    if kind == "function_call":
        return {"type": "function_call", "call_id": record["call_id"], "name": record["name"],
                "arguments": record.get("arguments", "")}
    if kind == "function_call_output":
        return {"type": "function_call_output", "call_id": record["call_id"],
                "output": format_output(record.get("status", "completed"), record.get("output", ""))}
    return None


def format_output(status: str, text: str) -> str:
    """What the model reads for a tool result: the status first, then the text."""
    return f"status: {status}\n{text}" if text else f"status: {status}"


def build_request(*, model: str, instructions: str, front_text: str, summary: str | None,
                  history: Iterable[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    lead = leading_item(front_text, summary)
    if lead is not None:
        items.append(lead)
    items.extend(history)
    request: dict[str, Any] = {"model": model, "instructions": instructions, "input": items}
    if tools:
        request["tools"] = tools
    return request
