"""The standing nodes: the user profile, one project node per project, a session node per
session; and the label and text of a turn's episode.

- User profile: ``user preferences``, an Entity moved to the Semantic area. The only
  global node: facts about the person, shown at the top of every recall block.
- Project: ``project <identity>``, an Entity (Spatial), with a ``path`` fact. The identity
  is ``git:<host/path>`` from the ``origin`` remote (credentials, scheme, ``.git`` and
  case of the host dropped, so an ssh and an https clone are one project), else
  ``repo:<repository root>``, else ``dir:<folder>``. Unlike Mnemo there is no birth time
  in the identity: Linux does not report one everywhere, and a re-created folder at the
  same path is, for a person, the same project.
- Session: ``session <session id>``, a TaskEpisode PartOf the project, with facts
  ``session`` and ``started`` (the wall-clock date, UTC): Mnemo's one episode per session.
  It holds no text of the user's, so it exists (and takes the turn's tool log and pain
  markers' blame) also with ``memory.graph.episodes: off``.
- Turn episode: ``task: <first 80 characters of the message>``, a TaskEpisode PartOf the
  project (the scope) and PartOf its session (the cluster: hybrid-v1's neighbour and
  cluster signals read the turns of one session in order), with facts ``session``,
  ``turn`` and ``message`` (the whole message, secret-shaped strings redacted, capped; a
  placeholder where the reflection's filter refuses it).

Lookups are cached per store and checked again under the write lock, so two processes
never create a second profile or project node.
"""
from __future__ import annotations

import configparser
import re
from pathlib import Path

from ..core.model import Graph

USER_LABEL = "user preferences"
PROJECT_PREFIX = "project "
EPISODE_PREFIX = "task: "
SESSION_PREFIX = "session "
MESSAGE_CHARS = 2000  # a turn's message kept whole up to this (a pasted log is cut)
_SCP = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")


def normalise_remote(url: str) -> str | None:
    """``git@github.com:Org/Repo.git`` and ``https://user@GitHub.com/Org/Repo`` -> ``github.com/Org/Repo``."""
    url = url.strip()
    if not url:
        return None
    host = path = None
    m = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?/(.*)$", url, re.I)
    if m:
        host, path = m.group(1), m.group(2)
    else:
        m = _SCP.match(url)
        if m:
            host, path = m.group(1), m.group(2)
    if host is None:
        return "local:" + url.rstrip("/")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host.lower()}/{path}"


def _git_dir(root: Path) -> Path | None:
    dotgit = root / ".git"
    if dotgit.is_dir():
        return dotgit
    if dotgit.is_file():  # a worktree or submodule: "gitdir: <path>"
        try:
            text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            target = target if target.is_absolute() else (root / target)
            # a worktree's config lives in the common dir
            common = target / "commondir"
            if common.is_file():
                try:
                    target = (target / common.read_text().strip()).resolve()
                except OSError:
                    pass
            return target
    return None


def repo_root(folder: Path) -> tuple[Path | None, Path | None]:
    """(repository root, git dir) for ``folder``, walking up; (None, None) outside one."""
    folder = Path(folder).resolve()
    for cand in (folder, *folder.parents):
        gd = _git_dir(cand)
        if gd is not None:
            return cand, gd
    return None, None


def origin_url(git_dir: Path) -> str | None:
    cfg = configparser.RawConfigParser(strict=False)
    try:
        cfg.read(git_dir / "config", encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    sections = [s for s in cfg.sections() if s.startswith("remote ")]
    sections.sort(key=lambda s: (s != 'remote "origin"', s))
    for s in sections:
        url = cfg.get(s, "url", fallback=None)
        if url:
            return url
    return None


def project_identity(folder: Path) -> str:
    """``git:<remote>``, else ``repo:<root>``, else ``dir:<folder>``."""
    root, gd = repo_root(folder)
    if gd is not None:
        url = origin_url(gd)
        norm = normalise_remote(url) if url else None
        if norm:
            return f"git:{norm}"
        return f"repo:{root}"
    return f"dir:{Path(folder).resolve()}"


def find_user(graph: Graph) -> int | None:
    from ..state.partial import find_label

    found = find_label(graph, USER_LABEL, "Entity")
    return found[0] if found else None


def find_project(graph: Graph, identity: str) -> int | None:
    label = PROJECT_PREFIX + identity
    found = [p for p in graph.projects
             if (n := graph.nodes.get(p)) is not None and not n.deleted and n.label == label]
    return min(found) if found else None


def is_profile(graph: Graph, node_id: int) -> bool:
    n = graph.nodes.get(node_id)
    return n is not None and n.kind == "Entity" and (
        n.label == USER_LABEL or n.label.startswith(PROJECT_PREFIX))


def _one_line(text: str) -> str:
    """A message as memory keeps it: one line, redacted, and a placeholder where the
    reflection's filter refuses it. A message can carry outside text (``mino -p`` with a
    piped file appends it), and memory records it unasked."""
    from ..core.safety import observed

    return observed(" ".join((text or "").split()), "[message not kept: {why}]")


def episode_texts(text: str) -> tuple[str, str]:
    """A turn's episode label and its ``message`` fact (one line, redacted, capped), from
    one pass of the filter (about a millisecond a kilobyte: a piped file makes it count)."""
    one = _one_line(text)
    return (EPISODE_PREFIX + one[:80] + ("…" if len(one) > 80 else ""),
            one[:MESSAGE_CHARS] + ("…" if len(one) > MESSAGE_CHARS else ""))


def session_label(session_id: str) -> str:
    return SESSION_PREFIX + str(session_id)


class Standing:
    """The ids of the standing nodes for one store, found once and checked on use.

    ``mine``: with a shared journal, whether a profile node is this person's (the
    database role that made it, ``SharedJournal.profile_is_mine``): each teammate has
    their own profile, and the project nodes are shared."""

    def __init__(self, mine=None):
        self.mine = mine
        self.user: int | None = None
        self.projects: dict[str, int] = {}
        self.sessions: dict[str, int] = {}  # session id -> its session node
        self.scanned_to = 0  # node ids below this were looked at for the user profile

    def _alive(self, graph: Graph, nid: int | None) -> bool:
        n = graph.nodes.get(nid) if nid is not None else None
        return n is not None and not n.deleted

    def user_id(self, graph: Graph) -> int | None:
        mine = self.mine or (lambda nid: True)
        if self._alive(graph, self.user) and mine(self.user):
            return self.user
        self.user = None
        start = self.scanned_to
        if start == 0 or getattr(graph, "partial", False):
            if self.mine is None:
                self.user = find_user(graph)
            else:
                from ..state.partial import find_label

                self.user = next((nid for nid in find_label(graph, USER_LABEL, "Entity")
                                  if mine(nid)), None)
        else:
            for nid in range(start, graph.next_node):
                n = graph.nodes.get(nid)
                if (n is not None and not n.deleted and n.kind == "Entity"
                        and n.label == USER_LABEL and mine(nid)):
                    self.user = nid
                    break
        self.scanned_to = graph.next_node
        return self.user

    def project_id(self, graph: Graph, identity: str) -> int | None:
        nid = self.projects.get(identity)
        if self._alive(graph, nid) and graph.nodes[nid].label == PROJECT_PREFIX + identity:
            return nid
        nid = find_project(graph, identity)
        if nid is None:
            self.projects.pop(identity, None)
        else:
            self.projects[identity] = nid
        return nid

    def ensure(self, req, identity: str, folder: Path) -> tuple[int, int]:
        """Inside a write request (lock held, graph current): (user id, project id)."""
        g = req.graph
        user = self.user_id(g)
        if user is None:
            user = req.create_node("Entity", USER_LABEL, area="Semantic")
            req.commit_log(user, "provenance", "standing node: the user's profile (global)"
                           if self.mine is None else
                           "standing node: this person's profile (their database role's)")
            self.user = user
        project = self.project_id(g, identity)
        if project is None:
            project = req.create_node("Entity", PROJECT_PREFIX + identity)
            req.add_fact(project, "path", str(Path(folder).resolve()))
            self.projects[identity] = project
        self.scanned_to = g.next_node
        return user, project

    def session(self, req, session_id: str, project: int, resumed: bool) -> int:
        """Inside a write request: the session node of ``session_id``, created (PartOf
        ``project``) on its first turn. Only a ``resumed`` session (one with earlier turns,
        perhaps from another process) is looked up in the graph; a new one cannot be there.
        """
        g = req.graph
        label = session_label(session_id)
        nid = self.sessions.get(session_id)
        if self._alive(g, nid) and g.nodes[nid].label == label:
            return nid
        nid = None
        if resumed:
            from ..state.partial import find_label

            found = find_label(g, label, "TaskEpisode")
            nid = found[0] if found else None
        if nid is None:
            from datetime import datetime, timezone

            nid = req.episode(label)
            req.add_fact(nid, "session", str(session_id))
            req.add_fact(nid, "started",
                         datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
            req.link(nid, project, "PartOf")
        self.sessions[session_id] = nid
        return nid
