"""Run the real agent in-process against a scripted server, with a temporary home."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from ..agent import Agent
from ..config import ModelSettings
from ..model import ModelClient
from ..driver import end_session
from ..turn import run_turn
from ..turn_data import TurnRecord
from ..ui import RecordingUI
from .server import ScriptedServer

Approver = Callable[[str, str], bool]


def approver(policy: Any) -> Approver:
    """``"all"``, ``"none"``, a bool, or ``{tool: bool}`` (unlisted tools: no)."""
    if callable(policy):
        return policy
    if policy in (True, "all", "yes"):
        return lambda tool, text: True
    if policy in (None, False, "none", "no"):
        return lambda tool, text: False
    if isinstance(policy, dict):
        return lambda tool, text: bool(policy.get(tool, policy.get("*", False)))
    raise ValueError(f"unknown approvals policy {policy!r}")


class Harness:
    """An agent whose model is a ScriptedServer and whose questions an approver answers."""

    def __init__(self, server: ScriptedServer, home: Path, project: Path, *, approve: Any = "none",
                 mode: str = "manual", config: dict[str, Any] | None = None,
                 extra_plugins: dict[str, Any] | None = None):
        self.server = server
        self.ui = RecordingUI(approver(approve))
        settings = ModelSettings(api_key="test", base_url=server.base_url, model="scripted",
                                 timeout=10.0, retries=2, backoff=0.01)
        if config is not None:
            home.mkdir(parents=True, exist_ok=True)
        self.agent = Agent(home=home, project_root=project, ui=self.ui, config=config,
                           client=ModelClient(settings), extra_plugins=extra_plugins)
        self.session = self.agent.new_session(mode)

    def turn(self, text: str) -> TurnRecord:
        return run_turn(self.session, text)

    def end_session(self) -> None:
        """End the current session as leaving the REPL does (``session_end``)."""
        end_session(self.session)

    def close(self) -> None:
        """End the session and shut the plugin host down, as leaving mino does."""
        end_session(self.session)
        self.agent.host.shutdown()

    def new_session(self, mode: str | None = None):
        self.session = self.agent.new_session(mode or self.session.mode)
        return self.session

    def resume(self, session_id: str):
        self.session = self.agent.resume(session_id)
        return self.session

    @property
    def transcript(self) -> str:
        return self.ui.transcript

    @property
    def notices(self) -> str:
        return self.ui.notices


def isolated_env(home: Path, trust_folder: bool = True) -> dict[str, str]:
    """Environment for a subprocess mino that must not see the real home or keys.

    ``trust_folder``: the folder holding the home (a test's temporary folder, where its
    project lives too) is recorded as trusted in that home, as a person who answered the
    first start's trust question would have it (see ``mino_core.trust``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
    env["MINO_HOME"] = str(home)
    from ..trust import not_a_project, remember

    if trust_folder and not not_a_project(Path(home).parent):
        try:
            Path(home).mkdir(parents=True, exist_ok=True, mode=0o700)
            remember(Path(home), Path(home).parent)
        except OSError:  # a test's home that is a file, or unwritable, on purpose
            pass
    return env
