"""``mino memory ...`` and the other commands print text that files and the model wrote:
through the installed command, no escape sequence in it reaches the terminal."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")

FORBIDDEN = re.compile("[\x1b\x07\x9b\x9d\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
OSC52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
CLEAR = "\x1b[2J"


def run(args, home, **env):
    full = isolated_env(home)
    full.pop("MNEMO_MEMORY_JOURNAL", None)
    full.update(env)
    result = subprocess.run([MINO, *args], env=full, capture_output=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    out, err = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    for stream in (out, err):
        assert FORBIDDEN.search(stream) is None, repr(stream)
    return result.returncode, out, err


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    (path / "memory").mkdir(parents=True)
    # The files backend accepts any control character in a summary (YAML escapes \e, \a)
    # and any character at all in the details.
    (path / "memory" / "evil.md").write_text(
        '---\nname: evil\ntype: user\nsummary: "uses pnpm\\e]52;c;Y3VybA==\\a\\e[2J \\u202eok"\n'
        f"---\nstep one{OSC52}\nstep two{CLEAR} zero\u200bwidth\n", encoding="utf-8")
    return path


def test_files_backend_list_and_show_escape_what_the_file_holds(home):
    code, out, err = run(["memory", "list"], home, MINO_MEMORY_BACKEND="files")
    assert code == 0, err
    assert "uses pnpm\\u001b]52;c;Y3VybA==\\u0007\\u001b[2J \\u202eok" in out
    code, out, err = run(["memory", "show", "evil"], home, MINO_MEMORY_BACKEND="files")
    assert code == 0, err
    # Line breaks stay (it is a file shown as lines); the sequences are shown, not obeyed.
    assert "step one\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007\nstep two\\u001b[2J" in out
    assert "zero\\u200bwidth" in out


def test_graph_import_files_search_history_and_show_escape_everything(home):
    env = {"MINO_MEMORY_BACKEND": "graph"}
    code, out, err = run(["memory", "import-files", "--yes"], home, **env)
    assert code == 0, err
    assert "uses pnpm\\u001b]52;c;" in out and "Imported 1 memories" in out
    code, out, err = run(["memory", "search", "memory evil pnpm", "--json"], home, **env)
    assert code == 0, err
    node = json.loads(out)["results"][0]["node"]
    for args in (["memory", "search", "memory evil pnpm"], ["memory", "history", str(node)],
                 ["memory", "show", str(node)], ["memory", "history", str(node), "--json"]):
        code, out, err = run(args, home, **env)
        assert code == 0, (args, err)
        assert "\\u001b" in out or "\\u202e" in out or args[1] == "search", (args, out)


def test_graph_labels_and_facts_written_by_the_model_are_escaped(home, tmp_path):
    from mino_memory_graph.store import Store

    store = Store.open(home / "graph" / "journal.jsonl")
    with store.write() as req:
        node = req.create_node("Aspect", f"deploy notes{OSC52}\u202etxt.exe")
        req.fact(node, f"step{CLEAR}", f"run it\u200b{OSC52}")
    store.close()
    env = {"MINO_MEMORY_BACKEND": "graph"}
    code, out, err = run(["memory", "search", "deploy notes"], home, **env)
    assert code == 0, err
    assert "deploy notes\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007\\u202etxt.exe" in out
    code, out, err = run(["memory", "history", str(node)], home, **env)
    assert code == 0, err
    assert "step\\u001b[2J: run it\\u200b\\u001b]52" in out
    code, out, err = run(["memory", "show", str(node)], home, **env)
    assert code == 0, err
    code, out, err = run(["memory", "forget", str(node)], home, **env)
    assert code == 0 and "forgot #" in out, err


def test_session_titles_and_plugin_errors_are_escaped(tmp_path):
    home = tmp_path / "home"
    sessions = home / "sessions"
    sessions.mkdir(parents=True)
    records = [{"type": "session", "created": 0},
               {"type": "message", "role": "user", "content": f"hi{OSC52}{CLEAR}\u202e"}]
    (sessions / ("a" * 32 + ".jsonl")).write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, err = run(["sessions"], home)
    assert code == 0 and "hi\\u001b]52;c;" in out, err
    (home / "config.yaml").write_text(
        'permissions:\n  deny: ["Bash(rm\\e[2J*)", 7]\n', encoding="utf-8")
    code, out, err = run(["permissions"], home)
    assert code == 0, err
