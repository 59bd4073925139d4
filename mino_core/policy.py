"""The core's default permission policy, an ordinary ``decide_permission`` plugin.

In order: (1) a matching deny rule denies in every mode; (2) bypass runs everything,
shown; a write under the project's .mino/ or a .git/ folder, or under MINO_HOME, asks;
then a matching allow rule runs it, shown; (3) a read-only call runs; (4) a call whose
targets are all project files asks in manual and runs, shown, in accept-edits; (5) a
sandboxed call runs, shown; (6) everything else asks.
"""
from __future__ import annotations

import os
from pathlib import Path

from .hookspecs import hookimpl
from .permissions import Decision, Rules, subject_of


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (symbolic links resolved) lies inside ``root``."""
    try:
        real = Path(os.path.realpath(path))
        base = Path(os.path.realpath(root))
    except (OSError, ValueError):
        return False
    return real == base or base in real.parents


def protected(path: Path, session) -> str | None:
    """Why a write to ``path`` is never an ordinary project edit, or None.

    The project's ``.mino/`` holds skills that become instructions of later sessions, and
    ``.git/`` hooks and config run code when the user runs git; MINO_HOME holds memory,
    config and logs, also when it lies inside the project.
    """
    real = Path(os.path.realpath(path))
    if inside(real, session.home):
        return "it is under MINO_HOME (memory, skills and settings)"
    find = getattr(session, "protected_paths", None)
    for item in (find() if callable(find) else ()):
        if inside(real, item.path):
            return f"plugin {item.plugin} keeps it {item.access} ({item.path})"
    try:
        parts = real.relative_to(os.path.realpath(session.project_root)).parts
    except ValueError:
        return None
    lowered = [p.lower() for p in parts]  # case-insensitive file systems name .Git too
    if lowered and lowered[0] == ".mino":
        return "the project's .mino/ holds skills later sessions follow"
    if ".git" in lowered:
        return "a .git/ folder holds hooks and config that run code"
    return None


class DefaultPolicy:
    """Registered as the internal plugin ``mino.policy``."""

    def __init__(self) -> None:
        self._parsed: tuple[dict, Rules] | None = None

    def _rules(self, config: dict) -> Rules:
        # Parsed once per configuration, not once per tool call.
        if self._parsed is None or self._parsed[0] is not config:
            self._parsed = (config, Rules.from_config(config))
        return self._parsed[1]

    @hookimpl
    def decide_permission(self, call, tool, mode, session):
        rules = self._rules(session.config)
        ctx = session.tool_context()
        targets = _targets(tool, call.arguments, ctx)
        subject = subject_of(call.arguments, session.project_root, targets or ())
        rule = rules.first_deny(call.name, call.arguments, subject)
        if rule is None and isinstance(call.arguments.get("path"), str):
            # a hard link is another name of the same file: match it by device and inode
            for path in targets or [_resolved(call.arguments["path"], session.project_root)]:
                rule = rule or rules.first_deny_same_file(call.name, path, session.project_root)
        if rule is not None:
            return Decision.deny(f"the deny rule {rule} in config.yaml")
        from .trust import refusal

        refused = refusal(call, tool, session)  # Bash with the project at / or the home folder
        if refused:
            return Decision.deny(refused)
        if mode == "bypass":
            return Decision.allow("bypass mode", show=True)
        why = next((w for w in (protected(t, session) for t in targets or ()) if w), None)
        if why:
            return Decision.ask(f"not an ordinary project edit: {why}")
        rule = rules.first_allow(call.name, call.arguments, subject)
        if rule is not None:
            return Decision.allow(f"the allow rule {rule} in config.yaml", show=True)
        if tool.read_only:
            return Decision.allow("read-only")
        if targets and all(inside(Path(t), session.project_root) for t in targets):
            if mode == "accept-edits":
                return Decision.allow("project edit in accept-edits mode", show=True)
            return Decision.ask("project edit in manual mode")
        if tool.sandboxed is not None and tool.sandboxed(call.arguments, ctx):
            return Decision.allow("runs inside the sandbox", show=True)
        return Decision.ask("not read-only, not a project edit, not sandboxed")


def _resolved(raw: str, root: Path) -> Path:
    given = os.path.expanduser(raw) if raw.startswith("~") else raw
    return Path(os.path.realpath(os.path.join(os.path.realpath(root), given)))


def _targets(tool, arguments, ctx) -> list[Path] | None:
    """The files the call would write; None when the tool does not say or cannot tell
    (validation already refused bad paths, so a failure here is not the policy's to report)."""
    if tool.targets is None:
        return None
    try:
        return [Path(t) for t in tool.targets(arguments, ctx)]
    except Exception:  # noqa: BLE001 - no targets: the call is not a project edit, so it asks
        return None


EXPLANATION = """\
Permission modes: manual (default), accept-edits, bypass. Change with /mode or --mode.

The default policy decides each tool call in this order:
  1. A deny rule that matches denies, in every mode.
  2. bypass: everything else runs, and is shown. bypass gives up every question: the
     model may then write anywhere the tools reach, including .git/ hooks, the project's
     .mino/skills/ (instructions for later sessions) and memory.
     A write under the project's .mino/, under any .git/ folder, or under MINO_HOME asks
     in every other mode, whatever the allow rules say: those files are not ordinary
     project edits (skills become instructions, git hooks run code).
     An allow rule that matches runs the call, shown.
  3. A read-only call runs without a question (read_file, list_files, search, skill_view,
     memory_view, memory_search).
  4. A call whose targets are all project files asks in manual and runs, shown, in
     accept-edits (write_file, edit_file).
  5. A call that runs inside the sandbox runs, shown (Bash where a sandbox exists).
  6. Everything else asks (memory_save, Bash without a sandbox).
Any plugin may vote too: deny beats ask beats allow.

Rules live in config.yaml:
  permissions:
    allow: ["Bash(git status)", "write_file(docs/*)"]
    deny:  ["Bash(rm)", "write_file(secrets/*)", "memory_save"]
A rule is a tool name (glob) with an optional pattern matched against the call's subject
(the command, else the path, else the name): a glob when it has * ? [ (* also crosses
/), else a prefix of whole words, or of whole folder names for a path.

Path rules match the file, not its spelling: the path resolved against the project
(links followed, ./ and .. folded), shown relative to the project, or absolute when
outside it. A deny rule matches any spelling (as given, folded, resolved); an allow rule
must match the resolved path. So write_file(secrets/*) also stops ./secrets/k.txt,
x/../secrets/k.txt, the absolute path, and a link that leads into secrets/.

Command rules (Bash) are NOT a security boundary. They match each simple command of a
compound one (split at ; && || | & and newlines, with shlex), with leading assignments,
sudo, env and the like dropped and the first word also without its folder: a deny on
rm catches " rm -rf x", "true; rm x", "/bin/rm x", "echo a | rm", "$(rm x)" and
"sh -c 'rm x'". It does not catch what only the shell knows: an alias, a function, a
script that runs rm, eval, a variable holding the name, find -delete, or python -c.
An allow rule applies only when EVERY simple command is allowed as spelled, and never
to a command with $(...) or backticks. Use the sandbox and deny rules on the file tools
to protect files; use a Bash rule to save questions, not to stop an attacker."""
