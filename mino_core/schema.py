"""Check a model's tool arguments against the tool's JSON schema (the subset tools use).

Covers object/required/properties/types/enum/additionalProperties: enough to turn a
wrong argument from the model into an invalid_arguments result that says what to fix.
"""
from __future__ import annotations

from typing import Any

_TYPES = {
    "string": str, "integer": int, "number": (int, float), "boolean": bool,
    "object": dict, "array": list, "null": type(None),
}


def check(schema: dict[str, Any], value: Any, where: str = "arguments") -> list[str]:
    problems: list[str] = []
    expected = schema.get("type")
    if expected:
        kinds = expected if isinstance(expected, list) else [expected]
        if not any(_is(value, k) for k in kinds):
            return [f"{where} must be {' or '.join(kinds)}, not {_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(repr(v) for v in schema["enum"])
        problems.append(f"{where} must be one of {options}, not {value!r}")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value or value[key] is None:
                problems.append(f"{where} is missing required field {key!r}")
        for key, item in value.items():
            if key in props:
                if item is None and key not in (schema.get("required") or []):
                    continue
                problems.extend(check(props[key], item, key))
            elif schema.get("additionalProperties") is False:
                allowed = ", ".join(sorted(props)) or "none"
                problems.append(f"unknown field {key!r} (allowed: {allowed})")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems.extend(check(schema["items"], item, f"{where}[{i}]"))
    return problems


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, object))


def _name(value: Any) -> str:
    for name, kind in _TYPES.items():
        if name != "number" and isinstance(value, kind) and not (name == "integer" and isinstance(value, bool)):
            return name
    return type(value).__name__
