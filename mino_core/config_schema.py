"""config.yaml, checked when mino starts: one schema for the core's keys, one per plugin.

A schema is a small subset of JSON Schema, written as plain data, so a plugin declares its
own without importing anything: ``type`` (string, integer, number, boolean, object, array,
or a list of them), ``enum``, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``pattern``,
``properties``, ``additionalProperties`` (a schema for every other key, or ``False``),
``items``, ``default``, ``description`` and ``format: file-path`` (a file mino may create:
not a folder, and no file on the way to it). Plugins return theirs from the
``config_schema`` hook, keyed by where their section sits (``"tools-fs"``,
``"memory.graph"``).

Each problem is one line naming the file, the key, what was found and what is allowed. A
wrong core value is an error (mino exits 2: running with a setting the person did not
mean, such as ``mode: bogus`` in manual, is worse than not running). A plugin's wrong value
is a warning and is removed from the configuration, so the plugin runs with its default.
A key nobody declares is a warning with a "did you mean". A key set to nothing (``key:``)
counts as not set.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MODES = ["manual", "accept-edits", "bypass"]
_RULES = {"type": ["array", "string"], "items": {"type": "string"},
          "description": "rules like 'Bash(git status*)' or 'write_file(src/**)'"}
_PER_MODEL = {
    "type": "object",
    "properties": {
        "context_window": {"type": "integer", "minimum": 1024},
        "max_output_tokens": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}

# Every key the core reads. Keep in step with the README's Configure table.
CORE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "api_key": {"type": "string"},
        "base_url": {"type": "string", "pattern": r"^https?://\S+$",
                     "description": "an http:// or https:// URL"},
        "model": {"type": "string"},
        "mode": {"enum": _MODES},
        "api": {"enum": ["auto", "responses", "chat"]},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "retries": {"type": "integer", "minimum": 0, "maximum": 10},
        "retry_backoff": {"type": "number", "minimum": 0},
        "max_output_tokens": {"type": "integer", "minimum": 0},
        "turn_budget": {"type": "number", "minimum": 1},
        "context_window": {"type": "integer", "minimum": 1024},
        "models": {"type": "object", "additionalProperties": _PER_MODEL},
        "compaction": {
            "type": "object",
            "properties": {"threshold": {"type": "number", "minimum": 0.05, "maximum": 1}},
            "additionalProperties": False,
        },
        "permissions": {
            "type": "object",
            "properties": {"allow": _RULES, "deny": _RULES},
            "additionalProperties": False,
        },
        # The core reads memory.backend (its enum: the installed backends, core_schema);
        # the backends declare their own sub-sections.
        "memory": {"type": "object", "properties": {"backend": {"type": "string"}},
                   "additionalProperties": False},
    },
}
CORE_APIS = ["auto", "responses", "chat"]


def core_schema(backends: list[str], apis: list[str] | None = None) -> dict[str, Any]:
    """The core's schema for this installation: ``memory.backend`` one of the installed
    backends' names, ``api`` one of auto and the registered adapters (``apis``; None: the
    core's own). The core names no plugin: both lists come from what plugins declared."""
    import copy

    schema = copy.deepcopy(CORE)
    schema["properties"]["memory"]["properties"]["backend"] = {"enum": sorted(backends)}
    extra = sorted(a for a in apis or () if a not in CORE_APIS)
    schema["properties"]["api"] = {"enum": CORE_APIS + extra}
    return schema


@dataclass
class Problem:
    key: str
    text: str
    error: bool  # an error stops mino (exit 2); a warning does not

    def line(self, path: Path) -> str:
        return f"{'error' if self.error else 'warning'}: {path}: {self.key}: {self.text}"


@dataclass
class Report:
    path: Path
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.error]

    def lines(self) -> list[str]:
        return [p.line(self.path) for p in self.problems]


# -- describing values and what is allowed --------------------------------------------

def _found(value: Any, schema: dict[str, Any] | None = None) -> str:
    if schema is not None and schema.get("format") == "file-path" and isinstance(value, str):
        why = _path_problem(value)
        if why:
            return f"{value!r} ({why})"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, int):
        return f"{value} (a whole number)"
    if isinstance(value, float):
        return f"{value:g} (a number)"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"{shown!r} (text)"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return "a mapping"
    return f"{type(value).__name__}"


_KIND = {"string": "text", "integer": "a whole number", "number": "a number",
         "boolean": "true or false", "object": "a mapping (key: value)", "array": "a list"}


def _range(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if schema.get("exclusiveMinimum") is not None:
        return f" above {schema['exclusiveMinimum']:g}"
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f" of at least {low:g}"
    if high is not None:
        return f" of at most {high:g}"
    return ""


def allowed(schema: dict[str, Any]) -> str:
    """What a schema allows, for people."""
    if "enum" in schema:
        values = [str(v).lower() if isinstance(v, bool) else str(v) for v in schema["enum"]]
        return "one of " + (", ".join(values) or "nothing (none is installed)")
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    text = " or ".join(_KIND.get(k, k) for k in kinds) or "anything"
    if set(kinds) & {"integer", "number"}:
        text += _range(schema)
    if schema.get("format") == "file-path":
        text = "a file's path (not a folder, and no file on the way to it)"
    if schema.get("description") and kinds != ["object"]:
        text += f" ({schema['description']})"
    return text


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, {"string": str, "number": (int, float), "boolean": bool,
                              "object": dict, "array": list}.get(kind, object))


def _wrong(schema: dict[str, Any], value: Any) -> bool:
    """True when ``value`` itself (not its members) breaks ``schema``."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if kinds and not any(_is(value, k) for k in kinds):
        return True
    if "enum" in schema:
        options = schema["enum"]
        if isinstance(value, str):
            # Spelled as mino reads it: any case, accept_edits for accept-edits.
            return value.strip().lower().replace("_", "-") not in [str(o).lower() for o in options]
        return value not in options
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if schema.get("minimum") is not None and value < schema["minimum"]:
            return True
        if schema.get("maximum") is not None and value > schema["maximum"]:
            return True
        if schema.get("exclusiveMinimum") is not None and value <= schema["exclusiveMinimum"]:
            return True
    if isinstance(value, str) and schema.get("pattern") and not re.search(schema["pattern"], value):
        return True
    if isinstance(value, str) and schema.get("format") == "file-path":
        return _path_problem(value) is not None
    return False


def _path_problem(text: str) -> str | None:
    """Why ``text`` cannot be a file mino creates or opens: it is a folder, or a part of the
    way to it is a file. None when it can (it exists as a file, or its folder can be made)."""
    path = Path(text).expanduser()
    if not text.strip() or "\0" in text:
        return "not a path"
    try:
        if path.is_dir():
            return "a folder"
        for parent in path.parents:
            if parent.exists():
                return None if parent.is_dir() else f"{parent} is a file"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


# -- checking ---------------------------------------------------------------------------

def _check(schema: dict[str, Any], value: Any, key: str, out: list[tuple[str, Any, str, str]],
           claimed: dict[str, Any]) -> None:
    """Append (key, value, what is allowed) for every wrong value, and (key, None, 'unknown
    key...') for keys nobody declares. ``claimed``: dotted keys other schemas own."""
    if _wrong(schema, value):
        out.append((key, value, allowed(schema), _found(value, schema)))
        return
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if item is not None and _wrong(schema["items"], item):
                out.append((f"{key}[{i}]", item, allowed(schema["items"]), _found(item, schema["items"])))
    if not isinstance(value, dict):
        return
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        name = str(name)
        sub = f"{key}.{name}" if key else name
        if item is None or sub in claimed:
            continue
        if name in props:
            _check(props[name], item, sub, out, claimed)
        elif isinstance(extra, dict):
            _check(extra, item, sub, out, claimed)
        elif extra is False or not key:  # top level: every key is declared by someone
            known = list(props) + [c[len(key) + 1:] if key else c.split(".")[0] for c in claimed
                                   if not key or c.startswith(key + ".")]
            guess = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean {guess[0]}?)" if guess else ""
            out.append((sub, _UNKNOWN, f"unknown key{hint}; it is ignored", ""))


_UNKNOWN = object()


def _lookup(config: dict[str, Any], dotted: str) -> tuple[dict[str, Any] | None, str]:
    """The mapping holding ``dotted``'s last part, and that part."""
    parts = dotted.split(".")
    node: Any = config
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return (node if isinstance(node, dict) else None), parts[-1]


def _remove(config: dict[str, Any], dotted: str) -> None:
    holder, last = _lookup(config, re.sub(r"\[\d+\]$", "", dotted))
    if holder is not None:
        holder.pop(last, None)


def _default_of(schema: dict[str, Any], dotted: str, section: str) -> Any:
    node: Any = schema
    rest = dotted[len(section):].lstrip(".") if section else dotted
    for part in [p for p in re.sub(r"\[\d+\]$", "", rest).split(".") if p]:
        node = (node.get("properties") or {}).get(part) if isinstance(node, dict) else None
    return node.get("default", _UNKNOWN) if isinstance(node, dict) else _UNKNOWN


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value


def check(config: dict[str, Any], path: Path,
          plugin_schemas: dict[str, tuple[str, dict[str, Any]]] | None = None,
          core: dict[str, Any] | None = None) -> tuple[dict[str, Any], Report]:
    """Check ``config`` (as read from ``path``) against the core's schema and the plugins'.

    ``plugin_schemas``: section key (dotted) -> (plugin name, schema). Returns the
    configuration to run with (nulls dropped, plugins' wrong values removed so their
    defaults apply) and the report; any error in it means mino must not start.
    ``core``: the core's schema for this installation (``core_schema``; default: with
    the core's model APIs and any backend name accepted).
    """
    cleaned = _drop_nulls(config)
    report = Report(path)
    sections = dict(plugin_schemas or {})
    found: list[tuple[str, Any, str, str]] = []
    _check(core or CORE, cleaned, "", found, sections)
    for key, value, what, seen in found:
        if value is _UNKNOWN:
            report.problems.append(Problem(key, what, error=False))
        else:
            report.problems.append(Problem(key, f"found {seen}; allowed: {what}", error=True))
    for section, (plugin, schema) in sorted(sections.items()):
        holder, last = _lookup(cleaned, section)
        if holder is None or last not in holder:
            continue
        found = []
        _check(schema, holder[last], section, found, {})
        for key, value, what, seen in found:
            if value is _UNKNOWN:
                report.problems.append(Problem(key, what, error=False))
                continue
            default = _default_of(schema, key, section)
            fallback = "its default" if default is _UNKNOWN else f"the default ({_yaml(default)})"
            report.problems.append(Problem(
                key, f"found {seen}; allowed: {what}; {plugin} uses {fallback}", error=False))
            _remove(cleaned, key)
    return cleaned, report


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def plugin_schemas(host) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every plugin's declared sections (inactive memory backends included: their keys are
    still theirs). A schema that is not a mapping is reported as the plugin's error."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, value in host._call_all("config_schema", {"context": host.context}, include_inactive=True):
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(s, dict) for s in value.values()):
            host.errors.append(f"Plugin {name} returned a config_schema that is not a mapping of "
                               "section -> schema; its settings are not checked.")
            continue
        for section, schema in value.items():
            if section in out:
                host.errors.append(f"Plugins {out[section][0]} and {name} both declare the config "
                                   f"section {section!r}; {name}'s schema is not used.")
                continue
            out[str(section)] = (name, schema)
    return out
