"""The read-only tools: read_file, list_files, search. All confined to the project."""
from __future__ import annotations

import re
from pathlib import Path

from mino_core import InvalidArguments, Tool, ToolContext, ToolResult

from .ignore import Ignore, walk
from .paths import project_real, relative, resolve

READ_LINES = 2000  # default number of lines read_file returns
READ_BYTES = 100_000  # cap on the text read_file returns, whatever the line count
LINE_CHARS = 2000  # longer lines are clipped
LIST_CAP = 1000
SEARCH_CAP = 200
SEARCH_FILE_BYTES = 2_000_000  # larger files are skipped by search


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def _cap(ctx: ToolContext, key: str, default: int) -> int:
    value = ctx.section("tools-fs").get(key, default)
    return value if isinstance(value, int) and value > 0 else default


# -- read_file -------------------------------------------------------------------------

def validate_read(args: dict, ctx: ToolContext) -> dict:
    real = resolve(ctx.project_root, args.get("path", ""))
    if not real.exists():
        raise InvalidArguments(f"{args['path']!r} does not exist. Use list_files to see what is there.")
    if real.is_dir():
        raise InvalidArguments(f"{args['path']!r} is a folder; use list_files to see inside it.")
    if not real.is_file():  # a FIFO or device would block or never end
        raise InvalidArguments(f"{args['path']!r} is not a regular file.")
    for key in ("offset", "limit"):
        value = args.get(key)
        if value is not None and (not isinstance(value, int) or value < (1 if key == "limit" else 0)):
            raise InvalidArguments(f"{key} must be a whole number (offset from 0 or 1, limit from 1).")
    return args


def run_read(args: dict, ctx: ToolContext) -> ToolResult:
    real = resolve(ctx.project_root, args["path"])
    data = real.read_bytes()
    if _is_binary(data):
        return ToolResult.completed(f"{relative(ctx.project_root, real)} is a binary file of "
                                    f"{len(data)} bytes; its content is not shown.")
    lines = data.decode("utf-8", errors="replace").splitlines()
    if not lines:
        return ToolResult.completed(f"{relative(ctx.project_root, real)} is empty.")
    first = max(int(args.get("offset") or 1), 1)  # 1-based line number; 0 means the start
    if first > len(lines):
        return ToolResult.invalid(f"offset {first} is past the end: the file has {len(lines)} lines.")
    limit = int(args.get("limit") or _cap(ctx, "read_lines", READ_LINES))
    budget = _cap(ctx, "read_bytes", READ_BYTES)
    out, used, last, capped = [], 0, first - 1, False
    for number in range(first, min(first + limit, len(lines) + 1)):
        line = lines[number - 1]
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f" [... line clipped at {LINE_CHARS} characters]"
        text = f"{number:6}\t{line}"
        if used + len(text) + 1 > budget and out:
            capped = True
            break
        out.append(text)
        used += len(text) + 1
        last = number
    if last < len(lines):
        why = f"the {budget}-byte size cap" if capped else "the line limit"
        out.append(f"[Truncated: showed lines {first}-{last} of {len(lines)} ({why}); "
                   f"call read_file with offset={last + 1} to read on.]")
    return ToolResult.completed("\n".join(out))


READ_FILE = dict(
    name="read_file",
    description=("Read a text file in the project. Lines come numbered (number, tab, text); "
                 "the numbers are not part of the file. Reads up to 2000 lines or 100 kB; "
                 "use offset (1-based first line) and limit (number of lines) for more."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string", "description": "Path relative to the project root."},
        "offset": {"type": "integer", "description": "First line to read, 1-based."},
        "limit": {"type": "integer", "description": "How many lines to read."}},
        "required": ["path"], "additionalProperties": False},
    run=run_read, validate=validate_read, read_only=True,
)


# -- list_files ------------------------------------------------------------------------

def validate_list(args: dict, ctx: ToolContext) -> dict:
    real = resolve(ctx.project_root, args.get("path") or ".")
    if not real.is_dir():
        raise InvalidArguments(f"{args.get('path')!r} is not a folder in the project.")
    return args


def run_list(args: dict, ctx: ToolContext) -> ToolResult:
    root = project_real(ctx.project_root)
    start = resolve(ctx.project_root, args.get("path") or ".")
    cap = _cap(ctx, "list_cap", LIST_CAP)
    entries = []
    for rel, is_dir in walk(root, start, bool(args.get("recursive")), Ignore(root)):
        entries.append(rel + "/" if is_dir else rel)
        if len(entries) > cap:
            break
    entries.sort()
    shown = relative(ctx.project_root, start)
    if not entries:
        return ToolResult.completed(f"{shown}/ is empty (or everything in it is ignored).")
    if len(entries) > cap:
        entries = entries[:cap] + [f"[Stopped at {cap} entries; list a subfolder to see more.]"]
    return ToolResult.completed("\n".join(entries))


LIST_FILES = dict(
    name="list_files",
    description=("List a project folder (default: the project root), one path per line relative "
                 "to the root, folders ending in '/'. recursive=true lists everything below. "
                 ".git and whatever .gitignore ignores are left out."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string", "description": "Folder relative to the project root."},
        "recursive": {"type": "boolean", "description": "Also list subfolders' contents."}},
        "additionalProperties": False},
    run=run_list, validate=validate_list, read_only=True,
)


# -- search ----------------------------------------------------------------------------

def validate_search(args: dict, ctx: ToolContext) -> dict:
    try:
        re.compile(args.get("pattern", ""))
    except re.error as exc:
        raise InvalidArguments(f"pattern is not a valid regular expression: {exc}. "
                               "Escape special characters such as ( [ . * with a backslash.") from exc
    if not args.get("pattern"):
        raise InvalidArguments("pattern is empty.")
    real = resolve(ctx.project_root, args.get("path") or ".")
    if not real.exists():
        raise InvalidArguments(f"{args.get('path')!r} does not exist in the project.")
    return args


def _candidates(root: Path, start: Path):
    if start.is_file():
        yield start
        return
    for rel, is_dir in walk(root, start, True, Ignore(root)):
        path = root / rel
        if not is_dir and not path.is_symlink() and path.is_file():
            yield path


def run_search(args: dict, ctx: ToolContext) -> ToolResult:
    root = project_real(ctx.project_root)
    regex = re.compile(args["pattern"])
    start = resolve(ctx.project_root, args.get("path") or ".")
    cap = _cap(ctx, "search_cap", SEARCH_CAP)
    hits: list[str] = []
    more = False
    for path in sorted(_candidates(root, start)):
        try:
            if path.stat().st_size > SEARCH_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if _is_binary(data):
            continue
        rel = relative(root, path)
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                if len(hits) == cap:
                    more = True
                    break
                hits.append(f"{rel}:{number}: {line[:300]}")
        if more:
            break
    if not hits:
        return ToolResult.completed(f"No matches for {args['pattern']!r}.")
    if more:
        hits.append(f"[Stopped at {cap} matches; narrow the pattern or the path.]")
    return ToolResult.completed("\n".join(hits))


SEARCH = dict(
    name="search",
    description=("Search project files for a Python regular expression; answers 'file:line: text' "
                 f"lines (at most {SEARCH_CAP}). path narrows it to a folder or a file. Skips .git, "
                 "ignored, binary and very large files."),
    parameters={"type": "object", "properties": {
        "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
        "path": {"type": "string", "description": "Folder or file relative to the project root."}},
        "required": ["pattern"], "additionalProperties": False},
    run=run_search, validate=validate_search, read_only=True,
)


def tools() -> list[Tool]:
    return [Tool(**spec) for spec in (READ_FILE, LIST_FILES, SEARCH)]
