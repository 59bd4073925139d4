"""The story format of ``bench/agent_memory.py`` (``bench/stories/README.md``): loading a
story file into plain objects with one-line errors, and the wording rule's lint."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mino_core.json_strings import strings

# The wording rule (README): a question may share at most this share of its content
# words with any one earlier text the story taught, and never contain a required text.
MAX_SHARED = 0.5
EXPECT_KEYS = frozenset(("recall", "absent", "in_turn", "clean"))
_WORD = re.compile(r"[a-z0-9]+")
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a project's folder name: no path
STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from into onto over under about as is are
was were be been being am do does did done have has had having it its this that these those
there here what which who whom whose when where why how i me my mine we us our you your
yours he she they them their he's it's i'm can could should would will shall may might must
not no yes so than then too very just also only again please tell remind say know now any
some all each one ones thing things still ever let lets let's get got use used using ok
okay thanks thank
""".split())


class StoryError(Exception):
    """A story file that cannot be run: one line saying where and why."""


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
    for p in projects:
        if not _PROJECT.match(p):
            raise StoryError(f"{name}: project {p!r} must be a plain folder name "
                             "(letters, digits, '.', '_', '-')")
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
            if (not isinstance(t, dict) or not isinstance(t.get("user"), str)
                    or not t["user"].strip()):
                raise StoryError(f"{tw}: needs a user message")
            expect = t.get("expect")
            if expect is not None:
                if not isinstance(expect, dict) or not set(expect) <= EXPECT_KEYS:
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
        sessions.append(SessionSpec(name=str(s.get("name") or f"s{si}"), project=project,
                                    turns=turns,
                                    mode=str(s.get("mode") or "manual"),
                                    # mino -p answers every question no (decisions.md)
                                    approve=s.get("approve",
                                                  "none" if s.get("headless") else "all"),
                                    headless=bool(s.get("headless", False)),
                                    resume=s.get("resume")))
    names = [s.name for s in sessions]
    for s in sessions:
        if s.resume is not None and s.resume not in names[:names.index(s.name)]:
            raise StoryError(f"{name}: session {s.name} resumes {s.resume!r}, "
                             "not an earlier session")
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
            args = c.get("arguments")
            if str(c.get("name", "")).startswith("memory_") and isinstance(args, dict):
                out += [v for v in args.values() if isinstance(v, str)]
    out += list(strings(turn.reflection))
    return out
