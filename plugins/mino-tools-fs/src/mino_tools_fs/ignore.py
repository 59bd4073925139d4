"""A .gitignore matcher (the rules of gitignore(5) that matter for listing files).

Supported: comments, blank lines, trailing-space trimming, ``\\`` escapes, ``!`` negation,
a trailing ``/`` (directories only), anchoring by a leading or middle ``/``, ``*``, ``?``,
``[...]`` and ``**`` (leading, middle, trailing). Patterns from a nested .gitignore apply
relative to its folder; the last matching pattern wins. As in git, a file inside an
ignored folder stays ignored (the walker never descends into it).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rule:
    base: str  # folder of the .gitignore, relative to the root ('' for the root)
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _glob_to_regex(glob: str) -> str:
    out, i, n = [], 0, len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2:i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")  # '**/' : zero or more folders
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")  # trailing '/**' : everything inside
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = glob[i + 1:end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def parse(text: str, base: str = "") -> list[Rule]:
    """The rules of one .gitignore whose folder is ``base`` (relative, '/'-separated)."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # Trailing spaces are ignored unless escaped with a backslash.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob_to_regex(line)
        pattern = body if anchored else r"(?:.*/)?" + body
        rules.append(Rule(base, re.compile(r"\A" + pattern + r"\Z", re.DOTALL), negated, dir_only))
    return rules


class Ignore:
    """The ignore rules under a root, read lazily as folders are visited."""

    def __init__(self, root: Path):
        self.root = root
        self._rules: dict[str, list[Rule]] = {}
        extra = root / ".git" / "info" / "exclude"
        self._rules["\0exclude"] = parse(_read(extra)) if extra.is_file() else []

    def _folder_rules(self, folder: str) -> list[Rule]:
        if folder not in self._rules:
            path = self.root / folder / ".gitignore" if folder else self.root / ".gitignore"
            self._rules[folder] = parse(_read(path), folder) if path.is_file() else []
        return self._rules[folder]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the root, '/'-separated) is ignored.

        Only the rules of its own folder and the folders above apply; the caller is
        expected not to descend into ignored folders.
        """
        if rel == ".git" or rel.startswith(".git/") or rel.endswith("/.git") or "/.git/" in rel:
            return True
        parts = rel.split("/")
        chains = [self._rules["\0exclude"]]
        for depth in range(len(parts)):
            chains.append(self._folder_rules("/".join(parts[:depth])))
        verdict = False
        for rules in chains:
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                sub = rel[len(rule.base) + 1:] if rule.base else rel
                if rule.regex.match(sub):
                    verdict = not rule.negated
        return verdict


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


def walk(root: Path, start: Path, recursive: bool, ignore: Ignore):
    """Yield (relative path, is_dir) under ``start`` in name order, skipping ignored entries.

    Symbolic links are listed but never followed, so a walk cannot leave the project.
    """
    stack = [start]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            rel = os.path.relpath(entry.path, root).replace(os.sep, "/")
            is_dir = entry.is_dir(follow_symlinks=False)
            if ignore.ignored(rel, is_dir):
                continue
            yield rel, is_dir
            if is_dir and recursive:
                subdirs.append(Path(entry.path))
        stack.extend(reversed(subdirs))
