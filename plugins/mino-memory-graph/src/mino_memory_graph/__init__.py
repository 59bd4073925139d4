"""mino-memory-graph: the Mnemo graph store as a mino memory backend.

Modules, by what they hold:

- ``model``    nodes, facts, edges and the pure fold that applies one operation
- ``ops``      the twelve journal operations: field specs, validation, line encoding
- ``journal``  the file: paths, the advisory lock, reading, quarantine, appending
- ``siphash``  SipHash-1-3 with Rust's ``Hash`` framing (for ``hashing-v1``)
- ``embed``    embedders: ``hashing-v1`` (default) and an opt-in OpenAI-compatible one
- ``routing``  query routing by cue words and the query alias table
- ``recall``   the recall engine: the ``Scorer`` interface, Mnemo's exact scorer,
               filters, one-hop expansion, the recall block
- ``cache``    the optional on-disk derived cache (snapshot + vectors)
- ``store``    ``Store``: open, write requests under the lock, search, state, check
- ``plugin``   the mino hooks and the ``mino memory ...`` commands

Importing this package imports neither numpy nor openai.
"""

__version__ = "0.1.0"


def __getattr__(name):  # lazy: ``from mino_memory_graph import Store``
    if name in ("Store", "open_store"):
        from . import store
        return getattr(store, name)
    raise AttributeError(name)
