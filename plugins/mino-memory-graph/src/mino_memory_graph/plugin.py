"""mino hooks: the ``graph`` memory backend, its tools, the Mnemo loop and its commands.

The loop (``loop.py``, its steps in ``episodes.py``): ``front_input`` recalls and opens the turn's episode,
``tool_outcome`` logs and steers, ``after_turn`` reinforces, votes and reflects. Tools are
in ``tools.py``, the ``mino memory`` commands in ``commands.py``. Importing this module is
cheap: numpy (and openai, when opted in) are imported only when a turn, a tool or a
command first needs them.
"""
from __future__ import annotations

from mino_core import MemoryBackend, hookimpl


@hookimpl
def memory_backend():
    # the highest priority of mino's own backends: chosen when memory.backend is not set
    return MemoryBackend("graph", priority=100, folders=("graph",))


@hookimpl
def register_tools(context):
    from .loop.tools import make_tools

    return make_tools()


@hookimpl
def front_input(turn):
    """Recall for this message: one labelled block, or None when memory has nothing."""
    from .loop import loop
    from .loop.first_use import episodes_notice
    from .loop.shared_offline import begin  # a shared journal's server away: recall still

    episodes_notice(turn.session)
    return begin(turn, loop.begin)


@hookimpl
def before_tool(call, tool, turn):
    """The pre-run guard: a command that failed before with a known fix is held once."""
    from .loop.guard import guard

    return guard(call, tool, turn)


@hookimpl
def tool_outcome(outcome, turn):
    from .loop import loop

    loop.observe(outcome, turn)


@hookimpl
def after_turn(turn):
    from .loop import loop

    loop.end(turn)


@hookimpl
def session_end(session):
    """Past the threshold of new episodes, fold recurring themes into lessons."""
    from .loop.consolidate import at_session_end

    at_session_end(session)


@hookimpl
def register_memory_commands(group, context):
    from .cli.commands import register_commands as register

    register(group, context)


@hookimpl
def protected_paths(context):
    """The journal, its index and side files: hidden from commands the model runs.

    Their folder is hidden as a whole (the index, the cache, the embedding cache and the
    temporary files of a rewrite all lie beside the journal), unless that folder holds
    the project: then each file is named."""
    import os
    from pathlib import Path

    from .journal.journal import file_journal_path, resolve_journal_path

    journals = {resolve_journal_path(context.home, context.config),
                file_journal_path(context.home, context.config)}
    project = Path(os.path.realpath(context.project_root))
    found = []
    for journal in journals:
        folder = Path(os.path.realpath(journal.parent))
        if folder == project or folder in project.parents:
            found += [journal, *(journal.with_suffix(ext) for ext in SIDE_FILES), folder / "embed"]
        else:
            found.append(folder)
    return [(path, "hidden") for path in found]


# what lies beside a journal (journal.py, index.py, store.py, first_use.py, journal_pg.py)
SIDE_FILES = (".lock", ".corrupt", ".reported", ".index", ".cache", ".noticed", ".seq")


@hookimpl
def config_schema(context):
    """``memory.graph:`` in config.yaml, checked when mino starts (a wrong value: its default)."""
    return {"memory.graph": {"type": "object", "additionalProperties": False, "properties": {
        # a file's path, or a postgresql:// URL: the shared journal (journal_pg.py); a
        # URL passes the file-path check (no file or folder is on its way)
        "journal": {"type": "string", "format": "file-path", "default": "<home>/graph/journal.jsonl"},
        "scorer": {"enum": ["hybrid-v1", "hybrid", "default", "mnemo", "mnemo-cosine", "hashing-v1"],
                   "default": "hybrid-v1"},
        "reflect": {"enum": ["auto", False, "off", "no", True, "on"], "default": "auto"},
        "guard": {"enum": ["on", "off", True, False], "default": "on"},
        "episodes": {"enum": [True, False, "on", "off", "yes", "no"], "default": "on"},
        # hybrid-v1: an episode's score times this, so a saved fact outranks a message
        # that merely mentions its words (words.HybridParams.episode; issue 25)
        "episode_weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.8},
        # hybrid-v1: the weight of the vectors' cosine beside BM25 (words.HybridParams.hashing)
        "vector_weight": {"type": "number", "minimum": 0, "maximum": 5, "default": 0.2},
        "embedder": {"type": "object", "additionalProperties": False, "properties": {
            "kind": {"enum": ["openai", "local"]}, "model": {"type": "string"},
            # kind local: a folder with a BERT sentence encoder (embed_local.py); table:
            # its distilled static vectors (embed_local.distil_static), used instead
            "path": {"type": "string"}, "table": {"type": "string"},
            "base_url": {"type": "string", "pattern": r"^https?://"},
            "api_key_env": {"type": "string"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 10},
            "input_type": {"enum": ["auto", "field", "prefix", "none"], "default": "auto"},
            "batch": {"type": "integer", "minimum": 1, "maximum": 2048, "default": 64}}},
    }}}


@hookimpl
def memory_search(query, limit, context):
    """For a caller outside a turn (``mino mcp serve``): the tool's search, read-only."""
    from .loop.tools import search_hits

    return search_hits(query, limit, context)


@hookimpl
def memory_refusal(text, context):
    """The filter reflections pass (instruction-like text, invisible characters), and a
    secret: a model's save redacts one after the person saw it asked; a save nobody
    confirms (``mino mcp serve``) is refused instead, so nobody's secret is kept unseen."""
    from mino_core import find_secrets

    from .core.safety import refusal

    found = find_secrets(text or "")
    return refusal(text) or (f"a secret ({found[0][2]})" if found else None)
