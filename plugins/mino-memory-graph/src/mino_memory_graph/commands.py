"""``mino memory ...`` with the graph backend: search, show, history, forget, stats, check,
import-files. Each opens the store lazily (``Store.open(lazy=True)``): a read is answered
from ``journal.index`` alone, and only ``forget`` (a write) and ``check`` build a graph.
Errors are one line and exit code 1."""
from __future__ import annotations

import json

import click

from mino_core import visible


def _open(context):
    from .store import Store

    try:
        store = Store.open(home=context.home, config=context.config, lazy=True)
    except OSError as e:
        raise click.ClickException(f"cannot open the memory journal: {e}") from None
    bad = store.quarantined_total()
    if bad:
        click.echo(f"warning: {bad} bad journal line(s) skipped (kept in "
                   f"{store.journal.corrupt_path}); `mino memory check` lists them", err=True)
    return store


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


def register_commands(group, context):
    @group.command("search")
    @click.argument("query")
    @click.option("--k", "k", default=5, show_default=True, type=click.IntRange(1, 100),
                  help="How many hits.")
    @click.option("--kind", default=None, help="Only this node kind (aspect, entity, ...).")
    @click.option("--area", "areas", multiple=True,
                  help="Only these areas (repeatable); they are also preferred.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def search_cmd(query, k, kind, areas, as_json):
        """Search memory: routed brute-force recall with graph expansion."""
        from .store import MemoryError_

        store = _open(context)
        try:
            out = store.search_json(query, k, kind=kind, areas=list(areas))
        except MemoryError_ as e:
            _fail(e)
        finally:
            store.maybe_save_cache()
            store.close()
        if as_json:
            _echo_json(out)
            return
        click.echo(f"routed: {_one(', '.join(out['routed'])) or 'all'} ({_one(out['why'])})")
        if not out["results"]:
            click.echo("no memories matched")
        for r in out["results"]:
            via = ", via graph" if r["via_graph"] else ""
            click.echo(f"#{r['node']}  {r['score']:.3f}{via}  [{r['kind']}/{r['area']}] "
                       f"{_one(r['label'])}")

    @group.command("show")
    @click.argument("node", type=int)
    def show_cmd(node):
        """Show what the model reads about a node (its current facts and recent log)."""
        from .store import MemoryError_

        store = _open(context)
        try:
            click.echo(visible(store.state(node), lines=True), nl=False)
        except MemoryError_ as e:
            _fail(e)
        finally:
            store.close()

    @group.command("history")
    @click.argument("node", type=int)
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def history_cmd(node, as_json):
        """Every fact a node ever had (current and superseded) and its whole log."""
        from .store import MemoryError_

        store = _open(context)
        try:
            h = store.history(node)
        except MemoryError_ as e:
            _fail(e)
        finally:
            store.close()
        if as_json:
            _echo_json(h)
            return
        gone = " (deleted)" if h["deleted"] else ""
        click.echo(f"#{h['node']} [{h['kind']}/{h['area']}] {_one(h['label'])}{gone}")
        click.echo("facts:")
        for f in h["facts"]:
            extra = f" -> superseded by {f['superseded_by']}" if f["superseded_by"] else ""
            click.echo(f"  {f['id']} {f['status']:<10} {_one(f['key'])}: {_one(f['value'])}{extra}")
        click.echo("log:")
        for e in h["log"]:
            click.echo(f"  [{e['at']}] {e['kind']}: {_one(e['detail'])}")

    @group.command("forget")
    @click.argument("node", type=int)
    @click.option("--hard", is_flag=True,
                  help="Also drop it from the loaded graph (the journal keeps its history).")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def forget_cmd(node, hard, as_json):
        """Forget a memory (soft by default: it leaves search, history stays readable)."""
        from .model import ApplyError
        from .store import MemoryError_

        store = _open(context)
        try:
            n = store.graph.nodes.get(node)
            with store.write() as req:
                n = store.graph.nodes.get(node)
                if n is None:
                    raise MemoryError_(f"node {node} does not exist")
                if n.deleted and not hard:
                    raise MemoryError_(f"node {node} is already forgotten")
                label = n.label
                req.delete(node, hard)
        except (MemoryError_, ApplyError) as e:
            _fail(e)
        finally:
            store.close()
        if as_json:
            _echo_json({"forgot": node, "label": label, "hard": hard})
        else:
            click.echo(f"forgot #{node} {_one(label)}" + (" (hard)" if hard else ""))

    @group.command("stats")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def stats_cmd(as_json):
        """Counts of nodes, edges and facts, and where the journal lives."""
        store = _open(context)
        try:
            st = store.stats()
        finally:
            store.maybe_save_cache()
            store.close()
        if as_json:
            _echo_json(st)
            return
        click.echo(f"journal: {st['journal']} ({st['journal_bytes']} bytes, "
                   f"{st['ops_read']} ops read)")
        click.echo(f"nodes: {st['nodes']} live, {st['soft_deleted']} forgotten; "
                   f"edges: {st['live_edges']} live of {st['edges']}; "
                   f"facts: {st['facts']} current, {st['retired_facts']} retired")
        click.echo("by area: " + ", ".join(f"{a} {c}" for a, c in st["by_area"].items()))
        if st["quarantined"] or st["skipped"]:
            click.echo(f"warning: {st['quarantined']} quarantined line(s), "
                       f"{st['skipped']} skipped op(s); run `mino memory check`")

    from .migrate import add_command

    add_command(group, context)

    @group.command("check")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def check_cmd(as_json):
        """Replay the journal from scratch; report bad lines; verify the derived cache."""
        store = _open(context)
        try:
            rep = store.check()
        finally:
            store.close()
        if as_json:
            _echo_json(rep)
        else:
            r = rep["replay"]
            click.echo(f"journal: {rep['journal']} ({rep['bytes']} bytes)")
            click.echo(f"replayed {r['ops']} op(s): {r['applied']} applied, "
                       f"{r['skipped']} skipped, {r['quarantined']} line(s) quarantined, "
                       f"{r['blank']} blank")
            for b in r["quarantined_lines"][:10]:
                click.echo(f"  quarantined at byte {b['offset']}: {b['reason']}")
            for s in r["skipped_ops"][:10]:
                click.echo(f"  skipped {s['op']} at byte {s['offset']}: {s['reason']}")
            c = rep["cache"]
            if not c["exists"]:
                click.echo("derived cache: none")
            elif c.get("valid"):
                click.echo("derived cache: valid, " + (
                    "matches replay" if c.get("matches_replay") else "DIFFERS from replay"))
            else:
                click.echo(f"derived cache: stale ({c.get('reason')}); rebuilt on next open")
            ix = rep.get("index") or {}
            if not ix.get("used"):
                click.echo(f"index: not used ({ix.get('note') or 'off'})")
            elif ix.get("matches_replay"):
                click.echo(f"index: {ix['path']} matches replay (offset {ix.get('offset')})")
            else:
                click.echo(f"index: DIFFERS from replay ({ix.get('difference')}); "
                           "rebuilt on next open")
            click.echo("ok" if rep["ok"] else "problems found (see above)")
        if not rep["ok"]:
            raise SystemExit(1)
