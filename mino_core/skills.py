"""Skills: folders with a SKILL.md under the project's ``.mino/skills/`` and the home's ``skills/``.

The catalog (names and descriptions) goes into the instructions. It is scanned once per
session and saved as a ``session_skills`` record, so a resumed session keeps the catalog
it started with. ``skill_view NAME`` returns the whole file and is read-only. Bad skill
files are skipped with a notice, like memory files.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .hookspecs import hookimpl
from .tools import InvalidArguments, Tool, ToolResult

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_SKILL_BYTES = 64 * 1024
MAX_DESCRIPTION = 1024


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
                if path.is_symlink() or path.stat().st_size > MAX_SKILL_BYTES:
                    raise ValueError("a symbolic link or over 64 KiB")
                data = _front_matter(path.read_text(encoding="utf-8"))
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
                           "path": str(path), "origin": origin}
    return [found[n] for n in sorted(found)], problems


def session_catalog(session) -> list[dict[str, str]]:
    """The session's catalog: from its record when resumed, else scanned once and recorded."""
    record = session.log.latest("session_skills")
    if record is not None:
        return list(record.get("skills") or [])
    catalog, problems = scan([("project", session.project_root / ".mino" / "skills"),
                              ("home", session.home / "skills")])
    session.log.append({"type": "session_skills", "skills": catalog})
    if problems:
        session.notice("Some skills were not loaded:\n" + "\n".join(f"  {p}" for p in problems))
    return catalog


def catalog_text(session) -> str:
    catalog = session_catalog(session)
    _PLUGIN.catalogs[session.id] = {s["name"]: s for s in catalog}
    if not catalog:
        return ""
    lines = ["Skills (guidance the user wrote; when one applies, read it with skill_view NAME "
             "before you act):"]
    lines += [f"- {s['name']}: {s['description']}" for s in catalog]
    return "\n".join(lines)


class SkillsPlugin:
    """Registered as the internal plugin ``mino.skills``: the skill_view tool."""

    def __init__(self) -> None:
        self.catalogs: dict[str, dict[str, dict[str, str]]] = {}

    def _validate(self, args, ctx):
        name = args.get("name", "")
        if name not in self.catalogs.get(ctx.session_id, {}):
            known = ", ".join(sorted(self.catalogs.get(ctx.session_id, {}))) or "none"
            raise InvalidArguments(f"No skill named {name!r} in this session's catalog (skills: {known}).")

    def _run(self, args, ctx):
        entry = self.catalogs[ctx.session_id][args["name"]]
        try:
            return ToolResult.completed(Path(entry["path"]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            return ToolResult.failed(f"Cannot read skill {args['name']}: {exc}")

    @hookimpl
    def register_tools(self, context):
        return [Tool(
            name="skill_view",
            description="Read one skill's SKILL.md in full, by its exact name from the skills list "
                        "in the instructions.",
            parameters={"type": "object", "properties": {"name": {"type": "string"}},
                        "required": ["name"], "additionalProperties": False},
            read_only=True, validate=self._validate, run=self._run)]


_PLUGIN = SkillsPlugin()
