"""The read-only tools: read_file, list_files, search. All confined to the project."""
from __future__ import annotations

import os
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


# read_file streams the file: a line at a time, each line read to at most what can be
# shown of it, so memory follows what is shown, never the file's size (a 1 GiB file, sparse
# or one endless line, costs the same as a small one).
LINE_BYTES = LINE_CHARS * 4 + 1  # enough bytes for LINE_CHARS characters of UTF-8, and one more
SKIP_CHUNK = 64 * 1024  # the rest of a clipped line is read and dropped in pieces this size
SKIP_MAX = 16 * 1024 * 1024  # a clipped line longer than this ends the reading
COUNT_BYTES = 2_000_000  # the lines after the shown ones are counted only in files up to this size


def _line(handle) -> tuple[bytes, bool, bool] | None:
    """The next line without its end (at most LINE_BYTES of it), whether more of it was
    dropped, and whether its end was reached (a line over SKIP_MAX is not read to its end);
    None at the end of the file."""
    head = handle.readline(LINE_BYTES)
    if not head:
        return None
    if head.endswith(b"\n") or len(head) < LINE_BYTES:
        return head.rstrip(b"\n").removesuffix(b"\r"), False, True
    skipped = 0
    while skipped < SKIP_MAX:  # a longer line: skip to its end without keeping it
        rest = handle.readline(SKIP_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return head, True, True
        skipped += len(rest)
    return head, True, False


def _lines_left(handle) -> int:
    """How many lines the rest of the file holds (read in chunks, none kept)."""
    count, last = 0, b"\n"
    while chunk := handle.read(SKIP_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def run_read(args: dict, ctx: ToolContext) -> ToolResult:
    real = resolve(ctx.project_root, args["path"])
    shown_path = relative(ctx.project_root, real)
    with open(real, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if _is_binary(handle.read(8192)):
            return ToolResult.completed(f"{shown_path} is a binary file of {size} bytes; "
                                        "its content is not shown.")
        handle.seek(0)
        first = max(int(args.get("offset") or 1), 1)  # 1-based line number; 0 means the start
        limit = int(args.get("limit") or _cap(ctx, "read_lines", READ_LINES))
        budget = _cap(ctx, "read_bytes", READ_BYTES)
        number, endless = 0, False
        while number < first - 1 and not endless:
            got = _line(handle)
            if got is None:
                break
            number += 1
            endless = not got[2]
        out, used, last, capped, more = [], 0, first - 1, False, False
        while not endless:
            if number + 1 >= first + limit:
                more = bool(handle.read(1))  # a peek: the next line itself is not read
                break
            got = _line(handle)
            if got is None:
                break
            number += 1
            raw, clipped, endless = got[0], got[1], not got[2]
            line = raw.decode("utf-8", errors="replace")
            if clipped or len(line) > LINE_CHARS:
                line = line[:LINE_CHARS] + f" [... line clipped at {LINE_CHARS} characters]"
            text = f"{number:6}\t{line}"
            if used + len(text) + 1 > budget and out:
                capped = more = True
                number -= 1
                endless = False  # not shown: the next call starts at this line
                break
            out.append(text)
            used += len(text) + 1
            last = number
        if endless:
            out.append(f"[Stopped: line {number} goes on past {SKIP_MAX // (1024 * 1024)} MiB; "
                       "what follows it is not read. Use Bash (head -c, tail -c) to look "
                       "further into this file.]")
            return ToolResult.completed("\n".join(out))
        if number == 0 and not out and not more:
            return ToolResult.completed(f"{shown_path} is empty.")
        if not out and not more:
            return ToolResult.invalid(f"offset {first} is past the end: the file has {number} lines.")
        if not more:
            return ToolResult.completed("\n".join(out))
        why = f"the {budget}-byte size cap" if capped else "the line limit"
        if size <= COUNT_BYTES:
            handle.seek(0)  # count from the start: the line that stopped us was read already
            total = f"{_lines_left(handle)}"
        else:
            total = f"a {size}-byte file"
        out.append(f"[Truncated: showed lines {first}-{last} of {total} ({why}); "
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
