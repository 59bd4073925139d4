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
