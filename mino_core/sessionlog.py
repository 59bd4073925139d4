"""Session logs: one append-only JSON-lines file per session under ``MINO_HOME/sessions``.

The log holds what happened (messages, tool calls, results, decisions, compaction
summaries, the skills record), never front input. Each record is written with one
``write`` on an O_APPEND descriptor; a crash can tear at most the last line, which the
loader skips with a notice.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

ID_RE = re.compile(r"^[0-9a-f]{32}$")

# Record types that are part of the conversation the model sees.
CONVERSATION = ("message", "function_call", "function_call_output")


def new_id() -> str:
    return os.urandom(16).hex()


def is_id(text: str) -> bool:
    return bool(ID_RE.match(text or ""))


@dataclass
class LoadReport:
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class SessionLog:
    def __init__(self, path: Path):
        self.path = path
        self.records: list[dict[str, Any]] = []
        # Whether the file's end was checked for a torn line: once per open log is enough,
        # since every record this object writes ends with a newline.
        self._tail_checked = False

    @property
    def id(self) -> str:
        return self.path.stem

    @classmethod
    def create(cls, sessions_dir: Path, header: dict[str, Any]) -> "SessionLog":
        sessions_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        log = cls(sessions_dir / f"{new_id()}.jsonl")
        log.append({"type": "session", "created": time.time(), **header})
        return log

    @classmethod
    def open(cls, path: Path) -> tuple["SessionLog", list[str]]:
        """Load an existing log; returns the log and notices about lines it skipped."""
        log = cls(path)
        report = read_records(path)
        log.records = report.records
        return log, report.skipped

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # A torn last line from a crash must not swallow this record.
            if not self._tail_checked:
                if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                    data = b"\n" + data
                self._tail_checked = True
            os.write(fd, data)
        finally:
            os.close(fd)
        self.records.append(record)

    def sync(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def open_calls(self) -> list[dict[str, Any]]:
        """The function calls that have no output yet, in log order."""
        answered = {r.get("call_id") for r in self.records if r.get("type") == "function_call_output"}
        return [r for r in self.records
                if r.get("type") == "function_call" and r.get("call_id") not in answered]

    def close_open_calls(self, output: str) -> int:
        """Give every call without an output a failed one, so the log replays into a
        request the service accepts (it refuses a call with no output). Returns how many."""
        calls = self.open_calls()
        for call in calls:
            self.append({"type": "function_call_output", "call_id": call.get("call_id", ""),
                         "status": "failed", "output": output})
        return len(calls)

    def conversation(self) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r.get("type") in CONVERSATION)

    def header(self) -> dict[str, Any]:
        return next((r for r in self.records if r.get("type") == "session"), {})

    def latest(self, kind: str) -> dict[str, Any] | None:
        return next((r for r in reversed(self.records) if r.get("type") == kind), None)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def read_records(path: Path) -> LoadReport:
    report = LoadReport()
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                raise ValueError("not a record")
        except (ValueError, UnicodeDecodeError):
            torn = number == last
            what = "a torn last line" if torn else f"an unreadable line {number + 1}"
            report.skipped.append(f"Session log {path.name}: skipped {what}.")
            continue
        report.records.append(record)
    return report


@dataclass
class SessionSummary:
    id: str
    path: Path
    modified: float
    title: str
    turns: int
    project: str = ""  # the folder the session's tools worked in ("" in old logs)
    created: float = 0.0


def _same(a: str, b: Path) -> bool:
    try:
        return bool(a) and Path(a).resolve() == b.resolve()
    except (OSError, ValueError):
        return False


def list_sessions(sessions_dir: Path, project: Path | None = None,
                  with_empty: bool = True) -> list[SessionSummary]:
    """Sessions, newest first, with their first user message as a title; only those of
    ``project`` when given (and those that recorded no folder), and only those with a turn
    unless ``with_empty``."""
    out = []
    try:
        entries = list(os.scandir(sessions_dir))
    except FileNotFoundError:
        return []
    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl") or not is_id(name[:-6]):
            continue
        path = Path(entry.path)
        title, turns, folder, created = "", 0, "", 0.0
        try:
            for record in read_records(path).records:
                kind = record.get("type")
                if kind == "message" and record.get("role") == "user":
                    turns += 1
                    title = title or str(record.get("content", ""))
                elif kind == "session" and not folder:
                    folder = str(record.get("project") or "")
                    value = record.get("created")
                    created = float(value) if isinstance(value, (int, float)) else 0.0
            modified = entry.stat().st_mtime
        except OSError:
            continue
        if not with_empty and not turns:
            continue
        # A log from before sessions recorded their folder could be anyone's: listed everywhere.
        if project is not None and folder and not _same(folder, project):
            continue
        out.append(SessionSummary(name[:-6], path, modified, title, turns, folder, created))
    out.sort(key=lambda s: (-s.modified, s.id))
    return out


def session_project(path: Path) -> str:
    """The project folder recorded in a session's header ("" when none)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
        record = json.loads(first.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return ""
    return str(record.get("project") or "") if isinstance(record, dict) else ""


def recap(records: list[dict[str, Any]], exchanges: int = 3, width: int = 120) -> list[tuple[str, str]]:
    """The last ``exchanges`` user messages and the answers after them, each clipped to
    ``width`` characters on one line: ``[(role, text)]``, oldest first. Not escaped."""
    shown: list[tuple[str, str]] = []
    for record in records:
        if record.get("type") != "message":
            continue
        role = str(record.get("role", ""))
        text = " ".join(str(record.get("content", "")).split())
        if record.get("incomplete") == "interrupted":
            text = (text + " [interrupted]").strip()
        if role == "user" or (role == "assistant" and text):
            if role == "assistant" and shown and shown[-1][0] == "assistant":
                shown[-1] = ("assistant", (shown[-1][1] + " " + text).strip())
            else:
                shown.append((role, text))
    starts = [k for k, (role, _) in enumerate(shown) if role == "user"]
    if len(starts) > exchanges:
        shown = shown[starts[-exchanges]:]
    return [(role, text if len(text) <= width else text[: width - 3] + "...") for role, text in shown]
