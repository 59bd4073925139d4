"""write_file and edit_file: a diff in the confirmation, approval bound to the file as seen.

The flow the core drives: ``validate`` (pure) -> ``targets`` (for the policy) ->
``preview`` (diff + fingerprint, when the user is asked or shown) -> ``run``, which
writes only if the file still has the fingerprint the user saw.
"""
from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path

from mino_core import (InvalidArguments, PathChanged, Preview, Tool, ToolContext, ToolResult,
                       atomic_write)

from .paths import project_real, relative, resolve

DIFF_LINES = 80  # diff lines shown in a confirmation; the rest are counted
NAME_BYTES = 255
CHANGED = "changed after approval; nothing was written"


# -- the file's state ------------------------------------------------------------------

def fingerprint(path: Path) -> str | None:
    """sha256 of the content, or None when the file is absent (so appearing counts too)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _read_text(path: Path, shown: str) -> str | None:
    """The file's text, or None when absent; refuses folders and non-UTF-8 files."""
    if path.is_dir():
        raise InvalidArguments(f"{shown!r} is a folder, not a file.")
    if path.exists() and not path.is_file():  # a FIFO or device would block reading
        raise InvalidArguments(f"{shown!r} is not a regular file.")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArguments(f"{shown!r} is not UTF-8 text; it cannot be edited here.") from exc


def save(ctx: ToolContext, real: Path, text: str, shown: str) -> ToolResult | None:
    """Write ``text`` to the resolved ``real`` through the core's atomic helper, which opens
    each folder below the project root without following links: a folder swapped for a link
    after ``resolve`` checked it fails the write instead of sending it outside. None on
    success, else the failed result for the model."""
    try:
        atomic_write(real, text, root=project_real(ctx.project_root), make_parents=True)
    except PathChanged:
        return ToolResult.failed(f"{shown}: a folder on the way was replaced (by a link or a file) "
                                 "while writing; nothing was written. Check the path and retry.")
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return ToolResult.failed(f"Cannot write {shown}: {why}; nothing was written.")
    return None


def _check_names(path: str) -> None:
    """A file system takes names of at most 255 bytes; say so before anything else."""
    for part in Path(path).parts:
        size = len(os.fsencode(part))
        if size > NAME_BYTES:
            raise InvalidArguments(f"the name {part[:40]!r}... is {size} bytes long; a file or "
                                   f"folder name has at most {NAME_BYTES} bytes. Use a shorter name.")


def diff_lines(old: str | None, new: str, shown: str, limit: int = DIFF_LINES) -> list[str]:
    """A unified diff of at most ``limit`` lines, then one line counting what was left out."""
    lines = list(difflib.unified_diff(
        (old or "").splitlines(), new.splitlines(),
        "/dev/null" if old is None else f"a/{shown}", f"b/{shown}", lineterm=""))
    if not lines:
        return ["(no change: the new content equals the current file)"]
    if len(lines) > limit:
        left = len(lines) - limit
        lines = lines[:limit] + [f"[... {left} more diff line{'s' if left != 1 else ''} not shown]"]
    return lines


# -- shared steps ----------------------------------------------------------------------

def targets(args: dict, ctx: ToolContext) -> list[Path]:
    return [resolve(ctx.project_root, args["path"])]


def _refuse_if_changed(path: Path, ctx: ToolContext, shown: str) -> ToolResult | None:
    if ctx.previewed and fingerprint(path) != ctx.seen:
        return ToolResult.failed(f"{shown} {CHANGED}. Read the file again and redo the change "
                                 "if it is still needed.")
    return None


# -- write_file ------------------------------------------------------------------------

def validate_write(args: dict, ctx: ToolContext) -> dict:
    real = resolve(ctx.project_root, args.get("path", ""))
    _check_names(args["path"])
    if real.is_dir():
        raise InvalidArguments(f"{args['path']!r} is a folder, not a file.")
    if real.exists() and not real.is_file():
        raise InvalidArguments(f"{args['path']!r} is not a regular file.")
    if not isinstance(args.get("content"), str):
        raise InvalidArguments("content must be a string (the whole new file).")
    return args


def preview_write(args: dict, ctx: ToolContext) -> Preview:
    real = resolve(ctx.project_root, args["path"])
    shown = relative(ctx.project_root, real)
    try:
        old = _read_text(real, shown)
        notes = diff_lines(old, args["content"], shown)
    except InvalidArguments:  # not UTF-8: no diff to show, say what is replaced
        old, notes = "", [f"(replaces a non-text file of {real.stat().st_size} bytes)"]
    action = "create" if old is None else "overwrite"
    return Preview(fields=[("Path", shown), ("Action", action)], notes=notes,
                   fingerprint=fingerprint(real))


def run_write(args: dict, ctx: ToolContext) -> ToolResult:
    real = resolve(ctx.project_root, args["path"])  # again: a link may have moved since
    shown = relative(ctx.project_root, real)
    refused = _refuse_if_changed(real, ctx, shown)
    if refused:
        return refused
    existed = real.exists()
    failed = save(ctx, real, args["content"], shown)
    if failed:
        return failed
    lines = args["content"].count("\n") + (0 if args["content"].endswith("\n") or not args["content"] else 1)
    return ToolResult.completed(f"{'Overwrote' if existed else 'Created'} {shown} ({lines} lines).")


WRITE_FILE = dict(
    name="write_file",
    description=("Create a project file or replace its whole content. The user sees a diff and "
                 "may refuse. Prefer edit_file for changing part of an existing file."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string", "description": "Path relative to the project root."},
        "content": {"type": "string", "description": "The complete new content."}},
        "required": ["path", "content"], "additionalProperties": False},
    run=run_write, validate=validate_write, targets=targets, preview=preview_write,
)


# -- edit_file -------------------------------------------------------------------------

def _replace(text: str, old: str, new: str, shown: str) -> str:
    count = text.count(old)
    if count == 0:
        raise InvalidArguments(
            f"old_string was not found in {shown}. Read the file and copy the exact text, "
            "including whitespace and indentation (without the line numbers).")
    if count > 1:
        raise InvalidArguments(
            f"old_string occurs {count} times in {shown}; it must match exactly once. "
            "Include more surrounding lines to make it unique.")
    return text.replace(old, new, 1)


def validate_edit(args: dict, ctx: ToolContext) -> dict:
    real = resolve(ctx.project_root, args.get("path", ""))
    shown = relative(ctx.project_root, real)
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or old == "":
        raise InvalidArguments("old_string is empty; to create a file use write_file.")
    if not isinstance(new, str):
        raise InvalidArguments("new_string must be a string.")
    if old == new:
        raise InvalidArguments("old_string and new_string are the same; there is nothing to change.")
    text = _read_text(real, shown)
    if text is None:
        raise InvalidArguments(f"{shown} does not exist; use write_file to create it.")
    _replace(text, old, new, shown)
    return args


def preview_edit(args: dict, ctx: ToolContext) -> Preview:
    real = resolve(ctx.project_root, args["path"])
    shown = relative(ctx.project_root, real)
    text = _read_text(real, shown)
    if text is None:
        raise InvalidArguments(f"{shown} does not exist; use write_file to create it.")
    new = _replace(text, args["old_string"], args["new_string"], shown)
    return Preview(fields=[("Path", shown)], notes=diff_lines(text, new, shown),
                   fingerprint=fingerprint(real))


def run_edit(args: dict, ctx: ToolContext) -> ToolResult:
    real = resolve(ctx.project_root, args["path"])
    shown = relative(ctx.project_root, real)
    refused = _refuse_if_changed(real, ctx, shown)
    if refused:
        return refused
    text = _read_text(real, shown)
    if text is None:
        return ToolResult.failed(f"{shown} no longer exists; nothing was written.")
    failed = save(ctx, real, _replace(text, args["old_string"], args["new_string"], shown), shown)
    return failed or ToolResult.completed(f"Edited {shown}.")


EDIT_FILE = dict(
    name="edit_file",
    description=("Replace one exact occurrence of old_string with new_string in a project file. "
                 "old_string must match exactly once (whitespace included); add surrounding "
                 "lines to make it unique. The user sees a diff and may refuse."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string", "description": "Path relative to the project root."},
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."}},
        "required": ["path", "old_string", "new_string"], "additionalProperties": False},
    run=run_edit, validate=validate_edit, targets=targets, preview=preview_edit,
)


def tools() -> list[Tool]:
    return [Tool(**spec) for spec in (WRITE_FILE, EDIT_FILE)]
