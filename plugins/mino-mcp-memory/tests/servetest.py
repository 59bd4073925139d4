"""Helpers: run ``mino mcp serve`` (the installed one) and talk to it with the SDK's client."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from mino_core.testing import isolated_env, mino_command


HERE = Path(__file__).parent


def toy_env(tmp_path: Path) -> dict:
    """PYTHONPATH for a mino that also loads the tests' toy backend from its entry point."""
    dist = tmp_path / "toy-path" / "mino_toy_memory-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mino-toy-memory\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[mino]\nmino-toy-memory = toy_backend\n")
    import os

    path = os.pathsep.join([str(tmp_path / "toy-path"), str(HERE)])
    return {"PYTHONPATH": path, "MINO_MEMORY_BACKEND": "toy"}


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
