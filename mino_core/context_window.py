"""The server's context window: learned where the server says it, and what to do when a
request does not fit.

Where a window comes from, first found wins: ``context_window`` in config.yaml (read by
``compaction.window``); a size this process learned from the server's own refusal (an
overflow error names it); the server's model list (``GET /v1/models``: llama.cpp's
``meta.n_ctx``, vLLM's ``max_model_len``, others' ``context_length``); llama.cpp's
``GET /props`` (``default_generation_settings.n_ctx``). The lookup is made once per
process and server (once it has answered, or when a session with history starts), on a
loopback or LAN server only (OpenAI's model list names no
window, and a remote server is not asked for what it does not publish), with a short
timeout; nothing found leaves the configured default.

An overflow (llama.cpp: HTTP 400 ``exceed_context_size_error`` "request (4476 tokens)
exceeds the available context size (4096 tokens)"; OpenAI and vLLM: "maximum context
length is N tokens") is a ``ContextOverflow`` (``model.py``): the turn learns the window,
compacts the older turns and sends the request once more (``compaction.respond``), and says
so in one line. This module imports nothing of mino's but its logger: the model client
and compaction both ask it.

A cut the server does not call a cut: llama.cpp's Responses API says ``completed`` for an
answer stopped by the end of its context; when the request and the answer together
filled the learned window, the answer is marked cut (``mark_cut``).
"""
from __future__ import annotations

import ipaddress
import json
import re
import threading
from typing import Any
from urllib.parse import urlsplit

from .logs import get_logger

log = get_logger("context_window")
PROBE_TIMEOUT = 1.0  # seconds per lookup; a local server answers in milliseconds
# Base URL -> window in tokens (None: asked, nothing found). Learned from errors too.
_KNOWN: dict[str, int | None] = {}
_LOCK = threading.Lock()

_OVERFLOW = [
    # llama.cpp: "request (731 tokens) exceeds the available context size (512 tokens), ..."
    re.compile(r"request \((?P<used>\d+) tokens\) exceeds the available context size \((?P<n>\d+) tokens\)", re.I),
    # OpenAI, vLLM: "This model's maximum context length is 4096 tokens. However, you requested 4476 tokens"
    re.compile(r"maximum context length is (?P<n>\d+) tokens(?:.*?(?:requested|resulted in) (?P<used>\d+) tokens)?",
               re.I | re.S),
    # LM Studio, Ollama and others: "context length", "context window", "too long"
    re.compile(r"(?:context[_ ](?:length|window|size)[_ ]exceeded|exceeds? (?:the )?context|"
               r"prompt is too long|input is too long|too many tokens)", re.I),
]


def overflow(status: int, message: str, body: Any) -> tuple[int | None, int | None] | None:
    """(window, used) when the error says the request did not fit (either None where the
    server named no size), else None. ``model.py`` raises it as a ``ContextOverflow``."""
    if status not in (400, 413, 422, 500):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else (body if isinstance(body, dict) else {})
    window = _int(error.get("n_ctx"))
    used = _int(error.get("n_prompt_tokens"))
    kind = str(error.get("type") or error.get("code") or "")
    found = kind in ("exceed_context_size_error", "context_length_exceeded")
    for pattern in _OVERFLOW:
        match = pattern.search(message)
        if match:
            found = True
            groups = match.groupdict()
            window = window or _int(groups.get("n"))
            used = used or _int(groups.get("used"))
            break
    if not found:
        return None
    return window, used


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def learn(client, window: int) -> None:
    with _LOCK:
        _KNOWN[_key(client)] = window


def _key(client) -> str:
    return f"{client.settings.base_url.rstrip('/')} {client.settings.model}"


def known(client) -> int | None:
    """The window learned so far (no lookup)."""
    if client is None:
        return None
    return _KNOWN.get(_key(client))


def lookup(client) -> int | None:
    """The server's window: learned, or looked up once (``probe``)."""
    if client is None:
        return None
    key = _key(client)
    with _LOCK:
        if key in _KNOWN:
            return _KNOWN[key]
    found = probe(client.settings) if _askable(client.settings.base_url) else None
    with _LOCK:
        _KNOWN.setdefault(key, found)
        return _KNOWN[key]


def _askable(base_url: str) -> bool:
    """A server on this machine or the local network (where llama.cpp, vLLM, LM Studio and
    Ollama run); never a public service, which does not publish its window this way."""
    host = urlsplit(base_url).hostname or ""
    if host in ("localhost",) or host.endswith((".local", ".lan", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _get(url: str, api_key: str) -> Any:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}",
                                                   "Accept": "application/json"})
    with opener.open(request, timeout=PROBE_TIMEOUT) as response:
        return json.loads(response.read(1 << 20) or b"null")


def probe(settings) -> int | None:
    """The window the server publishes for ``settings.model``, or None."""
    base = settings.base_url.rstrip("/")
    try:
        listing = _get(f"{base}/models", settings.api_key)
    except Exception as exc:  # noqa: BLE001 - no listing: try /props, unless it is not answering
        if "timed out" in str(exc).lower() or isinstance(exc, TimeoutError):
            return None
        listing = None
    entries = listing.get("data") if isinstance(listing, dict) else None
    if isinstance(entries, list):
        mine = [e for e in entries if isinstance(e, dict) and e.get("id") == settings.model] or \
            ([entries[0]] if len(entries) == 1 and isinstance(entries[0], dict) else [])
        for entry in mine:
            meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
            for value in (meta.get("n_ctx"), entry.get("max_model_len"), entry.get("context_length"),
                          entry.get("context_window"), entry.get("max_context_length")):
                if _int(value):
                    log.info("window_from_models", window=int(value))
                    return int(value)
    root = base[:-3] if base.endswith("/v1") else base
    try:
        props = _get(f"{root}/props", settings.api_key)
    except Exception:  # noqa: BLE001 - not llama.cpp, or not reachable: nothing learned
        return None
    general = props.get("default_generation_settings") if isinstance(props, dict) else None
    window = _int(general.get("n_ctx")) if isinstance(general, dict) else None
    if window:
        log.info("window_from_props", window=window)
    return window


def mark_cut(client, request: dict[str, Any], response):
    """Name the cut the server did not name. llama.cpp's Responses API says ``completed``
    for an answer stopped by the end of its context, and chat completions say ``length``
    for that and for the server's own output limit alike: an answer that, with its
    request, filled the learned window was cut by the context; one cut short of the
    output limit mino asked for was stopped by the server."""
    usage = response.usage or {}
    used_in = usage.get("input_tokens", usage.get("prompt_tokens"))
    used_out = usage.get("output_tokens", usage.get("completion_tokens"))
    window = lookup(client)  # asked once, now that the server has answered
    filled = bool(window and isinstance(used_in, int) and isinstance(used_out, int) and used_out
                  and used_in + used_out >= window)
    if response.status == "completed" and not response.calls and filled:
        log.warning("response_at_context_end", input_tokens=used_in, output_tokens=used_out, window=window)
        response.status, response.reason = "incomplete", "context_window"
    elif response.status == "incomplete" and response.reason == "max_output_tokens" and client.uses_chat:
        cap = request.get("max_output_tokens")
        if filled:
            response.reason = "context_window"
        elif cap and isinstance(used_out, int) and 0 < used_out < cap:
            response.reason = "server_limit"
    return response
