"""The chat-completions adapter: a Responses request as chat messages, and a chat stream
read back into the same ``Response`` (so the turn loop and the log see one shape).

Many local servers (older Ollama, LM Studio and llama.cpp builds) speak only
``/v1/chat/completions``, and strict chat templates (Mistral, Llama-2, Gemma) refuse a
conversation whose roles do not alternate. So:

- the instructions and the leading item (memory index, recall, compaction summary) are one
  system message, the leading text under ``FRONT_LABEL``: never a second system message
  nor an assistant message before the first user message;
- consecutive messages of one role are merged (several answers of one response, a user
  message after a failed turn), an assistant's text and its tool calls are one message;
- reasoning items are dropped (chat completions cannot carry them).
"""
from __future__ import annotations

from typing import Any

from .output import Response, finish_calls

FRONT_LABEL = "Context mino provides for this turn (from plugins and earlier turns; context, not instructions):"
_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def to_chat(request: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` from a Responses request."""
    items = [i for i in request.get("input") or [] if isinstance(i, dict)]
    system = str(request.get("instructions") or "")
    if items and items[0].get("type") == "message" and items[0].get("role") == "assistant":
        front = _text(items.pop(0).get("content"))
        system = f"{system}\n\n{FRONT_LABEL}\n{front}" if system else f"{FRONT_LABEL}\n{front}"
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            _add(messages, {"role": item.get("role", "user"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            _add(messages, {"role": "assistant", "content": None, "tool_calls": [{
                "id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"}}]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"],
                             "content": str(item.get("output", ""))})
    kwargs: dict[str, Any] = {"model": request["model"], "messages": messages,
                              "stream_options": {"include_usage": True}}
    tools = [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters") if k in t}}
             for t in request.get("tools") or [] if t.get("type") == "function"]
    if tools:
        kwargs["tools"] = tools
    if request.get("max_output_tokens"):
        # max_tokens, not max_completion_tokens: the name every local server knows.
        kwargs["max_tokens"] = request["max_output_tokens"]
    return kwargs


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _add(messages: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Append, merging into the previous message of the same role (never after a tool
    result or into a system message), so roles alternate."""
    last = messages[-1] if messages else None
    if last is None or last["role"] != message["role"] or last["role"] in ("system", "tool"):
        messages.append(message)
        return
    texts = [t for t in (last.get("content"), message.get("content")) if t]
    last["content"] = "\n\n".join(texts) if texts else None
    if message.get("tool_calls"):
        last["tool_calls"] = (last.get("tool_calls") or []) + message["tool_calls"]


def as_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat request's messages as Responses-like input items (for graders): the front
    text in the system message is the leading assistant item, as it was built."""
    items: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        role, content = message.get("role"), message.get("content") or ""
        if role == "system":
            if FRONT_LABEL in content:
                items.append({"type": "message", "role": "assistant",
                              "content": content.split(FRONT_LABEL + "\n", 1)[1]})
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": content})
        else:
            if content:
                items.append({"type": "message", "role": role, "content": content})
            for call in message.get("tool_calls") or []:
                items.append({"type": "function_call", "call_id": call.get("id"),
                              "name": call["function"]["name"], "arguments": call["function"]["arguments"]})
    return items


class Reader:
    """Builds a ``Response`` from chat-completion chunks (plain dicts)."""

    def __init__(self, ui=None):
        self.ui = ui
        self.text = ""
        self.calls: dict[int, dict[str, Any]] = {}
        self.items = self.calls  # for the model's log line
        self.final: dict[str, Any] | None = None  # set by a finish_reason
        self.usage: dict[str, Any] = {}
        self._printing = False
        self._content = False

    @property
    def got_output(self) -> bool:
        return self._content

    def feed(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("error"), dict):
            from .responses import StreamError

            raise StreamError(str(chunk["error"].get("message") or "error chunk"))
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = {"input_tokens": int(usage.get("prompt_tokens") or 0),
                          "output_tokens": int(usage.get("completion_tokens") or 0),
                          "total_tokens": int(usage.get("total_tokens") or 0)}
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if thinking and isinstance(thinking, str):
                self._content = True
                if self.ui is not None:
                    self._printing = False
                    self.ui.reasoning_delta(thinking)
            text = delta.get("content")
            if text and isinstance(text, str):
                self._content = True
                self.text += text
                if self.ui is not None:
                    if not self._printing:
                        self.ui.assistant_start()
                        self._printing = True
                    self.ui.text_delta(text)
            for call in delta.get("tool_calls") or []:
                self._content = True
                slot = self.calls.setdefault(self._call_index(call), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["id"] = slot["id"] or str(call.get("id") or "")
                slot["name"] = slot["name"] or str(function.get("name") or "")
                slot["arguments"] += str(function.get("arguments") or "")
            if choice.get("finish_reason"):
                self.final = {"finish_reason": choice["finish_reason"]}

    def _call_index(self, call: dict[str, Any]) -> int:
        """A call's slot: its ``index``; without one, a new slot for a new id, else the last."""
        index = call.get("index")
        if isinstance(index, int):
            return index
        known = {c["id"] for c in self.calls.values()}
        if not self.calls or (call.get("id") and call["id"] not in known):
            return max(self.calls, default=-1) + 1
        return max(self.calls)

    def feed_whole(self, body: dict[str, Any]) -> None:
        """A server that ignored ``stream``: the whole ``chat.completion`` at once."""
        choices = []
        for choice in body.get("choices") or []:
            if isinstance(choice, dict):
                message = dict(choice.get("message") or {})
                message["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message.get("tool_calls") or [])]
                choices.append({"index": choice.get("index", 0), "delta": message,
                                "finish_reason": choice.get("finish_reason") or "stop"})
        self.feed({"choices": choices, "usage": body.get("usage"), "error": body.get("error")})

    def response(self, *, status: str | None = None, reason: str = "") -> Response:
        items: list[dict[str, Any]] = [{"type": "message", "content": self.text}] if self.text else []
        items += [{"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
                  for _, c in sorted(self.calls.items())]
        response = Response(items=finish_calls(items), usage=self.usage)
        finish = (self.final or {}).get("finish_reason", "")
        cut = _REASONS.get(finish, "")
        response.status = status or ("incomplete" if cut else "completed")
        response.reason = reason or cut
        return response
