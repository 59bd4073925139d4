"""The interactive terminal on a real pseudo-terminal, against the scripted server.

``Screen`` keeps every byte mino wrote and feeds a terminal emulator (pyte), so a test can
say both "this arrived before that" (the raw stream) and "this is what the person sees"
(the emulated screen).
"""
from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import pyte
import pytest

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
ESC, ENTER, CTRL_C, CTRL_D = "\x1b", "\r", "\x03", "\x04"
COLUMNS, ROWS = 100, 50


class Screen:
    def __init__(self, args, env, sigint_ignored=False):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            if sigint_ignored:  # as a shell's `&` without job control leaves it
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.execve(MINO, [MINO, *args], env)
        import fcntl
        import struct
        import termios

        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.raw = b""
        self._screen = pyte.HistoryScreen(COLUMNS, ROWS, history=2000)
        # Answers to the terminal's queries (the cursor position report prompt_toolkit asks
        # for) go back to mino, as a real terminal's do.
        self._screen.write_process_input = lambda data: os.write(self.fd, data.encode())
        self._stream = pyte.ByteStream(self._screen)

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def lines(self) -> list[str]:
        """What the emulated terminal shows, the scrolled-off part included."""
        history = ["".join(ch.data for ch in line.values()).rstrip() if isinstance(line, dict)
                   else "".join(line[x].data for x in range(COLUMNS)).rstrip()
                   for line in self._screen.history.top]
        return history + [line.rstrip() for line in self._screen.display]

    def shown(self) -> str:
        return "\n".join(self.lines())

    def _pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        self.raw += chunk
        self._stream.feed(chunk)
        return True

    def expect(self, text, timeout=30.0, start=0):
        deadline = time.monotonic() + timeout
        while text not in self.text[start:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; screen:\n{self.shown()}")
            if not self._pump(left):
                raise AssertionError(f"mino exited before {text!r}; screen:\n{self.shown()}")
        return self.text

    def settle(self, quiet=0.3, timeout=5.0):
        """Read until mino has written nothing for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = len(self.raw)
            if not self._pump(quiet) or len(self.raw) == before:
                return

    def shows(self, text, timeout=30.0):
        """Wait until the emulated screen shows ``text`` (redrawn lines are not contiguous
        in the raw stream)."""
        deadline = time.monotonic() + timeout
        while text not in self.shown():
            if time.monotonic() > deadline:
                raise AssertionError(f"not shown: {text!r}; screen:\n{self.shown()}")
            self._pump(0.1)

    def prompt(self, timeout=30.0):
        """Wait until the prompt is the last line on screen (the turn is over)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.lines() if line.strip()]
            if lines and lines[-1].startswith("You>"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no prompt; screen:\n{self.shown()}")
            self._pump(0.1)

    def type(self, keys: str):
        os.write(self.fd, keys.encode())

    def paste(self, text: str):
        """Paste as a terminal does (tmux paste-buffer -p): between the bracketed paste
        markers when mino has turned that mode on, else as raw keys, each line ending in
        Enter. The mode is the last one mino wrote so far."""
        on, off = self.raw.rfind(b"\x1b[?2004h"), self.raw.rfind(b"\x1b[?2004l")
        keys = text.replace("\n", "\r")
        os.write(self.fd, (PASTE_START + keys + PASTE_END if on > off else keys).encode())

    def close(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._pump(0.05):
                    if not select.select([self.fd], [], [], 0)[0]:
                        break
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            self._pump(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        raise AssertionError(f"mino did not exit; screen:\n{self.shown()}")


def _env(tmp_path, server, plugins="mino.policy,mino.skills", **more):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = isolated_env(home)
    env.update(MINO_BASE_URL=server.base_url, MINO_PROJECT=str(project), MINO_PLUGINS=plugins,
               TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS))
    env.pop("NO_COLOR", None)
    env.update(more)
    return env, home, project


def _user_messages(request) -> list[str]:
    out = []
    for item in request.get("input", []):
        if item.get("role") == "user":
            content = item.get("content")
            out.append(content if isinstance(content, str) else
                       "".join(part.get("text", "") for part in content))
    return out


def _log(home):
    [path] = list((home / "sessions").glob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _leave(term):
    term.prompt()  # keys typed during a turn wait for the next prompt
    term.type(CTRL_D)
    code = term.close()
    assert code == 0, term.shown()
    return code


def test_a_pasted_block_of_40_lines_is_one_message(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "Got all of it."})
    term = Screen([], env)
    term.expect("You>")
    block = "\n".join(f"log line {i:02}: something happened" for i in range(40))
    term.type(PASTE_START + block + PASTE_END)
    term.expect("log line 39")
    term.settle()
    before = term.shown()
    assert scripted_server.requests == []  # the paste alone sends nothing
    term.type(ENTER)
    term.expect("Got all of it.")
    term.settle()
    after = term.shown()
    _leave(term)
    assert len(scripted_server.requests) == 1
    assert _user_messages(scripted_server.requests[0]) == [block]
    history = (home / "history").read_text()
    assert "log line 39" in history
    (tmp_path / "screen-paste.txt").write_text(before + "\n=====\n" + after)


def test_alt_enter_ctrl_j_and_a_trailing_backslash_make_new_lines(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "ok"})
    term = Screen([], env)
    term.expect("You>")
    term.type("one\x1b\r")   # Alt-Enter
    term.type("two\n")       # Ctrl-J
    term.type("three\\\r")   # a trailing backslash, then Enter
    term.type("four")
    term.settle()
    assert scripted_server.requests == []
    term.type(ENTER)
    term.expect("ok")
    _leave(term)
    assert _user_messages(scripted_server.requests[0]) == ["one\ntwo\nthree\nfour"]


def test_the_spinner_shows_what_it_waits_for_until_the_first_token(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "Slow answer.", "delay": 0.25})
    term = Screen([], env)
    term.expect("You>")
    term.type("hello" + ENTER)
    raw = term.expect("Slow answer.")
    start = raw.index("hello")
    assert "Waiting for the model" in raw[start:]
    assert raw.index("Waiting for the model", start) < raw.index("Assistant>", start)
    term.settle()
    # Erased: the finished screen holds the answer, not the status line.
    assert "Waiting for the model" not in term.shown()
    _leave(term)
    log = (home / "sessions").glob("*.jsonl")
    assert all("Waiting for" not in p.read_text() for p in log)


def test_no_spinner_and_plain_text_in_a_pipe(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "Piped **answer**.", "delay": 0.2},
                        {"text": "Headless **answer**.", "delay": 0.2})
    result = subprocess.run([MINO], input="hi\n/exit\n", env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "\nAssistant> Piped **answer**.\n" in result.stdout
    assert "Waiting for" not in result.stdout + result.stderr
    assert "\x1b" not in result.stdout + result.stderr
    result = subprocess.run([MINO, "-p", "hi"], env=env, capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert "Headless **answer**." in result.stdout and "\x1b" not in result.stdout
    assert "Waiting for" not in result.stderr and "\x1b" not in result.stderr


MARKDOWN = ("# Release notes\n\nThis is **important** and `code`.\n\n- first item\n- second item\n\n"
            "```python\ndef f():\n    return 1\n```\n\n| name | value |\n|------|-------|\n| a    | 1     |\n\n"
            "<b>raw html</b> stays visible, and [a link](http://example.com).")


def test_markdown_is_rendered_on_a_terminal(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": MARKDOWN, "delay": 0.01})
    term = Screen([], env)
    term.expect("You>")
    term.type("notes?" + ENTER)
    term.expect("example.com")
    term.settle()
    shown = term.shown()
    _leave(term)
    assert "Release notes" in shown and "# Release notes" not in shown
    assert "This is important and code." in shown and "**" not in shown
    assert "• first item" in shown and "• second item" in shown
    assert "def f():" in shown and "```" not in shown
    assert "name" in shown and "─" in shown and "|------|" not in shown
    assert "<b>raw html</b> stays visible" in shown
    assert "a link (http://example.com)" in shown
    assert "\x1b[1m" in term.text  # bold, as an SGR code
    assert "\x1b]8;" not in term.text  # no OSC 8 hyperlinks
    # Each block is printed once: the rendered heading appears once in the stream.
    assert term.text.count("Release notes") == 1 or shown.count("Release notes") == 1
    (tmp_path / "screen-markdown.txt").write_text(shown)


@pytest.mark.parametrize("setting", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_a_dumb_terminal_get_the_plain_transcript(tmp_path, scripted_server, setting):
    env, home, _ = _env(tmp_path, scripted_server, **setting)
    scripted_server.add({"text": MARKDOWN})
    term = Screen([], env)
    term.expect("You>")
    term.type("notes?" + ENTER)
    raw = term.expect("example.com).")
    _leave(term)
    plain = MARKDOWN.replace("\n", "\r\n")
    assert "Assistant> " + plain in raw
    assert "\x1b[1m" not in raw and "\x1b[1;34m" not in raw


def test_bash_output_streams_before_the_command_ends(tmp_path, scripted_server):
    env, home, project = _env(tmp_path, scripted_server, "mino.policy,mino.skills,mino-tools-fs")
    scripted_server.add(
        {"calls": [{"name": "Bash", "arguments": {"command": "printf 'out-%s\\n' one; sleep 3; printf 'out-%s\\n' two"}}]},
        {"require": "out-two", "text": "Done."})
    term = Screen(["--mode", "bypass"], env)
    term.expect("You>")
    term.type("run it" + ENTER)
    raw = term.expect("out-one")
    mark = time.monotonic()
    assert "out-two" not in raw and "[Tool result" not in raw
    during = term.shown()
    raw = term.expect("[Tool result: completed]")
    assert time.monotonic() - mark > 1.5  # "started" was on screen while it slept
    term.expect("Done.")
    term.settle()
    shown = term.shown()
    _leave(term)
    assert shown.count("out-one") == 1  # shown live, not again with the result
    assert "[Exit code: 0]" in shown
    (tmp_path / "screen-bash.txt").write_text(during + "\n=====\n" + shown)


def _approval_script(server):
    server.add({"text": "I will write it.", "calls": [{"name": "write_file", "arguments": {
        "path": "notes.txt", "content": "hello\n"}}]},
        {"forbid": "hello again", "text": "unused"})


@pytest.mark.parametrize("key,term_name,sigint_ignored", [
    (ESC, "xterm-256color", False), (CTRL_C, "xterm-256color", False), (CTRL_C, "dumb", False),
    # Started with SIGINT ignored (a background job of a script, a CI runner): keys still work.
    (ESC, "xterm-256color", True), (CTRL_C, "dumb", True)])
def test_esc_or_ctrl_c_at_an_approval_ends_the_turn_and_is_recorded(tmp_path, scripted_server, key,
                                                                      term_name, sigint_ignored):
    env, home, project = _env(tmp_path, scripted_server, "mino.policy,mino.skills,mino-tools-fs",
                              TERM=term_name)
    scripted_server.script.clear()
    scripted_server.add(
        {"text": "I will write it.", "calls": [{"name": "write_file", "arguments": {
            "path": "notes.txt", "content": "hello\n"}}]},
        {"require": ["Interrupted by the user.", "the user interrupted it"], "text": "Understood."})
    term = Screen([], env, sigint_ignored=sigint_ignored)
    term.expect("You>")
    term.type("write the notes" + ENTER)
    term.expect("Approve this operation? [y/N]")
    term.settle()
    before = term.shown()
    term.type(key)
    term.expect("Interrupted.")
    raw = term.expect("You>", start=term.text.index("Interrupted."))
    after = term.shown()
    assert "[Tool result" not in raw[raw.index("Approve this operation"):]
    assert not (project / "notes.txt").exists()
    term.type("what happened?" + ENTER)
    term.expect("Understood.")
    _leave(term)
    records = _log(home)
    ends = [r for r in records if r["type"] == "turn_end"]
    assert ends[0]["ended"] == "interrupted"
    outputs = [r for r in records if r["type"] == "function_call_output"]
    assert outputs[0]["output"] == "Interrupted by the user."
    marked = [r for r in records if r.get("incomplete") == "interrupted"]
    assert len(marked) == 1 and marked[0]["role"] == "assistant"
    # The next request: the interrupted turn, marked, then the new message; roles alternate.
    second = scripted_server.requests[1]
    roles = [i.get("role") or i["type"] for i in second["input"]]
    assert roles.count("user") == 2 and ["user", "user"] != roles[-2:]
    assert scripted_server.failures == []
    history = (home / "history").read_text() if (home / "history").exists() else ""
    assert "what happened?" in history or term_name == "dumb"
    assert "\n+y\n" not in history and "+\x1b" not in history
    (tmp_path / "screen-interrupt.txt").write_text(before + "\n=====\n" + after)


def test_esc_while_the_answer_streams_keeps_what_was_shown(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    words = " ".join(f"word{i}" for i in range(200))
    scripted_server.add({"text": words, "delay": 0.05},
                        {"require": ["word3", "the user interrupted it"], "text": "Stopped, then."})
    term = Screen([], env)
    term.expect("You>")
    term.type("talk" + ENTER)
    term.expect("word5")
    term.type(ESC)
    term.expect("Interrupted.")
    term.expect("You>", start=term.text.index("Interrupted."))
    term.type("go on" + ENTER)
    term.expect("Stopped, then.")
    _leave(term)
    records = _log(home)
    [partial] = [r for r in records if r.get("incomplete") == "interrupted"]
    assert partial["content"].startswith("word0 word1") and "word199" not in partial["content"]
    assert scripted_server.failures == []


def test_ctrl_c_clears_the_line_twice_on_an_empty_line_leaves(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "Only this."})
    term = Screen([], env)
    term.expect("You>")
    term.type("never sent")
    term.settle()
    term.type(CTRL_C)
    term.settle()
    term.type("sent" + ENTER)
    term.expect("Only this.")
    term.settle()
    term.type(CTRL_C)
    term.expect("Ctrl-C again to leave")
    term.type(CTRL_C)
    term.expect(f"Resume with: {MINO} --resume ")  # the command as started: runnable
    assert term.close() == 0
    assert _user_messages(scripted_server.requests[0]) == ["sent"]


def test_tab_completes_slash_commands(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    term = Screen([], env)
    term.expect("You>")
    term.type("/hel\t")
    term.shows("You> /help")
    term.type(ENTER)
    term.expect("Commands:")
    term.expect("Alt-Enter")
    _leave(term)


def test_esc_during_a_tool_run_stops_it_and_the_turn(tmp_path, scripted_server):
    env, home, project = _env(tmp_path, scripted_server, "mino.policy,mino.skills,mino-tools-fs")
    scripted_server.add(
        {"calls": [{"name": "Bash", "arguments": {"command": "printf 'tick-%s\\n' 1; sleep 20"}}]},
        {"require": ["Interrupted by the user.", "the user interrupted it"], "text": "Noted."})
    term = Screen(["--mode", "bypass"], env)
    term.expect("You>")
    term.type("run it" + ENTER)
    term.expect("tick-1")
    started = time.monotonic()
    term.type(ESC)
    term.expect("Interrupted.")
    assert time.monotonic() - started < 5  # not the 20 s the command would take
    term.prompt()
    term.type("and?" + ENTER)
    term.expect("Noted.")
    _leave(term)
    records = _log(home)
    assert [r["ended"] for r in records if r["type"] == "turn_end"] == ["interrupted", "answer"]
    assert scripted_server.failures == []


def test_history_keeps_prompts_never_answers_and_comes_back_next_run(tmp_path, scripted_server):
    env, home, project = _env(tmp_path, scripted_server, "mino.policy,mino.skills,mino-tools-fs")
    scripted_server.add(
        {"calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\n"}}]},
        {"require": "status: completed", "text": "Written."})
    term = Screen([], env)
    term.expect("You>")
    term.type("write the notes" + ENTER)
    term.expect("Approve this operation? [y/N]")
    term.settle()
    term.type("y" + ENTER)
    term.expect("Written.")
    _leave(term)
    assert (project / "notes.txt").read_text() == "hi\n"
    entries = [line for line in (home / "history").read_text().splitlines() if line.startswith("+")]
    assert entries == ["+write the notes"]
    # The next run offers it with Up.
    term = Screen([], env)
    term.expect("You>")
    term.type("\x1b[A")
    term.shows("You> write the notes")
    term.type(CTRL_C)
    _leave(term)


def test_a_line_typed_during_a_turn_is_the_next_message(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "first answer, slowly", "delay": 0.1},
                        {"require": "typed ahead", "text": "Second."})
    term = Screen([], env)
    term.expect("You>")
    term.type("one" + ENTER)
    term.expect("first")
    term.type("typed ahead" + ENTER)
    term.expect("Second.")
    _leave(term)
    assert [_user_messages(r)[-1] for r in scripted_server.requests] == ["one", "typed ahead"]


def test_after_resume_compact_honours_the_limits_and_keeps_only_a_shorter_summary(tmp_path, scripted_server):
    env, home, _ = _env(tmp_path, scripted_server)
    answer = " ".join(f"word{i}" for i in range(200))
    for n in (1, 2, 3):
        scripted_server.add({"text": f"answer {n}: {answer}"})
        done = subprocess.run([MINO, *(["-c"] if n > 1 else []), "-p", f"question {n}"], env=env,
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
    (home / "config.yaml").write_text("max_output_tokens: 64\n")
    [path] = list((home / "sessions").glob("*.jsonl"))
    term = Screen(["--resume", path.stem], env)
    term.expect("You>")
    # A small model's "summary" longer than what it replaces.
    scripted_server.add({"text": "summary " + " ".join(f"detail{i}" for i in range(2000))})
    term.type("/compact" + ENTER)
    term.expect("Compaction not kept")
    assert scripted_server.requests[-1]["max_output_tokens"] == 64  # config, after --resume
    scripted_server.add({"text": "They asked question 1."})
    term.prompt()
    term.type("/compact" + ENTER)
    term.expect("Compacted 1 turn(s)")
    assert scripted_server.requests[-1]["max_output_tokens"] == 64
    _leave(term)
    kept = [r for r in _log(home) if r.get("type") == "compaction"]
    assert len(kept) == 1 and kept[0]["summary"] == "They asked question 1."


def test_a_paste_the_moment_the_first_prompt_shows_is_one_message(tmp_path, scripted_server):
    env, _, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "Got the paste."})
    term = Screen([], env)
    term.expect("You>")
    block = "\n".join(f"trace line {i:02}" for i in range(30))
    term.paste(block)  # at once: prompt_toolkit is still loading
    term.shows("trace line 29")
    term.settle()
    before = term.shown()
    assert scripted_server.requests == []  # the paste alone sends nothing
    term.type(ENTER)
    term.expect("Got the paste.")
    term.settle()
    after = term.shown()
    _leave(term)
    assert len(scripted_server.requests) == 1
    assert _user_messages(scripted_server.requests[0]) == [block]
    (tmp_path / "screen-paste-first.txt").write_text(before + "\n=====\n" + after)


def test_a_paste_during_a_turn_is_one_message_at_the_next_prompt(tmp_path, scripted_server):
    env, _, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "a slow first answer " * 6, "delay": 0.05}, {"text": "Second."})
    term = Screen([], env)
    term.expect("You>")
    term.type("one" + ENTER)
    term.expect("slow first")
    block = "\n".join(f"pasted line {i:02}" for i in range(40)) + "\n"
    term.paste(block)
    term.shows("You> pasted line 00")  # the next prompt holds the whole paste
    term.shows("pasted line 39")
    term.settle()
    before = term.shown()
    assert len(scripted_server.requests) == 1  # waits at the prompt, editable
    term.type(ENTER)
    term.expect("Second.")
    term.settle()
    after = term.shown()
    _leave(term)
    assert len(scripted_server.requests) == 2
    assert _user_messages(scripted_server.requests[1])[-1] == block  # as pasted
    (tmp_path / "screen-paste-turn.txt").write_text(before + "\n=====\n" + after)


def test_lines_typed_during_a_turn_are_one_message(tmp_path, scripted_server):
    env, _, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "a slow first answer " * 6, "delay": 0.05},
                        {"text": "Both lines at once."})
    term = Screen([], env)
    term.expect("You>")
    term.type("one" + ENTER)
    term.expect("slow first")
    term.type("first line" + ENTER + "second line" + ENTER)
    term.expect("Both lines at once.")
    _leave(term)
    assert len(scripted_server.requests) == 2
    assert _user_messages(scripted_server.requests[1])[-1] == "first line\nsecond line"


def test_a_first_start_in_a_folder_asks_for_trust_and_remembers_a_yes(tmp_path, scripted_server):
    env, home, project = _env(tmp_path, scripted_server)
    (home / "trusted-folders.json").unlink()  # as on a first start: nothing trusted yet
    term = Screen([], env)
    term.expect("Do you trust the files in this folder?")
    term.type("n" + ENTER)
    assert term.close() == 2
    assert "Not trusted, so mino leaves" in term.shown()
    assert not (home / "trusted-folders.json").exists()
    term = Screen([], env)
    term.expect("Do you trust the files in this folder?")  # asked again
    term.type("y" + ENTER)
    term.expect("You>")
    term.type(CTRL_D)
    assert term.close() == 0
    stored = home / "trusted-folders.json"
    assert stat_mode(stored) == 0o600 and str(project) in json.loads(stored.read_text())["folders"]
    term = Screen([], env)
    term.expect("You>")
    assert "Do you trust" not in term.text  # remembered
    term.type(CTRL_D)
    assert term.close() == 0


def stat_mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_a_new_agents_md_is_asked_about_at_the_first_message(tmp_path, scripted_server):
    env, home, project = _env(tmp_path, scripted_server, plugins="mino.policy,mino.skills,mino.instructions")
    (project / "AGENTS.md").write_text("HOUSE-RULE: answer in French.\n")
    scripted_server.add({"require": "HOUSE-RULE", "text": "Bonjour."})
    term = Screen([], env)
    term.expect("You>")
    term.type("hello" + ENTER)
    term.expect("HOUSE-RULE")  # the file's first lines, in the question
    term.expect("[y/N]")
    term.type("y" + ENTER)
    term.expect("Bonjour.")
    _leave(term)
    assert str(project / "AGENTS.md") in (home / "instructions-seen.json").read_text()


def test_model_flag_banner_and_the_model_command(tmp_path, scripted_server):
    from importlib.metadata import version

    env, _, _ = _env(tmp_path, scripted_server)
    scripted_server.add({"text": "from small"}, {"text": "from other"})
    term = Screen(["-m", "small-model"], env)
    term.expect("You>")
    host = scripted_server.base_url.split("//")[1].split("/")[0]
    assert f"mino {version('mino-core')}: model small-model at {host}, project" in term.shown()
    term.type("one" + ENTER)
    term.expect("from small")
    term.prompt()
    term.type("/model" + ENTER)
    term.expect("The server offers: scripted.")
    assert f"Model: small-model at {scripted_server.base_url}" in term.shown()
    term.prompt()
    term.type("/model other-model" + ENTER)
    term.expect("Model: other-model from the next message on (the server does not list it")
    term.prompt()
    term.type("two" + ENTER)
    term.expect("from other")
    _leave(term)
    assert [r["model"] for r in scripted_server.requests] == ["small-model", "other-model"]
