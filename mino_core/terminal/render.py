"""Rendered output on a terminal: the answer as Markdown (rich), styles for the rest.

Everything shown passes ``confirm.visible`` first, exactly as in the plain transcript; the
styles are SGR codes around that text, so a confirmation shows the same characters in
colour. The answer streams as Markdown: each block (a paragraph, a list, a code block, a
table) is printed once when it closes, and the block still arriving is drawn in a live
region that is redrawn in place, so nothing already shown is printed again.
"""
from __future__ import annotations

import time
from typing import Any, Callable, TextIO

from .. import confirm
from ..ui import TerminalUI, _safe, clip_lines

RESET = "\x1b[0m"
STYLES = {
    "label": "\x1b[1;34m",     # Assistant>
    "reasoning": "\x1b[2;3m",  # (thinking)
    "tool": "\x1b[1;36m",      # [Tool: Bash]
    "confirm": "\x1b[33m",     # what a question shows
    "question": "\x1b[1;33m",
    "result": "\x1b[2m",       # tool results and live tool output
    "failed": "\x1b[31m",
    "notice": "\x1b[35m",
}
LIVE_LINES = 200  # live tool output lines drawn per call; the result says the rest
REFRESH = 1 / 15  # the live region is redrawn at most this often


_MARKDOWN: Any = None


def SafeMarkdown(markup: str, **kwargs):  # noqa: N802 - builds a rich renderable
    """rich's Markdown with raw HTML shown as text (markdown-it would drop it: text the
    person could not see), links shown with their address (no OSC 8 hyperlinks), link
    reference definitions and images shown as written.
    rich loads here, at the first answer (the REPL prewarms it while the person types)."""
    global _MARKDOWN
    if _MARKDOWN is None:
        from markdown_it import MarkdownIt
        from rich.markdown import Markdown

        class _Safe(Markdown):
            def __init__(self, text: str, **options):
                options.setdefault("hyperlinks", False)
                super().__init__(text, **options)
                parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
                # A link reference definition renders as nothing and an image as its alt
                # text: both would hide text, so they are shown as written (an image as a link).
                parser.disable(["reference", "image"])
                self.parsed = parser.parse(text)

        _MARKDOWN = _Safe
    return _MARKDOWN(markup, **kwargs)


def prewarm() -> None:
    """Import what rendering needs (for the prewarm thread)."""
    SafeMarkdown("")
    import rich.live  # noqa: F401


def _fenced(text: str) -> bool:
    """Whether ``text`` ends inside an open code fence."""
    fence = ""
    for line in text.split("\n"):
        stripped = line.lstrip()
        if not fence:
            for mark in ("```", "~~~"):
                if stripped.startswith(mark):
                    fence = stripped[: len(stripped) - len(stripped.lstrip(mark[0]))]
                    break
        elif stripped.startswith(fence) and not stripped.strip(fence[0]).strip():
            fence = ""
    return bool(fence)


def split_blocks(text: str) -> tuple[list[str], str]:
    """Closed Markdown blocks in ``text`` and the rest still arriving. A block closes at a
    blank line outside a code fence."""
    blocks, start = [], 0
    search = 0
    while True:
        cut = text.find("\n\n", search)
        if cut < 0:
            break
        piece = text[start:cut]
        if _fenced(piece):
            search = cut + 1
            continue
        if piece.strip():
            blocks.append(piece)
        start = search = cut + 2
    return blocks, text[start:]


def styled(text: str, kind: str) -> str:
    """``text`` (already escaped) in a style, line by line so a wrapped line keeps it."""
    code = STYLES[kind]
    return "\n".join(f"{code}{line}{RESET}" if line else line for line in text.split("\n"))


class RichUI(TerminalUI):
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None,
                 read: Callable[[str], str] | None = None, status: bool | None = None):
        super().__init__(out, err, read, status)
        self._console = None
        self._pending = ""
        self._live = None
        self._drawn_at = 0.0
        self._tool_lines = 0
        self._tool_open = False  # live tool output that does not end with a newline yet
        self._streamed = False

    def prewarm(self) -> None:
        prewarm()
        self.console  # noqa: B018 - builds it (reads the terminal's size and colours)

    @property
    def console(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.out, force_terminal=True, highlight=False,
                                    markup=False, emoji=False, soft_wrap=False)
        return self._console

    # -- the answer ------------------------------------------------------------

    def assistant_start(self) -> None:
        if self._in_reasoning:
            self._write("\n")
            self._in_reasoning = False
        self._write("\n" + styled("Assistant>", "label") + "\n")
        self._in_text = True
        self._pending = ""

    def text_delta(self, delta: str) -> None:
        self._shown.append(delta)
        if self.spinner is not None:
            self.spinner.stop()
        self._pending += _safe(delta)
        blocks, self._pending = split_blocks(self._pending)
        if blocks:
            self._clear_live()
            for block in blocks:
                self.console.print(SafeMarkdown(block))
        self._draw_live(force=bool(blocks))

    def _draw_live(self, force: bool = False) -> None:
        if not self._pending.strip():
            self._clear_live()
            return
        now = time.monotonic()
        if not force and self._live is not None and now - self._drawn_at < REFRESH:
            return
        self._drawn_at = now
        if self._live is None:
            from rich.live import Live

            self._live = Live(SafeMarkdown(self._pending), console=self.console, auto_refresh=False,
                              transient=True, redirect_stdout=False, redirect_stderr=False,
                              vertical_overflow="crop")
            self._live.start(refresh=True)
        else:
            self._live.update(SafeMarkdown(self._pending), refresh=True)

    def _clear_live(self) -> None:
        if self._live is not None:
            self._live.update("", refresh=True)
            self._live.stop()
            self._live = None

    def end_text(self) -> None:
        if self._in_text:
            self._clear_live()
            if self._pending.strip():
                self.console.print(SafeMarkdown(self._pending))
            self._pending = ""
            self._in_text = False
        if self._in_reasoning:
            self._write("\n")
            self._in_reasoning = False

    def reasoning_delta(self, delta: str) -> None:
        if not self._in_reasoning:
            self.end_text()
            self._write("\n" + styled("(thinking)", "reasoning") + " ")
            self._in_reasoning = True
        self._write(styled(_safe(delta), "reasoning"))

    # -- tools -----------------------------------------------------------------

    def tool_call(self, name: str) -> None:
        self.end_text()
        self._shown = []
        self._tool_lines, self._tool_open, self._streamed = 0, False, False
        self._write(styled(f"[Tool: {confirm.escape(name)}]", "tool") + "\n")
        self._running = f"Running {confirm.escape(name)}"
        if self.spinner is not None:
            self.spinner.start(self._running)

    def show(self, text: str) -> None:
        if text:
            self._write(styled(_safe(text), "confirm") + "\n")
        if self.spinner is not None:
            self.spinner.start(self._running)

    def ask(self, text: str, full: str = "", hidden_lines: int = 0) -> bool:
        if text:
            self._write(styled(_safe(text), "confirm") + "\n")
        return super().ask("", full, hidden_lines)

    def _question(self, question: str) -> str:
        return super()._question(styled(question, "question"))

    def tool_output(self, text: str) -> None:
        if not text or self._tool_lines >= LIVE_LINES:
            return
        shown = _safe(text)
        lines = shown.split("\n")
        room = LIVE_LINES - self._tool_lines
        if len(lines) - 1 >= room:
            shown = "\n".join(lines[:room]) + "\n"
            shown += f"... (more output not shown here; the result says how much)\n"
            self._tool_lines = LIVE_LINES
        else:
            self._tool_lines += len(lines) - 1
        self._streamed = True
        self._tool_open = not shown.endswith("\n")
        self._write(styled(shown, "result"))
        if self.spinner is not None:
            self.spinner.start(self._running)

    def tool_result(self, status: str, text: str) -> None:
        if self._tool_open:
            self._write("\n")
        kind = "result" if status == "completed" else "failed"
        self._write("\n" + styled(f"[Tool result: {confirm.escape(status)}]", kind) + "\n")
        if self._streamed:
            # The output was on screen as it arrived: only the lines the tool added after
            # it (exit code, truncation, time-out) are new.
            tail = []
            for line in reversed(text.splitlines()):
                if not line.startswith("["):
                    break
                tail.insert(0, line)
            text = "\n".join(tail)
        self._streamed = self._tool_open = False
        if text:
            self._write(styled(_safe(clip_lines(text)), "result") + "\n")

    # -- the rest --------------------------------------------------------------

    def notice(self, text: str) -> None:
        self.end_text()
        line = styled(_safe(text.rstrip("\n")), "notice") + "\n"
        if self.spinner is None:
            self.err.write(line)
            self.err.flush()
            return
        with self.spinner.pause():
            self.err.write(line)
            self.err.flush()
