"""Permission modes, the Decision a policy returns, and user rules from config.

The default policy itself is an ordinary ``decide_permission`` implementation in
``mino_core.builtin``; this module holds the pieces it and other plugins share.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence
import re
import shlex

MODES = ("manual", "accept-edits", "bypass")
DEFAULT_MODE = "manual"

ALLOW, ASK, DENY = "allow", "ask", "deny"
_RANK = {ALLOW: 0, ASK: 1, DENY: 2}


@dataclass(frozen=True)
class Decision:
    verdict: str  # allow | ask | deny
    reason: str = ""
    # Whether an allowed call is shown to the user (its preview printed) before it runs.
    show: bool = False

    @classmethod
    def allow(cls, reason: str = "", show: bool = False) -> "Decision":
        return cls(ALLOW, reason, show)

    @classmethod
    def ask(cls, reason: str = "") -> "Decision":
        return cls(ASK, reason)

    @classmethod
    def deny(cls, reason: str = "") -> "Decision":
        return cls(DENY, reason)


def combine(votes: list[Decision]) -> Decision:
    """Deny beats ask beats allow; among allows, showing wins. No vote asks."""
    if not votes:
        return Decision.ask("no policy voted")
    worst = max(votes, key=lambda d: _RANK.get(d.verdict, 2))
    if worst.verdict == ALLOW and any(v.show for v in votes):
        return Decision.allow(worst.reason, show=True)
    return worst


def normalise_mode(name: str) -> str | None:
    name = (name or "").strip().lower().replace("_", "-")
    aliases = {"acceptedits": "accept-edits", "accept": "accept-edits", "edits": "accept-edits"}
    name = aliases.get(name, name)
    return name if name in MODES else None


@dataclass(frozen=True)
class Subject:
    """What a call is about, in the forms rules are matched against.

    ``deny``: every spelling of it; a deny rule that matches any one denies. ``allow``: the
    parts that must each be allowed (every simple command of a compound command; the
    resolved path of each file); None when no allow rule can cover the call (a command
    that cannot be parsed, or one that runs a command substitution).
    """

    deny: tuple[str, ...] = ()
    allow: tuple[str, ...] | None = ()
    path: bool = False  # the forms are paths: prefixes match whole folder names


@dataclass(frozen=True)
class Rule:
    """``tool`` plus an optional pattern matched against the call's subject.

    The subject is the command for Bash-like tools (each simple command of a compound
    one), else the path (the resolved path relative to the project, and its other
    spellings), else the name. A pattern with ``*``, ``?`` or ``[`` is a glob (``*`` also
    crosses ``/``); otherwise a prefix of whole words (``git status`` covers ``git status
    --short``) or, for paths, of whole folder names (``secrets`` covers ``secrets/k.txt``).
    """

    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> "Rule":
        """``Bash(git status*)`` or ``write_file(docs/**)`` or a bare ``memory_save``."""
        text = text.strip()
        if text.endswith(")") and "(" in text:
            tool, _, rest = text.partition("(")
            return cls(tool.strip(), rest[:-1].strip())
        return cls(text)

    def covers_tool(self, tool: str) -> bool:
        return fnmatch.fnmatchcase(tool, self.tool)

    def hits(self, text: str, path: bool = False) -> bool:
        """Whether the pattern matches one form of a subject (the tool aside)."""
        if not self.pattern:
            return True
        pattern = self.pattern
        if path:
            pattern = pattern[2:] if pattern.startswith("./") and len(pattern) > 2 else pattern
        if any(ch in pattern for ch in "*?["):
            return fnmatch.fnmatchcase(text, pattern)
        if text == pattern or text.startswith(pattern + " "):
            return True
        folder = pattern.rstrip("/")
        return (path or pattern.endswith("/")) and bool(folder) and text.startswith(folder + "/")

    def matches(self, tool: str, arguments: dict[str, Any], subject: "Subject | None" = None) -> bool:
        """Whether the rule matches any spelling of the call (how a deny rule applies)."""
        if not self.covers_tool(tool):
            return False
        if not self.pattern:
            return True
        subject = subject if subject is not None else subject_of(arguments)
        return any(self.hits(form, subject.path) for form in subject.deny)

    def paths(self, root: Path) -> tuple[list[Path], bool]:
        """The existing files the pattern names in ``root``, and whether that is all of
        them (see ``rule_paths``): what a sandbox hides or keeps read-only for the rule."""
        return rule_paths(self, root)

    def __str__(self) -> str:
        return f"{self.tool}({self.pattern})" if self.pattern else self.tool


def call_subject(arguments: dict[str, Any]) -> str | None:
    """What a call is about, for rules and for logs: a command, a path, a name, a query."""
    for key in ("command", "path", "name", "pattern", "query"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return None


def subject_of(arguments: dict[str, Any], project_root: Path | None = None,
               targets: Sequence[Path] = ()) -> Subject:
    """The forms of a call's subject: a command split into its simple commands; a path
    resolved against ``project_root`` (and the tool's resolved ``targets``)."""
    command = arguments.get("command")
    if isinstance(command, str):
        return command_subject(command)
    text = call_subject(arguments)
    if isinstance(arguments.get("path"), str) and project_root is not None:
        return _path_subject(arguments["path"], project_root, targets)
    if text is None:
        return Subject((), None)
    return Subject((text,), (text,))


def _path_subject(raw: str, root: Path, targets: Sequence[Path]) -> Subject:
    base = os.path.realpath(root)
    given = os.path.expanduser(raw) if raw.startswith("~") else raw
    joined = os.path.join(base, given)
    lexical = os.path.normpath(joined)
    try:
        real = os.path.realpath(joined)
    except (OSError, ValueError):
        real = lexical
    resolved = [os.path.realpath(t) for t in targets] or [real]
    forms = [raw, lexical, real, *resolved]
    deny = {f for path in forms for f in (path, _shown(path, base))}
    return Subject(tuple(sorted(deny)), tuple(_shown(p, base) for p in resolved), path=True)


def _shown(path: str, base: str) -> str:
    """A path relative to the project when inside it (with '/'), else absolute."""
    if not os.path.isabs(path):
        return os.path.normpath(path).replace(os.sep, "/")
    rel = os.path.relpath(path, base)
    if rel == ".." or rel.startswith(".." + os.sep):
        return path
    return rel.replace(os.sep, "/")


@dataclass(frozen=True)
class Rules:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Rules":
        section = config.get("permissions") or {}
        errors: list[str] = []
        if not isinstance(section, dict):
            return cls(errors=("permissions in config.yaml must be a mapping with allow/deny lists",))

        def parse(key: str) -> tuple[Rule, ...]:
            items = section.get(key) or []
            if isinstance(items, str):
                items = [items]
            if not isinstance(items, list):
                errors.append(f"permissions.{key} must be a list of rules like 'Bash(git status)'")
                return ()
            out = []
            for item in items:
                if isinstance(item, str) and item.strip():
                    out.append(Rule.parse(item))
                else:
                    errors.append(f"permissions.{key}: ignored {item!r} (not a rule string)")
            return tuple(out)

        return cls(parse("allow"), parse("deny"), tuple(errors))

    def first_deny(self, tool: str, arguments: dict[str, Any],
                   subject: Subject | None = None) -> Rule | None:
        """The first deny rule that matches any spelling of the call."""
        subject = subject if subject is not None else subject_of(arguments)
        return next((r for r in self.deny if r.matches(tool, arguments, subject)), None)

    def first_deny_same_file(self, tool: str, path: Path, root: Path) -> Rule | None:
        """The first deny rule on ``tool`` that names another name of the file ``path``
        (a hard link: the same device and inode), else None. Only a file with more than
        one name is looked up, so the common case costs one stat."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if st.st_nlink < 2 or not os.path.isfile(path):
            return None
        for rule in self.deny:
            if not rule.pattern or not rule.covers_tool(tool):
                continue
            found, _ = rule_paths(rule, root)
            for denied in found:
                for name in [denied] if not denied.is_dir() else _files(denied):
                    try:
                        other = os.stat(name)
                    except OSError:
                        continue
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        return rule
        return None

    def first_allow(self, tool: str, arguments: dict[str, Any],
                    subject: Subject | None = None) -> Rule | None:
        """An allow rule when every part of the call is allowed (by it or another), else None."""
        subject = subject if subject is not None else subject_of(arguments)
        rules = [r for r in self.allow if r.covers_tool(tool)]
        bare = next((r for r in rules if not r.pattern), None)
        if bare is not None or not rules:
            return bare
        if not subject.allow:
            return None
        first = None
        for part in subject.allow:
            rule = next((r for r in rules if r.hits(part, subject.path)), None)
            if rule is None:
                return None
            first = first or rule
        return first


# -- the paths a path rule names ------------------------------------------------------

WALK_CAP = 20_000  # entries looked at for one glob rule; past it the answer is incomplete


def rule_paths(rule: Rule, root: Path, cap: int = WALK_CAP) -> tuple[list[Path], bool]:
    """The existing files and folders a path rule's pattern names in ``root`` (or at an
    absolute pattern), and whether the answer is complete (False past ``cap`` entries).

    A plain pattern is one path (``secrets`` is the folder, so all inside it). A glob is
    matched like the rule matches (``*`` crosses ``/``) against the entries under its
    fixed leading folders; a folder that matches stands for everything in it, and a
    pattern that is its fixed folder followed by only ``*`` is that folder."""
    pattern = (rule.pattern or "").strip()
    if not pattern:
        return [], True
    pattern = pattern[2:] if pattern.startswith("./") and len(pattern) > 2 else pattern
    base = Path(os.path.realpath(root))
    absolute = os.path.isabs(os.path.expanduser(pattern))
    pattern = os.path.expanduser(pattern)
    if not any(ch in pattern for ch in "*?["):
        path = Path(pattern) if absolute else base / pattern.rstrip("/")
        return ([path] if os.path.lexists(path) else []), True
    parts = pattern.split("/")
    fixed = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    rest = "/".join(parts[len(fixed):])
    top = Path("/".join(fixed) or "/") if absolute else base.joinpath(*[f for f in fixed if f])
    if not top.is_dir():
        return [], True
    if rest and set(rest) <= {"*", "/"}:
        return [top], True
    found, seen = [], 0
    for folder, dirs, files in os.walk(top):
        for name in sorted(dirs) + sorted(files):
            seen += 1
            if seen > cap:
                return found, False
            path = Path(folder) / name
            shown = str(path) if absolute else path.relative_to(base).as_posix()
            if fnmatch.fnmatchcase(shown, pattern):
                found.append(path)
                if name in dirs:
                    dirs.remove(name)  # the folder stands for all inside it
    return found, True


def _files(folder: Path, cap: int = WALK_CAP) -> list[Path]:
    out: list[Path] = []
    for where, _, files in os.walk(folder):
        out += [Path(where) / f for f in files]
        if len(out) > cap:
            break
    return out


# -- commands ---------------------------------------------------------------------------
# Rules on commands match each simple command of a compound one, first word normalised.
# This makes the common cases hold; it is not a shell parser and not a security boundary
# (the explanation in ``mino permissions`` says so).

_SEPARATORS = {";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"}
# Words that come before the command they run: shell keywords and simple wrappers.
_LEADING = {"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time"}
_WRAPPERS = {"sudo", "doas", "env", "command", "builtin", "exec", "nohup", "nice", "xargs"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`|[<>]\(([^()]*)\)")


def command_subject(command: str) -> Subject:
    """A command's forms. Deny: the whole text, then each simple command with leading
    assignments, keywords and wrappers (sudo, env, ...) dropped, as spelled and with the
    first word's folder dropped too (``/bin/rm x`` is also ``rm x``). Allow: each simple
    command exactly as spelled; a command substitution or unparsable text is never allowed."""
    deny = [command.strip()]
    for words in command_parts(command):
        deny += [" ".join(words), " ".join([os.path.basename(words[0])] + words[1:])]
    spelled = _split(command, strict=True)
    allow = None
    if spelled and _SUBSTITUTION.search(command) is None:
        allow = tuple(" ".join(words) for words in spelled)
    return Subject(tuple(dict.fromkeys(deny)), allow)


def command_parts(command: str, depth: int = 0) -> list[list[str]]:
    """The simple commands in ``command`` (split at ; && || | & and newlines), each as its
    words after the leading ones that only run it (assignments, keywords, sudo, env, ...),
    including the commands in ``$(...)``, backticks and ``sh -c '...'``."""
    parts = [_drop_leading(words) for words in _split(command, strict=False) or []]
    if depth < 3:
        for match in _SUBSTITUTION.finditer(command):
            inner = next(g for g in match.groups() if g is not None)
            parts += command_parts(inner, depth + 1)
        for words in list(parts):
            if os.path.basename(words[0]) in _SHELLS and "-c" in words[:-1]:
                parts += command_parts(words[words.index("-c") + 1], depth + 1)
    return [p for p in parts if p]


def _split(command: str, strict: bool) -> list[list[str]] | None:
    """The words of each simple command, via shlex. ``strict``: None for text shlex cannot
    parse (an open quote); otherwise such text is split on whitespace instead."""
    lexer = shlex.shlex(command.replace("\n", " \n "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        if strict:
            return None
        tokens = [t for t in re.split(r"[ \t\r]+|(;|&&|\|\||\||&|\n)", command) if t]
    parts, words = [], []
    for token in tokens + [";"]:
        if token in _SEPARATORS:
            if words:
                parts.append(words)
            words = []
        else:
            words.append(token)
    return parts


def _drop_leading(words: list[str]) -> list[str]:
    i = 0
    while i < len(words):
        word = words[i]
        if word in _LEADING or _ASSIGNMENT.match(word):
            i += 1
        elif os.path.basename(word) in _WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
                i += 1
        else:
            break
    return words[i:] or words[-1:]
