"""The rules a memory's fields follow, shared by the loader, the tools and the CLI."""
from __future__ import annotations

import re

TYPES = ("user", "feedback", "project", "reference")
NAME_MAX = 64
SUMMARY_MAX_BYTES = 200
DETAILS_MAX_BYTES = 16 * 1024
FILE_MAX_BYTES = 20 * 1024
INDEX_MAX_ENTRIES = 200
INDEX_MAX_BYTES = 16 * 1024
SUFFIX = ".md"

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Characters str.splitlines() treats as line ends: a summary holding any of them would
# render as more than one index line.
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a memory name, or None when it is one."""
    if not isinstance(name, str) or not name:
        return "a memory name must be a non-empty string"
    if len(name) > NAME_MAX:
        return f"a memory name has at most {NAME_MAX} characters"
    if not _NAME.fullmatch(name):
        return ("a memory name uses only lowercase letters, digits and single hyphens, "
                "and starts and ends with a letter or digit (for example uses-pnpm)")
    return None


def type_problem(kind: object) -> str | None:
    if kind not in TYPES:
        return f"type must be one of {', '.join(TYPES)}"
    return None


def summary_problem(summary: object) -> str | None:
    if not isinstance(summary, str) or not summary.strip():
        return "summary must be a non-empty string"
    if _LINE_BREAK.search(summary):
        return "summary must be one line"
    size = len(summary.encode("utf-8", "surrogatepass"))
    if size > SUMMARY_MAX_BYTES:
        return f"summary is {size} bytes; the limit is {SUMMARY_MAX_BYTES} bytes"
    if _has_surrogates(summary):
        return "summary is not valid Unicode text"
    return None


def details_problem(details: object) -> str | None:
    if not isinstance(details, str):
        return "details must be a string"
    size = len(details.encode("utf-8", "surrogatepass"))
    if size > DETAILS_MAX_BYTES:
        return f"details are {size} bytes; the limit is {DETAILS_MAX_BYTES} bytes (16 KiB)"
    if _has_surrogates(details):
        return "details are not valid Unicode text"
    return None


def _has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None
