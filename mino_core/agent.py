"""The agent: home, configuration, plugin host, model client and the current session."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import logs
from .backends import check_folders
from .config import ensure_home, load_config, model_settings
from .model import ModelClient
from .permissions import DEFAULT_MODE, normalise_mode
from .plugins import Host, PluginContext, build_host
from .session import Session
from .sessionlog import SessionLog, is_id, list_sessions
from .ui import UI


class SessionNotFound(Exception):
    pass


class Agent:
    def __init__(self, *, home: Path, project_root: Path, ui: UI, config: dict[str, Any] | None = None,
                 host: Host | None = None, extra_plugins: dict[str, Any] | None = None,
                 client: ModelClient | None = None, verbose: bool = False):
        self.home = home
        ensure_home(home)
        logs.configure(home, verbose)
        self.config = load_config(home) if config is None else config
        self.project_root = project_root
        self.ui = ui
        self.context = PluginContext(home=home, project_root=project_root, config=self.config)
        self.host = host or build_host(self.context, extra=extra_plugins)
        check_folders(home, self.host.backends)
        self.client = client if client is not None else ModelClient(model_settings(self.config))
        self.client.use_apis(self.host.model_apis)
        self.client.configure(self.config)  # the limits hold from the first request (/compact too)
        self.session: Session | None = None

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    def default_mode(self) -> str:
        return normalise_mode(str(self.config.get("mode") or "")) or DEFAULT_MODE

    def _attach(self, log: SessionLog, mode: str) -> Session:
        self.session = Session(home=self.home, project_root=self.project_root, config=self.config,
                               host=self.host, ui=self.ui, client=self.client, log=log, mode=mode)
        reason = self.session.manual_only()
        if mode != "manual" and reason:
            self.ui.notice(f"Starting in manual mode, not {mode}: {reason}.")
            self.session.mode = "manual"
        self._started(self.session)
        return self.session

    def _started(self, session: Session) -> None:
        """``session_start``: the session log is open and no turn has run yet."""
        try:
            self.host.notify("session_start", session=session)
        except KeyboardInterrupt:
            self.ui.notice("Interrupted while starting the session.")
        for message in self.host.drain_errors():
            self.ui.notice(message)

    def new_session(self, mode: str | None = None) -> Session:
        mode = mode or self.default_mode()
        log = SessionLog.create(self.sessions_dir, {"project": str(self.project_root), "mode": mode})
        return self._attach(log, mode)

    def resume(self, session_id: str, mode: str | None = None) -> Session:
        session_id = session_id.strip().lower()
        path = self.sessions_dir / f"{session_id}.jsonl"
        if not is_id(session_id) or not path.is_file():
            matches = [s for s in list_sessions(self.sessions_dir) if s.id.startswith(session_id)]
            if len(matches) != 1 or not session_id:
                from .invocation import command

                raise SessionNotFound(f"No session {session_id!r}; `{command('sessions')}` lists them.")
            path = matches[0].path
        log, skipped = SessionLog.open(path)
        for message in skipped:
            self.ui.notice(message)
        recorded = log.latest("mode") or log.header()
        return self._attach(log, mode or normalise_mode(str(recorded.get("mode", ""))) or self.default_mode())
