"""The core's own plugins, registered exactly the way a third party's would be.

``plugins()`` makes fresh instances for each host, so two hosts (two agents in one
process, a test's and the CLI's) never share a policy's parsed rules or a session's
skills catalog. Block one like any plugin: ``MINO_DISABLE_PLUGINS=mino.skills``.
``mino.apis`` offers the model APIs ``responses`` and ``chat`` (``model_api.py``).
``mino.instructions`` brings in the approved AGENTS.md / CLAUDE.md (``project_instructions.py``).
"""
from __future__ import annotations

from typing import Any


def plugins() -> dict[str, Any]:
    """The core's plugins by name, new objects on every call."""
    from .model_api import CoreAPIs
    from .policy import DefaultPolicy
    from .project_instructions import ProjectInstructionsPlugin
    from .skills import SkillsPlugin

    return {"mino.apis": CoreAPIs(), "mino.policy": DefaultPolicy(), "mino.skills": SkillsPlugin(),
            "mino.instructions": ProjectInstructionsPlugin()}
