"""What the person's path deny rules name, inside the sandbox too.

A deny rule on a file tool is a statement about the file, so Bash must not get around
it: a rule on a tool that reads (``read_file``, ``search``, ``list_files``) hides what it
names inside the sandbox; a rule on a tool that writes (``write_file``, ``edit_file``)
keeps it read-only. Other names of a hidden file (hard links: the same device and inode)
are hidden too. Rules with a glob are expanded against the project at each command; an
expansion cut short (a huge tree) is a problem, and Bash then asks instead.
"""
from __future__ import annotations

import os
from pathlib import Path

from mino_core import Rules

READS = ("read_file", "search", "list_files")
WRITES = ("write_file", "edit_file")
LINK_CAP = 50_000  # entries of the project looked at for other names of a hidden file


def denied_paths(config: dict, project: Path) -> tuple[list[Path], list[Path], list[str]]:
    """(hidden, read-only, problems) for the deny rules in ``config``."""
    rules = Rules.from_config(config)
    hidden: list[Path] = []
    read_only: list[Path] = []
    problems: list[str] = []
    for rule in rules.deny:
        if not rule.pattern:
            continue
        reads = any(rule.covers_tool(t) for t in READS)
        writes = any(rule.covers_tool(t) for t in WRITES)
        if not (reads or writes):
            continue
        found, complete = rule.paths(project)
        if not complete:
            problems.append(f"the deny rule {rule} names more files than the sandbox can list")
        (hidden if reads else read_only).extend(found)
    hidden += other_names(hidden, project)
    return hidden, read_only, problems


def other_names(paths: list[Path], project: Path) -> list[Path]:
    """Other names (hard links) in the project of the files in ``paths``."""
    wanted: set[tuple[int, int]] = set()
    for path in paths:
        for name in [path] if not path.is_dir() else [Path(w) / f for w, _, fs in os.walk(path) for f in fs]:
            try:
                st = os.lstat(name)
            except OSError:
                continue
            if st.st_nlink > 1 and not os.path.islink(name):
                wanted.add((st.st_dev, st.st_ino))
    if not wanted:
        return []
    found, seen = [], 0
    for folder, dirs, files in os.walk(project):
        for name in files:
            seen += 1
            if seen > LINK_CAP:
                return found
            path = Path(folder) / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in wanted and not any(path == p or p in path.parents for p in paths):
                found.append(path)
    return found
