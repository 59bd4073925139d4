"""The two hooks around a call and a session: ``before_tool`` holds a call back with a note
the model reads in the same turn; ``session_end`` is called once when a session ends (the
REPL's end of input, /exit, /new, a finished or interrupted ``mino -p``)."""
from __future__ import annotations

import json
import subprocess

from mino_core import hookimpl
from mino_core.repl import repl
from mino_core.testing import isolated_env, mino_command

HELD = "A note saved earlier (data, not an instruction): n.txt is generated; edit n.src."


def call(name, **arguments):
    return {"calls": [{"name": name, "arguments": arguments}]}


class Holder:
    """Holds the first call of ``tool`` back with ``note``; records every call it saw."""

    def __init__(self, tool="note_write", note=HELD, times=1):
        self.tool, self.note, self.times, self.seen = tool, note, times, []

    @hookimpl
    def before_tool(self, call, tool, turn):
        self.seen.append((call.name, tool.name, turn.number))
        if call.name == self.tool and self.times > 0:
            self.times -= 1
            return self.note
        return None


def outputs(body):
    return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]


def test_a_held_call_does_not_run_and_its_note_reaches_the_model_in_the_same_turn(
        make_harness, scripted_server, notes, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,notes,holder")
    holder = Holder()
    h = make_harness(extra_plugins={"notes": notes, "holder": holder}, approve="all", config={})
    write = call("note_write", path="n.txt", content="hello")
    scripted_server.add(write, {"require": "status: not_run", **write}, {"text": "done"})
    record = h.turn("write the note")
    first_after, second_after = scripted_server.requests[1], scripted_server.requests[2]
    assert outputs(first_after) == [f"status: not_run\n{HELD}"]
    # held: nothing ran, nobody was asked, no outcome; the same call again runs as usual
    assert [o.call.name for o in record.outcomes] == ["note_write"]
    assert len(notes.outcomes) == 1 and notes.outcomes[0].result.status.value == "completed"
    assert h.transcript.count("Approve this operation?") == 1
    assert (h.session.project_root / "n.txt").read_text() == "hello"
    assert outputs(second_after)[-1] == "status: completed\nwrote n.txt"
    assert "[Tool result: not_run]" in h.transcript and scripted_server.failures == []
    assert holder.seen == [("note_write", "note_write", 1)] * 2
    logged = [r for r in h.session.log.records if r.get("type") == "function_call_output"]
    assert logged[0]["status"] == "not_run" and logged[0]["output"] == HELD


def test_not_asked_for_a_denied_or_invalid_call_and_several_notes_join_in_name_order(
        make_harness, scripted_server, notes, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,notes,a-holder,b-holder")
    a, b = Holder(note="first note"), Holder(note="second note")
    config = {"permissions": {"deny": ["note_write(secret*)"]}}
    h = make_harness(extra_plugins={"notes": notes, "b-holder": b, "a-holder": a},
                     approve="all", config=config)
    scripted_server.add({"calls": [
        {"name": "note_write", "arguments": {"path": "secret.txt", "content": "x"}},
        {"name": "note_write", "arguments": {"content": "no path"}},
        {"name": "note_write", "arguments": {"path": "ok.txt", "content": "x"}}]},
        {"text": "done"})
    h.turn("write three")
    assert a.seen == b.seen == [("note_write", "note_write", 1)]  # only the valid, allowed one
    out = outputs(scripted_server.requests[1])
    assert out[0].startswith("status: denied") and out[1].startswith("status: invalid_arguments")
    assert out[2] == "status: not_run\nfirst note\n\nsecond note"
    assert not (h.session.project_root / "ok.txt").exists()


class Ender:
    def __init__(self):
        self.ended = []

    @hookimpl
    def session_end(self, session):
        self.ended.append(session.id)


def _lines(*lines):
    queue = list(lines)

    def read(prompt):
        if not queue:
            raise EOFError
        return queue.pop(0)
    return read


def test_session_end_once_at_end_of_input_and_for_the_session_new_leaves(
        make_harness, scripted_server, notes, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,notes,ender")
    ender = Ender()
    h = make_harness(extra_plugins={"notes": notes, "ender": ender}, config={})
    first = h.session.id
    scripted_server.add({"text": "one"}, {"text": "two"})
    assert repl(h.agent, read=_lines("hello", "/new", "again")) == 0
    second = h.agent.session.id
    assert first != second and ender.ended == [first, second]
    h.agent.session = h.session = h.agent.session
    h.end_session()  # already ended: not again
    assert ender.ended == [first, second]


def test_session_end_on_exit_command(make_harness, scripted_server, notes, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,notes,ender")
    ender = Ender()
    h = make_harness(extra_plugins={"notes": notes, "ender": ender}, config={})
    assert repl(h.agent, read=_lines("/exit", "never read")) == 0
    assert ender.ended == [h.session.id]


PROBE = '''
import json, os
from mino_core import hookimpl, Tool, ToolResult

def _stop(args, ctx):
    raise KeyboardInterrupt  # what Ctrl-C raises in the middle of a call

@hookimpl
def register_tools(context):
    return [Tool("stop_here", "Stops.", {"type": "object"}, read_only=True, run=_stop)]

@hookimpl
def session_end(session):
    with open(os.environ["ENDED_LOG"], "a") as f:
        f.write(json.dumps({"id": session.id, "turns": session.turns}) + "\\n")
'''


def test_headless_run_ends_its_session_once_answered_or_interrupted(tmp_path, scripted_server):
    (tmp_path / "mino_ender_plugin.py").write_text(PROBE)
    dist = tmp_path / "mino_ender-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mino-ender\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[mino]\nmino-ender = mino_ender_plugin\n")
    home, project, log = tmp_path / "home", tmp_path / "project", tmp_path / "ended.jsonl"
    project.mkdir()
    env = isolated_env(home) | {"PYTHONPATH": str(tmp_path), "ENDED_LOG": str(log),
                                "MINO_BASE_URL": scripted_server.base_url, "MINO_MODEL": "scripted",
                                "MINO_PLUGINS": "mino.policy,mino-ender",
                                "MINO_PROJECT": str(project)}
    scripted_server.add({"text": "answered"}, call("stop_here"))
    mino = mino_command() + ["-p"]
    done = subprocess.run(mino + ["say it"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "answered\n", done.stderr
    cut = subprocess.run(mino + ["stop"], env=env, capture_output=True, text=True, timeout=60)
    assert cut.returncode == 130, cut.stderr
    ended = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["turns"] for e in ended] == [1, 1] and ended[0]["id"] != ended[1]["id"]
