"""Helpers: run ``mino mcp serve`` (the installed one) and talk to it with the SDK's client."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from mino_core.testing import isolated_env, mino_command


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


@contextlib.asynccontextmanager
async def served(home: Path, project: Path, *args: str, env: dict | None = None):
    from mcp import Client, StdioServerParameters

    command, *rest = mino_command()
    params = StdioServerParameters(command=command, args=[*rest, "mcp", "serve", *args],
                                   env={**isolated_env(home), **(env or {})}, cwd=str(project))
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def text(result) -> str:
    return "\n".join(getattr(b, "text", "") for b in result.content)


def run(coro):
    return asyncio.run(coro)
