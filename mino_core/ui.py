"""Where a session's output goes and where its questions are answered.

``TerminalUI`` prints the conversation to stdout and notices to stderr and asks on the
terminal; ``HeadlessUI`` (``mino -p``) treats every question as a denial and says so;
``RecordingUI`` (evals, tests) answers from a policy and keeps a transcript.
"""
from __future__ import annotations

import sys
from typing import Callable, TextIO

from . import confirm

RESULT_LINES = 20  # tool output lines shown on screen; the model always gets it whole


def _safe(text: str) -> str:
    # Text from outside mino (the model, a tool, a file, a plugin) reaches the terminal only
    # through confirm.visible: no escape sequence, control, bidi or zero-width character.
    return confirm.visible(text, lines=True)


def clip_lines(text: str, limit: int = RESULT_LINES) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    return "\n".join(lines[:limit] + [f"... ({len(lines) - limit} more lines)"])


class UI:
    """Base: write the transcript shapes to two streams; subclasses decide how to ask."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._in_text = False
        self._in_reasoning = False
        # The answer text shown since the last request was sent: kept in the log as a
        # partial answer when the turn is interrupted (Session.record_interruption).
        self._shown: list[str] = []

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def assistant_start(self) -> None:
        if self._in_reasoning:
            self._write("\n")
            self._in_reasoning = False
        self._write("\nAssistant> ")
        self._in_text = True

    def text_delta(self, delta: str) -> None:
        self._shown.append(delta)
        self._write(_safe(delta))

    def waiting(self, what: str) -> None:
        """mino now waits for ``what`` (a request was sent): a status line where the
        terminal has one. A new request starts a new answer."""
        self._shown = []

    def idle(self) -> None:
        """The turn is over: no status line."""

    def tool_output(self, text: str) -> None:
        """Output of a running tool as it arrives (Bash); the result follows as usual.
        The plain transcript shows only the result."""

    def partial_answer(self) -> str:
        """The answer text shown since the last request (not yet in the log)."""
        return "".join(self._shown)

    def reasoning_delta(self, delta: str) -> None:
        if not self._in_reasoning:
            self.end_text()
            self._write("\n(thinking) ")
            self._in_reasoning = True
        self._write(_safe(delta))

    def end_text(self) -> None:
        if self._in_text or self._in_reasoning:
            self._write("\n")
            self._in_text = self._in_reasoning = False

    def call_started(self, call) -> None:
        """The model's call ``call`` (a ``ToolCall``: id, name, arguments as sent) is
        handled next; ``tool_call`` follows. For front ends that report calls by id
        (stream-json); the transcript needs only ``tool_call``."""

    def call_finished(self, call, status: str, output: str, decision=None, approved=None) -> None:
        """``call`` ended with ``status`` and ``output``; ``decision``: the permission
        ``Decision`` when one was made, ``approved``: the person's answer when asked
        (else None). ``tool_result`` follows."""

    def tool_call(self, name: str) -> None:
        self.end_text()
        self._shown = []  # the answer before a call is in the log with the call
        self._write(f"[Tool: {confirm.escape(name)}]\n")

    def show(self, text: str) -> None:
        """An allowed call's preview, shown without a question."""
        if text:
            self._write(_safe(text) + "\n")

    def ask(self, text: str, full: str = "", hidden_lines: int = 0) -> bool:
        """Show ``text`` (a rendered preview) and ask; ``full`` is the whole text behind a
        bounded field, which the person can see before answering (see Preview)."""
        raise NotImplementedError

    def tool_result(self, status: str, text: str) -> None:
        self._write(f"\n[Tool result: {status}]\n")
        if text:
            self._write(_safe(clip_lines(text)) + "\n")

    def notice(self, text: str) -> None:
        # Notices carry plugin text, file and folder names: escaped like everything else.
        self.end_text()
        self.err.write(_safe(text.rstrip("\n")) + "\n")
        self.err.flush()

    def line(self, text: str) -> None:
        self.end_text()
        self._write(_safe(text) + "\n")


class TerminalUI(UI):
    """Plain text on a terminal (or a pipe). ``read`` answers questions; Ctrl-C or Esc at a
    question stops the turn (KeyboardInterrupt), Ctrl-D is a no. Where stderr is a
    terminal that can erase a line, a status line shows what mino waits for."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None,
                 read: Callable[[str], str] | None = None, status: bool | None = None):
        super().__init__(out, err)
        self._read = read or input
        if status is None:
            from .terminal import status_wanted

            status = status_wanted(self.err)
        self.spinner = None
        if status:
            from .terminal.spinner import Spinner

            self.spinner = Spinner(self.err)
        # Set by the REPL while a turn runs on a terminal: paused for each question.
        self.keys = None

    def _write(self, text: str) -> None:
        if self.spinner is not None:
            self.spinner.stop()
        super()._write(text)

    def waiting(self, what: str) -> None:
        super().waiting(what)
        if self.spinner is not None:
            self.spinner.start(f"Waiting for {what}")

    def idle(self) -> None:
        if self.spinner is not None:
            self.spinner.stop()

    def tool_call(self, name: str) -> None:
        super().tool_call(name)
        self._running = f"Running {confirm.escape(name)}"
        if self.spinner is not None:
            self.spinner.start(self._running)

    def show(self, text: str) -> None:
        super().show(text)
        if self.spinner is not None:
            self.spinner.start(getattr(self, "_running", "Running the tool"))

    def notice(self, text: str) -> None:
        if self.spinner is None:
            return super().notice(text)
        with self.spinner.pause():
            super().notice(text)

    def _question(self, question: str) -> str:
        import contextlib

        self.idle()
        paused = self.keys.paused() if self.keys is not None else contextlib.nullcontext()
        with paused:
            return self._read(question + " ")

    def ask(self, text: str, full: str = "", hidden_lines: int = 0) -> bool:
        if text:
            self._write(_safe(text) + "\n")
        question = confirm.question(hidden_lines, bool(full))
        while True:
            try:
                answer = self._question(question)
            except EOFError:
                self._write("\n")
                return False
            except KeyboardInterrupt:
                self._write("\n")
                raise
            if full and answer.strip().lower() in confirm.VIEW_ANSWERS:
                self._write(confirm.framed(full) + "\n")
                continue
            yes = confirm.is_yes(answer)
            if yes and self.spinner is not None:
                self.spinner.start(getattr(self, "_running", "Running the tool"))
            return yes


class HeadlessUI(UI):
    """No terminal to ask: a question is a denial, and the transcript says so."""

    def ask(self, text: str, full: str = "", hidden_lines: int = 0) -> bool:
        if text:
            self._write(_safe(text) + "\n")
        hidden = f" {hidden_lines} more lines not shown" if full and hidden_lines else ""
        self._write(f"{confirm.QUESTION}{hidden} n (no terminal to ask: denied)\n")
        return False


class RecordingUI(UI):
    """Answers questions with ``decide(tool_name, text)``; keeps everything it printed."""

    def __init__(self, decide: Callable[[str, str], bool]):
        import io

        super().__init__(io.StringIO(), io.StringIO())
        self._decide = decide
        self.current_tool = ""
        self.asked: list[tuple[str, str, bool]] = []
        self.full_texts: list[str] = []  # per question: the whole text it offered ("" if none)

    def tool_call(self, name: str) -> None:
        self.current_tool = name
        super().tool_call(name)

    def ask(self, text: str, full: str = "", hidden_lines: int = 0) -> bool:
        answer = bool(self._decide(self.current_tool, text))
        self.asked.append((self.current_tool, text, answer))
        self.full_texts.append(full)
        self._write((_safe(text) + "\n" if text else "")
                    + f"{confirm.question(hidden_lines, bool(full))} {'y' if answer else 'n'}\n")
        return answer

    @property
    def transcript(self) -> str:
        return self.out.getvalue()

    @property
    def notices(self) -> str:
        return self.err.getvalue()
