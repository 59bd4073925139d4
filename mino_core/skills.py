"""Skills: folders with a SKILL.md under the project's ``.mino/skills/`` and the home's ``skills/``.

The catalog (names and descriptions) goes into the instructions. It is scanned once per
session and saved as a ``session_skills`` record, so a resumed session keeps the catalog
it started with. ``skill_view NAME`` returns the whole file and is read-only. Bad skill
files are skipped with a notice, like memory files.

The plugin ``mino.skills`` (``SkillsPlugin``) brings both through ordinary hooks:
``instructions`` for the catalog and ``register_tools`` for ``skill_view``.

Trust: a skill becomes instructions the model follows, and a model (or a file it read)
may have written it. So a skill is loaded only as the person last approved it: the home's
``skills-seen.json`` (0600) keeps the SHA-256 of each approved SKILL.md by path. A new or
changed skill is shown (name, origin, description, its first lines) and asked about once
at session start; declined, or with no terminal to ask (``mino -p``), it is skipped with a
notice naming it, and asked again next session. ``skill_view`` returns a file only while
it still has the approved content.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from .hookspecs import hookimpl
from .approvals import Approvals
from .tools import InvalidArguments, Preview, Tool, ToolResult

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_SKILL_BYTES = 64 * 1024
MAX_DESCRIPTION = 1024
SEEN = Approvals("skills-seen.json", "skills")
SEEN_FILE = SEEN.file
PREVIEW_LINES = 40  # lines of a new or changed SKILL.md shown in its question


def _front_matter(text: str) -> dict[str, Any] | None:
    import yaml

    from .yaml_safe import load_yaml

    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 4)
    if end < 0:
        return None
    try:
        data = load_yaml(text[4:end])
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def scan(folders: list[tuple[str, Path]]) -> tuple[list[dict[str, str]], list[str]]:
    """Skills from the folders in order of precedence; (catalog, problems)."""
    found: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for origin, folder in folders:
        try:
            entries = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            continue
        for entry in entries:
            path = entry / "SKILL.md"
            if not path.is_file():
                continue
            try:
                raw = read_skill(path)
                data = _front_matter(raw.decode("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"{path}: skipped ({exc})")
                continue
            name = data.get("name") if data else None
            description = data.get("description") if data else None
            if not isinstance(name, str) or not isinstance(description, str) or not description.strip():
                problems.append(f"{path}: needs front matter with string fields name and description")
                continue
            if not NAME_RE.match(name) or name != entry.name:
                problems.append(f"{path}: name {name!r} must equal the folder name and use "
                                "lowercase letters, digits and single hyphens")
                continue
            if name in found:
                problems.append(f"skill {name}: the {found[name]['origin']} copy wins over {path}")
                continue
            found[name] = {"name": name, "description": " ".join(description.split())[:MAX_DESCRIPTION],
                           "path": str(path), "origin": origin, "sha256": digest(raw)}
    return [found[n] for n in sorted(found)], problems


def read_skill(path: Path) -> bytes:
    """A SKILL.md's bytes; refuses a symbolic link (opened O_NOFOLLOW, so no swap after a
    check) and a file over 64 KiB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the name is a link
            raise ValueError("a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise ValueError("over 64 KiB")
    return data


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- what the person approved ----------------------------------------------------------

def load_seen(home: Path) -> dict[str, str]:
    """Approved skills: SKILL.md path -> SHA-256."""
    return SEEN.seen(home)


def approve(home: Path, entries: list[dict[str, str]]) -> None:
    """Record ``entries`` (catalog entries) as approved with their current content."""
    SEEN.approve(home, entries)


def copies(home: Path, project_root: Path) -> list[dict[str, str]]:
    """Every skill of both folders, a shadowed copy included (``scan`` keeps only the copy
    that wins), in name then precedence order."""
    out: list[dict[str, str]] = []
    for origin, folder in folders(home, project_root):
        out.extend(scan([(origin, folder)])[0])
    order = {origin: i for i, (origin, _) in enumerate(folders(home, project_root))}
    return sorted(out, key=lambda e: (e["name"], order[e["origin"]]))


def choose(home: Path, project_root: Path, names: list[str]):
    """The copies ``names`` pick: ``NAME`` where one folder has it, ``project:NAME`` or
    ``home:NAME`` for one folder's copy. Returns (chosen entries, unknown names, ambiguous:
    name -> its copies). A bare name that both folders hold is ambiguous: a cloned project
    can plant a skill named like one of the person's own, and approving "the" skill of that
    name must not pick the project's copy for them."""
    every = copies(home, project_root)
    origins = {origin for origin, _ in folders(home, project_root)}
    chosen, unknown, ambiguous = [], [], {}
    for asked in names:
        origin, _, name = asked.rpartition(":")
        if origin and origin not in origins:
            unknown.append(asked)
            continue
        found = [e for e in every if e["name"] == name and (not origin or e["origin"] == origin)]
        if not found:
            unknown.append(asked)
        elif len(found) > 1:
            ambiguous[name] = found
        elif found[0] not in chosen:
            chosen.append(found[0])
    return chosen, unknown, ambiguous


def approve_named(home: Path, project_root: Path, names: list[str]):
    """Approve the named copies as they are now, for ``mino skills approve NAME``; returns
    (approved entries, unknown names, ambiguous: name -> copies). Nothing is approved while
    any name is ambiguous: the person says which file they mean."""
    chosen, unknown, ambiguous = choose(home, project_root, names)
    if chosen and not ambiguous:
        approve(home, chosen)
    return ([] if ambiguous else chosen), unknown, ambiguous


def skill_statuses(home: Path, project_root: Path) -> list[tuple[dict[str, str], str]]:
    """Every copy of every skill with ``approved``, ``new`` or ``changed`` (since it was
    approved); a copy that another folder's copy of the same name hides has ``shadowed_by``
    (that copy's origin) set."""
    seen = load_seen(home)
    out, winner = [], {}
    for e in copies(home, project_root):
        if e["name"] in winner:
            e = {**e, "shadowed_by": winner[e["name"]]}
        else:
            winner[e["name"]] = e["origin"]
        out.append((e, SEEN.status(seen, e)))
    return out


def folders(home: Path, project_root: Path) -> list[tuple[str, Path]]:
    """Where skills come from, in order of precedence."""
    return [("project", Path(project_root) / ".mino" / "skills"), ("home", Path(home) / "skills")]


def _review(session, entry: dict[str, str], changed: bool) -> bool:
    """Ask the person whether a new or changed skill may join this session's instructions."""
    try:
        lines = read_skill(Path(entry["path"])).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    notes = ["A skill becomes part of the instructions the model follows. Approve it only if "
             "you wrote it or have read it; SKILL.md begins:"]
    notes += [f"  | {line}" for line in lines[:PREVIEW_LINES]]
    if len(lines) > PREVIEW_LINES:
        notes.append(f"  [... {len(lines) - PREVIEW_LINES} more lines not shown; read {entry['path']}]")
    status = "changed since you approved it" if changed else "new"
    fields = [("Skill", entry["name"]), ("From", f"{entry['origin']}: {entry['path']}"),
              ("Status", status), ("Description", entry["description"])]
    return session.confirm("skill_approval", Preview(fields=fields, notes=notes))


def trusted(session, catalog: list[dict[str, str]]) -> list[dict[str, str]]:
    """The skills the person approved as they are now; asks about the rest, notices skips."""
    kept, skipped = SEEN.review(session, catalog, _review, "skills")
    if skipped:
        names = ", ".join(f"{e['name']} ({e['path']})" for e in skipped)
        session.notice(f"Skills not loaded (new or changed since you last approved them): {names}. "
                       "Start mino in a terminal (not -p) to review them at the first message, "
                       f"or approve one with: {_command('skills approve NAME')}; delete a skill's folder "
                       "to stop the question.")
    return kept


def _command(args: str) -> str:
    from .invocation import command

    return command(args)


def session_catalog(session) -> list[dict[str, str]]:
    """The session's catalog: from its record when resumed, else scanned once, reviewed
    (new and changed skills are asked about) and recorded."""
    record = session.log.latest("session_skills")
    if record is not None:
        return list(record.get("skills") or [])
    catalog, problems = scan(folders(session.home, session.project_root))
    if problems:
        session.notice("Some skills were not loaded:\n" + "\n".join(f"  {p}" for p in problems))
    catalog = trusted(session, catalog)
    session.log.append({"type": "session_skills", "skills": catalog})
    return catalog


def catalog_text(catalog: list[dict[str, str]]) -> str:
    """The catalog as the instructions carry it ("" when there are no skills)."""
    if not catalog:
        return ""
    lines = ["Skills (guidance the user approved; when one applies, read it with skill_view NAME "
             "before you act):"]
    lines += [f"- {s['name']}: {s['description']}" for s in catalog]
    return "\n".join(lines)


class SkillsPlugin:
    """Registered as the internal plugin ``mino.skills`` (one per host): the catalog in the
    instructions and the skill_view tool. Disabled, mino has neither."""

    def __init__(self) -> None:
        # Session id -> that session's catalog by skill name.
        self.catalogs: dict[str, dict[str, dict[str, str]]] = {}

    @hookimpl
    def instructions(self, session):
        catalog = session_catalog(session)
        self.catalogs[session.id] = {s["name"]: s for s in catalog}
        return catalog_text(catalog) or None

    def _validate(self, args, ctx):
        name = args.get("name", "")
        if name not in self.catalogs.get(ctx.session_id, {}):
            known = ", ".join(sorted(self.catalogs.get(ctx.session_id, {}))) or "none"
            raise InvalidArguments(f"No skill named {name!r} in this session's catalog (skills: {known}).")

    def _run(self, args, ctx):
        entry = self.catalogs[ctx.session_id][args["name"]]
        try:
            data = read_skill(Path(entry["path"]))
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return ToolResult.failed(f"Cannot read skill {args['name']}: {exc}")
        # A catalog recorded before hashes were kept is checked against the approvals.
        approved = entry.get("sha256") or load_seen(ctx.home).get(entry["path"])
        if digest(data) != approved:
            return ToolResult.failed(
                f"Skill {args['name']} changed since the user approved it, so it is not shown. "
                "Carry on without it; the user reviews it when a new session starts.")
        return ToolResult.completed(text)

    @hookimpl
    def register_tools(self, context):
        return [Tool(
            name="skill_view",
            description="Read one skill's SKILL.md in full, by its exact name from the skills list "
                        "in the instructions.",
            parameters={"type": "object", "properties": {"name": {"type": "string"}},
                        "required": ["name"], "additionalProperties": False},
            read_only=True, validate=self._validate, run=self._run)]
