"""Running one story: a fresh home and git projects, each session through the REPL (or a
real ``mino -p``), the memory plugin's hooks timed, and each question scored on the block
that reached the model."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from story_format import SessionSpec, Story, StoryError, Turn, _norm
from story_server import make_server, reflection_marker

MEMORY_PLUGIN = "mino-memory-graph"
CHARS_PER_TOKEN = 4
_PLUGIN_FAILED = re.compile(r"\bPlugin \S+ failed in \w+:")


class HookClock:
    """Time spent in the memory plugin's hook implementations (every hook it implements,
    including ones added later), CPU of the calling thread and wall; the model requests
    they make (a reflection) are subtracted."""

    def __init__(self):
        self.cpu = self.wall = 0.0
        self.model_cpu = self.model_wall = 0.0
        self.depth = 0

    def instrument(self, host, client) -> None:
        for name in dir(host.pm.hook):
            caller = getattr(host.pm.hook, name)
            get = getattr(caller, "get_hookimpls", None)
            if get is None:
                continue
            for impl in get():
                if (impl.plugin_name == MEMORY_PLUGIN
                        and not getattr(impl.function, "_clocked", False)):
                    impl.function = self._timed(impl.function)
        inner = client.complete

        def complete(*args, **kwargs):
            c, w = time.thread_time(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.model_cpu += time.thread_time() - c
                self.model_wall += time.perf_counter() - w

        client.complete = complete

    def _timed(self, function):
        def timed(*args, **kwargs):
            self.depth += 1
            c, w = time.thread_time(), time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.cpu += time.thread_time() - c
                    self.wall += time.perf_counter() - w

        timed._clocked = True  # type: ignore[attr-defined]
        return timed

    def take(self) -> tuple[float, float]:
        """(cpu, wall) seconds since the last take, model requests excluded."""
        out = (max(0.0, self.cpu - self.model_cpu), max(0.0, self.wall - self.model_wall))
        self.cpu = self.wall = self.model_cpu = self.model_wall = 0.0
        return out


@dataclass
class QuestionResult:
    story: str
    category: str
    session: str
    question: str
    hit: bool
    missing: list[str]
    leaked: list[str]
    block_tokens: int
    block: str
    in_turn_missing: list[str] = field(default_factory=list)


@dataclass
class StoryResult:
    story: Story
    questions: list[QuestionResult] = field(default_factory=list)
    turn_cpu: list[float] = field(default_factory=list)
    turn_wall: list[float] = field(default_factory=list)
    turn_whole: list[float] = field(default_factory=list)  # the whole turn, wall
    end_cpu: list[float] = field(default_factory=list)
    end_wall: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # a secret story's forbidden texts found in a file under the home: "TEXT in PATH"
    stored: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def make_project(root: Path, name: str, spec: dict[str, Any], folder: str) -> Path:
    """A git repository with the story's files (and its origin, when the story names one:
    two folders with one origin are one project, like two clones)."""
    path = root / "projects" / folder
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    if spec.get("origin"):
        _git(path, "remote", "add", "origin", str(spec["origin"]))
    for rel, content in (spec.get("files") or {}).items():
        target = (path / rel).resolve()
        if path.resolve() not in target.parents:
            raise StoryError(f"project {name}: file {rel!r} is outside the project")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(content), encoding="utf-8")
        if str(rel).endswith(".sh"):
            target.chmod(0o755)
    return path.resolve()


def lead_block(body: dict[str, Any]) -> str:
    """The leading assistant item's text (the front input: the memory block), or ""."""
    items = body.get("input") or []
    if not items or not isinstance(items[0], dict) or items[0].get("role") != "assistant":
        return ""
    content = items[0].get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def added_text(first: dict[str, Any], later: list[dict[str, Any]], scripted: list[str]) -> str:
    """What reached the model within a turn after its first request and was not written by
    the model: tool results and any item a plugin added (the model's own calls and texts
    are left out, so a command the model typed never counts as the guard's note)."""
    seen = len(first.get("input") or [])
    from mino_core.testing import request_text

    out = []
    for body in later[-1:]:  # the last request holds every item the turn added
        for item in (body.get("input") or [])[seen:]:
            if not isinstance(item, dict) or item.get("type") in ("function_call", "reasoning"):
                continue
            text = request_text(item)
            if item.get("role") == "assistant" and any(_norm(text) == _norm(s) for s in scripted):
                continue
            out.append(text)
    return "\n".join(out)


def _failed_calls(first: dict[str, Any], last: dict[str, Any]) -> int:
    """Tool results the turn added (after its first request) whose status is failed: a
    command that ran and failed again."""
    seen = len(first.get("input") or [])
    return sum(1 for item in (last.get("input") or [])[seen:]
               if isinstance(item, dict) and item.get("type") == "function_call_output"
               and str(item.get("output", "")).startswith("status: failed"))


def _found(needle: str, hay: str) -> bool:
    return _norm(needle) in _norm(hay)


def _set_env(home: Path, base_url: str) -> dict[str, str | None]:
    saved = {k: os.environ.get(k) for k in ("MINO_HOME", "MINO_BASE_URL", "OPENAI_API_KEY",
                                             "MINO_MODEL", "MINO_PLUGINS", "MINO_DISABLE_PLUGINS",
                                             "MINO_MEMORY_BACKEND", "OPENAI_BASE_URL",
                                             "MNEMO_MEMORY_JOURNAL", "MINO_PROJECT")}
    for k in saved:
        os.environ.pop(k, None)
    os.environ.update(MINO_HOME=str(home), MINO_BASE_URL=base_url, OPENAI_API_KEY="story",
                      MINO_MODEL="scripted")
    return saved


def _restore_env(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _merge(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = _merge(dict(into[key]), value)
        else:
            into[key] = value
    return into


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME:KEY=VALUE[,KEY=VALUE...]`` (dotted keys into config.yaml, values as YAML
    scalars) -> (name, nested overrides); ValueError with a one-line reason."""
    from mino_core import load_yaml

    name, sep, rest = text.partition(":")
    if not sep or not name.strip() or not rest.strip():
        raise ValueError(f"--variant {text!r}: write NAME:KEY=VALUE, "
                         "e.g. mnemo:memory.graph.scorer=mnemo")
    out: dict[str, Any] = {}
    for pair in rest.split(","):
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--variant {text!r}: {pair!r} is not KEY=VALUE")
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = load_yaml(value) if value.strip() else None
    return name.strip(), out


def _write_config(home: Path, story: Story, overrides: dict[str, Any] | None = None) -> None:
    import yaml

    config = _merge({"memory": {"backend": "graph"}, "retries": 0}, story.config)
    _merge(config, overrides or {})
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def run_story(story: Story, workdir: Path, show: bool = False, keep: bool = False,
              overrides: dict[str, Any] | None = None) -> StoryResult:
    """Drive every session of ``story`` through the REPL in a fresh home; score its questions.
    ``overrides``: config.yaml keys over the story's own (a variant)."""
    from mino_core.repl import repl, resume
    from mino_core.startup import start_agent
    from mino_core.testing import approver
    from mino_core.ui import RecordingUI
    from mino_memory_graph.loop.loop import forget_open

    result = StoryResult(story)
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=f"story-{story.name}-", dir=workdir))
    home = root / "home"
    _write_config(home, story, overrides)
    server = make_server()
    saved = _set_env(home, server.base_url)
    forget_open()  # a fresh process's view of the journal (each story is its own user)
    folders = {name: make_project(root, name, spec, name) for name, spec in story.projects.items()}
    ids: dict[str, str] = {}
    clock = HookClock()
    try:
        for spec in story.sessions:
            pending = list(spec.turns)
            state: dict[str, Any] = {}

            def close_turn(timed: bool = True) -> None:
                """Score the turn that just ended (if it was a question) and time it."""
                turn = state.pop("turn", None)
                if turn is None:
                    return
                if timed:
                    cpu, wall = clock.take()
                    result.turn_cpu.append(cpu)
                    result.turn_wall.append(wall)
                    result.turn_whole.append(time.perf_counter() - state["t0"])
                where = f"session {spec.name}, {turn.user[:50]!r}"
                if server.failures:
                    result.errors.append(f"{where}: {'; '.join(server.failures)}")
                    server.failures.clear()
                if server.remaining:
                    result.errors.append(f"{where}: {server.remaining} scripted answer(s) not "
                                         "asked for (mino made fewer requests than the story "
                                         "expects)")
                    server.script.clear()
                if turn.reflection is not None and server.reflections_asked == 0:
                    result.warnings.append(f"{where}: a reflection was scripted but none was "
                                           "asked for")
                server.reflection = None
                server.reflections_asked = 0
                result.warnings += [f"{where}: {u}" for u in server.unresolved]
                server.unresolved.clear()
                if turn.expect:
                    _score(result, story, spec, turn, server.requests[state["first"]:], show)
                elif show and len(server.requests) > state["first"]:
                    print(f"\n--- {story.name} / {spec.name} (taught): {turn.user}\n"
                          f"{lead_block(server.requests[state['first']]) or '(no memory block)'}")

            def read(prompt: str = "") -> str:
                close_turn()
                if not pending:
                    raise EOFError
                turn = pending.pop(0)
                state.update(turn=turn, first=len(server.requests))
                server.add(*turn.model)
                server.reflection = turn.reflection
                state["t0"] = time.perf_counter()
                return turn.user

            if spec.headless:
                ids[spec.name] = _headless(spec, folders[spec.project], home, server, ids,
                                           read, close_turn, result)
                continue
            ui = RecordingUI(approver(spec.approve))
            agent = start_agent(home, folders[spec.project], ui)
            clock.instrument(agent.host, agent.client)
            if spec.resume:
                if not resume(agent, ids[spec.resume], spec.mode):
                    result.errors.append(f"session {spec.name}: could not resume {spec.resume}")
                    continue
            else:
                agent.new_session(spec.mode)
            ids[spec.name] = agent.session.id
            repl(agent, read=read)
            cpu, wall = clock.take()  # session_end (consolidation): apart from the turns
            result.end_cpu.append(cpu)
            result.end_wall.append(wall)
            for message in agent.host.drain_errors():
                result.errors.append(f"session {spec.name}: {message}")
            # a turn that crashed, or a plugin hook that failed, is said on the notices
            for line in ui.notices.splitlines():
                if "internal error in this turn" in line or _PLUGIN_FAILED.search(line):
                    result.errors.append(f"session {spec.name}: {line.strip()}")
    except StoryError as exc:
        result.errors.append(str(exc))
    finally:
        forget_open()
        server.stop()
        _restore_env(saved)
        if story.category == "secret":
            result.stored = stored_secrets(home, story)
        if keep:
            print(f"{story.name}: home and projects kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    result.seconds = time.perf_counter() - started
    return result


def stored_secrets(home: Path, story: Story) -> list[str]:
    """``"TEXT in PATH"`` for each forbidden text of ``story``'s questions found in any file
    under ``home`` (the journal, its index, memory files, anything a plugin wrote): a
    secret story's forbidden texts are the secret, which memory must not keep anywhere.
    The session logs are left out: they are the conversation as it was said, for
    ``--resume``, not memory (docs/decisions.md, "Session logs keep what the person
    typed")."""
    texts = {t for s in story.sessions for turn in s.turns if turn.expect
             for t in turn.expect["absent"]}
    logs = home / "sessions"
    out = []
    for path in sorted(p for p in home.rglob("*") if p.is_file() and logs not in p.parents):
        data = path.read_bytes()
        out += [f"{t!r} in {path.relative_to(home)}" for t in sorted(texts)
                if t.encode() in data]
    return out


def _headless(spec: SessionSpec, folder: Path, home: Path, server, ids: dict[str, str],
              read, close_turn, result: StoryResult) -> str | None:
    """A headless session: each message is a real ``mino -p`` process in the project folder
    (it answers every question no; ``mode`` as ``--mode``), the first resuming ``resume``
    when given, the next ones continuing it (``--continue``). Its own process: the main
    process's open store must catch up with what it wrote. Not timed (another process).
    Returns the session's id."""
    from mino_core.sessionlog import list_sessions
    from mino_core.testing import isolated_env, mino_command

    env = dict(isolated_env(home), MINO_BASE_URL=server.base_url, OPENAI_API_KEY="story",
               MINO_MODEL="scripted")
    first = True
    while True:
        try:
            message = read()
        except EOFError:
            break
        argv = [*mino_command(), *(["--mode", spec.mode] if spec.mode != "manual" else [])]
        if first and spec.resume:
            argv += ["--resume", ids[spec.resume]]
        elif not first:
            argv += ["--continue"]
        argv += ["-p", message]
        done = subprocess.run(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        if done.returncode not in (0, 3):  # 3: answered, a call was denied (no approvals)
            tail = (done.stderr.strip().splitlines() or [""])[-1]
            result.errors.append(f"session {spec.name}: mino -p exited {done.returncode}: {tail}")
        for line in done.stderr.splitlines():
            if "internal error in this turn" in line or _PLUGIN_FAILED.search(line):
                result.errors.append(f"session {spec.name}: {line.strip()}")
        first = False
        close_turn(timed=False)
    found = list_sessions(home / "sessions", folder, with_empty=False)
    return found[0].id if found else None


def _score(result: StoryResult, story: Story, spec: SessionSpec, turn: Turn,
           requests: list[dict[str, Any]], show: bool) -> None:
    marker = reflection_marker()
    model_requests = [r for r in requests if marker not in str(r.get("instructions") or "")]
    expect = turn.expect or {}
    if not model_requests:
        result.errors.append(f"session {spec.name}, {turn.user[:50]!r}: "
                             "no request reached the model")
        return
    block = lead_block(model_requests[0])
    missing = [t for t in expect["recall"] if not _found(t, block)]
    leaked = [t for t in expect["absent"] if _found(t, block)]
    scripted = [str(x) for a in turn.model
                for x in ([a.get("text")] if isinstance(a.get("text"), str)
                                                      else list(a.get("text") or []))]
    later = added_text(model_requests[0], model_requests[1:], scripted)
    in_turn_missing = [t for t in expect["in_turn"] if not _found(t, later)]
    failed_calls = _failed_calls(model_requests[0], model_requests[-1]) if expect["clean"] else 0
    if failed_calls:
        in_turn_missing.append(f"a turn without failed calls ({failed_calls} failed)")
    hit = not (missing or leaked or in_turn_missing)
    q = QuestionResult(story=story.name, category=turn.category or story.category,
                       session=spec.name, question=turn.user, hit=hit, missing=missing,
                       leaked=leaked, in_turn_missing=in_turn_missing,
                       block_tokens=(len(block) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN,
                       block=block)
    result.questions.append(q)
    if show:
        print(f"\n--- {story.name} / {spec.name}: {turn.user}\n{block or '(no memory block)'}")
        if expect["in_turn"]:
            print(f"--- added within the turn:\n{later or '(nothing)'}")
