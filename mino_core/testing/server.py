"""A scripted model server: a real HTTP server on loopback that speaks the Responses API.

Each request to ``POST /v1/responses`` takes the next scripted answer. An answer is a dict:

- ``text``: the assistant's text; ``reasoning``: a reasoning summary streamed first;
- ``calls``: a list of ``{"name": ..., "arguments": {...} or "raw json"}`` function calls;
- ``require``: text (or a list) the request must contain before the answer is given;
  ``forbid``: text it must not contain. A mismatch answers HTTP 400 and is recorded in
  ``failures``, so a grader (or the client's error) says what was missing;
- ``fail``: ``{"status": 503, "times": 2, "retry_after": 0, "message": "..."}`` answers
  that HTTP error that many times before giving the answer; ``drop``: close the stream
  half-way that many times first;
- ``text`` may be a list: several output messages; ``phase``: the messages' phase;
- ``incomplete``: a reason (``"max_output_tokens"``): the response ends incomplete;
- ``deviate``: how the stream departs from the service's (a name or a list):
  ``"deltas_only"`` (no ``output_item.done``, an empty ``response.completed.output``),
  ``"done_marker"`` (no ``response.completed``; the stream ends with ``data: [DONE]``),
  ``"no_call_ids"`` (every ``call_id`` is ``""``), ``"no_output_index"`` (events name
  their item only by ``item_id``, as llama.cpp's server does), ``"no_stream"`` (the whole
  answer as one JSON body although the request asked for a stream);
- ``delay``: seconds to wait before each event (a slow model);
- reasoning items carry ``encrypted_content`` when the request ``include``s it.

Like llama.cpp's server it refuses an input item without ``type`` (HTTP 400 "Cannot
determine type of 'item'") and a function call whose arguments are not JSON (HTTP 500
"Failed to parse tool call arguments as JSON"). ``ScriptedServer(responses=False)``
answers 404 on ``/responses``, like a server that speaks only chat completions.

``POST /v1/chat/completions`` takes the same script: the text streams as
``delta.content`` (several texts joined by a blank line), calls as ``delta.tool_calls``,
reasoning as ``delta.reasoning_content``, ``incomplete`` as ``finish_reason: length``,
then a usage chunk and ``data: [DONE]``. Like a strict chat template it refuses roles that
do not alternate ("Conversation roles must alternate user/assistant/user/assistant/...").

``ScriptedServer(n_ctx=N)`` plays llama.cpp's ``llama-server -c N``: ``GET /props``
answers ``default_generation_settings.n_ctx`` and ``GET /v1/models`` the model with
``meta.n_ctx`` (``publish=()`` hides both, ``("props",)`` keeps only /props); a request of
more than N tokens (a token here is a word of the request's text, as ``usage`` counts
them) is refused with llama.cpp's own HTTP 400 (``exceed_context_size_error``, "request
(T tokens) exceeds the available context size (N tokens), try increasing it") without
taking an answer; an answer that would run past the context's end is cut there, and, as
llama.cpp's Responses API does, still called ``completed`` (chat says ``length``).

Every request body is recorded in ``requests`` (parsed JSON), in order. The server also
answers ``POST /v1/embeddings`` with deterministic vectors, for the graph backend's
opt-in embedder. It streams server-sent events exactly in the order and shape the real
service uses, so the official ``openai`` client cannot tell the difference.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..json_strings import strings as _strings


def request_text(body: Any) -> str:
    """All the text a request carries, for ``require``/``forbid`` and graders."""
    return "\n".join(_strings(body))


class ScriptedServer:
    def __init__(self, script: list[dict[str, Any]] | None = None, host: str = "127.0.0.1",
                 responses: bool = True, n_ctx: int | None = None,
                 publish: tuple[str, ...] = ("props", "models"), port: int = 0):
        self.script: list[dict[str, Any]] = list(script or [])
        self.responses = responses
        self.n_ctx, self.publish = n_ctx, tuple(publish)
        # Requests refused as larger than n_ctx: (tokens, n_ctx).
        self.overflows: list[tuple[int, int]] = []
        self.gets: list[str] = []
        # Paths of every POST, in order (which API each request used).
        self.paths: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.embedding_requests: list[dict[str, Any]] = []
        # Request fields the embeddings endpoint refuses with 400, as OpenAI's does for
        # fields it does not know (``{"input_type"}`` plays OpenAI; empty plays NVIDIA/Cohere).
        self.embedding_fields_refused: set[str] = set()
        self._lock = threading.Lock()
        self._pending_fail: dict[int, int] = {}
        self._pending_drop: dict[int, int] = {}
        self._counter = 0
        server = ThreadingHTTPServer((host, port), _Handler)
        server.daemon_threads = True
        server.scripted = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="scripted-model", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def add(self, *answers: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(answers)

    @property
    def remaining(self) -> int:
        return len(self.script)

    def texts(self) -> list[str]:
        return [request_text(r) for r in self.requests]

    # -- answering -----------------------------------------------------------

    def _next(self, body: dict[str, Any], chat: bool = False) -> tuple[str, Any]:
        """("answer", entry) | ("error", (status, message, retry_after)) | ("drop", entry)."""
        with self._lock:
            self.requests.append(body)
            used = len(request_text(body).split())
            if self.n_ctx and used > self.n_ctx:
                self.overflows.append((used, self.n_ctx))
                return "overflow", (used, self.n_ctx)
            if not self.script:
                message = f"scripted server: no answer left for request {len(self.requests)}"
                self.failures.append(message)
                return "error", (400, message, None)
            entry = self.script[0]
            key = id(entry)
            fail = entry.get("fail")
            if fail:
                left = self._pending_fail.setdefault(key, int(fail.get("times", 1)))
                if left > 0:
                    self._pending_fail[key] = left - 1
                    return "error", (int(fail.get("status", 500)),
                                     str(fail.get("message") or "scripted failure"),
                                     fail.get("retry_after"))
            drops = int(entry.get("drop", 0) or 0)
            if drops:
                left = self._pending_drop.setdefault(key, drops)
                if left > 0:
                    self._pending_drop[key] = left - 1
                    return "drop", entry
            problem = None if chat else _input_problem(body)
            if problem:
                self.failures.append(f"scripted server: request {len(self.requests)}: {problem[1]}")
                return "error", (*problem, None)
            text = request_text(body)
            raw = json.dumps(body, ensure_ascii=False)
            for needed in _as_list(entry.get("require")):
                if needed not in text and needed not in raw:
                    message = (f"scripted server: request {len(self.requests)} does not contain "
                               f"required text {needed!r}")
                    self.failures.append(message)
                    self.script.pop(0)
                    return "error", (400, message, None)
            for banned in _as_list(entry.get("forbid")):
                if banned in text or banned in raw:
                    message = (f"scripted server: request {len(self.requests)} contains "
                               f"forbidden text {banned!r}")
                    self.failures.append(message)
                    self.script.pop(0)
                    return "error", (400, message, None)
            self.script.pop(0)
            self._counter += 1
            text = entry.get("text")
            if self.n_ctx and isinstance(text, str) and used + len(text.split()) > self.n_ctx:
                # Generation stops where the context ends.
                entry = dict(entry, text=" ".join(text.split()[:max(0, self.n_ctx - used)]),
                             _context_end=True)
            return "answer", entry

    def build_response(self, entry: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        n = self._counter
        output: list[dict[str, Any]] = []
        deviate = _as_list(entry.get("deviate"))
        if entry.get("reasoning"):
            reasoning = {"type": "reasoning", "id": f"rs_{n}", "summary": [
                {"type": "summary_text", "text": entry["reasoning"]}]}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                reasoning["encrypted_content"] = f"enc_{n}:{entry['reasoning']}"
            output.append(reasoning)
        texts = entry.get("text")
        for j, text in enumerate([texts] if isinstance(texts, str) else list(texts or [])):
            message = {"type": "message", "id": f"msg_{n}_{j}", "role": "assistant",
                       "status": "completed", "content": [
                           {"type": "output_text", "text": text, "annotations": []}]}
            if entry.get("phase"):
                message["phase"] = entry["phase"]
            output.append(message)
        for i, call in enumerate(entry.get("calls") or []):
            args = call.get("arguments", {})
            output.append({"type": "function_call", "id": f"fc_{n}_{i}",
                           "call_id": "" if "no_call_ids" in deviate else f"call_{n}_{i}",
                           "name": call["name"], "status": "completed",
                           "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})
        words = len(request_text(body).split())
        usage = {"input_tokens": words, "output_tokens": len(str(entry.get("text", "")).split()),
                 "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens_details": {"reasoning_tokens": 0}}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        usage.update(entry.get("usage") or {})
        incomplete = entry.get("incomplete")
        return {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()),
                "status": "incomplete" if incomplete else "completed",
                "model": body.get("model", "scripted"), "output": output,
                "usage": usage, "error": None,
                "incomplete_details": {"reason": incomplete} if incomplete else None,
                "instructions": body.get("instructions"), "tools": body.get("tools", []),
                "parallel_tool_calls": True, "tool_choice": "auto", "metadata": {},
                "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}}


def _input_problem(body: dict[str, Any]) -> tuple[int, str] | None:
    """What llama.cpp's server refuses in ``input``: an item without ``type``, a call
    whose arguments are not JSON."""
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for item in items:
        if not isinstance(item, dict) or "type" not in item:
            return 400, "Cannot determine type of 'item'"
        if item["type"] == "function_call":
            try:
                json.loads(item.get("arguments") or "")
            except ValueError as exc:
                return 500, f"Failed to parse tool call arguments as JSON: {exc}"
        if item["type"] == "reasoning" and not item.get("encrypted_content"):
            return 400, "reasoning item without encrypted_content (store is false)"
    return None


def _chat_problem(body: dict[str, Any]) -> str | None:
    """What a strict chat template refuses: roles out of turn, calls without results."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    roles = [m.get("role") for m in messages if isinstance(m, dict)]
    if "system" in roles[1:]:
        return "System message must be at the beginning."
    previous, pending = "system", set()
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return f"tool message for unknown tool_call_id {message.get('tool_call_id')!r}"
            pending.discard(message["tool_call_id"])
        elif pending:
            return "assistant tool calls must each be followed by a tool message"
        elif role == previous or (previous == "system" and role != "user"):
            return "Conversation roles must alternate user/assistant/user/assistant/..."
        for call in message.get("tool_calls") or []:
            if not call.get("id"):
                return "tool call without id"
            try:
                json.loads(call["function"]["arguments"])
            except (KeyError, TypeError, ValueError) as exc:
                return f"Failed to parse tool call arguments as JSON: {exc}"
            pending.add(call["id"])
        previous = role
    return None


def _chat_chunks(entry: dict[str, Any], body: dict[str, Any], n: int):
    """The chunks of one streamed chat completion (before ``data: [DONE]``)."""
    base = {"id": f"chatcmpl_{n}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "scripted")}

    def chunk(delta=None, finish=None):
        return dict(base, choices=[{"index": 0, "delta": delta or {}, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    for piece in _chunks(str(entry.get("reasoning") or "")):
        yield chunk({"reasoning_content": piece})
    texts = entry.get("text")
    text = "\n\n".join([texts] if isinstance(texts, str) else [str(t) for t in texts or []])
    for piece in _chunks(text):
        yield chunk({"content": piece})
    deviate = _as_list(entry.get("deviate"))
    for i, call in enumerate(entry.get("calls") or []):
        args = call.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call_id = "" if "no_call_ids" in deviate else f"call_{n}_{i}"
        yield chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                     "function": {"name": call["name"], "arguments": ""}}]})
        for piece in _chunks(args):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    finish = "length" if entry.get("incomplete") or entry.get("_context_end") else \
        ("tool_calls" if entry.get("calls") else "stop")
    yield chunk(finish=finish)
    if (body.get("stream_options") or {}).get("include_usage"):
        words = len(request_text(body).split())
        out = len(text.split())
        yield dict(base, choices=[], usage={"prompt_tokens": words, "completion_tokens": out,
                                            "total_tokens": words + out})


def _chat_whole(entry: dict[str, Any], body: dict[str, Any], n: int) -> dict[str, Any]:
    """One ``chat.completion`` (not streamed), built from the same chunks."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    finish, usage = "stop", None
    for chunk in _chat_chunks(entry, dict(body, stream_options={"include_usage": True}), n):
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"id": call.get("id"), "type": "function",
                                                        "function": {"name": "", "arguments": ""}})
                slot["function"]["name"] += (call.get("function") or {}).get("name") or ""
                slot["function"]["arguments"] += (call.get("function") or {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"id": f"chatcmpl_{n}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"), "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _events(response: dict[str, Any], deviate: list[str] = ()):
    """The server-sent events of one streamed answer, in the service's order (or departing
    from it as ``deviate`` says)."""
    shell = dict(response, status="in_progress", output=[], usage=None)
    yield {"type": "response.created", "response": shell}
    yield {"type": "response.in_progress", "response": shell}
    for index, item in enumerate(response["output"]):
        kind = item["type"]
        if kind == "message":
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": dict(item, status="in_progress", content=[])}
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {"type": "response.content_part.added", "item_id": item["id"], "output_index": index,
                   "content_index": 0, "part": part}
            text = item["content"][0]["text"]
            for chunk in _chunks(text):
                yield {"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                       "content_index": 0, "delta": chunk, "logprobs": []}
            yield {"type": "response.output_text.done", "item_id": item["id"], "output_index": index,
                   "content_index": 0, "text": text, "logprobs": []}
            yield {"type": "response.content_part.done", "item_id": item["id"], "output_index": index,
                   "content_index": 0, "part": dict(part, text=text)}
        elif kind == "function_call":
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": dict(item, status="in_progress", arguments="")}
            for chunk in _chunks(item["arguments"]):
                yield {"type": "response.function_call_arguments.delta", "item_id": item["id"],
                       "output_index": index, "delta": chunk}
            yield {"type": "response.function_call_arguments.done", "item_id": item["id"],
                   "output_index": index, "arguments": item["arguments"], "name": item["name"]}
        elif kind == "reasoning":
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": dict(item, summary=[])}
            text = item["summary"][0]["text"]
            for chunk in _chunks(text):
                yield {"type": "response.reasoning_summary_text.delta", "item_id": item["id"],
                       "output_index": index, "summary_index": 0, "delta": chunk}
            yield {"type": "response.reasoning_summary_text.done", "item_id": item["id"],
                   "output_index": index, "summary_index": 0, "text": text}
        if "deltas_only" not in deviate:
            yield {"type": "response.output_item.done", "output_index": index, "item": item}
    if "done_marker" in deviate:
        return
    final = dict(response, output=[]) if "deltas_only" in deviate else response
    yield {"type": f"response.{'incomplete' if response['status'] == 'incomplete' else 'completed'}",
           "response": final}


def _chunks(text: str, size: int = 12):
    for start in range(0, len(text), size):
        yield text[start:start + size]
    if not text:
        return


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """Deterministic unit vector from the words of ``text`` (for embeddings tests)."""
    vec = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vec[digest[0] % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    @property
    def scripted(self) -> ScriptedServer:
        return self.server.scripted  # type: ignore[attr-defined]

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.rstrip("/")
        scripted = self.scripted
        scripted.gets.append(path)
        if path == "/health":
            return self._json(200, {"status": "ok"})
        if path == "/props" and scripted.n_ctx and "props" in scripted.publish:
            return self._json(200, {"default_generation_settings": {"n_ctx": scripted.n_ctx, "params": {
                "n_predict": -1}}, "total_slots": 1, "model_alias": "scripted",
                "model_path": "scripted.gguf", "build_info": "scripted"})
        if path.endswith("/v1/models"):
            model: dict[str, Any] = {"id": "scripted", "object": "model", "owned_by": "scripted",
                                     "created": 0}
            if scripted.n_ctx and "models" in scripted.publish:
                model["meta"] = {"n_ctx": scripted.n_ctx, "n_ctx_train": 8192, "n_vocab": 49152}
            return self._json(200, {"object": "list", "data": [model]})
        return self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        path = self.path.rstrip("/")
        self.scripted.paths.append(path)
        if path.endswith("/embeddings"):
            return self._embeddings(body)
        chat = path.endswith("/chat/completions")
        if not chat and (not path.endswith("/responses") or not self.scripted.responses):
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        if chat:
            problem = _chat_problem(body)
            if problem:
                with self.scripted._lock:
                    self.scripted.requests.append(body)
                    self.scripted.failures.append(f"scripted server: request {len(self.scripted.requests)}: "
                                                  f"{problem}")
                return self._json(400, {"error": {"message": problem, "type": "invalid_request_error"}})
        kind, value = self.scripted._next(body, chat=chat)
        if kind == "overflow":  # llama.cpp's body, word for word
            used, n_ctx = value
            return self._json(400, {"error": {
                "code": 400, "message": f"request ({used} tokens) exceeds the available context size "
                                        f"({n_ctx} tokens), try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": used, "n_ctx": n_ctx}})
        if kind == "error":
            status, message, retry_after = value
            headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
            return self._json(status, {"error": {"message": message, "type": "scripted_error",
                                                 "code": None, "param": None}}, headers)
        whole = "no_stream" in _as_list(value.get("deviate")) or not body.get("stream")
        if chat:
            if whole:
                return self._json(200, _chat_whole(value, body, self.scripted._counter))
            return self._chat_stream(kind, value, body)
        response = self.scripted.build_response(value, body)
        if whole:
            return self._json(200, response)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        deviate = _as_list(value.get("deviate"))
        events = list(_events(response, deviate))
        if kind == "drop":
            events = events[: max(2, len(events) // 2)]
        delay = float(value.get("delay") or 0)
        try:
            for number, event in enumerate(events):
                if "no_output_index" in deviate:
                    event.pop("output_index", None)
                if delay:
                    time.sleep(delay)
                event["sequence_number"] = number
                chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                self.wfile.write(chunk)
                self.wfile.flush()
            if "done_marker" in deviate:
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (a time budget, an interrupt)
        self.close_connection = True

    def _chat_stream(self, kind: str, entry: dict[str, Any], body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        chunks = list(_chat_chunks(entry, body, self.scripted._counter))
        if kind == "drop":
            chunks = chunks[: max(1, len(chunks) // 2)]
        try:
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if kind != "drop":
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _embeddings(self, body: dict[str, Any]) -> None:
        self.scripted.embedding_requests.append(body)
        refused = sorted(self.scripted.embedding_fields_refused & set(body))
        if refused:
            return self._json(400, {"error": {
                "message": f"Unrecognized request argument supplied: {refused[0]}",
                "type": "invalid_request_error"}})
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(str(text))}
                for i, text in enumerate(inputs)]
        self._json(200, {"object": "list", "data": data, "model": body.get("model", "scripted"),
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}})
