"""The turn's episode, hook by hook.

- ``begin`` (``front_input``): search the user's message in this project's scope, keep
  the strong hits, create the turn's episode (PartOf the project and PartOf the session's
  node, so one session's turns form one ordered cluster) and link what fed it as
  SuppliesContext feeders (never pain markers), and render one labelled block. With
  ``memory.graph.episodes: off`` no message is recorded: the session's node (which holds
  no text of the user's) is the episode the turn logs on, Mnemo's one episode per session.
- ``observe`` (``tool_outcome``): log the call on the episode with its subject (a
  completed or refused call is written with the turn's next write); a failure (not a
  refusal) steers at once, once per distinct failure in the run.
- ``end`` (``after_turn``): a clean run reinforces the feeders, usefulness votes from
  evidence, then a reflection when the run is worth one (``reflect.worth_reflecting``).

The turn's ids live in ``turn.scratch[NAME]``; what was already warned about in
``session.state[NAME]``.
"""
from __future__ import annotations

import json

from . import credit, reflect, standing, steer
from ..core import safety
from .memories import NAME, Memory, identity_of, memory_for, section, switched_on
from ..core.provenance import origins_for
from .recall_block import profile_lines, recall_hits, render
from .reflect import subject_of
from .reflection_offer import REFLECTION_TITLE, reflect_run


# The permission decision for what memory records of the model's calls on its own (tool
# logs, pain markers, votes): ``deny: ['memory_*']`` (or ``memory_observe``, or
# ``memory_observe(Bash)`` for one tool) stops it.
OBSERVE = "memory_observe"


def begin(turn) -> str | None:
    """``front_input``: recall, create the episode, link feeders, render the block."""
    session = turn.session
    mem = memory_for(session.home, session.config)
    store = mem.store
    store.refresh()
    g = store.graph
    identity = identity_of(session)
    text = turn.user_text or ""
    project = mem.standing.project_id(g, identity)
    user = mem.standing.user_id(g)
    hits = recall_hits(mem, text, project, session=str(session.id))
    records = records_episodes(session.config)
    # filtered before the journal's lock is taken: the filter's time is the message's size
    label, message = standing.episode_texts(text) if records else (None, None)
    with store.write() as req:
        user, project = mem.standing.ensure(req, identity, session.project_root)
        ep = mem.standing.session(req, str(session.id), project,
                                  resumed=(turn.number or 0) > 1)
        if records:
            sess, ep = ep, req.episode(label)
            req.add_fact(ep, "session", str(session.id))
            req.add_fact(ep, "turn", str(turn.number))
            req.add_fact(ep, "message", message)
            day = _date_if_later(req.graph, sess)
            if day:
                req.add_fact(ep, "date", day)
            req.link(ep, project, "PartOf")
            req.link(ep, sess, "PartOf")
        mark = req.graph.next_fact  # facts from here on are this turn's (``_record_saved``)
        feeders = []
        hits = [(nid, sc) for nid, sc in hits if g.live(nid) is not None]  # caught up
        sources = [nid for nid, _ in hits if g.nodes[nid].area != "Salience"
                   and g.nodes[nid].kind != "TaskEpisode"]
        sources += [p for p in (user, project) if profile_lines(g, p)]
        # each source feeds the episode once (Mnemo): the session's node, the episode of
        # every turn with ``episodes: off``, already has the earlier turns' feeders
        fed = {e.src: e.id for e in req.graph.feeders_of(ep)}
        for nid in sources:
            if nid not in fed and g.live(nid) is not None:
                fed[nid] = req.link(nid, ep, "SuppliesContext")
            if nid in fed:
                feeders.append(fed[nid])
    turn.scratch[NAME] = {"memory": mem, "episode": ep, "user": user, "project": project,
                          "recalled": [nid for nid, _ in hits], "steered": set(),
                          "markers": [], "feeders": feeders,
                          "turn_episode": records,
                          "session_node": mem.standing.sessions.get(str(session.id)),
                          "fact_mark": mark}
    return render(g, user, project, hits, origins_for(store, session.home)) or None


def _date_if_later(graph, session_node: int) -> str | None:
    """Now (UTC, as the session node's ``started``) when the session began on an earlier
    day (resumed days later): that turn's episode records its own date, which is what
    dates the facts written in it for a person (``listing.Reader.date_of``)."""
    from datetime import datetime, timezone

    n = graph.nodes.get(session_node)
    started = n.fact("started") if n is not None else None
    if started is None:
        return None
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return now if str(started.value)[:10] != now[:10] else None


def records_episodes(config) -> bool:
    """``memory.graph.episodes`` (default on): whether each user message is recorded."""
    return switched_on(config, "episodes")


# -- steer -------------------------------------------------------------------------------

def observe(outcome, turn) -> None:
    """``tool_outcome``: log the call; steer on a failure (once per distinct failure)."""
    sc = turn.scratch.get(NAME)
    if not sc:
        return
    mem: Memory = sc["memory"]
    ep = sc["episode"]
    call, result = outcome.call, outcome.result
    status = result.status.value
    if status == "completed":  # what the guard checks a remembered fix against (kept
        # in the turn, not recorded: so also when recording is denied)
        sc.setdefault("ran", []).append(steer.failure_subject(call.arguments))
    if _recording_denied(turn.session, {"name": call.name}):
        return
    # What the model chose (the subject) and what a tool printed (the failure) are
    # recorded unasked: filtered as a reflection is, a placeholder where it trips.
    subject = safety.observed(subject_of(call), "[subject not kept: {why}]")
    head = f"{call.name}({subject})" if subject else call.name
    store = mem.store
    if status != "failed":
        kind = {"completed": "tool_call", "denied": "tool_refused",
                "invalid_arguments": "tool_invalid"}.get(status, "tool_call")
        detail = f"{head}: " + {"completed": "ok", "denied": "refused",
                                "invalid_arguments": "invalid arguments"}.get(status, status)
        # Written with the next write of this turn (a steer or after_turn): one fsync less
        # per call, and after_turn runs however the turn ended.
        sc.setdefault("pending", []).append((kind, detail[:400]))
        return
    # Mnemo's failure text (its own subject rule, 3 lines joined by a space), so a journal
    # shared with Mnemo counts one failure on one marker.
    named = safety.observed(steer.failure_subject(call.arguments), "[subject not kept: {why}]")
    kept = f"{call.name}({named[:steer.SUBJECT_IN_FAILURE]}) failed: [output not kept: "
    failure = safety.observed(steer.failure_text(call.name, named, result.output),
                              kept.replace("{", "{{").replace("}", "}}") + "{why}]")
    sig = steer.signature(failure)
    notes = None
    with store.write() as req:
        g = req.graph
        if g.live(ep) is None:
            return
        _flush(req, sc)
        if sig in sc["steered"]:
            req.commit_log(ep, "tool_error", f"{head}: failed again (already steered)"[:400])
        else:
            req.commit_log(ep, "tool_error", f"{head}: failed"[:400])
            ops, notes = steer.plan_steer(g, ep, failure, project=sc["project"],
                                          marker=mem.marker_for(sig), at=req.at)
            for name, body in ops:
                req.apply(name, body)
            sc["steered"].add(sig)
            mem.markers[sig] = notes["marker"]
            if notes["marker"] not in sc["markers"]:
                sc["markers"].append(notes["marker"])
    if notes and notes.get("fix"):
        warned = turn.session.state.setdefault(NAME, {}).setdefault("warned", set())
        if notes["marker"] not in warned:
            warned.add(notes["marker"])
            turn.session.notice(recurrence_notice(notes))


def recurrence_notice(notes: dict) -> str:
    """What the person reads when a failure with a known fix recurs. ``occurrences``
    counts every time including this one (Mnemo's 1, 2, 3), so "before" is one less."""
    before = max(int(notes["occurrences"]) - 1, 0)
    times = "time" if before == 1 else "times"
    return (f"Memory: this failure was seen {before} {times} before (pitfall "
            f"#{notes['marker']}); a fix that worked then: {safety.escape(notes['fix'])}")


def _recording_denied(session, arguments: dict) -> str | None:
    """Why memory must not record what the model did (a deny rule on ``memory_observe``,
    e.g. ``memory_*``), said once per session; else None."""
    why = session.denied(OBSERVE, arguments)
    if why:
        st = session.state.setdefault(NAME, {})
        if not st.get("observe_denied"):
            st["observe_denied"] = True
            session.notice(f"Memory: tool calls, failures and votes are not recorded "
                           f"(denied by {why}).")
    return why


def _flush(req, sc: dict) -> None:
    """Log the calls ``observe`` held back, in order, on the episode."""
    for kind, detail in sc.pop("pending", []):
        req.commit_log(sc["episode"], kind, detail)


# -- end of the turn ---------------------------------------------------------------------

def _evidence(record) -> str:
    parts = [record.answer or ""]
    for o in record.outcomes:
        try:
            parts.append(json.dumps(o.call.arguments, ensure_ascii=False))
        except (TypeError, ValueError):
            pass
    return "\n".join(parts)


def end(record) -> None:
    """``after_turn``: reinforce or not, vote from evidence, then maybe reflect."""
    info = record.info
    sc = info.scratch.get(NAME)
    if not sc:
        return
    mem: Memory = sc["memory"]
    ep = sc["episode"]
    store = mem.store
    session = info.session
    denied = _recording_denied(session, {})
    if denied:
        sc.pop("pending", None)
    else:
        _record_end(record, sc, store, ep)
    if section(session.config).get("reflect", "auto") not in (False, "off", "no"):
        ok, why = reflect.worth_reflecting(record)
        if ok and not session.denied(REFLECTION_TITLE, {}):  # no request to throw away
            reflect_run(record, sc, why)
    if sc.get("turn_episode") and not denied:
        _record_saved(record, sc, store)


def _record_end(record, sc: dict, store, ep: int) -> None:
    """The turn's outcome on its episode: reinforcement or not, and usefulness votes."""
    info = record.info
    with store.write() as req:
        g = req.graph
        if g.live(ep) is None:
            return
        _flush(req, sc)
        if record.clean:
            ops = steer.plan_reinforce(g, ep, "success", at=req.at)
        else:
            failed = sum(1 for o in record.outcomes if o.result.status.value == "failed")
            detail = f"not clean: ended with {record.ended}, {failed} failed call(s)"
            ops = [("CommitLog", {"node": ep, "kind": "outcome", "detail": detail,
                                  "at": req.at})]
        for name, body in ops:
            req.apply(name, body)
        for nid in credit.votes(g, sc["recalled"], info.user_text or "", _evidence(record)):
            if g.live(nid) is not None:
                req.mark_useful(nid, True)


def _record_saved(record, sc: dict, store) -> None:
    """The facts this turn wrote (``memory_save``, the reflection), as the episode's
    ``saved`` fact (``node:fact`` pairs), so that once one is corrected or forgotten the
    message that stated the old value is history and no longer recalled (``recall_block``;
    Mnemo's #24: a retired value must not reach the model again); and a ``declined`` fact
    when the person refused to keep memory from the turn."""
    store.refresh()
    g = store.graph
    ep, mark = sc["episode"], sc.get("fact_mark")
    if mark is None or g.live(ep) is None:
        return
    nodes = {sc.get("user"), sc.get("project")}
    for o in record.outcomes:  # a fact saved on a node the model named
        args = o.call.arguments if isinstance(o.call.arguments, dict) else {}
        if o.call.name == "memory_save" and isinstance(args.get("node"), int):
            nodes.add(args["node"])
    # nodes made after the episode are this turn's (a few; another process's bulk import
    # in the meantime is not looked through)
    nodes.update(range(ep + 1, min(g.next_node, ep + 1 + 256)))
    nodes.discard(sc.get("session_node"))
    saved = []
    for nid in sorted(n for n in nodes if n is not None):
        n = g.nodes.get(nid)
        # what was said, not what was observed: a pain marker's counts change by design
        if n is not None and not n.deleted and n.kind != "TaskEpisode" and n.area != "Salience":
            saved.extend(f"{nid}:{f.id}" for f in n.facts if f.id >= mark and f.active)
    # the fix a reflection wrote on a pitfall: once a later fix replaces it (it stopped
    # working: pitfalls.replaced), this turn's record of the old way is history (issue 25)
    for nid in dict.fromkeys(sc.get("fixed", ())):
        n = g.nodes.get(nid)
        f = n.fact("fix") if n is not None and not n.deleted else None
        if f is not None and f.id >= mark:
            saved.append(f"{nid}:{f.id}")
    declined = _declined(record, g.nodes[ep])
    if saved or declined:
        with store.write() as req:
            if req.graph.live(ep) is not None:
                if saved:
                    req.add_fact(ep, "saved", " ".join(saved)[:2000])
                if declined:
                    req.add_fact(ep, "declined", declined)


def _declined(record, episode) -> str | None:
    """What the person declined to keep from this turn (a ``memory_save`` call refused, the
    reflection's proposal declined: ``reflection_offer`` logs it on the episode), or None.
    Such a turn's message is not recalled later (``recall_block``): they said no to it."""
    why = []
    if any(o.call.name == "memory_save" and o.result.status.value == "denied"
           for o in record.outcomes):
        why.append("a memory save")
    if any(kind == "reflection" and detail.startswith("declined")
           for _at, kind, detail in episode.log[-8:]):
        why.append("the reflection")
    return " and ".join(why) + " declined by the user" if why else None
