"""Issue 25, item 3: a saved, current fact outranks the episode of the message that merely
mentions its words, in the recall block and in ``mino memory search`` (both read the same
search); with ``episode_weight: 1`` (the old rule) the message comes first."""
import pytest

from graphtest import GRAPH, ok

pytestmark = pytest.mark.usefixtures("graph_only")

TAUGHT = [
    ("Note for later: the order confirmation emails go out through Postmark, "
     "on the message stream outbound-tx.",
     "transactional email", "provider", "Postmark, message stream outbound-tx"),
    ("And payments use Stripe; its webhooks arrive at /hooks/stripe.",
     "payments", "provider", "Stripe; webhooks at /hooks/stripe"),
]
QUESTION = "Customers say the order confirmation email never came: which provider sends it?"


def lead(body):
    items = body.get("input") or []
    return items[0]["content"] if items and items[0].get("role") == "assistant" else ""


def _teach(make_harness, server, config):
    h = make_harness(approve="all", config=config)
    for text, label, key, value in TAUGHT:
        server.add({"calls": [{"name": "memory_save", "arguments": {
            "where": "new", "label": label, "area": "semantic", "key": key, "value": value}}]},
            {"text": "Saved."})
        h.turn(text)


def _config(weight, index="on"):
    graph = {"index": index}
    if weight is not None:
        graph["episode_weight"] = weight
    return {"memory": {"backend": "graph", "graph": graph}}


# index on: the search reads the on-disk index (search.IndexSearch); off: the graph in
# memory (HybridScorer); both rank alike
@pytest.mark.parametrize("weight,index", [(None, "on"), (None, "off"), (1.0, "on"), (1.0, "off")])
def test_the_saved_fact_comes_before_the_message_that_saved_it(
        make_harness, scripted_server, mino_home, weight, index):
    config = _config(weight, index)
    _teach(make_harness, scripted_server, config)
    h = make_harness(approve="all", config=config)  # a new session: its turns are not hidden
    scripted_server.add({"text": "Postmark."})
    h.turn(QUESTION)
    # the turn's own request (a later one may be a side request, such as a title)
    block = next(b for b in map(lead, reversed(scripted_server.requests)) if b)
    fact = block.find("[Aspect/Semantic] transactional email")
    episode = block.find("[TaskEpisode/Episodic] task: Note for later")
    assert fact != -1, block
    if weight is None:  # the default: the fact first (the message may follow, or be cut)
        assert episode == -1 or fact < episode, block
    else:  # the old rule, to show the test can fail: the message outranked its fact
        assert episode != -1 and episode < fact, block


def test_memory_search_lists_the_fact_first(make_harness, scripted_server, mino_home):
    _teach(make_harness, scripted_server, GRAPH)
    out = ok(mino_home, "memory", "search", QUESTION).stdout
    lines = [ln for ln in out.splitlines() if "transactional email" in ln or "Note for later" in ln]
    assert lines and "transactional email" in lines[0], out


def _replaced_fix_store(path, weight=None):
    """A message that taught a fix (its episode's ``saved`` names the fix), the fix later
    replaced on the same pitfall by one told in other words."""
    from mino_memory_graph.store import Store

    config = _config(weight) if weight is not None else None
    s = Store.open(path, fsync=False, config=config)
    with s.write() as r:
        ep = r.episode("Apply the pending ledger database migrations.")
        r.add_fact(ep, "message", "Apply the pending ledger database migrations.")
        pit = r.create_node("Aspect", "pain: Bash(sh scripts/migrate.sh) failed", "Salience")
        r.add_fact(pit, "failure", "Bash(sh scripts/migrate.sh) failed: lock timeout")
        old = r.add_fact(pit, "fix", "MIGRATE_LOCK_WAIT=60 sh scripts/migrate.sh")
        r.add_fact(ep, "saved", f"{pit}:{old}")
        other = r.create_node("Aspect", "lunch menu for friday")
        r.add_fact(other, "note", "soup and bread")
    with s.write() as r:
        r.supersede(pit, old, "fix", "sh scripts/migrate.sh --skip-locked")
    return s, ep, pit


@pytest.mark.parametrize("weight", [None, 1.0])
def test_a_message_whose_fix_was_replaced_leads_to_the_current_fix(tmp_path, weight):
    """The question shares its words only with the message that taught the old fix (now
    history): the pitfall holding the new fix is found through it, and ranks above it.
    With ``episode_weight: 1`` (no lending) only the message is found: the test can fail."""
    s, ep, pit = _replaced_fix_store(tmp_path / "journal.jsonl", weight)
    hits = [h.node for h in s.search("how do we get the ledger database upgrades applied",
                                     5).hits]
    if weight is None:
        assert pit in hits and (ep not in hits or hits.index(pit) < hits.index(ep)), hits
    else:
        assert pit not in hits and ep in hits, hits
    assert s.graph.nodes[pit].fact("fix").value == "sh scripts/migrate.sh --skip-locked"
