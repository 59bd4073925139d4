"""The core's own plugins, registered exactly the way a third party's would be."""
from __future__ import annotations

from .policy import DefaultPolicy
from .skills import _PLUGIN as SKILLS

PLUGINS = {
    "mino.policy": DefaultPolicy(),
    "mino.skills": SKILLS,
}
