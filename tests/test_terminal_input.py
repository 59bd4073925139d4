"""Completion and the typed-ahead buffer, without a terminal."""
from __future__ import annotations

import os

from prompt_toolkit.document import Document

from mino_core.terminal.input import SlashCompleter
from mino_core.terminal.keys import EscWatcher


def _complete(completer, text):
    return [(c.text, c.display_meta_text) for c in completer.get_completions(Document(text), None)]


def test_slash_commands_and_resume_ids_complete():
    sessions = [("a" * 32, "fix the build\x1b[2J"), ("ab" + "c" * 30, "second")]
    completer = SlashCompleter(["/new", "/resume", "/help", "/exit"], lambda: sessions)
    assert _complete(completer, "/re") == [("/resume", "")]
    assert [t for t, _ in _complete(completer, "/")] == ["/exit", "/help", "/new", "/resume"]
    assert _complete(completer, "/resume ab") == [("ab" + "c" * 30, "second")]
    found = _complete(completer, "/resume ")
    assert [t for t, _ in found] == ["a" * 32, "ab" + "c" * 30]
    assert found[0][1] == "fix the build\\u001b[2J"  # titles escaped like everything shown
    assert _complete(completer, "hello /re") == [] and _complete(completer, "/new x") == []


def test_a_broken_session_list_never_breaks_typing():
    def broken():
        raise OSError("gone")

    assert _complete(SlashCompleter(["/resume"], broken), "/resume ") == []


def test_keys_typed_during_a_turn_keep_text_and_drop_controls():
    read, write = os.pipe()
    try:
        watcher = EscWatcher(read)
        watcher._typed += "helo\x7flo wor\x04ld\r\nnext".encode()
        assert watcher.take() == "hello world\nnext"
        assert watcher.take() == ""
    finally:
        os.close(read)
        os.close(write)
