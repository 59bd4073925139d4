"""mino-memory-graph: the Mnemo graph store as a mino memory backend.

Layers, lowest first; a module imports only from its own layer or a lower one
(``tests/test_import_cycles.py`` checks it, deferred imports included):

- ``core/``     the twelve operations (``ops``), the graph they fold into (``model``),
                errors, and the filter every recalled text passes (``safety``,
                ``provenance``, ``shown_state``)
- ``journal/``  where operations live: the file (``journal``) and the shared PostgreSQL
                journal (``journal_pg``, its table, row checks, copies, restore)
- ``text/``     how a text becomes words (Snowball stems) and a hashing-v1 vector
- ``state/``    what is derived from the journal: the SQLite index, the partial graph
                read from it, the optional cache
- ``recall/``   routing, the Mnemo scorer, hybrid-v1, search results, the brief block
- ``store``     ``Store``: open, write requests under the lock (all or nothing),
                search, state, check
- ``loop/``     the memory in a turn: episodes, the recall block, steer, reflection,
                guard, pitfalls, consolidation, the model's memory tools
- ``cli/``      the ``mino memory ...`` commands
- ``plugin``    the mino hooks

Importing this package imports neither numpy nor openai.
"""

__version__ = "0.1.0"


def __getattr__(name):  # lazy: ``from mino_memory_graph import Store``
    if name in ("Store", "open_store"):
        from . import store
        return getattr(store, name)
    raise AttributeError(name)
