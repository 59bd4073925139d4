"""``mino memory ...`` with the graph backend: list, search, show, history, forget, purge,
stats, check (and ``--repair``), import-files.

Each opens the store lazily (``Store.open()``): a read is answered from
``journal.index`` alone, and only writes (``forget``, ``purge``, a repair) and ``check``
build a graph. What a person reads is the fact, where it came from and when
(``listing.py``); the routing behind a search (areas, scores, clusters) and the node's
kind and area are shown with ``--explain``. Text the model or a file wrote is escaped
before it reaches the terminal. Errors are one line and exit code 1.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

import click

from mino_core import visible

TOMBSTONE_FACT = "[forgotten]"  # the value a forgotten fact is superseded by
SHOW_FACTS = 5  # facts of one hit shown by ``search`` (``show`` has them all)
MAX_INT = (1 << 63) - 1  # SQLite's largest integer: ids, limits and offsets past it are bad input


def _open(context):
    from ..store import Store

    try:
        store = Store.open(home=context.home, config=context.config, )
    except OSError as e:
        raise click.ClickException(f"cannot open the memory journal: {e}") from None
    _report_quarantine(store)
    return store


@contextmanager
def _opened(context, node: int | None = None):
    """The store, closed at the end; a ``MemoryError_`` in the block is one line (about
    ``node``: see ``_missing``)."""
    from ..core.errors import MemoryError_

    store = _open(context)
    try:
        yield store
    except MemoryError_ as e:
        if node is not None:
            _missing(e, node, store)
        _fail(e)
    finally:
        store.close()


def _report_quarantine(store) -> None:
    """Bad journal lines, each reported once (``Journal.unreported``), not on every
    command: ``mino memory check`` lists them all whenever asked."""
    bad = store.quarantined_total()
    if not bad:
        return
    j = store.journal
    new = j.unreported()
    if not new and j.corrupt_path.exists():
        return
    n = len(new) or bad
    click.echo(f"warning: {n} bad journal line(s) skipped (kept in {_one(j.corrupt_path)}); "
               "`mino memory check` lists them, `mino memory check --repair` removes "
               "them from the journal", err=True)
    j.mark_reported(new)


def _echo_json(obj) -> None:
    # ASCII only: every control, bidi or zero-width character in a label or value is a
    # JSON escape, never the character itself on the terminal.
    click.echo(json.dumps(obj, ensure_ascii=True, indent=2, sort_keys=False))


def _one(value) -> str:
    """A label, key, value or log detail (text the model or a file wrote) on one line:
    escaped, so it can neither drive the terminal nor forge another line of the listing."""
    return visible(str(value))


def _fail(e: Exception):
    raise click.ClickException(_one(str(e).splitlines()[0]) if str(e) else type(e).__name__)


def _missing(e: Exception, node: int, store):
    """A memory that is not there: if its id was given out, it was forgotten with --hard
    (only the journal has it)."""
    try:
        given = node < (store.index.counters()[0] if store.index is not None
                        else store.graph.next_node)
    except Exception:  # noqa: BLE001 - only a hint
        given = False
    if given and str(e).endswith("does not exist"):
        raise click.ClickException(
            f"{e} (one forgotten with --hard is only in the journal: `mino memory purge "
            f"{node}` removes its text)")
    _fail(e)


def _today() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _where(view: dict) -> str:
    """Where a memory came from and when, in words: ``project X, session Y, DATE``."""
    src = view["source"]
    parts = []
    if src.get("scope") and not src.get("project"):
        parts.append(src["scope"])
    elif src.get("project"):
        parts.append(f"project {_one(src['project'])}")
    if src.get("session"):
        parts.append(f"session {_one(src['session'])}")
    if view.get("changed"):
        parts.append(view["changed"] if view["changed"] == view.get("created")
                     else f"{view['changed']} (first {view['created'] or 'undated'})")
    return ", ".join(parts) or "origin not recorded"


def _facts_lines(view: dict, limit: int | None = None, dates: bool = False) -> list[str]:
    from .listing import BOOKKEEPING

    facts = [f for f in view["facts"] if f["key"] not in BOOKKEEPING]
    shown = facts if limit is None else facts[:limit]
    out = []
    for f in shown:
        line = f"    {_one(f['key'])}: {_one(f['value'])}"
        # a fact learnt elsewhere or later than the memory's own line says so
        extra = []
        if f.get("session") and f["session"] != view["source"].get("session"):
            extra.append(f"session {_one(f['session'])}")
        if dates and f["date"] and (extra or f["date"] != view.get("changed")):
            extra.append(f["date"])
        if extra:
            line += f"   ({', '.join(extra)})"
        out.append(line)
    if limit is not None and len(facts) > limit:
        out.append(f"    (+{len(facts) - limit} more: `mino memory show {view['node']}`)")
    if view["earlier_values"]:
        n = view["earlier_values"]
        out.append(f"    ({n} earlier value{'s' if n != 1 else ''} kept: "
                   f"`mino memory history {view['node']}`)")
    return out


def _header(view: dict, explain: bool) -> str:
    gone = " (forgotten)" if view["forgotten"] else ""
    extra = f"  [{view['kind']}/{view['area']}]" if explain else ""
    return f"#{view['node']} {_one(view['label'])}{gone}{extra}"


def _node_arg(value: str) -> int:
    try:
        n = int(str(value).lstrip("#"))
    except ValueError:
        raise click.ClickException(f"not a memory id: {_one(value)!s} (a number, as "
                                   "`mino memory list` shows them)") from None
    if n < 0 or n > MAX_INT:
        raise click.ClickException(f"not a memory id: {n}")
    return n


def register_commands(group, context):
    _consolidate_command(group, context)
    @group.command("list")
    @click.option("--limit", default=20, show_default=True, type=click.IntRange(0, MAX_INT),
                  help="How many memories (0: all).")
    @click.option("--offset", default=0, type=click.IntRange(0, MAX_INT),
                  help="Skip this many first (the next page).")
    @click.option("--episodes", is_flag=True,
                  help="Also the recorded messages and sessions (episodes).")
    @click.option("--all", "everything", is_flag=True, help="Also forgotten memories.")
    @click.option("--kind", default=None, help="Only this kind (aspect, entity, ...).")
    @click.option("--explain", is_flag=True, help="Also each memory's kind and area.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def list_cmd(limit, offset, episodes, everything, kind, explain, as_json):
        """List memories and their facts, the most recently changed first."""
        from .listing import listing
        from ..store import _parse_kind

        with _opened(context) as store:
            out = listing(store, limit=limit, offset=offset, episodes=episodes,
                          forgotten=everything, kind=_parse_kind(kind) if kind else None)
        if as_json:
            _echo_json(out)
            return
        if not out["nodes"]:
            click.echo("no memories yet" if not out["total"] else "no more memories")
        for v in out["nodes"]:
            click.echo(_header(v, explain))
            click.echo(f"    {_where(v)}")
            click.echo("\n".join(_facts_lines(v, dates=True)) or "    (no facts)")
        shown = len(out["nodes"])
        tail = [f"{out['offset'] + 1}-{out['offset'] + shown} of {out['total']}" if shown
                else f"{out['total']} in all"]
        if out["episodes_hidden"]:
            tail.append(f"{out['episodes_hidden']} episode(s) not shown (--episodes)")
        if shown and out["offset"] + shown < out["total"]:
            tail.append(f"next page: --offset {out['offset'] + shown}")
        click.echo("; ".join(tail))

    @group.command("search")
    @click.argument("query")
    @click.option("--k", "k", default=5, show_default=True, type=click.IntRange(1, 100),
                  help="How many hits.")
    @click.option("--kind", default=None, help="Only this node kind (aspect, entity, ...).")
    @click.option("--area", "areas", multiple=True,
                  help="Only these areas (repeatable); they are also preferred.")
    @click.option("--explain", is_flag=True,
                  help="Also how the search ran: areas routed to, scores, graph hops.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def search_cmd(query, k, kind, areas, explain, as_json):
        """Search memory: the matching facts, where they came from, and when."""
        from .listing import Reader, node_view
        from ..journal.shared_check import describe, written_by

        with _opened(context) as store:
            out = store.search_json(query, k, kind=kind, areas=list(areas))
            reader = Reader(store)
            views = {}
            for r in out["results"]:
                row = reader.row(r["node"])
                if row is not None:
                    views[r["node"]] = v = node_view(reader, row, query=query)
                    r.update(facts=v["facts"], source=v["source"], created=v["created"],
                             changed=v["changed"])
                    who = written_by(store, r["node"])
                    if who is not None:
                        r["written_by"] = who
        if as_json:
            _echo_json(out)
            return
        if explain:
            click.echo(f"routed to: {_one(', '.join(out['routed'])) or 'all areas'} "
                       f"({_one(out['why'])}); scorer {out['scorer']}, {out['path']}")
        if not out["results"]:
            click.echo("no memories matched")
        for r in out["results"]:
            v = views.get(r["node"])
            if v is None:
                continue
            click.echo(_header(v, explain))
            for line in _facts_lines(v, SHOW_FACTS):
                click.echo(line)
            who = describe(r.get("written_by"))
            click.echo(f"    {_where(v)}" + (f"; {_one(who)}" if who else ""))
            if explain:
                via = ", reached through the graph" if r["via_graph"] else ""
                click.echo(f"    score {r['score']:.3f}{via}")

    @group.command("show")
    @click.argument("node")
    def show_cmd(node):
        """Show what the model reads about a memory (its current facts, recent log)."""
        from ..journal.shared_check import describe, written_by

        node = _node_arg(node)
        with _opened(context, node) as store:
            click.echo(visible(store.state(node), lines=True), nl=False)
            who = describe(written_by(store, node))  # a shared journal: the database's word
            if who:
                click.echo(_one(who))

    @group.command("history")
    @click.argument("node")
    @click.option("--explain", is_flag=True,
                  help="Also ids, kind, area and the journal's logical times.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def history_cmd(node, explain, as_json):
        """Every value a memory ever had (current and superseded) and its whole log,
        with dates."""
        from .listing import Reader

        node = _node_arg(node)
        with _opened(context, node) as store:
            h = store.history(node)
            reader = Reader(store)
            for f in h["facts"]:
                f["date"] = reader.date_of(f["created_at"])
            for e in h["log"]:
                e["date"] = reader.date_of(e["at"])
            row = reader.row(node)
            h["source"] = reader.source(row) if row else {}
        if as_json:
            _echo_json(h)
            return
        gone = " (forgotten)" if h["deleted"] else ""
        kind = f"  [{h['kind']}/{h['area']}]" if explain else ""
        click.echo(f"#{h['node']} {_one(h['label'])}{gone}{kind}")
        click.echo("facts, oldest first:")
        if not h["facts"]:
            click.echo("  (none)")
        for f in h["facts"]:
            when = f["date"] or "undated"
            state = "" if f["status"] == "active" else "  (superseded)"
            ids = ""
            if explain:
                ids = f"  [fact {f['id']}, at {f['created_at']}" + (
                    f", superseded by {f['superseded_by']}]" if f["superseded_by"] else "]")
            click.echo(f"  {when:<21} {_one(f['key'])}: {_one(f['value'])}{state}{ids}")
        click.echo("log:")
        from ..core.model import FACT_LOG_KINDS

        for e in h["log"]:
            if not explain and e["kind"] in FACT_LOG_KINDS:
                continue  # the facts above, with their dates (``--explain`` shows them)
            when = e["date"] or "undated"
            at = f"  [at {e['at']}]" if explain else ""
            click.echo(f"  {when:<21} {_one(e['kind'])}: {_one(e['detail'])}{at}")

    @group.command("forget")
    @click.argument("node")
    @click.option("--fact", "fact", default=None, metavar="ID|KEY",
                  help="Forget one fact of the memory (by its id or key), not all of it.")
    @click.option("--hard", is_flag=True,
                  help="Also drop it from the loaded graph (the journal keeps its text).")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def forget_cmd(node, fact, hard, as_json):
        """Forget a memory, or one fact of it. History keeps it; `purge` removes text."""
        from ..core.model import ApplyError
        from ..core.errors import MemoryError_

        node = _node_arg(node)
        if fact is not None and hard:
            raise click.ClickException("--hard forgets a whole memory; drop --fact or --hard")
        store = _open(context)
        try:
            with store.write() as req:
                n = req.graph.nodes.get(node)
                if n is None:
                    raise MemoryError_(f"memory {node} does not exist")
                label = n.label
                if fact is not None:
                    f = _pick_fact(n, fact)
                    req.supersede(node, f.id, f.key, TOMBSTONE_FACT)
                    req.commit_log(node, "provenance", f"fact {f.key!r} forgotten by the "
                                                       f"user on {_today()}")
                    done = {"forgot_fact": f.id, "key": f.key, "node": node, "label": label}
                else:
                    if n.deleted and not hard:
                        raise MemoryError_(f"memory {node} is already forgotten")
                    req.delete(node, hard)
                    done = {"forgot": node, "label": label, "hard": hard}
        except (MemoryError_, ApplyError) as e:
            _fail(e)
        finally:
            store.close()
        done["text_kept_in_journal"] = True
        if as_json:
            _echo_json(done)
            return
        if fact is not None:
            click.echo(f"forgot fact {_one(done['key'])!s} of #{node} {_one(label)}: it is "
                       "no longer current; its earlier values stay in `mino memory history "
                       f"{node}`.")
        else:
            how = " (hard: dropped from the loaded graph)" if hard else ""
            click.echo(f"forgot #{node} {_one(label)}{how}: it leaves search and recall; "
                       f"`mino memory history {node}` still shows it.")
        click.echo(f"The text stays in the journal until `mino memory purge {node}`.")

    @group.command("purge")
    @click.argument("node")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def purge_cmd(node, yes, as_json):
        """Remove a memory's text for good: the journal is rewritten with it replaced
        by a tombstone (ids kept), and the index rebuilt."""
        from .purge import purge
        from ..core.errors import MemoryError_

        node = _node_arg(node)
        with _opened(context) as store:
            # a node forgotten with --hard is in neither the index nor the graph; the
            # journal still holds it, and the purge finds it there
            if store.index is not None:
                row = store.index.row(node)
                label = row[3] if row else "(forgotten with --hard)"
            else:
                n = store.graph.nodes.get(node)
                label = n.label if n is not None else "(forgotten with --hard)"
            if not yes:
                import sys

                if not sys.stdin.isatty():
                    raise MemoryError_("purge removes text for good; add --yes to confirm")
                click.confirm(f"Remove the text of #{node} {_one(label)} from the "
                              "journal for good?", abort=True)
            known = not store.journal.unreported()
            try:
                done = purge(store, node, _today())
            except LookupError as e:
                raise MemoryError_(f"memory {node} does not exist") from e
            except OSError as e:
                raise MemoryError_(f"the journal could not be rewritten (nothing changed): "
                                   f"{e}") from e
            if known:  # bad lines a person was told about moved: not news
                store.journal.mark_reported(store.journal.unreported())
        if as_json:
            _echo_json(done)
            return
        click.echo(f"purged #{node}: its text is gone from the journal ({done['lines']} "
                   f"line(s) rewritten, ids kept); the index was rebuilt.")
        if done["quoted_elsewhere"]:
            click.echo(f"Quotes of it were also removed from {done['quoted_elsewhere']} "
                       "line(s) of other memories.")
        if done["kept_journals"]:
            click.echo(f"Also removed from {len(done['kept_journals'])} journal(s) kept by "
                       "`check --repair`.")
        click.echo("Session transcripts (mino's sessions folder) are not memory and are "
                   "not changed.")

    @group.command("stats")
    @click.option("--explain", is_flag=True, help="Also edges, areas and the journal's ops.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def stats_cmd(explain, as_json):
        """How much memory holds, and where the journal lives."""
        store = _open(context)
        try:
            st = store.stats()
        finally:
            store.close()
        if as_json:
            _echo_json(st)
            return
        episodes = st.get("episodes", st["by_kind"].get("TaskEpisode", 0))
        gone = f", and {st['soft_deleted']} forgotten" if st["soft_deleted"] else ""
        click.echo(f"memories: {st['nodes'] - episodes}{gone}; episodes (recorded messages "
                   f"and sessions): {episodes}")
        click.echo(f"facts: {st['facts']} current, {st['retired_facts']} earlier value(s) "
                   "kept in history")
        click.echo(f"journal: {st['journal']} ({st['journal_bytes']} bytes)")
        if explain:
            click.echo(f"ops read: {st['ops_read']}; edges: {st['live_edges']} live of "
                       f"{st['edges']}; scorer: {st['scorer']}")
            click.echo("by area: " + ", ".join(f"{a} {c}" for a, c in st["by_area"].items()))
        if st["quarantined"] or st["skipped"]:
            click.echo(f"warning: {st['quarantined']} quarantined line(s), "
                       f"{st['skipped']} skipped op(s); run `mino memory check`")

    from .migrate import add_command

    add_command(group, context)
    from .shared_commands import register as add_shared  # push, export (journal_pg)
    add_shared(group, context)

    @group.command("check")
    @click.option("--repair", is_flag=True,
                  help="Write the journal again without its quarantined lines (the old one "
                       "is kept beside it) and rebuild the index.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def check_cmd(repair, as_json):
        """Replay the journal from scratch; report bad lines; verify the derived files."""
        store = _open(context)
        fixed = None
        try:
            if repair:
                from .repair import repair as do_repair
                from ..core.errors import MemoryError_

                try:
                    fixed = do_repair(store)
                except MemoryError_ as e:
                    _fail(e)
                except OSError as e:
                    raise click.ClickException(
                        f"the journal could not be rewritten (nothing changed): {e}") from None
                store.journal.mark_reported(store.journal.unreported())
            rep = store.check()
        finally:
            store.close()
        if fixed is not None:
            rep["repair"] = fixed
        if as_json:
            _echo_json(rep)
        else:
            if fixed is not None and fixed.get("message"):  # the shared journal's repair
                click.echo(f"repaired: {_one(fixed['message'])}")
            elif fixed is not None:
                if fixed["removed"]:
                    click.echo(f"repaired: {fixed['removed']} bad line(s) removed from the "
                               f"journal; the old journal is kept as {fixed['kept']}")
                else:
                    click.echo("repaired: nothing to remove (no quarantined lines)")
            r = rep["replay"]
            click.echo(f"journal: {rep['journal']} ({rep['bytes']} bytes)")
            click.echo(f"replayed {r['ops']} op(s): {r['applied']} applied, "
                       f"{r['skipped']} skipped, {r['quarantined']} line(s) quarantined, "
                       f"{r['blank']} blank")
            for b in r["quarantined_lines"][:10]:
                click.echo(f"  quarantined at byte {b['offset']}: {_one(b['reason'])}")
            for s in r["skipped_ops"][:10]:
                click.echo(f"  skipped {s['op']} at byte {s['offset']}: {_one(s['reason'])}")
            if r["quarantined"] and fixed is None:
                click.echo("  (`mino memory check --repair` writes the journal without them)")
            ix = rep["index"]
            if ix.get("matches_replay"):
                click.echo(f"index: {ix['path']} matches replay (offset {ix.get('offset')})")
            else:
                click.echo(f"index: DIFFERS from replay ({ix.get('difference')}); "
                           "rebuilt on next open")
            for p in (rep.get("shared") or {}).get("problems", []):
                click.echo(f"shared journal: {_one(p)}")
            click.echo("ok" if rep["ok"] else "problems found (see above)")
        if not rep["ok"]:
            raise SystemExit(1)


def _pick_fact(n, which: str):
    """The current fact of node ``n`` named by ``which``: its id, else its key."""
    from ..core.errors import MemoryError_

    live = [f for f in n.facts if f.active]
    if str(which).isdigit():
        for f in n.facts:
            if f.id == int(which):
                if not f.active:
                    raise MemoryError_(f"fact {which} is not current (already replaced "
                                       "or forgotten)")
                return f
    for f in live:
        if f.key == which:
            if f.value == TOMBSTONE_FACT:
                raise MemoryError_(f"fact {_one(which)} is already forgotten")
            return f
    keys = ", ".join(sorted({_one(f.key) for f in live})) or "none"
    raise MemoryError_(f"memory #{n.id} has no current fact {_one(which)} "
                       f"(current keys: {keys})")


# -- mino memory consolidate -------------------------------------------------------------

def _consolidate_command(group, context) -> None:
    @group.command("consolidate")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def consolidate_cmd(as_json):
        """Fold recurring themes of episodes and pitfalls into lessons (nothing is erased)."""
        from ..loop import consolidate
        from ..core.errors import MemoryError_

        store = _open(context)
        try:
            lessons = consolidate.apply(store)
        except (OSError, MemoryError_) as e:
            raise click.ClickException(_one(f"cannot write the memory journal: {e}")) from None
        finally:
            store.close()
        if as_json:
            _echo_json({"applied": sum(x["change"] != "unchanged" for x in lessons),
                        "lessons": lessons})
            return
        if not lessons:
            click.echo("no recurring themes yet (a lesson needs 2 episodes or pitfalls "
                       "sharing at least 2 words)")
        for x in lessons:
            ids = " ".join(f"#{s}" for s in x["sources"])
            click.echo(f"#{x['node']} {_one(x['label'])}  ({x['change']}; "
                       f"{x['occurrences']} sources: {ids})")
