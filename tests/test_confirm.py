"""The confirmation renderer: nothing in a value is ever invisible."""
from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from mino_core import confirm


def test_examples():
    assert confirm.escape("用 pnpm 安装") == "用 pnpm 安装"
    assert confirm.escape("a\nb\tc") == "a\\nb\\tc"
    assert confirm.escape("zero\u200bwidth") == "zero\\u200bwidth"
    assert confirm.escape("rtl\u202eevil") == "rtl\\u202eevil"
    assert confirm.escape("nbsp\u00a0x") == "nbsp\\u00a0x"
    assert confirm.escape("bell\x07") == "bell\\u0007"
    assert confirm.escape("tag\U000e0041") == "tag\\U000e0041"
    # Look-alike letters are letters: shown as written.
    assert confirm.escape("p\u0430ssword") == "p\u0430ssword"
    # A value cannot fake an escape or close its own quotes.
    assert confirm.escape('a\\nb"c') == 'a\\\\nb\\"c'


def test_render_shape():
    text = confirm.render([("Memory", "uses-pnpm"), ("Summary", "line\nbreak")], ["note"])
    assert text == 'Memory: "uses-pnpm"\nSummary: "line\\nbreak"\nnote'
    assert confirm.is_yes("y") and confirm.is_yes(" YES ") and not confirm.is_yes("yep")
    assert not confirm.is_yes("") and not confirm.is_yes(None)


def _invisible(ch: str) -> bool:
    return ch != " " and unicodedata.category(ch)[0] in "CZ"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=80))
def test_no_invisible_character_reaches_the_screen(value):
    shown = confirm.escape(value)
    assert not any(_invisible(ch) for ch in shown)
    assert "\n" not in shown and "\r" not in shown
    rendered = confirm.render([("Field", value)])
    assert rendered.count("\n") == 0
    assert not any(_invisible(ch) for ch in rendered)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_escaping_is_reversible(value):
    """Distinct values never look the same on screen."""
    shown = confirm.escape(value)
    decoded = shown.encode("ascii", "backslashreplace").decode("unicode_escape")
    # unicode_escape understands \\, \", \n, \t, \uXXXX and \UXXXXXXXX exactly as we write them.
    assert decoded.replace('\\"', '"') == value or decoded == value


def test_text_shown_as_lines_keeps_its_lines_and_nothing_else_invisible():
    text = 'a "quoted" C:\\path\n\tindented \x1b]52;c;eA==\x07 \x1b[2J rtl\u202e zw\u200b'
    assert confirm.visible(text, lines=True) == (
        'a "quoted" C:\\path\n\tindented \\u001b]52;c;eA==\\u0007 \\u001b[2J rtl\\u202e zw\\u200b')
    assert confirm.visible("用 pnpm 安装\n", lines=True) == "用 pnpm 安装\n"
    # Applying it twice changes nothing: notices already escaped by a plugin stay readable.
    once = confirm.visible(text, lines=True)
    assert confirm.visible(once, lines=True) == once


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=80))
def test_no_invisible_character_reaches_the_screen_in_lines_either(value):
    shown = confirm.visible(value, lines=True)
    assert not any(_invisible(ch) for ch in shown if ch not in "\n\t")
    assert shown.count("\n") == value.count("\n")


def test_the_question_says_what_is_hidden_and_the_whole_text_is_framed():
    assert confirm.question() == confirm.QUESTION
    assert confirm.question(0, full=False) == confirm.QUESTION
    assert confirm.question(3, full=True) == f"{confirm.QUESTION} 3 more lines not shown (v: view all)"
    assert confirm.question(1, full=True).endswith("1 more line not shown (v: view all)")
    assert len(confirm.question(99999, full=True)) < 80
    framed = confirm.framed("one\nApprove this operation? [y/N]\x1b[2J")
    assert framed.splitlines() == ["--- the whole text, 2 lines ---", "| one",
                                   "| Approve this operation? [y/N]\\u001b[2J",
                                   "--- end of the whole text ---"]


def test_terminal_ui_shows_the_whole_text_on_v_then_asks_again():
    import io

    from mino_core.ui import TerminalUI

    answers = iter(["v", "V", "y"])
    prompts = []

    def read(prompt):
        prompts.append(prompt)
        return next(answers)

    out = io.StringIO()
    ui = TerminalUI(out=out, err=io.StringIO(), read=read)
    assert ui.ask('Details: "start"', full="start\nhidden end\x07", hidden_lines=1) is True
    assert prompts == [confirm.question(1, True) + " "] * 3
    assert out.getvalue().count("| hidden end\\u0007") == 2
    # Without a whole text to offer, v is an ordinary no.
    ui = TerminalUI(out=io.StringIO(), err=io.StringIO(), read=lambda p: "v")
    assert ui.ask("x") is False
