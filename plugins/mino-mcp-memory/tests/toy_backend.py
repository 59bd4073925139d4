"""A memory backend of the tests' own, loaded through a real entry point, so the serve tests
also run where neither of mino's backends is installed (this plugin alone with the core).
Saves go to ``MINO_HOME/toy.json``."""
import json

from mino_core import MemoryBackend, MemoryHit, Tool, ToolResult, hookimpl

SAVE = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
        "additionalProperties": False}
VIEW = {"type": "object", "properties": {"index": {"type": "integer"}}, "required": ["index"],
        "additionalProperties": False}


def _load(home):
    try:
        return json.loads((home / "toy.json").read_text())
    except OSError:
        return []


@hookimpl
def memory_backend():
    return MemoryBackend("toy", priority=1000)


@hookimpl
def register_tools(context):
    def save(args, ctx):
        items = _load(ctx.home) + [args["text"]]
        (ctx.home / "toy.json").write_text(json.dumps(items))
        return ToolResult.completed(f"saved #{len(items) - 1}")

    def view(args, ctx):
        items = _load(ctx.home)
        if not 0 <= args["index"] < len(items):
            return ToolResult.invalid(f"no memory #{args['index']}")
        return ToolResult.completed(items[args["index"]])

    return [Tool("memory_save", "Save a note.", SAVE, run=save),
            Tool("memory_view", "Read a note.", VIEW, run=view, read_only=True)]


@hookimpl
def memory_search(query, limit, context):
    words = set(query.lower().split())
    return [MemoryHit(ref=f"#{i}", text=t, score=1.0, source="toy.json")
            for i, t in enumerate(_load(context.home)) if words & set(t.lower().split())][:limit]


@hookimpl
def memory_refusal(text, context):
    return "a toy secret" if "SECRET" in text else None
