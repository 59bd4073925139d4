"""``mino memory`` commands for people, through the real ``mino`` executable: list, search
(facts, source, date; routing behind --explain), history with dates, forget of a fact,
stats, bad input, escaping, a bad line reported once, the first-use notice."""
import json
import subprocess
import sys
import time

import pytest

from mino_core.testing.harness import isolated_env
from mino_memory_graph.loop.first_use import EPISODES_NOTICE
from mino_memory_graph.store import Store

from graphtest import GRAPH, graph_of, journal, mino, ok

CONFIG = {"memory": {"backend": "graph", "graph": {"reflect": "off"}}}


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    (h / "config.yaml").write_text("memory:\n  backend: graph\n")
    return h


def taught(make_harness, scripted_server, graph_only):
    """A real session: the model saves a project fact the user stated."""
    h = make_harness(config=CONFIG, approve="all")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "project", "key": "test command", "value": "uv run pytest -q"}}]},
        {"text": "Noted."})
    h.turn("For this repository we always run the suite with uv, quietly.")
    return h


def test_list_shows_facts_by_memory_with_where_and_when(make_harness, scripted_server,
                                                        mino_home, graph_only):
    h = taught(make_harness, scripted_server, graph_only)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    out = ok(mino_home, "memory", "list").stdout
    assert "test command: uv run pytest -q" in out
    assert f"session {h.session.id}" in out and today in out
    assert "project " in out
    assert "episode(s) not shown (--episodes)" in out
    assert "task: For this repository" not in out
    data = json.loads(ok(mino_home, "memory", "list", "--json").stdout)
    [node] = [n for n in data["nodes"] if any(f["key"] == "test command" for f in n["facts"])]
    fact = [f for f in node["facts"] if f["key"] == "test command"][0]
    assert fact["value"] == "uv run pytest -q" and fact["date"].startswith(today)
    assert node["source"]["session"] == str(h.session.id)
    assert data["episodes_hidden"] >= 2  # the session's node and the turn's episode
    eps = ok(mino_home, "memory", "list", "--episodes").stdout
    assert "task: For this repository" in eps and "message: For this repository" in eps


def test_search_shows_the_fact_and_hides_routing_unless_explained(
        make_harness, scripted_server, mino_home, graph_only):
    h = taught(make_harness, scripted_server, graph_only)
    out = ok(mino_home, "memory", "search", "how do I run the tests").stdout
    assert "test command: uv run pytest -q" in out
    assert f"session {h.session.id}" in out
    assert time.strftime("%Y-%m-%d", time.gmtime()) in out
    for jargon in ("routed", "score", "Semantic", "Spatial", "via graph"):
        assert jargon not in out
    explained = ok(mino_home, "memory", "search", "how do I run the tests", "--explain").stdout
    assert "routed to:" in explained and "score " in explained
    assert "[Entity/Spatial]" in explained
    hit = json.loads(ok(mino_home, "memory", "search", "run the tests", "--json").stdout)
    first = hit["results"][0]
    assert {"node", "score", "routed"} <= set(first) | set(hit)
    assert any(f["value"] == "uv run pytest -q" for r in hit["results"] for f in r["facts"])


def test_list_is_newest_first_and_pages(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    ids = []
    for i in range(5):
        with s.write() as r:
            n = r.create_node("Aspect", f"memory number {i}")
            r.fact(n, "value", f"v{i}")
            ids.append(n)
    with s.write() as r:
        r.fact(ids[1], "value", "changed last")
    s.close()
    first = json.loads(ok(home, "memory", "list", "--limit", "2", "--json").stdout)
    assert [n["node"] for n in first["nodes"]] == [ids[1], ids[4]]
    assert first["total"] == 5
    text = ok(home, "memory", "list", "--limit", "2").stdout
    assert "1-2 of 5" in text and "next page: --offset 2" in text
    rest = json.loads(ok(home, "memory", "list", "--offset", "2", "--limit", "0",
                         "--json").stdout)
    assert [n["node"] for n in rest["nodes"]] == [ids[3], ids[2], ids[0]]
    # a Mnemo-written journal records no wall time: no date, never a made-up one
    assert rest["nodes"][0]["created"] is None
    assert "undated" in ok(home, "memory", "history", str(ids[0])).stdout


def test_history_dates_every_value_and_log_line(make_harness, scripted_server, mino_home,
                                                graph_only):
    taught(make_harness, scripted_server, graph_only)
    data = json.loads(ok(mino_home, "memory", "list", "--json").stdout)
    node = [n for n in data["nodes"] if any(f["key"] == "test command"
                                              for f in n["facts"])][0]["node"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    out = ok(mino_home, "memory", "history", str(node)).stdout
    line = [x for x in out.splitlines() if "test command: uv run pytest -q" in x][0]
    assert line.strip().startswith(today)
    assert "provenance:" in out and "1700000" not in out and "fact_added" not in out
    explained = ok(mino_home, "memory", "history", str(node), "--explain").stdout
    assert "[at 1700000" in explained and "fact_added" in explained
    h = json.loads(ok(mino_home, "memory", "history", str(node), "--json").stdout)
    assert all(e["date"].startswith(today) for e in h["log"])


def test_forget_one_fact_keeps_its_history(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        n = r.create_node("Aspect", "deploy target")
        r.fact(n, "host", "deploy goes to staging-eu-west")
        r.fact(n, "port", "8443")
    s.close()
    out = ok(home, "memory", "forget", str(n), "--fact", "host").stdout
    assert "forgot fact host" in out
    assert f"stays in the journal until `mino memory purge {n}`" in out
    state = ok(home, "memory", "show", str(n)).stdout
    assert "- host: [forgotten]" in state and "staging-eu-west" not in state
    assert "- port: 8443" in state
    hist = ok(home, "memory", "history", str(n)).stdout
    assert "deploy goes to staging-eu-west  (superseded)" in hist
    found = ok(home, "memory", "search", "where does deploy go").stdout
    assert "staging-eu-west" not in found
    again = mino(home, "memory", "forget", str(n), "--fact", "host")
    assert again.returncode == 1 and "already forgotten" in again.stderr
    missing = mino(home, "memory", "forget", str(n), "--fact", "colour")
    assert missing.returncode == 1 and "current keys: host, port" in missing.stderr
    by_id = json.loads(ok(home, "memory", "history", str(n), "--json").stdout)
    port = [f for f in by_id["facts"] if f["key"] == "port"][0]["id"]
    done = json.loads(ok(home, "memory", "forget", str(n), "--fact", str(port),
                         "--json").stdout)
    assert done["forgot_fact"] == port and done["text_kept_in_journal"] is True
    g = graph_of(home)
    assert g.nodes[n].fact("port").value == "[forgotten]" and not g.nodes[n].deleted
    assert sum(1 for f in g.nodes[n].facts) == 4  # both old values kept, two tombstones


def test_forget_a_memory_says_the_text_stays_until_a_purge(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        a = r.create_node("Aspect", "old build flag")
        b = r.create_node("Aspect", "old lint flag")
    s.close()
    soft = ok(home, "memory", "forget", str(a)).stdout
    hard = ok(home, "memory", "forget", str(b), "--hard").stdout
    for out, n in ((soft, a), (hard, b)):
        assert f"The text stays in the journal until `mino memory purge {n}`" in out
    assert "hard" in hard
    gone = mino(home, "memory", "history", str(b))
    assert gone.returncode == 1 and f"`mino memory purge {b}` removes its text" in gone.stderr
    never = mino(home, "memory", "history", "99")
    assert never.returncode == 1 and "purge" not in never.stderr


@pytest.mark.parametrize("args, says", [
    (["show", "abc"], "not a memory id: abc"),
    (["history", "12x"], "not a memory id: 12x"),
    (["history", str(1 << 64)], f"not a memory id: {1 << 64}"),
    (["purge", str(1 << 63), "--yes"], f"not a memory id: {1 << 63}"),
    (["show", "999"], "does not exist"),
    (["forget", "999"], "does not exist"),
    (["forget", "1", "--fact", "k", "--hard"], "drop --fact or --hard"),
    (["list", "--kind", "bogus"], "unknown node kind 'bogus'"),
    (["list", "--limit", "-1"], "Invalid value"),
    (["list", "--offset", str(1 << 63)], "Invalid value"),
    (["purge", "1"], "add --yes"),
])
def test_bad_input_is_one_clear_line(home, args, says):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        r.create_node("Aspect", "something")
    s.close()
    r = mino(home, "memory", *args)
    assert r.returncode != 0 and says in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_outside_text_is_escaped_in_every_listing(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        n = r.create_node("Aspect", "evil \x1b]0;owned\x07 label deploy")
        r.fact(n, "key\x1b[2J", "value \u202e reversed deploy\nforged line")
    s.close()
    for args in (["list"], ["search", "deploy"], ["search", "deploy", "--explain"],
                 ["history", str(n)], ["history", str(n), "--explain"], ["list", "--json"]):
        out = ok(home, "memory", *args).stdout
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out, args
        assert "\nforged line" not in out


def test_stats_speaks_plainly_and_explains_on_request(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        n = r.create_node("Aspect", "a thing")
        r.fact(n, "k", "v")
    s.close()
    out = ok(home, "memory", "stats").stdout
    assert "memories: 1" in out and "facts: 1 current" in out
    assert "by area" not in out and "edges" not in out
    assert "by area: " in ok(home, "memory", "stats", "--explain").stdout


def test_a_bad_line_is_reported_once_not_on_every_command(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        r.create_node("Aspect", "deploy port")
    s.close()
    with open(home / "graph" / "journal.jsonl", "ab") as fh:
        fh.write(b"this is not an operation\n")
    first = ok(home, "memory", "list")
    assert "1 bad journal line(s) skipped" in first.stderr
    assert "check --repair" in first.stderr
    for args in (["list"], ["search", "deploy"], ["show", "1"]):
        assert "bad journal line" not in ok(home, "memory", *args).stderr
    check = mino(home, "memory", "check")  # still lists it whenever asked
    assert check.returncode == 1 and "1 line(s) quarantined" in check.stdout
    with open(home / "graph" / "journal.jsonl", "ab") as fh:
        fh.write(b"{\"another\": \"bad line\"}\n")
    second = ok(home, "memory", "list")
    assert "1 bad journal line(s) skipped" in second.stderr  # only the new one
    assert "bad journal line" not in ok(home, "memory", "list").stderr


def test_first_use_says_once_that_messages_are_recorded(make_harness, scripted_server,
                                                       mino_home, graph_only):
    head = EPISODES_NOTICE.split("{path}")[0]
    h = make_harness(config=GRAPH)
    scripted_server.add({"text": "hi"}, {"text": "hi again"})
    h.turn("Hello there, first message.")
    h.turn("And a second message.")
    assert h.notices.count(head) == 1
    assert "memory.graph.episodes: off" in h.notices
    h2 = make_harness(config=GRAPH)  # the same home, a new session: not again
    scripted_server.add({"text": "hi"})
    h2.turn("A third message in a new session.")
    assert head not in h2.notices


def test_no_first_use_notice_when_episodes_are_off(make_harness, scripted_server, graph_only):
    h = make_harness(config={"memory": {"backend": "graph", "graph": {"episodes": "off"}}})
    scripted_server.add({"text": "hi"})
    h.turn("Hello there, first message.")
    assert EPISODES_NOTICE.split("{path}")[0] not in h.notices


def test_a_profile_fact_says_which_session_taught_it(make_harness, scripted_server,
                                                     mino_home, graph_only):
    h = make_harness(config=CONFIG, approve="all")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "editor", "value": "helix"}}]}, {"text": "Noted."})
    h.turn("I edit code with helix, keep that in mind.")
    first = h.session.id
    h.new_session()
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "shell", "value": "fish"}}]}, {"text": "Noted."})
    h.turn("My shell is fish, keep that in mind too.")
    second = h.session.id
    data = json.loads(ok(mino_home, "memory", "list", "--json").stdout)
    [profile] = [n for n in data["nodes"] if n["label"] == "user preferences"]
    by_key = {f["key"]: f["session"] for f in profile["facts"]}
    assert by_key == {"editor": str(first), "shell": str(second)}
    assert profile["source"]["session"] is None  # no one session taught the profile
    out = ok(mino_home, "memory", "list").stdout
    assert f"editor: helix   (session {first}" in out
    assert f"shell: fish   (session {second}" in out


def test_search_list_and_history_import_no_numpy(home):
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    s.close()
    code = ("import sys, atexit\n"
            "atexit.register(lambda: sys.stderr.write(f\"numpy={'numpy' in sys.modules}\\n\"))\n"
            "sys.argv = ['mino', 'memory'] + sys.argv[1:]\n"
            "from mino_core.cli import main\nmain()\n")
    for args in (["search", "deploy port"], ["list"], ["history", str(n)]):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                           text=True, timeout=120, cwd=home, env=isolated_env(home))
        assert r.returncode == 0, r.stderr
        assert "numpy=False" in r.stderr, (args, r.stderr)


def test_search_with_the_mnemo_scorer_shows_the_same_views(home):
    (home / "config.yaml").write_text("memory:\n  backend: graph\n  graph:\n    scorer: mnemo\n")
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "the deploy service listens on 8081")
    s.close()
    out = ok(home, "memory", "search", "which port does deploy use").stdout
    assert f"#{n} deploy port" in out and "port: the deploy service listens on 8081" in out
    assert "mnemo" in ok(home, "memory", "search", "deploy port", "--explain").stdout
