"""Skills: folders with a SKILL.md under the project's .mino/skills/ (and the home's skills/)."""
from __future__ import annotations

from .hookspecs import hookimpl


def catalog_text(session) -> str:
    return ""


class SkillsPlugin:
    @hookimpl
    def register_tools(self, context):
        return []
