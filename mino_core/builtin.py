"""The core's own plugins, registered exactly the way a third party's would be."""
from __future__ import annotations

from .policy import DefaultPolicy
from .skills import SkillsPlugin

PLUGINS = {
    "mino.policy": DefaultPolicy(),
    "mino.skills": SkillsPlugin(),
}
