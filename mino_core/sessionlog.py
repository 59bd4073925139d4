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


def list_sessions(sessions_dir: Path) -> list[SessionSummary]:
    """Every session, newest first, with its first user message as a title."""
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
        title, turns = "", 0
        try:
            for record in read_records(path).records:
                if record.get("type") == "message" and record.get("role") == "user":
                    turns += 1
                    title = title or str(record.get("content", ""))
        except OSError:
            continue
        out.append(SessionSummary(name[:-6], path, entry.stat().st_mtime, title, turns))
    out.sort(key=lambda s: (-s.modified, s.id))
    return out
