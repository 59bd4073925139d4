"""``mino eval DIR``: run YAML cases against the scripted model server and grade them.

The case format is documented in ``evals/README.md``. Each case runs the real agent
in-process with a temporary home and project; only the model is scripted.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import click

MAX_SEEDED_MEMORIES = 32
# Settings a live run takes from the person's config.yaml (the case's own config wins).
LIVE_KEYS = ("api", "max_output_tokens", "turn_budget", "models", "timeout")


class CaseError(Exception):
    """The case file itself is wrong; the message says where."""


@dataclass
class Case:
    name: str
    path: Path
    data: dict[str, Any]

    @property
    def live(self) -> bool:
        return bool(self.data.get("live", False))


@dataclass
class Run:
    """What happened in a case, for the graders."""

    records: list[Any] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    project: Path | None = None
    home: Path | None = None
    transcript: str = ""


def load_cases(directory: Path) -> list[Case]:
    import yaml

    cases = []
    for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
            data = {"__error__": f"cannot read case: {str(exc).splitlines()[0]}"}
        if not isinstance(data, dict):
            data = {"__error__": "a case file must hold a mapping"}
        cases.append(Case(str(data.get("name") or path.stem), path, data))
    return cases


def _write_files(root: Path, files: dict[str, Any] | None) -> None:
    for rel, content in (files or {}).items():
        target = (root / rel).resolve()
        if root.resolve() not in target.parents:
            raise CaseError(f"file {rel!r} is outside the folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(content), encoding="utf-8")


def _memory_file(entry: dict[str, Any]) -> str:
    import yaml

    head = {key: str(entry[key]) for key in ("name", "type", "summary")}
    text = "---\n" + yaml.safe_dump(head, sort_keys=False, allow_unicode=True, width=10_000) + "---\n"
    if entry.get("details"):
        text += str(entry["details"]).rstrip("\n") + "\n"
    return text


def prepare_home(home: Path, data: dict[str, Any]) -> None:
    import yaml

    config = dict(data.get("config") or {})
    memories = data.get("memories") or []
    if len(memories) > MAX_SEEDED_MEMORIES:
        raise CaseError(f"at most {MAX_SEEDED_MEMORIES} memories may be seeded")
    if memories:
        memory = dict(config.get("memory") or {})
        memory.setdefault("backend", "files")
        config["memory"] = memory
        folder = home / "memory"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for entry in memories:
            if not isinstance(entry, dict) or not all(k in entry for k in ("name", "type", "summary")):
                raise CaseError("each memory needs name, type and summary")
            path = folder / f"{entry['name']}.md"
            path.write_text(_memory_file(entry), encoding="utf-8")
            path.chmod(0o600)
    if config:
        (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _write_files(home, data.get("home_files"))


def _on_ask(actions: list[dict[str, Any]], project: Path, home: Path) -> Callable[[], None]:
    def act() -> None:
        for action in actions:
            for key, root in (("write", project), ("write_home", home)):
                spec = action.get(key)
                if spec:
                    path = root / spec["path"]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(str(spec.get("content", "")), encoding="utf-8")
            if action.get("delete"):
                (project / action["delete"]).unlink(missing_ok=True)
    return act


def _approver(policy: Any, before_answer: Callable[[], None], asked: list[str]):
    from .testing.harness import approver

    decide = approver(policy if policy is not None else "none")
    done = []

    def answer(tool: str, text: str) -> bool:
        asked.append(tool)
        if not done:
            done.append(True)
            before_answer()
        return decide(tool, text)

    return answer


def execute(case: Case, *, live: bool = False, api: str | None = None) -> tuple[str, str]:
    """Run one case: ("PASS" | "FAIL" | "SKIP", reason)."""
    data = case.data
    if "__error__" in data:
        return "FAIL", data["__error__"]
    missing = [prog for prog in data.get("requires") or [] if shutil.which(str(prog)) is None]
    if missing:
        return "SKIP", f"needs {', '.join(missing)}"
    with tempfile.TemporaryDirectory(prefix="mino-eval-") as tmp:
        root = Path(tmp)
        home, project = root / "home", root / "project"
        home.mkdir()
        project.mkdir()
        project = project.resolve()
        try:
            prepare_home(home, data)
            _write_files(project, data.get("workspace"))
            return _run(case, home, project, live, api)
        except CaseError as exc:
            return "FAIL", f"case error: {exc}"


def _run(case: Case, home: Path, project: Path, live: bool, api: str | None = None) -> tuple[str, str]:
    from .agent import Agent
    from .compaction import compact_command
    from .config import ConfigError, ModelSettings, load_config, model_settings
    from .model import ModelClient
    from .testing.server import ScriptedServer
    from .turn import run_turn
    from .ui import RecordingUI

    data = case.data
    run = Run(project=project, home=home)
    server = None
    if live:
        try:
            settings = model_settings(load_config_env())
        except ConfigError as exc:
            return "FAIL", str(exc)
    else:
        server = ScriptedServer(list(data.get("script") or [])).start()
        settings = ModelSettings(api_key="eval", base_url=server.base_url, model="scripted",
                                 timeout=20.0, retries=1, backoff=0.01)
    try:
        ui = RecordingUI(_approver(data.get("approve"), _on_ask(data.get("on_ask") or [], project, home),
                                   run.asked))
        try:
            config = load_config(home)
            if live:  # the person's own limits and API for their server, under the case's config
                for key, value in load_config_env().items():
                    if key in LIVE_KEYS:
                        config.setdefault(key, value)
            if api:
                config["api"] = api
            agent = Agent(home=home, project_root=project, ui=ui, config=config,
                          client=ModelClient(settings))
        except ConfigError as exc:
            return "FAIL", f"case error: {exc}"
        agent.new_session(str(data.get("mode") or "manual"))
        turns = data.get("turns") or []
        if isinstance(turns, str):
            turns = [turns]
        for text in turns:
            text = str(text)
            if text == "/new":
                agent.new_session(agent.session.mode)
            elif text == "/compact":
                compact_command(agent.session)
            elif text.startswith("/mode "):
                agent.session.set_mode(text.split(None, 1)[1])
            else:
                run.records.append(run_turn(agent.session, text))
        run.transcript = ui.transcript + ui.notices
        if server is not None:
            run.requests = list(server.requests)
            if server.failures:
                return "FAIL", server.failures[0]
            if server.remaining:
                return "FAIL", f"{server.remaining} scripted answer(s) were never requested"
        errors = [r for r in run.records if r.ended == "error"]
        if live and errors:  # the server's refusal, not a wrong answer
            return "FAIL", f"turn {run.records.index(errors[0]) + 1} ended in an error: {errors[0].reason}"
        for grader in data.get("graders") or []:
            problem = grade(grader, run, live)
            if problem:
                return "FAIL", problem
        return "PASS", ""
    finally:
        if server is not None:
            server.stop()


def load_config_env() -> dict[str, Any]:
    from .config import home_dir, load_config

    return load_config(home_dir())


# -- graders ----------------------------------------------------------------------

REQUEST_GRADERS = {"next_request_contains", "request_contains", "request_not_contains", "first_item_role"}


def _request(run: Run, index: int) -> dict[str, Any] | None:
    try:
        return run.requests[index - 1] if index > 0 else run.requests[index]
    except IndexError:
        return None


def _input(body: dict[str, Any] | None) -> list[Any]:
    """A request's input items; a chat request's messages seen as the same items."""
    if body is None:
        return []
    if "input" in body or "messages" not in body:
        return body.get("input") or []
    from .chat import as_items

    return as_items(body)


def _outcomes(run: Run):
    for record in run.records:
        yield from record.outcomes


def grade(grader: dict[str, Any], run: Run, live: bool) -> str | None:
    """None when the grader passes, else what went wrong."""
    from .testing.server import request_text

    if not isinstance(grader, dict) or len(grader) != 1:
        return f"grader {grader!r} must be a mapping with one key"
    (kind, spec), = grader.items()
    if live and kind in REQUEST_GRADERS:
        return None
    answer = run.records[-1].answer if run.records else ""
    calls = [o.call.name for o in _outcomes(run)]
    if kind == "answer_contains":
        return None if str(spec) in answer else f"answer does not contain {spec!r}: {answer[:200]!r}"
    if kind == "answer_not_contains":
        return None if str(spec) not in answer else f"answer contains {spec!r}"
    if kind == "no_call":
        return None if spec not in calls else f"{spec} was called"
    if kind == "called":
        return None if spec in calls else f"{spec} was not called (calls: {calls})"
    if kind == "asked":
        return None if spec in run.asked else f"no confirmation was shown for {spec}"
    if kind == "not_asked":
        return None if spec not in run.asked else f"a confirmation was shown for {spec}"
    if kind == "result_status":
        found = [o.result.status.value for o in _outcomes(run) if o.call.name == spec["tool"]]
        if not found:
            return f"{spec['tool']} was not called"
        return None if spec["status"] in found else (
            f"{spec['tool']} ended {found}, expected {spec['status']}")
    if kind == "next_request_contains":
        tool, text = (spec.get("tool"), spec["text"]) if isinstance(spec, dict) else (None, str(spec))
        position = 0
        for number, body in enumerate(run.requests, 1):
            outputs = [i for i in _input(body) if isinstance(i, dict)
                       and i.get("type") == "function_call_output"]
            if outputs and (tool is None or _has_call(body, tool)):
                position = number
                break
        if not position:
            return "no request carried a tool result"
        return None if text in request_text(run.requests[position - 1]) else (
            f"the request after the tool result (request {position}) does not contain {text!r}")
    if kind in ("request_contains", "request_not_contains"):
        body = _request(run, int(spec.get("index", 1)))
        if body is None:
            return f"there is no request {spec.get('index', 1)}"
        present = spec["text"] in request_text(body)
        if kind == "request_contains":
            return None if present else f"request {spec.get('index', 1)} does not contain {spec['text']!r}"
        return None if not present else f"request {spec.get('index', 1)} contains {spec['text']!r}"
    if kind == "first_item_role":
        index, role = (spec.get("index", 1), spec["role"]) if isinstance(spec, dict) else (1, str(spec))
        body = _request(run, int(index))
        items = _input(body)
        first = items[0].get("role") if items and isinstance(items[0], dict) else None
        return None if first == role else f"request {index} starts with role {first!r}, not {role!r}"
    if kind in ("file_contains", "file_equals"):
        path = run.project / spec["path"]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return f"{spec['path']} does not exist"
        ok = spec["text"] in text if kind == "file_contains" else text == spec["text"]
        return None if ok else f"{spec['path']} holds {text[:200]!r}"
    if kind == "file_absent":
        return None if not (run.project / str(spec)).exists() else f"{spec} exists"
    if kind in ("home_file_contains", "home_file_not_contains"):
        try:
            text = (run.home / spec["path"]).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = None
        if kind == "home_file_contains":
            return None if text is not None and spec["text"] in text else (
                f"{spec['path']} in the home does not contain {spec['text']!r}")
        return None if text is None or spec["text"] not in text else (
            f"{spec['path']} in the home contains {spec['text']!r}")
    if kind == "home_file_absent":
        return None if not (run.home / str(spec)).exists() else f"{spec} exists in the home"
    if kind == "transcript_contains":
        return None if str(spec) in run.transcript else f"the transcript does not contain {spec!r}"
    return f"unknown grader {kind!r}"


def _has_call(body: dict[str, Any], tool: str) -> bool:
    return any(isinstance(i, dict) and i.get("type") == "function_call" and i.get("name") == tool
               for i in _input(body))


def main(directory: Path, *, live: bool = False, select: str | None = None,
         api: str | None = None) -> int:
    """``api``: "responses" or "chat" for every case (else each case's config decides)."""
    if not directory.is_dir():
        click.echo(f"No such folder: {directory}", err=True)
        return 2
    cases = [c for c in load_cases(directory) if (not select or select in c.name)]
    if live:
        cases = [c for c in cases if c.live]
    if not cases:
        click.echo(f"No eval cases in {directory}" + (" marked live" if live else ""), err=True)
        return 2
    width = max(len(c.name) for c in cases)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for case in cases:
        try:
            status, reason = execute(case, live=live, api=api)
        except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others
            status, reason = "FAIL", f"crashed: {type(exc).__name__}: {exc}"
        counts[status] += 1
        click.echo(f"{case.name:<{width}}  {status}  {reason}".rstrip())
    skipped = f", {counts['SKIP']} skipped" if counts["SKIP"] else ""
    click.echo(f"evals: {counts['PASS']} passed, {counts['FAIL']} failed{skipped}")
    return 0 if counts["FAIL"] == 0 else 1
