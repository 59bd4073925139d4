"""Assembling a streamed Responses API answer from its events (plain dicts).

Servers differ: some send items only as deltas (no ``output_item.done``, an empty
``response.completed.output``), some end with ``data: [DONE]`` and no
``response.completed``. So every item is rebuilt from its deltas as they arrive, and a
``done`` item or the completed output, when present, wins.
"""
from __future__ import annotations

from typing import Any

from .output import Response, finish_calls


class StreamError(Exception):
    """The server sent an ``error`` event."""


class Assembler:
    def __init__(self, ui=None):
        self.ui = ui
        self.items: dict[int, dict[str, Any]] = {}
        self._index_of: dict[str, int] = {}
        self.final: dict[str, Any] | None = None
        self._printing: int | None = None  # output index of the message being printed
        self._content = False

    @property
    def got_output(self) -> bool:
        """Whether any content arrived (an announced, still empty item is not content)."""
        return self._content

    def _slot(self, event: dict[str, Any], kind: str) -> dict[str, Any]:
        return self.items[self._index(event, kind)]

    def _index(self, event: dict[str, Any], kind: str) -> int:
        """The item's output index; from its id when the server sends no ``output_index``
        (llama.cpp's server sends none)."""
        index = event.get("output_index")
        item_id = event.get("item_id")
        if not isinstance(index, int):
            index = self._index_of.get(item_id, len(self.items)) if item_id else max(self.items, default=0)
        slot = self.items.setdefault(index, {"type": kind})
        if item_id:
            slot.setdefault("id", item_id)
            self._index_of[item_id] = index
        return index

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type", "")
        if kind.endswith((".delta", "item.done")):
            self._content = True
        if kind == "response.output_text.delta":
            position = self._index(event, "message")
            parts = self.items[position].setdefault("_parts", {})
            index = event.get("content_index", 0)
            delta = str(event.get("delta") or "")
            parts[index] = parts.get(index, "") + delta
            self._show_text(position, delta)
        elif kind == "response.output_text.done":
            self._slot(event, "message").setdefault("_parts", {})[event.get("content_index", 0)] = \
                str(event.get("text") or "")
        elif kind == "response.function_call_arguments.delta":
            slot = self._slot(event, "function_call")
            slot["_args"] = slot.get("_args", "") + str(event.get("delta") or "")
        elif kind == "response.function_call_arguments.done":
            slot = self._slot(event, "function_call")
            slot["_args"] = str(event.get("arguments") or slot.get("_args", ""))
            if event.get("name"):
                slot.setdefault("name", event["name"])
        elif kind == "response.reasoning_summary_text.delta":
            slot = self._slot(event, "reasoning")
            summary = slot.setdefault("_summary", {})
            index = event.get("summary_index", 0)
            summary[index] = summary.get(index, "") + str(event.get("delta") or "")
            if self.ui is not None:
                self._printing = None
                self.ui.reasoning_delta(str(event.get("delta") or ""))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = event.get("item")
            if isinstance(item, dict):
                slot = self._slot(dict(event, item_id=item.get("id")), str(item.get("type") or ""))
                slot.update({k: v for k, v in item.items() if v not in (None, "", [])})
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.get("response")
            self.final = response if isinstance(response, dict) else {"status": kind.rsplit(".", 1)[1]}
        elif kind == "error":
            raise StreamError(str(event.get("message") or (event.get("error") or {}).get("message")
                                  or "error event"))

    def feed_whole(self, body: dict[str, Any]) -> None:
        """A server that ignored ``stream``: the whole response object at once."""
        for item in body.get("output") or []:
            if isinstance(item, dict) and item.get("type") == "message":
                for part in item.get("content") or []:
                    if isinstance(part, dict) and part.get("text"):
                        self._show_text(id(item), str(part["text"]))
        self._content = True
        self.feed({"type": "response.completed", "response": body})

    def _show_text(self, index, delta: str) -> None:
        if self.ui is None or not delta:
            return
        if self._printing is None:
            self.ui.assistant_start()
        elif index != self._printing:
            self.ui.text_delta("\n\n")  # a new output message: keep the boundary on screen
        self._printing = index
        self.ui.text_delta(delta)

    def response(self, *, status: str | None = None, reason: str = "") -> Response:
        """What arrived. ``status``/``reason`` override when the stream ended early."""
        final = self.final or {}
        output = final.get("output") if isinstance(final.get("output"), list) else []
        items = [_normal(i) for i in (output or [self.items[k] for k in sorted(self.items)])
                 if isinstance(i, dict)]
        response = Response(items=finish_calls([i for i in items if i is not None]))
        response.status = status or str(final.get("status") or "completed")
        details = final.get("incomplete_details")
        response.reason = reason or (str(details.get("reason") or "") if isinstance(details, dict) else "")
        usage = final.get("usage")
        if isinstance(usage, dict):
            response.usage = usage
        if response.status == "failed":
            error = final.get("error")
            response.reason = str((error or {}).get("message") if isinstance(error, dict) else "") \
                or "no reason given"
        return response


def _normal(item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    if kind == "message":
        text = "".join(str(p.get("text") or p.get("refusal") or "") for p in item.get("content") or []
                       if isinstance(p, dict) and p.get("type") in ("output_text", "refusal"))
        parts = item.get("_parts") or {}
        if not text and parts:
            text = "".join(parts[k] for k in sorted(parts))
        out: dict[str, Any] = {"type": "message", "content": text}
        if item.get("phase"):
            out["phase"] = item["phase"]
        return out
    if kind == "function_call":
        arguments = item.get("arguments")
        if arguments in (None, "") and item.get("_args"):
            arguments = item["_args"]
        return {"type": "function_call", "call_id": item.get("call_id"), "id": item.get("id"),
                "name": item.get("name"), "arguments": arguments}
    if kind == "reasoning":
        summary = item.get("summary")
        if not summary and item.get("_summary"):
            summary = [{"type": "summary_text", "text": item["_summary"][k]} for k in sorted(item["_summary"])]
        out = {"type": "reasoning", "id": str(item.get("id") or ""), "summary": summary or []}
        if item.get("encrypted_content"):
            out["encrypted_content"] = item["encrypted_content"]
        return out
    return None
