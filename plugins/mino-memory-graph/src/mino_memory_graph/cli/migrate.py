"""``mino memory import-files``: the files backend's memories into the graph.

One node per memory file (``<home>/memory/NAME.md``): an Aspect labelled ``memory NAME``,
its area from the memory's type (user -> Semantic, project -> Semantic, feedback ->
Executive: how the user wants work done, reference -> Spatial: where to find things),
facts ``type``, ``summary`` and ``details`` (when present), and ``imported from`` naming
the file. The files backend's memories apply to every project, so the nodes are attached
to none (global). Nothing is deleted from the memory folder.

Idempotent: a memory already imported with the same summary and details is skipped; one
whose text changed gets its facts superseded (history kept). The user is asked once for
the whole batch (``--yes`` skips the question). The file format is read here, not through
the files plugin, so this backend works without it installed.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

AREA_FOR_TYPE = {"user": "Semantic", "project": "Semantic", "feedback": "Executive",
                 "reference": "Spatial"}
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FILE_MAX = 20 * 1024
LABEL_PREFIX = "memory "


@dataclass
class FileMemory:
    name: str
    type: str
    summary: str
    details: str
    path: Path


def read_folder(folder: Path) -> tuple[list[FileMemory], list[str]]:
    """Usable memories in name order, and one line per skipped file."""
    import yaml

    found, skipped = [], []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    for e in entries:
        if not e.name.endswith(".md") or e.name.startswith("."):
            continue
        try:
            st = os.lstat(e.path)
        except OSError as exc:
            skipped.append(f"{e.name}: {exc.strerror}")
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > FILE_MAX:
            skipped.append(f"{e.name}: not a regular file of at most 20 KiB")
            continue
        try:
            text = Path(e.path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            skipped.append(f"{e.name}: not readable UTF-8 text")
            continue
        lines = text.split("\n")
        end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
        front = None
        if lines and lines[0].rstrip() == "---" and end is not None:
            try:
                front = yaml.safe_load("\n".join(lines[1:end]))
            except yaml.YAMLError:
                front = None
        stem = e.name[:-3]
        if (not isinstance(front, dict) or not all(isinstance(front.get(k), str)
                                                   for k in ("name", "type", "summary"))
                or front["name"] != stem or not NAME_RE.match(stem)
                or front["type"] not in AREA_FOR_TYPE):
            skipped.append(f"{e.name}: front matter needs name (= file name), type and summary")
            continue
        details = "\n".join(lines[end + 1:]).strip("\n")
        found.append(FileMemory(stem, front["type"], front["summary"].strip(), details,
                                Path(e.path)))
    return found, skipped


def plan(graph, memories: list[FileMemory]) -> list[tuple[FileMemory, int | None, str]]:
    """(memory, existing node or None, "new" | "changed" | "same") for each memory."""
    by_label: dict[str, int] = {}
    from ..state.partial import find_label

    for nid in find_label(graph, LABEL_PREFIX, prefix=True):
        n = graph.nodes[nid]
        if n.fact("imported from"):
            by_label.setdefault(n.label, nid)
    out = []
    for m in memories:
        nid = by_label.get(LABEL_PREFIX + m.name)
        if nid is None:
            out.append((m, None, "new"))
            continue
        n = graph.nodes[nid]
        cur = {k: (n.fact(k).value if n.fact(k) else "") for k in ("type", "summary", "details")}
        same = cur == {"type": m.type, "summary": m.summary, "details": m.details}
        out.append((m, nid, "same" if same else "changed"))
    return out


def apply(req, items, session_note: str = "mino memory import-files") -> int:
    """Write the "new" and "changed" items in one request; returns how many."""
    count = 0
    for m, nid, what in items:
        if what == "same":
            continue
        if nid is None:
            nid = req.create_node("Aspect", LABEL_PREFIX + m.name, area=AREA_FOR_TYPE[m.type])
        for key, value in (("type", m.type), ("summary", m.summary), ("details", m.details),
                           ("imported from", str(m.path))):
            n = req.graph.nodes[nid]
            cur = n.fact(key)
            if not value and cur is None:
                continue
            if cur is None or cur.value != value:
                req.fact(nid, key, value)
        req.commit_log(nid, "provenance", f"imported from the files backend ({session_note})")
        count += 1
    return count


def add_command(group, context) -> None:
    import click

    @group.command("import-files")
    @click.option("--yes", is_flag=True, help="Do not ask; import at once.")
    def import_files(yes):
        """Import the files backend's memories (<home>/memory/*.md) into the graph."""
        from ..loop.loop import memory_for

        folder = Path(context.home) / "memory"
        memories, skipped = read_folder(folder)
        for line in skipped:
            click.echo(f"skipped {line}", err=True)
        mem = memory_for(context.home, context.config)
        store = mem.store
        store.refresh()
        items = plan(store.graph, memories)
        todo = [i for i in items if i[2] != "same"]
        if not todo:
            click.echo(f"Nothing to import from {folder} ({len(items)} already in the graph).")
            return
        new = sum(1 for i in todo if i[2] == "new")
        click.echo(f"{new} new and {len(todo) - new} changed memories in {folder}:")
        for m, _, what in todo:
            click.echo(f"  {what:<8} [{m.type}] {m.name}: {m.summary[:100]}")
        if not yes and not click.confirm(f"Import them into {store.path}?", default=False):
            click.echo("Nothing was imported.")
            return
        with store.write() as req:
            items = plan(req.graph, memories)  # again under the lock
            n = apply(req, items)
        click.echo(f"Imported {n} memories into {store.path}.")
