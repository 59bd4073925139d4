"""What the person approved, by content hash: skills and project instructions load only as
they were when approved. One record per kind in mino's home (``{"version": 1, SECTION:
{path: sha256}}``), written atomically and read again just before each write (another
session may have added to it). A missing or unreadable record is empty: everything is
asked about again, which is safe."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Approvals:
    file: str      # the record's name in mino's home
    section: str   # its key in the record ("skills", "files")

    def seen(self, home: Path) -> dict[str, str]:
        """path -> the SHA-256 approved."""
        try:
            data = json.loads((Path(home) / self.file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        items = data.get(self.section) if isinstance(data, dict) else None
        if not isinstance(items, dict):
            return {}
        return {k: v for k, v in items.items() if isinstance(k, str) and isinstance(v, str)}

    def approve(self, home: Path, entries: list[dict[str, str]]) -> None:
        """Record ``entries`` (each with ``path`` and ``sha256``) as approved as they are."""
        from .atomic import atomic_write

        home = Path(home)
        seen = self.seen(home)
        seen.update({e["path"]: e["sha256"] for e in entries})
        home.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, self.section: dict(sorted(seen.items()))}, indent=1) + "\n"
        atomic_write(home / self.file, text, root=home, mode=0o600)

    def status(self, seen: dict[str, str], entry: dict[str, str]) -> str:
        """``approved``, ``changed`` (since it was approved) or ``new``."""
        if seen.get(entry["path"]) == entry["sha256"]:
            return "approved"
        return "changed" if entry["path"] in seen else "new"

    def review(self, session, entries: list[dict[str, str]],
               ask: Callable[[object, dict[str, str], bool], bool], what: str):
        """The entries approved as they are, and the new or changed ones the person
        approves now (``ask(session, entry, changed)``, recorded); returns ``(kept,
        skipped)``. A record that cannot be written is one notice: they are asked again."""
        seen = self.seen(session.home)
        kept, approved, skipped = [], [], []
        for entry in entries:
            state = self.status(seen, entry)
            if state == "approved":
                kept.append(entry)
            elif ask(session, entry, state == "changed"):
                kept.append(entry)
                approved.append(entry)
            else:
                skipped.append(entry)
        if approved:
            try:
                self.approve(session.home, approved)
            except (OSError, ValueError) as exc:
                session.notice(f"Could not record the approved {what} in {self.file}: {exc}; "
                               "they will be asked about again next session.")
        return kept, skipped
