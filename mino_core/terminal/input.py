"""Reading the prompt on a terminal with prompt_toolkit.

- Enter sends; Alt-Enter, Ctrl-J or a trailing ``\\`` make a new line. A bracketed paste is
  inserted whole (newlines included), so it is one message whatever it holds.
- History lives in ``MINO_HOME/history`` (the sandbox hides the home): prompts only, never
  approval answers, which are read by ``ask`` with no history.
- Tab completes slash commands and, after ``/resume``, this project's session ids.
- Ctrl-C clears the line; on an empty line twice in a row it leaves; Ctrl-D leaves.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings

EXIT_HINT = "(Ctrl-C again to leave, or Ctrl-D)"


class SlashCompleter(Completer):
    """Command names after a leading ``/``; ids (with their titles) after ``/resume ``."""

    def __init__(self, commands: Iterable[str], sessions: Callable[[], list[tuple[str, str]]]):
        self.commands = sorted(commands)
        self.sessions = sessions

    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        if " " not in text:
            for name in self.commands:
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text))
            return
        command, _, arg = text.partition(" ")
        if command != "/resume" or " " in arg.strip():
            return
        try:
            found = self.sessions()
        except Exception:  # noqa: BLE001 - completion must never break typing
            return
        from ..confirm import visible

        for session_id, title in found:
            if session_id.startswith(arg.strip()):
                yield Completion(session_id, start_position=-len(arg),
                                 display_meta=visible(" ".join(title.split())[:50]))


def _bindings(state: dict) -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    @keys.add("enter")
    def _enter(event):
        buffer = event.current_buffer
        document = buffer.document
        if document.is_cursor_at_the_end and document.text.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @keys.add("c-c")
    def _interrupt(event):
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
            state["armed"] = False
            return
        event.app.exit(exception=KeyboardInterrupt())

    return keys


class PromptReader:
    """``read(prompt)`` for the REPL and ``ask(question)`` for approvals."""

    prefill = True  # read() takes ``default``: text typed ahead, editable

    def __init__(self, history: Path | None, completer: Completer | None = None, styled: bool = False):
        self._state = {"armed": False}
        self._styled = styled
        if history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                history.touch(mode=0o600, exist_ok=True)
                stored = FileHistory(str(history))
            except OSError:
                stored = InMemoryHistory()
        else:
            stored = InMemoryHistory()
        self._prompt = PromptSession(history=stored, completer=completer, multiline=True,
                                     key_bindings=_bindings(self._state),
                                     prompt_continuation=lambda width, line, soft: "... ".rjust(width),
                                     complete_while_typing=False, enable_open_in_editor=False,
                                     mouse_support=False)
        self._ask = None

    def read(self, prompt: str, default: str = "") -> str:
        """One message. EOFError on Ctrl-D, or on a second Ctrl-C at an empty line."""
        lead = len(prompt) - len(prompt.lstrip("\n"))
        if lead:  # the blank line before the prompt is printed, not part of the prompt
            print("\n" * (lead - 1))
        while True:
            try:
                text = self._prompt.prompt(ANSI(self._style(prompt.lstrip("\n"))), default=default)
                default = ""
            except KeyboardInterrupt:
                if self._state["armed"]:
                    raise EOFError from None
                self._state["armed"] = True
                print(EXIT_HINT)
                continue
            self._state["armed"] = False
            return text

    def _style(self, prompt: str) -> str:
        if not self._styled or not prompt.strip():
            return prompt
        return f"\x1b[1;32m{prompt.rstrip()}\x1b[0m" + prompt[len(prompt.rstrip()):]

    def ask(self, question: str) -> str:
        """An approval answer: no history, no completion. Ctrl-C or Esc raises
        KeyboardInterrupt (the turn stops); Ctrl-D is EOFError (a no)."""
        if self._ask is None:
            keys = KeyBindings()

            @keys.add("c-c")
            @keys.add("escape", eager=True)
            def _stop(event):
                event.app.exit(exception=KeyboardInterrupt())

            self._ask = PromptSession(history=InMemoryHistory(), key_bindings=keys,
                                      enable_open_in_editor=False, mouse_support=False)
        return self._ask.prompt(ANSI(question))
