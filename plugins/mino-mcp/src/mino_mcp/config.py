"""The ``mcp:`` section of config.yaml, read into one ``ServerSpec`` per server.

The shape is the one people already write for Claude Code (``.mcp.json``'s
``mcpServers``: ``type``, ``command``, ``args``, ``env``, ``url``, ``headers``, with
``${VAR}`` and ``${VAR:-default}`` expanded) and Codex (``[mcp_servers.NAME]``:
``command``, ``args``, ``env``, ``cwd``, ``url``, ``bearer_token_env_var``,
``http_headers``, ``enabled``, ``startup_timeout_sec``, ``tool_timeout_sec``,
``enabled_tools``, ``disabled_tools``), under ``mcp: {servers: {NAME: ...}}``; mino adds
``command`` as a list, ``start`` (lazy or session), ``sandbox`` and ``network``.

A server whose entry is wrong is left out with one problem line naming it; the others
still load. Nothing here starts anything.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

DEFAULT_STARTUP_TIMEOUT = 30.0  # seconds for a server to start and list its tools
DEFAULT_TOOL_TIMEOUT = 120.0  # seconds for one tool call (Bash's default)
DEFAULT_OUTPUT_CAP = 30_000  # bytes of a result the model reads (Bash's default)
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerSpec:
    name: str
    transport: str  # stdio | http
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    start: str = "lazy"  # lazy: on the first call; session: when a session starts
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    sandbox: bool = True
    network: bool = False

    def fingerprint(self) -> str:
        """What identifies this server's tool listing (its launch, not its name's order);
        a hash, since env and headers may hold secrets."""
        data = [self.transport, list(self.command), sorted(self.env), self.cwd, self.url,
                sorted(self.headers)]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:32]

    def offers(self, tool: str) -> bool:
        if tool in self.disabled_tools:
            return False
        return self.enabled_tools is None or tool in self.enabled_tools

    def where(self) -> str:
        """The server for people: its command line or its URL (no header values, no user
        or password, no query string: those may hold a key)."""
        if self.transport == "stdio":
            return " ".join(self.command)
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"


@dataclass
class Settings:
    servers: dict[str, ServerSpec] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    output_cap: int = DEFAULT_OUTPUT_CAP


def expand(value: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them; an unset variable
    without a default becomes empty."""
    environ = os.environ if environ is None else environ
    return _VAR.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), value)


def read(config: dict[str, Any], environ: dict[str, str] | None = None) -> Settings:
    section = config.get("mcp")
    settings = Settings()
    if section is None:
        return settings
    if not isinstance(section, dict):
        settings.problems.append("mcp in config.yaml must be a mapping with a servers mapping")
        return settings
    cap = section.get("output_cap")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        settings.output_cap = cap
    default_sandbox = section.get("sandbox", True) is not False
    servers = section.get("servers") or {}
    if not isinstance(servers, dict):
        settings.problems.append("mcp.servers in config.yaml must map server names to settings")
        return settings
    for name, entry in servers.items():
        try:
            spec = _server(str(name), entry, default_sandbox, environ)
        except ValueError as exc:
            settings.problems.append(f"MCP server {name!r} left out: {exc}")
            continue
        if spec is not None:
            settings.servers[spec.name] = spec
    return settings


def _server(name: str, entry: Any, default_sandbox: bool, environ) -> ServerSpec | None:
    if not _NAME.match(name) or "__" in name:
        raise ValueError("a server name is 1-40 letters, digits, '-' or '_' (no '__'), as it "
                         "becomes part of each tool's name")
    if not isinstance(entry, dict):
        raise ValueError("its settings must be a mapping with command or url")
    if entry.get("enabled", True) is False or entry.get("disabled") is True:
        return None
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    kind = {"streamable-http": "http", "streamable_http": "http", "": ""}.get(kind, kind)
    if kind == "" :
        kind = "http" if entry.get("url") else "stdio"
    if kind == "sse":
        raise ValueError("the SSE transport is not supported (it is deprecated); use the "
                         "server's streamable HTTP URL with type: http")
    if kind not in ("stdio", "http"):
        raise ValueError(f"type {kind!r} is not stdio or http")
    common = dict(
        name=name,
        start=_choice(entry.get("start", "lazy"), ("lazy", "session"), "start"),
        startup_timeout=_seconds(entry, "startup_timeout_sec", DEFAULT_STARTUP_TIMEOUT),
        tool_timeout=_seconds(entry, "tool_timeout_sec", DEFAULT_TOOL_TIMEOUT),
        enabled_tools=_names(entry, "enabled_tools"),
        disabled_tools=_names(entry, "disabled_tools") or (),
    )
    if kind == "http":
        url = expand(_string(entry.get("url"), "url"), environ)
        if not re.match(r"^https?://", url):
            raise ValueError(f"url {url!r} is not an http:// or https:// URL")
        headers = dict(_mapping(entry, "headers", environ))
        headers.update(_mapping(entry, "http_headers", environ))
        token_var = entry.get("bearer_token_env_var")
        if token_var is not None:
            token = (os.environ if environ is None else environ).get(str(token_var))
            if not token:
                raise ValueError(f"bearer_token_env_var names {token_var}, which is not set")
            headers["Authorization"] = f"Bearer {token}"
        return ServerSpec(transport="http", url=url, headers=tuple(sorted(headers.items())), **common)
    command = entry.get("command")
    if isinstance(command, str):
        argv = [command]
    elif isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        argv = list(command)
    else:
        raise ValueError("command must be a program name or a list of strings")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise ValueError("args must be a list of strings")
    argv = [expand(str(a), environ) for a in argv + args]
    if not argv[0].strip():
        raise ValueError("command is empty")
    cwd = entry.get("cwd")
    sandbox = entry.get("sandbox", default_sandbox) is not False
    return ServerSpec(transport="stdio", command=tuple(argv),
                      env=tuple(sorted(_mapping(entry, "env", environ))),
                      cwd=expand(str(cwd), environ) if cwd else None,
                      sandbox=sandbox, network=entry.get("network", False) is True, **common)


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value.strip()


def _choice(value: Any, allowed: tuple[str, ...], key: str) -> str:
    if value not in allowed:
        raise ValueError(f"{key} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _seconds(entry: dict, key: str, default: float) -> float:
    value = entry.get(key, entry.get(key.replace("_sec", "")))
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise ValueError(f"{key} must be a number of seconds between 0 and 3600")
    return float(value)


def _names(entry: dict, key: str) -> tuple[str, ...] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of tool names")
    return tuple(value)


def _mapping(entry: dict, key: str, environ) -> list[tuple[str, str]]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise ValueError(f"{key} must map names to values")
    out = []
    for k, v in value.items():
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise ValueError(f"{key}.{k} must be a string")
        out.append((str(k), expand(str(v), environ)))
    return out
