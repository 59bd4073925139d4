"""A reflection at the end of a turn: one request to the model, the safety checks, one
confirmation through the permission decision, then the writes; and a skill file offered
only on the user's explicit yes."""
from __future__ import annotations

from pathlib import Path

from mino_core import plugin_logger

from . import reflect
from .memories import Memory
from .recall_block import HIDDEN_KEYS

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr

REFLECTION_TITLE = "memory_reflection"
SKILL_TITLE = "memory_skill_file"
REFLECTION_WARNING = ("Approved items are saved to memory and shown to the model in later "
                      "sessions; approval applies only to this content.")


def _current_facts(g, user, project) -> dict:
    cur = {}
    for scope, nid in (("user", user), ("project", project)):
        n = g.nodes.get(nid) if nid is not None else None
        if n is not None:
            for f in n.facts:
                if f.active:
                    cur[(scope, f.key)] = f.value
    return cur


def reflect_run(record, sc: dict, why: str) -> None:
    """One reflection request, the checks, one confirmation, then the writes."""
    from mino_core import Preview

    session = record.info.session
    mem: Memory = sc["memory"]
    store, g = mem.store, mem.graph
    user, project, ep = sc["user"], sc["project"], sc["episode"]
    cur = _current_facts(g, user, project)
    known = [f"{s} {k}: {v}" for (s, k), v in cur.items() if k not in HIDDEN_KEYS]
    text = reflect.digest(record, reflect.subject_of, known)
    try:
        answer = session.complete(reflect.INSTRUCTIONS, [{"role": "user", "content": text}])
    except Exception as exc:  # noqa: BLE001 - a reflection is optional; never break a turn
        log.info("reflection skipped: %s", exc)
        return
    obj = reflect.parse(answer)
    if obj is None:
        log.info("reflection answer was not JSON; nothing kept")
        return
    store.refresh()
    proposal = reflect.check(obj, _current_facts(g, user, project))
    if proposal.refused:
        reasons = sorted({r.split(": ", 1)[-1] for r in proposal.refused})
        session.notice(f"Memory: the reflection proposed {len(proposal.refused)} item(s) the "
                       f"safety filter refused ({'; '.join(reasons)}); they were not saved.")
    if proposal.empty():
        return
    notes = [REFLECTION_WARNING, f"Why a reflection ran: {why}."]
    if proposal.inferred:
        notes.append(f"{proposal.inferred} inferred fact(s) were dropped (guesses are not saved).")
    project_label = g.nodes[project].label if project in g.nodes else "this project"
    # a fix joins a pitfall: the confirmation shows what that pitfall recorded
    preview = Preview(fields=reflect.preview_fields(proposal, project_label, graph=g,
                                                    pain=list(sc["markers"])), notes=notes)
    # Model-written text about to persist: the permission decision, like any tool call
    # (asks outside bypass, shown in bypass, a deny rule on memory_reflection holds).
    approved = session.authorize(
        REFLECTION_TITLE, {"facts": [f"{f['scope']} {f['key']}" for f in proposal.facts],
                           "fixes": len(proposal.fixes)}, preview)
    if not approved:
        with store.write() as req:
            if req.graph.live(ep) is not None:
                req.commit_log(ep, "reflection", "declined by the user; nothing saved")
        return
    with store.write() as req:
        ops, out = reflect.plan_apply(req.graph, proposal, episode=ep, user=user,
                                      project=project, pain=list(sc["markers"]),
                                      session_id=str(session.id), at=req.at,
                                      shown=[*sc.get("recalled", ()), *sc.get("offered", ())])
        for name, body in ops:
            req.apply(name, body)
    sc["fixed"] = out["fixed"]  # the episode records these fixes (episodes._record_saved)
    skill = proposal.skill
    if skill and (skill["explicit"] or out["skill_seen"] >= 2) and session.mode != "bypass":
        _offer_skill_file(session, mem, skill, out["skill_node"], project)


def _offer_skill_file(session, mem: Memory, skill: dict, candidate: int, project: int) -> None:
    """SKILL.md only on the user's explicit yes (bypass never writes one)."""
    from mino_core import Preview

    folder = Path(session.project_root) / ".mino" / "skills" / skill["name"]
    path = folder / "SKILL.md"
    if path.exists():
        return
    body = reflect.skill_text(skill)
    preview = Preview(fields=[("Skill file", str(path)), ("Content", body[:2000])],
                      notes=["A skill file is listed in the instructions of every later "
                             "session in this project."])
    if not session.authorize(SKILL_TITLE, {"path": str(path)}, preview, always_ask=True):
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(body)
    except OSError as exc:
        session.notice(f"Memory: could not write {path}: {exc.strerror or exc}")
        return
    with mem.store.write() as req:
        node = req.create_node("Harness", f"skill {skill['name']}")
        req.add_fact(node, "use when", skill["description"])
        req.add_fact(node, "file", str(path))
        req.link(node, project, "PartOf")
        if req.graph.live(candidate) is not None:
            req.commit_log(candidate, "promoted", f"written to {path} as #{node}")
        req.commit_log(node, "provenance", f"session {session.id}, source reflection, "
                                           "approved skill file")
