"""Project instructions: ``AGENTS.md`` (or ``CLAUDE.md`` where a folder has no AGENTS.md) at
the project root and in the folders above it up to the repository root, as Codex and
Claude Code read them.

They become instructions the model follows, and anyone who can write to the repository
(or a model, or a file it read) may have written them, so they load as skills do: only as
the person last approved them. The home's ``instructions-seen.json`` (0600) keeps the
SHA-256 of each approved file by path. A new or changed file is shown (path, its first
lines) and asked about once at the session's first request; declined, or with nobody to
ask (``mino -p``), it is skipped with a notice naming it and ``mino instructions approve``.
The texts a session loaded are recorded (``session_instructions``), so a resumed session
keeps the instructions it started with.

The files are ordered from the repository root down to the project, so the nearest, most
specific one comes last. A file over 64 KiB or one that is a link leading outside the
repository is skipped with a notice.

The plugin ``mino.instructions`` (``ProjectInstructionsPlugin``) brings them in through the
``instructions`` hook; ``mino instructions`` lists them, ``mino instructions approve``
approves them as they are now (``instructions_command.py``).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .hookspecs import hookimpl
from .approvals import Approvals
from .tools import Preview

NAMES = ("AGENTS.md", "CLAUDE.md")  # the first a folder has wins
SEEN = Approvals("instructions-seen.json", "files")
SEEN_FILE = SEEN.file
MAX_BYTES = 64 * 1024
PREVIEW_LINES = 40
HEADER = ("Project instructions (from the files below, which the user approved; the nearest "
          "folder's come last and win where they differ):")


def repository_root(project_root: Path) -> Path:
    """The nearest folder at or above the project holding ``.git``; the project itself
    when there is none (then only its own file is read)."""
    project = Path(os.path.realpath(project_root))
    for folder in (project, *project.parents):
        if (folder / ".git").exists():
            return folder
    return project


def find(project_root: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The instruction files, repository root first: ([{path, sha256, text}], problems)."""
    project = Path(os.path.realpath(project_root))
    top = repository_root(project)
    folders = [project] + [p for p in project.parents if top == p or top in p.parents]
    found, problems = [], []
    for folder in reversed(folders):
        for name in NAMES:
            path = folder / name
            if not path.is_file():
                continue
            real = Path(os.path.realpath(path))
            if real != path and not (real == top or top in real.parents):
                problems.append(f"{path}: skipped (a link to {real}, outside the repository)")
                break
            try:
                data = real.read_bytes()[:MAX_BYTES + 1]
                if len(data) > MAX_BYTES:
                    raise ValueError("over 64 KiB")
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"{path}: skipped ({exc})")
                break
            if text.strip():
                found.append({"path": str(path), "sha256": hashlib.sha256(data).hexdigest(),
                              "text": text.strip()})
            break
    return found, problems


def approve(home: Path, entries: list[dict[str, str]]) -> None:
    SEEN.approve(home, entries)


def statuses(home: Path, project_root: Path) -> list[tuple[dict[str, str], str]]:
    found, _ = find(project_root)
    seen = SEEN.seen(home)
    return [(e, SEEN.status(seen, e)) for e in found]


def _review(session, entry: dict[str, str], changed: bool) -> bool:
    lines = entry["text"].splitlines()
    notes = ["Project instructions become part of the instructions the model follows. Approve "
             "them only if you trust whoever wrote them; the file begins:"]
    notes += [f"  | {line}" for line in lines[:PREVIEW_LINES]]
    if len(lines) > PREVIEW_LINES:
        notes.append(f"  [... {len(lines) - PREVIEW_LINES} more lines not shown; read {entry['path']}]")
    fields = [("File", entry["path"]),
              ("Status", "changed since you approved it" if changed else "new")]
    return session.confirm("project_instructions", Preview(fields=fields, notes=notes))


def session_files(session) -> list[dict[str, str]]:
    """This session's files: from its record when resumed, else found, reviewed (new and
    changed ones are asked about) and recorded."""
    record = session.log.latest("session_instructions")
    if record is not None:
        return list(record.get("files") or [])
    found, problems = find(session.project_root)
    for problem in problems:
        session.notice(f"Project instructions: {problem}")
    kept, skipped = SEEN.review(session, found, _review, "project instructions")
    if skipped:
        from .invocation import command

        names = ", ".join(e["path"] for e in skipped)
        session.notice(f"Project instructions not loaded (new or changed since you last approved "
                       f"them): {names}. Start mino in a terminal to review them, or approve them "
                       f"as they are now with: {command('instructions approve')}")
    session.log.append({"type": "session_instructions", "files": kept})
    return kept


def text(files: list[dict[str, str]]) -> str:
    if not files:
        return ""
    parts = [HEADER]
    for entry in files:
        parts.append(f"--- {entry['path']} ---\n{entry['text']}")
    return "\n\n".join(parts)


class ProjectInstructionsPlugin:
    """Registered as the internal plugin ``mino.instructions``."""

    @hookimpl
    def instructions(self, session):
        return text(session_files(session)) or None
