"""The rendered terminal UI in-process: what it writes, byte for byte where it matters."""
from __future__ import annotations

import io
import re

import pytest

from mino_core import confirm
from mino_core.terminal import line_editing_wanted, status_wanted, styled_wanted
from mino_core.terminal.render import RichUI, SafeMarkdown, split_blocks
from mino_core.terminal.spinner import Spinner
from mino_core.ui import TerminalUI

SGR = re.compile(r"\x1b\[[0-9;]*m")
OSC52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
CLEAR = "\x1b[2J"


class Tty(io.StringIO):
    def isatty(self):
        return True


def _rich():
    out, err = Tty(), Tty()
    ui = RichUI(out, err, read=lambda q: "n", status=False)
    ui.console.width = 80
    return ui, out, err


def _unstyled(text: str) -> str:
    """What is left once mino's own SGR codes (and rich's cursor moves) are taken out."""
    return re.sub(r"\x1b\[\?25[lh]|\r|\x1b\[2K|\x1b\[1A", "", SGR.sub("", text))


def test_split_blocks_closes_at_blank_lines_outside_fences():
    blocks, rest = split_blocks("para one\n\n```\ncode\n\nmore code\n```\n\nlast")
    assert blocks == ["para one", "```\ncode\n\nmore code\n```"]
    assert rest == "last"
    blocks, rest = split_blocks("```py\nopen fence\n\nstill open")
    assert blocks == [] and rest.startswith("```py")


def test_streamed_markdown_prints_each_block_once():
    ui, out, _ = _rich()
    ui.assistant_start()
    text = "# Heading\n\nSome **bold** words.\n\n- a\n- b\n"
    for ch in text:  # one character a delta, the worst case
        ui.text_delta(ch)
    ui.end_text()
    shown = _unstyled(out.getvalue())
    assert shown.count("Heading") == 1 and shown.count("Some bold words.") == 1
    assert "**" not in shown and "# " not in shown and "• a" in shown
    assert ui.partial_answer() == text


def test_model_text_is_escaped_before_it_is_rendered():
    ui, out, err = _rich()
    ui.console.width = 200  # one line, so the escaped text can be compared whole
    ui.assistant_start()
    ui.text_delta(f"Run safe\u202e;hs | live\u202c now{OSC52}ok\u200bdone **bold**\n\n```\n{CLEAR}x\n```")
    ui.end_text()
    ui.notice(f"plugin says {OSC52}")
    raw = out.getvalue() + err.getvalue()
    assert OSC52 not in raw and CLEAR not in raw and "\u202e" not in raw and "\u200b" not in raw
    assert re.search("[\x07\x9b\x9d]", raw) is None
    assert "\x1b]" not in raw  # no OSC at all (no hyperlinks, no titles)
    shown = _unstyled(raw)
    assert "safe\\u202e;hs | live\\u202c now\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007ok\\u200bdone" in shown
    assert "\\u001b[2Jx" in shown


def test_html_and_links_stay_visible():
    console_out = Tty()
    from rich.console import Console

    console = Console(file=console_out, force_terminal=True, width=80, emoji=False, markup=False)
    console.print(SafeMarkdown("<div>hidden?</div>\n\ntext <span>inline</span> [label](http://x.test)\n\n"
                               "<!-- a comment -->\n\n[ref]: http://hidden.test/curl-evil\n\n"
                               "![alt text](http://img.test/pic.png)"))
    shown = SGR.sub("", console_out.getvalue())
    assert "<div>hidden?</div>" in shown and "<span>inline</span>" in shown
    assert "<!-- a comment -->" in shown and "[ref]: http://hidden.test/curl-evil" in shown
    assert "alt text (http://img.test/pic.png)" in shown
    assert "label (http://x.test)" in shown and "\x1b]8;" not in console_out.getvalue()


def test_a_confirmation_shows_the_same_characters_as_the_plain_ui():
    text = confirm.render([("Path", "notes\u202e.txt"), ("Content", "a\nb\\c\t\"q\"")], ["+ line"])
    plain_out = io.StringIO()
    plain = TerminalUI(plain_out, io.StringIO(), read=lambda q: "n", status=False)
    plain.tool_call("write_file")
    assert plain.ask(text) is False
    ui, out, _ = _rich()
    ui.tool_call("write_file")
    assert ui.ask(text) is False
    assert _unstyled(out.getvalue()) == plain_out.getvalue()


def test_a_question_interrupted_by_ctrl_c_stops_the_turn_and_ctrl_d_is_a_no():
    def interrupt(question):
        raise KeyboardInterrupt

    def eof(question):
        raise EOFError

    ui = TerminalUI(io.StringIO(), io.StringIO(), read=interrupt, status=False)
    with pytest.raises(KeyboardInterrupt):
        ui.ask("Path: \"x\"")
    ui = TerminalUI(io.StringIO(), io.StringIO(), read=eof, status=False)
    assert ui.ask("Path: \"x\"") is False


def test_live_tool_output_is_escaped_capped_and_not_repeated_in_the_result():
    ui, out, _ = _rich()
    ui.tool_call("Bash")
    ui.tool_output(f"first{CLEAR}\n")
    ui.tool_output("".join(f"line {i}\n" for i in range(300)))
    ui.tool_result("completed", "first\n" + "".join(f"line {i}\n" for i in range(300)) + "[Exit code: 0]")
    shown = _unstyled(out.getvalue())
    assert CLEAR not in out.getvalue() and "first\\u001b[2J" in shown
    assert "line 198" in shown and "line 250" not in shown and "more output not shown here" in shown
    assert shown.count("line 10\n") == 1 and shown.rstrip().endswith("[Exit code: 0]")


def test_plain_ui_ignores_live_output():
    out = io.StringIO()
    ui = TerminalUI(out, io.StringIO(), status=False)
    ui.tool_call("Bash")
    ui.tool_output("live\n")
    ui.tool_result("completed", "live\n[Exit code: 0]")
    assert out.getvalue() == "[Tool: Bash]\n\n[Tool result: completed]\nlive\n[Exit code: 0]\n"


def test_what_the_streams_and_environment_choose(monkeypatch):
    tty, pipe = Tty(), io.StringIO()
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert styled_wanted(tty) and status_wanted(tty) and line_editing_wanted(tty, tty)
    assert not styled_wanted(pipe) and not status_wanted(pipe) and not line_editing_wanted(pipe, tty)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not styled_wanted(tty) and status_wanted(tty)
    monkeypatch.setenv("TERM", "dumb")
    assert not status_wanted(tty) and not line_editing_wanted(tty, tty)


def test_the_spinner_erases_itself_and_says_what_it_waits_for():
    err = Tty()
    spinner = Spinner(err)
    spinner.start("Waiting for the model")
    import time

    time.sleep(0.35)
    spinner.stop()
    written = err.getvalue()
    assert "Waiting for the model 0s (Esc to interrupt)" in written
    assert written.endswith("\r\x1b[2K")
    size = len(written)
    time.sleep(0.25)
    assert len(err.getvalue()) == size  # stopped means stopped


def test_a_notice_in_the_middle_of_an_answer_with_the_status_line_on():
    out, err = Tty(), Tty()
    ui = TerminalUI(out, err, status=True)
    ui.waiting("the model")
    ui.assistant_start()
    ui.text_delta("half an answer")
    ui.notice("(model service: retrying in 1.0s)")  # ends the text line, under the pause
    assert out.getvalue().endswith("half an answer\n")
    assert err.getvalue().endswith("(model service: retrying in 1.0s)\n")
    ui.idle()
