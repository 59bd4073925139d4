"""The Mnemo loop in every turn (recall, steer, reinforce, credit, reflect): the three
steps the plugin's hooks call, and where each piece lives.

- ``episodes.py``: ``begin`` (``front_input``), ``observe`` (``tool_outcome``), ``end``
  (``after_turn``): the turn's episode, its tool log, steering, reinforcement, votes;
- ``recall_block.py``: the scoped search of the message and the block it renders;
- ``reflection_offer.py``: a reflection's request, checks, confirmation and writes;
- ``memories.py``: the process's open stores (one per journal) and a session's identity.

The names below are this module's so that callers (the plugin's hooks, the benches, the
tests) have one place to reach the loop.
"""
from __future__ import annotations

from .episodes import OBSERVE, begin, end, observe  # noqa: F401
from .memories import NAME, Memory, _open, forget_open, identity_of, memory_for  # noqa: F401
from .recall_block import (HIDDEN_KEYS, LABEL, PITFALLS, RECALL_K,  # noqa: F401
                           RECALL_MAX, recall_hits, render, scope_for,
                           scoped_search)
from .reflect import subject_of  # noqa: F401
from .reflection_offer import REFLECTION_TITLE, SKILL_TITLE, reflect_run  # noqa: F401
