"""The installed ``mino`` command: real processes, a real pseudo-terminal."""
from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time


from mino_core.testing.harness import isolated_env

# The console script beside this interpreter: the one installed with this checkout.
_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


def run(args, home, **env):
    full = isolated_env(home)
    full.update(env)
    return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_importing_the_cli_does_not_import_openai():
    code = "import sys, mino_core.cli; print('openai' in sys.modules, 'structlog' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_prompt_toolkit_and_rich_load_only_where_used():
    code = ("import sys, mino_core.cli, mino_core.repl, mino_core.ui, mino_core.terminal, mino_core.logs; "
            "mino_core.logs._import_structlog(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'prompt_toolkit', 'rich'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_settings_are_one_line_not_a_traceback(tmp_path):
    result = run([], tmp_path / "home")
    assert result.returncode == 2
    assert "export OPENAI_API_KEY=" in result.stderr and "MINO_BASE_URL" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_broken_config_is_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("model: [unclosed\n")
    result = run(["-p", "hi"], home, OPENAI_API_KEY="x")
    assert result.returncode == 2 and "not valid YAML" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_mode_and_session(tmp_path):
    result = run(["--mode", "yolo"], tmp_path / "home", OPENAI_API_KEY="x")
    assert result.returncode == 2 and "Unknown mode 'yolo'" in result.stderr
    result = run(["--resume", "0" * 32], tmp_path / "home", OPENAI_API_KEY="x")
    assert result.returncode == 2 and "No session" in result.stderr


def test_headless_prompt_answers_and_denies_questions(tmp_path, scripted_server):
    scripted_server.add({"text": "Four."})
    result = run(["-p", "2+2?"], tmp_path / "home", MINO_BASE_URL=scripted_server.base_url)
    assert result.returncode == 0, result.stderr
    assert "Four." in result.stdout
    listed = run(["sessions"], tmp_path / "home")
    assert "2+2?" in listed.stdout


def test_plugins_json_lists_the_core_and_installed_plugins(tmp_path):
    result = run(["plugins", "--json"], tmp_path / "home")
    data = json.loads(result.stdout)
    names = {p["name"]: p for p in data["plugins"]}
    assert names["mino.policy"]["status"] == "loaded"
    assert "decide_permission" in names["mino.policy"]["hooks"]
    assert "skill_view" in names["mino.skills"]["tools"]
    human = run(["plugins"], tmp_path / "home")
    assert "Memory backend:" in human.stdout


def test_permissions_explains_rules(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("permissions:\n  deny: ['Bash(rm *)']\n")
    result = run(["permissions"], home)
    assert "deny   Bash(rm *)" in result.stdout and "bypass" in result.stdout


class Terminal:
    """mino on a real pseudo-terminal."""

    def __init__(self, args, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            os.execve(MINO, [MINO, *args], env)
        self.buffer = ""

    def expect(self, text, timeout=30.0):
        """Wait for ``text`` after what earlier calls matched; return the output up to and
        including it, and consume it (so a second ``expect("You> ")`` needs a new prompt)."""
        deadline = time.monotonic() + timeout
        while text not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; screen:\n{self.buffer}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096).decode("utf-8", "replace")
                except OSError:
                    chunk = ""
                if not chunk:
                    raise AssertionError(f"mino exited before {text!r}; screen:\n{self.buffer}")
                self.buffer += chunk
        end = self.buffer.index(text) + len(text)
        seen, self.buffer = self.buffer[:end], self.buffer[end:]
        return seen

    def send(self, line):
        os.write(self.fd, (line + "\n").encode())

    def close(self):
        try:
            _, status = os.waitpid(self.pid, 0)
        finally:
            os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def test_repl_transcript_through_a_pseudo_terminal(tmp_path, scripted_server):
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    env = isolated_env(home)
    env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(project),
               MINO_PLUGINS="mino.policy,mino.skills", TERM="dumb")
    scripted_server.add({"text": "Hello from the model."},
                        {"calls": [{"name": "skill_view", "arguments": {"name": "missing"}}]},
                        {"require": "status: invalid_arguments", "text": "No such skill."})
    term = Terminal([], env)
    screen = term.expect("You> ")
    assert "Session: " in screen and "Permission mode: manual. Use /mode to change it." in screen
    term.send("hi there")
    term.expect("Assistant> Hello from the model.")
    term.expect("You> ")
    term.send("read the deploy skill")
    term.expect("[Tool: skill_view]")
    term.expect("[Tool result: invalid_arguments]")
    term.expect("Assistant> No such skill.")
    term.send("/mode accept-edits")
    term.expect("Permission mode: accept-edits.")
    term.send("/new")
    term.expect("Permission mode: accept-edits. Use /mode to change it.")
    term.send("/help")
    term.expect("/resume [ID]")
    term.send("/exit")
    assert term.close() == 0
    assert scripted_server.failures == []


def test_eval_live_runs_only_live_cases_against_the_configured_model(tmp_path, scripted_server):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "live-hello.yaml").write_text(
        "live: true\nturns: ['Say hello.']\nscript: [{text: 'unused in live runs'}]\n"
        "graders:\n  - answer_contains: Hello\n  - request_contains: {index: 1, text: never checked live}\n")
    (cases / "scripted-only.yaml").write_text("turns: ['x']\nscript: [{text: 'y'}]\n")
    scripted_server.add({"require": "Say hello.", "text": "Hello there."})
    result = run(["eval", str(cases), "--live"], tmp_path / "home", MINO_BASE_URL=scripted_server.base_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "live-hello  PASS" in result.stdout and "scripted-only" not in result.stdout
    assert "evals: 1 passed, 0 failed" in result.stdout


def test_eval_reports_failures_with_reasons_and_exit_code(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "wrong.yaml").write_text(
        "turns: ['hi']\nscript: [{require: 'absent text', text: 'x'}]\n")
    (cases / "broken.yaml").write_text("turns: [unclosed\n")
    result = run(["eval", str(cases)], tmp_path / "home")
    assert result.returncode == 1
    assert "wrong   FAIL  scripted server: request 1 does not contain required text 'absent text'" in result.stdout
    assert "broken  FAIL  cannot read case" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_no_model_service_says_how_to_give_one_with_the_command_as_started(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    relative = os.path.relpath(MINO, root)  # .venv/bin/mino, as after set-up
    env = isolated_env(tmp_path / "home")
    env["PATH"] = "/usr/bin:/bin"  # mino is not on PATH
    result = subprocess.run([relative, "-p", "hi"], cwd=root, env=env, capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "export OPENAI_API_KEY=sk-..." in result.stderr and "MINO_BASE_URL=http://127.0.0.1:8080/v1" \
        in result.stderr
    assert f"Then run {relative} again ({relative} doctor checks the set-up)." in result.stderr
    assert "Traceback" not in result.stderr
