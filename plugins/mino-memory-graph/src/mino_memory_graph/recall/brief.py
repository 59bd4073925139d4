"""Mnemo's ``recall_brief`` block (``Store.recall_brief``): ``[memory recall "q"]``, each
hit with its state inlined through the same filter as the loop's block, then a provenance
line. The loop's own block is ``recall_block.render``.
"""
from __future__ import annotations

from ..core import safety
from .results import area_names
from ..core.shown_state import shown_lines


def brief_block(graph, query: str, found, *, state_of=None, last_at=None) -> str:
    """Mnemo's ``recall_brief`` block (``[memory recall "q"]``, each hit with its state
    inlined, then a provenance line), for callers of ``Store.recall_brief``; the loop's
    block is ``render``. Every state line passes the same filter as ``render``'s.

    ``state_of(id)`` / ``last_at(id)`` read the nodes when no graph is given (the index)."""

    if graph is not None:
        state_of = graph.state_of

        def last_at(id):
            node = graph.nodes.get(id)
            return node.last_at() if node else 0
    out = [f'[memory recall "{safety.shown(query)}"]', "", f"routed areas: {area_names(found.routed)}", ""]
    hits = found.hits
    for i, h in enumerate(hits):
        via = ", via graph" if h.via_graph else ""
        out.append(f"hit {i + 1}/{len(hits)} (score {h.score:.3f}{via})")
        try:
            state = state_of(h.node)
        except KeyError:
            state = ""
        out.extend("  " + line for line in shown_lines(state))
        if i + 1 < len(hits):
            out.append("")
    newest, newest_id = 0, None
    for h in hits:
        at = last_at(h.node)
        if at > newest:
            newest, newest_id = at, h.node
    if newest_id is None and hits:
        newest_id = hits[0].node
    changed = f"node {newest_id} at {newest}" if newest_id is not None else "-"
    out.append("")
    out.append(f"provenance: recalled {len(hits)} node(s) from areas "
               f"{area_names(found.routed)}; newest changed {changed}")
    return "\n".join(out) + "\n"
