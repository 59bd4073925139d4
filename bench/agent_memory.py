"""Scripted multi-session coding stories through mino's REPL: does the needed memory reach
the model?

    .venv/bin/python bench/agent_memory.py                    # every story in bench/stories
    .venv/bin/python bench/agent_memory.py --quick            # a few stories, one of each category
    .venv/bin/python bench/agent_memory.py --stories DIR      # any folder of stories
    .venv/bin/python bench/agent_memory.py --only NAME --show # one story, its blocks printed

A story (format: ``bench/stories/README.md``) is sessions of user messages with the
model's scripted answers (tool calls run for real: Bash in its sandbox, the file tools on
a real project folder). Each session is one REPL run: ``start_agent`` as ``mino`` builds
it, then ``mino_core.repl.repl`` reads the session's messages as typed lines (``--resume``
for a ``resume``); a ``headless`` session is a real ``mino -p`` process per message. The model is the scripted
server; reflections are answered from the story. A question is a later message whose
first request must carry given text in its leading memory block.

Reported: the hit rate over questions (all ``recall`` text present, no ``absent`` text,
``in_turn`` text reaching the model within the turn), per category; the block's size in
tokens (estimated at 4 characters a token, the core's own estimate); the memory plugin's
time per turn (its hook implementations, CPU of the main thread and wall, less the
reflection's model request). A lint flags questions that share too many words with what
was taught (README: "The wording rule").
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STORIES = HERE / "stories"
MEMORY_PLUGIN = "mino-memory-graph"
CHARS_PER_TOKEN = 4
# The wording rule (README): a question may share at most this share of its content
# words with any one earlier user message, and never a required text.
MAX_SHARED = 0.5
EMPTY_REFLECTION = {"facts": [], "episode": {}, "fixes": [], "skill": None}
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from into onto over under about as is are
was were be been being am do does did done have has had having it its this that these those
there here what which who whom whose when where why how i me my mine we us our you your
yours he she they them their he's it's i'm can could should would will shall may might must
not no yes so than then too very just also only again please tell remind say know now any
some all each one ones thing things again still ever let lets let's get got use used using
again ok okay thanks thank
""".split())


class StoryError(Exception):
    """A story file that cannot be run: one line saying where and why."""


# -- the story format ------------------------------------------------------------------

@dataclass
class Turn:
    user: str
    model: list[dict[str, Any]]
    reflection: Any = None
    expect: dict[str, list[str]] | None = None
    category: str | None = None


@dataclass
class SessionSpec:
    name: str
    project: str
    turns: list[Turn]
    mode: str = "manual"
    approve: Any = "all"
    headless: bool = False
    resume: str | None = None


@dataclass
class Story:
    name: str
    path: Path
    title: str
    category: str
    projects: dict[str, dict[str, Any]]
    sessions: list[SessionSpec]
    config: dict[str, Any] = field(default_factory=dict)

    def questions(self) -> list[tuple[SessionSpec, int, Turn]]:
        return [(s, i, t) for s in self.sessions for i, t in enumerate(s.turns) if t.expect]


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise StoryError(f"{where}: expected text or a list of texts")


def _answers(turn: dict, where: str) -> list[dict[str, Any]]:
    if "reply" in turn and "model" in turn:
        raise StoryError(f"{where}: give either reply or model, not both")
    if "reply" in turn:
        return [{"text": str(turn["reply"])}]
    model = turn.get("model")
    if model is None:
        return [{"text": "OK."}]
    if not isinstance(model, list) or not all(isinstance(a, dict) for a in model) or not model:
        raise StoryError(f"{where}: model must be a non-empty list of scripted answers")
    for a in model:
        for call in a.get("calls") or []:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise StoryError(f"{where}: each call needs a name and arguments")
    return model


def load_story(path: Path) -> Story:
    """A story from its YAML file; StoryError (one line) when it is not a valid story."""
    from mino_core import load_yaml

    name = path.stem
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StoryError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - yaml's errors: one line, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoryError(f"{name}: not valid YAML: {first}") from None
    if not isinstance(data, dict):
        raise StoryError(f"{name}: a story is a mapping (title, category, sessions)")
    projects = data.get("projects") or {"main": {}}
    if not isinstance(projects, dict) or not all(isinstance(v, (dict, type(None)))
                                                 for v in projects.values()):
        raise StoryError(f"{name}: projects must map names to settings")
    projects = {str(k): dict(v or {}) for k, v in projects.items()}
    first_project = next(iter(projects))
    raw_sessions = data.get("sessions")
    if not isinstance(raw_sessions, list) or not raw_sessions:
        raise StoryError(f"{name}: sessions must be a non-empty list")
    sessions: list[SessionSpec] = []
    for si, s in enumerate(raw_sessions, 1):
        where = f"{name}: session {si}"
        if not isinstance(s, dict) or not isinstance(s.get("turns"), list) or not s["turns"]:
            raise StoryError(f"{where}: needs a non-empty list of turns")
        project = str(s.get("project") or first_project)
        if project not in projects:
            raise StoryError(f"{where}: project {project!r} is not among {sorted(projects)}")
        turns = []
        for ti, t in enumerate(s["turns"], 1):
            tw = f"{where}, turn {ti}"
            if isinstance(t, str):
                t = {"user": t}
            if not isinstance(t, dict) or not isinstance(t.get("user"), str) or not t["user"].strip():
                raise StoryError(f"{tw}: needs a user message")
            expect = t.get("expect")
            if expect is not None:
                if not isinstance(expect, dict) or not set(expect) <= {"recall", "absent", "in_turn", "clean"}:
                    raise StoryError(f"{tw}: expect takes recall, absent, in_turn and clean")
                clean = expect.get("clean", False)
                if not isinstance(clean, bool):
                    raise StoryError(f"{tw}: expect.clean is true or false")
                expect = {k: _strings(expect.get(k), f"{tw}: expect.{k}")
                          for k in ("recall", "absent", "in_turn")}
                expect["clean"] = clean
                if not any(expect.values()):
                    raise StoryError(f"{tw}: expect names nothing to check")
            turns.append(Turn(user=t["user"], model=_answers(t, tw), reflection=t.get("reflection"),
                              expect=expect, category=t.get("category")))
        sessions.append(SessionSpec(name=str(s.get("name") or f"s{si}"), project=project, turns=turns,
                                    mode=str(s.get("mode") or "manual"),
                                    # mino -p answers every question no (decisions.md)
                                    approve=s.get("approve", "none" if s.get("headless") else "all"),
                                    headless=bool(s.get("headless", False)),
                                    resume=s.get("resume")))
    names = [s.name for s in sessions]
    for s in sessions:
        if s.resume is not None and s.resume not in names[:names.index(s.name)]:
            raise StoryError(f"{name}: session {s.name} resumes {s.resume!r}, not an earlier session")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise StoryError(f"{name}: config must be a mapping (config.yaml keys)")
    story = Story(name=name, path=path, title=str(data.get("title") or name),
                  category=str(data.get("category") or "uncategorised"), projects=projects,
                  sessions=sessions, config=config)
    if not story.questions():
        raise StoryError(f"{name}: no turn has an expect (nothing is measured)")
    return story


def load_stories(folder: Path) -> tuple[list[Story], list[str]]:
    """Every ``*.yaml``/``*.yml`` story in ``folder`` (name order), and the files refused."""
    stories, problems = [], []
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            stories.append(load_story(path))
        except StoryError as exc:
            problems.append(str(exc))
    return stories, problems


# -- the wording rule ------------------------------------------------------------------

def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def lint(story: Story) -> list[str]:
    """Questions that copying into memory could solve: a required text inside the question,
    or a question sharing more than MAX_SHARED of its content words with one earlier text the
    story taught (a user message, a memory tool's value, a reflection's text)."""
    problems = []
    taught: list[str] = []
    for s in story.sessions:
        for t in s.turns:
            if t.expect:
                q = content_words(t.user)
                for needed in t.expect["recall"] + t.expect["in_turn"]:
                    if _norm(needed) in _norm(t.user):
                        problems.append(f"{story.name}: the question {t.user!r} contains its "
                                        f"answer {needed!r}")
                for earlier in taught:
                    shared = q & content_words(earlier)
                    if q and len(shared) / len(q) > MAX_SHARED:
                        problems.append(
                            f"{story.name}: the question {t.user!r} shares {len(shared)} of its "
                            f"{len(q)} content words with the earlier text {earlier!r} "
                            f"({', '.join(sorted(shared))})")
                        break
            taught.extend(taught_texts(t))
    return problems


def taught_texts(turn: Turn) -> list[str]:
    """What a turn may put into memory in words the story chose: the user's message, the
    values of its memory tool calls, and the texts of its scripted reflection."""
    out = [turn.user]
    for a in turn.model:
        for c in a.get("calls") or []:
            if str(c.get("name", "")).startswith("memory_") and isinstance(c.get("arguments"), dict):
                out += [v for v in c["arguments"].values() if isinstance(v, str)]
    out += [v for v in _leaves(turn.reflection) if isinstance(v, str)]
    return out


def _leaves(value: Any):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


# -- the model: a scripted server that also answers reflections ------------------------

def _reflection_marker() -> str:
    from mino_memory_graph.reflect import INSTRUCTIONS

    return INSTRUCTIONS.splitlines()[0]


def make_server():
    """A started ScriptedServer whose reflection requests (their instructions are the
    graph backend's reflection prompt) take the current turn's scripted reflection instead
    of the next answer, so a story need not know whether mino reflects on a turn."""
    from mino_core.testing import ScriptedServer

    marker = _reflection_marker()

    class StoryServer(ScriptedServer):
        reflection: Any = None
        reflections_asked = 0

        def _next(self, body, chat=False):
            if marker in str(body.get("instructions") or ""):
                with self._lock:
                    self.requests.append(body)
                    self.reflections_asked += 1
                    answer = self.reflection if self.reflection is not None else EMPTY_REFLECTION
                    self._counter += 1
                text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
                return "answer", {"text": text}
            with self._lock:
                if self.script:
                    self.script[0] = resolve_nodes(self.script[0], body, self.unresolved)
            return super()._next(body, chat)

    server = StoryServer()
    server.unresolved = []  # "@node:" references no request showed (warnings)
    return server.start()


_NODE_REF = re.compile(r"^@node:(.+)$")
_PLUGIN_FAILED = re.compile(r"\bPlugin \S+ failed in \w+:")


def resolve_nodes(entry: dict[str, Any], body: dict[str, Any], unresolved: list[str]) -> dict[str, Any]:
    """``"@node:LABEL"`` in a call's arguments becomes the number the request shows beside
    that label (``LABEL #12``), as a model reads it from its recall block; left as it is
    when the request does not show it (the call then fails validation, as a model's guess
    would)."""
    calls = entry.get("calls") or []
    if not any(isinstance(v, str) and _NODE_REF.match(v)
               for c in calls for v in (c.get("arguments") or {}).values()
               if isinstance(c.get("arguments"), dict)):
        return entry
    from mino_core.testing import request_text

    text = request_text(body)
    out = []
    for c in calls:
        args = dict(c.get("arguments") or {}) if isinstance(c.get("arguments"), dict) else c.get("arguments")
        if isinstance(args, dict):
            for k, v in args.items():
                m = _NODE_REF.match(v) if isinstance(v, str) else None
                found = re.search(re.escape(m.group(1)) + r" #(\d+)", text) if m else None
                if found:
                    args[k] = int(found.group(1))
                elif m:
                    unresolved.append(f"{v}: the request does not show that label with a number")
        out.append(dict(c, arguments=args))
    return dict(entry, calls=out)


# -- the plugin's time per turn --------------------------------------------------------

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
                if impl.plugin_name == MEMORY_PLUGIN and not getattr(impl.function, "_clocked", False):
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


# -- running one story -----------------------------------------------------------------

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
        raise ValueError(f"--variant {text!r}: write NAME:KEY=VALUE, e.g. mnemo:memory.graph.scorer=mnemo")
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
    from mino_memory_graph.loop import forget_open

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
                                         "asked for (mino made fewer requests than the story expects)")
                    server.script.clear()
                if turn.reflection is not None and server.reflections_asked == 0:
                    result.warnings.append(f"{where}: a reflection was scripted but none was asked for")
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
        if keep:
            print(f"{story.name}: home and projects kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    result.seconds = time.perf_counter() - started
    return result


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
    model_requests = [r for r in requests if _reflection_marker() not in str(r.get("instructions") or "")]
    expect = turn.expect or {}
    if not model_requests:
        result.errors.append(f"session {spec.name}, {turn.user[:50]!r}: no request reached the model")
        return
    block = lead_block(model_requests[0])
    missing = [t for t in expect["recall"] if not _found(t, block)]
    leaked = [t for t in expect["absent"] if _found(t, block)]
    scripted = [str(x) for a in turn.model for x in ([a.get("text")] if isinstance(a.get("text"), str)
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
                       block_tokens=(len(block) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN, block=block)
    result.questions.append(q)
    if show:
        print(f"\n--- {story.name} / {spec.name}: {turn.user}\n{block or '(no memory block)'}")
        if expect["in_turn"]:
            print(f"--- added within the turn:\n{later or '(nothing)'}")


# -- the report ------------------------------------------------------------------------

def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else 0.0


def _p95_ms(values: list[float]) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))] * 1000


def summary(results: list[StoryResult]) -> dict[str, Any]:
    qs = [q for r in results for q in r.questions]
    cats: dict[str, list[QuestionResult]] = {}
    for q in qs:
        cats.setdefault(q.category, []).append(q)
    cpu = [c for r in results for c in r.turn_cpu]
    wall = [w for r in results for w in r.turn_wall]
    tokens = [q.block_tokens for q in qs]
    whole = [t for r in results for t in r.turn_whole]
    end_cpu = [c for r in results for c in r.end_cpu]
    end_wall = [w for r in results for w in r.end_wall]
    return {
        "stories": len(results), "questions": len(qs), "hits": sum(q.hit for q in qs),
        "hit_rate": (sum(q.hit for q in qs) / len(qs)) if qs else 0.0,
        "categories": {c: {"questions": len(v), "hits": sum(q.hit for q in v)}
                       for c, v in sorted(cats.items())},
        "block_tokens": {"median": statistics.median(tokens) if tokens else 0,
                         "max": max(tokens) if tokens else 0,
                         "mean": round(statistics.fmean(tokens), 1) if tokens else 0},
        "turns": len(cpu),
        "memory_ms_per_turn": {"cpu_median": round(_median_ms(cpu), 2), "cpu_p95": round(_p95_ms(cpu), 2),
                               "wall_median": round(_median_ms(wall), 2), "wall_p95": round(_p95_ms(wall), 2),
                               "cpu_max": round(max(cpu) * 1000, 2) if cpu else 0.0,
                               "whole_turn_wall_median": round(_median_ms(whole), 2)},
        "session_end_ms": {"sessions": len(end_cpu), "cpu_median": round(_median_ms(end_cpu), 2),
                           "wall_median": round(_median_ms(end_wall), 2),
                           "cpu_max": round(max(end_cpu) * 1000, 2) if end_cpu else 0.0},
        "misses": [{"story": q.story, "session": q.session, "question": q.question,
                    "missing": q.missing, "present_but_forbidden": q.leaked,
                    "in_turn_missing": q.in_turn_missing} for q in qs if not q.hit],
        "errors": [f"{r.story.name}: {e}" for r in results for e in r.errors],
        "warnings": [f"{r.story.name}: {w}" for r in results for w in r.warnings],
    }


def print_report(s: dict[str, Any], lint_problems: list[str], refused: list[str], wall: float,
                 cpu: float) -> None:
    print(f"\nstories {s['stories']}, questions {s['questions']}, turns {s['turns']} "
          f"({wall:.1f} s wall, {cpu:.1f} s CPU for the whole run)")
    print(f"hit rate of the recall block: {s['hits']}/{s['questions']} = {s['hit_rate']:.1%} "
          "(goal: at least 90%)")
    print("per category:")
    for c, v in s["categories"].items():
        print(f"  {c:<16} {v['hits']:>3}/{v['questions']:<3} {v['hits'] / v['questions']:.0%}")
    b = s["block_tokens"]
    print(f"block size at questions, tokens (characters / {CHARS_PER_TOKEN}): median {b['median']}, "
          f"mean {b['mean']}, max {b['max']}")
    m = s["memory_ms_per_turn"]
    print(f"memory plugin time per turn (its hooks, model requests excluded): CPU median "
          f"{m['cpu_median']} ms, p95 {m['cpu_p95']} ms, max {m['cpu_max']} ms; wall median "
          f"{m['wall_median']} ms, p95 {m['wall_p95']} ms (whole turn, scripted model and tools "
          f"included: wall median {m['whole_turn_wall_median']} ms)")
    e = s["session_end_ms"]
    print(f"memory plugin time at session end ({e['sessions']} sessions): CPU median "
          f"{e['cpu_median']} ms, max {e['cpu_max']} ms; wall median {e['wall_median']} ms")
    if s["misses"]:
        print("misses:")
        for miss in s["misses"]:
            why = []
            if miss["missing"]:
                why.append("missing " + ", ".join(repr(t) for t in miss["missing"]))
            if miss["present_but_forbidden"]:
                why.append("present but must not be " + ", ".join(repr(t) for t in miss["present_but_forbidden"]))
            if miss["in_turn_missing"]:
                why.append("not within the turn " + ", ".join(repr(t) for t in miss["in_turn_missing"]))
            print(f"  {miss['story']} [{miss['session']}] {miss['question']!r}: {'; '.join(why)}")
    for title, lines in (("story errors", s["errors"]), ("warnings", s["warnings"]),
                         ("wording lint", lint_problems), ("stories refused", refused)):
        if lines:
            print(f"{title}:")
            for line in lines:
                print(f"  {line}")


def quick_pick(stories: list[Story]) -> list[Story]:
    """One story per category (the first by name), for --quick."""
    seen, out = set(), []
    for s in stories:
        if s.category not in seen:
            seen.add(s.category)
            out.append(s)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=Path, default=STORIES, help="folder of story files")
    parser.add_argument("--quick", action="store_true", help="one story per category")
    parser.add_argument("--only", action="append", default=[], help="run only this story (repeatable)")
    parser.add_argument("--show", action="store_true", help="print each question's memory block")
    parser.add_argument("--json", type=Path, help="also write the summary as JSON here")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                        help="also run every story with these config.yaml keys (dotted), in the "
                             "same run, e.g. mnemo:memory.graph.scorer=mnemo; compared with the default")
    parser.add_argument("--keep", action="store_true",
                        help="keep each story's home and projects (to inspect the journal)")
    args = parser.parse_args(argv)
    if not args.stories.is_dir():
        print(f"agent_memory: {args.stories} is not a folder of stories", file=sys.stderr)
        return 2
    stories, refused = load_stories(args.stories)
    if args.only:
        stories = [s for s in stories if s.name in set(args.only)]
    if args.quick:
        stories = quick_pick(stories)
    if not stories:
        print(f"agent_memory: no runnable story in {args.stories}", file=sys.stderr)
        for line in refused:
            print(f"  {line}", file=sys.stderr)
        return 2
    try:
        variants = [("default", {})] + [parse_variant(v) for v in args.variant]
    except ValueError as exc:
        print(f"agent_memory: {exc}", file=sys.stderr)
        return 2
    lint_problems = [p for s in stories for p in lint(s)]
    work = Path(tempfile.mkdtemp(prefix="agent-memory-"))
    c0, w0 = time.process_time(), time.perf_counter()
    results: dict[str, list[StoryResult]] = {name: [] for name, _ in variants}
    try:
        for story in stories:  # variants interleaved per story: the machine's noise hits all alike
            for name, overrides in variants:
                r = run_story(story, work, show=args.show and name == "default", keep=args.keep,
                              overrides=overrides)
                hits = sum(q.hit for q in r.questions)
                tag = f" [{name}]" if len(variants) > 1 else ""
                print(f"{story.name:<34} {story.category:<14} {hits}/{len(r.questions)} "
                      f"{r.seconds:5.1f} s{tag}{'  ERROR' if r.errors else ''}", flush=True)
                results[name].append(r)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    summaries = {name: summary(rs) for name, rs in results.items()}
    s = summaries["default"]
    print_report(s, lint_problems, refused, time.perf_counter() - w0, time.process_time() - c0)
    if len(variants) > 1:
        print_variants(summaries, dict(variants))
    if args.json:
        args.json.write_text(json.dumps({**s, "variants": {k: v for k, v in summaries.items()
                                                           if k != "default"},
                                         "lint": lint_problems, "refused": refused}, indent=2))
    return 1 if any(v["errors"] for v in summaries.values()) or refused else 0


def print_variants(summaries: dict[str, dict[str, Any]], overrides: dict[str, dict]) -> None:
    """Each variant beside the default, measured in the same run (ratios of medians)."""
    base = summaries["default"]["memory_ms_per_turn"]
    print("\nvariants, same run (memory CPU and wall per turn: median, ratio to the default):")
    for name, v in summaries.items():
        m = v["memory_ms_per_turn"]
        ratio_cpu = m["cpu_median"] / base["cpu_median"] if base["cpu_median"] else 0.0
        ratio_wall = m["wall_median"] / base["wall_median"] if base["wall_median"] else 0.0
        cats = ", ".join(f"{c} {x['hits']}/{x['questions']}" for c, x in v["categories"].items())
        print(f"  {name:<14} hits {v['hits']}/{v['questions']} ({v['hit_rate']:.1%}); block median "
              f"{v['block_tokens']['median']} tokens; CPU {m['cpu_median']} ms (x{ratio_cpu:.2f}), "
              f"wall {m['wall_median']} ms (x{ratio_wall:.2f}) {json.dumps(overrides[name]) if overrides[name] else ''}")
        print(f"  {'':<14} {cats}")


if __name__ == "__main__":
    sys.exit(main())
