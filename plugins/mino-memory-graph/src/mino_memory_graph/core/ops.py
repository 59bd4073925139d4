"""The twelve journal operations, in Mnemo's line format.

One operation is one JSON line, serde's externally tagged enum: the operation name is
the single key and its fields sit inside, in the order Mnemo declares them, e.g.::

    {"AddFact":{"node":3,"fact_id":7,"key":"port","value":"8081","at":1700000000042}}

Enum values are the Rust names as strings (``"TaskEpisode"``, ``"SuppliesContext"``).
An operation is held in memory as ``(name, body)`` where ``body`` is the plain dict of
fields, exactly what the JSON line decodes to; no wrapper objects, so replay stays fast.

``validate`` decides whether a decoded line is an operation at all (the quarantine
question); whether it can *apply* (its references exist) is the model's question.
"""
from __future__ import annotations

import json
import math
import sys

NODE_KINDS = ("Aspect", "TaskEpisode", "Entity", "Harness", "Outcome")
AREAS = ("Episodic", "Semantic", "Procedural", "Spatial", "Salience", "Executive")
EDGE_KINDS = ("SuppliesContext", "PartOf", "DerivedFrom", "Supersedes", "ActivatedWith")
NODE_KIND_SET = frozenset(NODE_KINDS)
AREA_SET = frozenset(AREAS)
EDGE_KIND_SET = frozenset(EDGE_KINDS)

U64_MAX = 2**64 - 1

# field types
U64, STR, BOOL, F32, NODEKIND, AREA, EDGEKIND, CHUNK = range(8)

# Field order is Mnemo's declaration order: lines we write are byte-compatible.
SPECS: dict[str, tuple[tuple[str, int], ...]] = {
    "CreateNode": (("id", U64), ("kind", NODEKIND), ("label", STR), ("at", U64)),
    "AddFact": (("node", U64), ("fact_id", U64), ("key", STR), ("value", STR), ("at", U64)),
    "SupersedeFact": (("node", U64), ("old_fact", U64), ("new_key", STR),
                      ("new_value", STR), ("new_fact_id", U64), ("at", U64)),
    "SetArea": (("node", U64), ("area", AREA), ("at", U64)),
    "DeleteNode": (("node", U64), ("hard", BOOL), ("at", U64)),
    "Link": (("id", U64), ("src", U64), ("dst", U64), ("kind", EDGEKIND), ("at", U64)),
    "Unlink": (("edge", U64), ("at", U64)),
    "Reweight": (("edge", U64), ("delta", F32), ("at", U64)),
    "RecordOutcome": (("edge", U64), ("success", BOOL), ("at", U64)),
    "PushContext": (("to", U64), ("chunk", CHUNK), ("at", U64)),
    "CommitLog": (("node", U64), ("kind", STR), ("detail", STR), ("at", U64)),
    "RecordUsefulness": (("node", U64), ("useful", BOOL), ("at", U64)),
}

F32_MAX = 3.4028234663852886e38


def _check_f32(v) -> bool:
    t = type(v)
    if t is int:
        return True
    return t is float and math.isfinite(v) and abs(v) <= F32_MAX


def _check_chunk(v) -> str | None:
    if type(v) is not dict:
        return "chunk is not an object"
    for f in ("from", "dim"):
        x = v.get(f)
        if type(x) is not int or not 0 <= x <= U64_MAX:
            return f"chunk.{f} is not an unsigned integer"
    if type(v.get("note")) is not str:
        return "chunk.note is not a string"
    vec = v.get("vec", [])
    if type(vec) is not list or not all(_check_f32(x) for x in vec):
        return "chunk.vec is not a list of numbers"
    return None


def validate(obj) -> str | None:
    """Return None when ``obj`` (a decoded line) is one operation, else the reason."""
    if type(obj) is not dict or len(obj) != 1:
        return "not an operation (expected one key naming the operation)"
    ((name, body),) = obj.items()
    spec = SPECS.get(name)
    if spec is None:
        return f"unknown operation {name[:40]!r}"
    if type(body) is not dict:
        return f"{name}: fields are not an object"
    for field, kind in spec:
        v = body.get(field, body)  # the body itself marks "missing"
        if v is body:
            return f"{name}: missing field {field!r}"
        if kind == U64:
            if type(v) is not int or not 0 <= v <= U64_MAX:
                return f"{name}: {field} is not an unsigned integer"
        elif kind == STR:
            if type(v) is not str:
                return f"{name}: {field} is not a string"
        elif kind == BOOL:
            if type(v) is not bool:
                return f"{name}: {field} is not a boolean"
        elif kind == NODEKIND:
            if v not in NODE_KIND_SET or type(v) is not str:
                return f"{name}: unknown node kind"
        elif kind == AREA:
            if v not in AREA_SET or type(v) is not str:
                return f"{name}: unknown area"
        elif kind == EDGEKIND:
            if v not in EDGE_KIND_SET or type(v) is not str:
                return f"{name}: unknown edge kind"
        elif kind == F32:
            if not _check_f32(v):
                return f"{name}: {field} is not a number"
        elif kind == CHUNK:
            why = _check_chunk(v)
            if why:
                return f"{name}: {why}"
    return None


_CONDITION = {  # ``validate``'s check of one field kind, as an expression over ``{r}``
    U64: "{r}.__class__ is int and 0 <= {r} <= " + str(U64_MAX),
    STR: "{r}.__class__ is str",
    BOOL: "{r}.__class__ is bool",
    NODEKIND: "{r}.__class__ is str and {r} in NODE_KIND_SET",
    AREA: "{r}.__class__ is str and {r} in AREA_SET",
    EDGEKIND: "{r}.__class__ is str and {r} in EDGE_KIND_SET",
    F32: "_check_f32({r})",
    CHUNK: "_check_chunk({r}) is None",
}


def _conditions(spec, refs) -> str:
    """One boolean expression accepting well-formed values of ``spec``'s fields, read
    from the expressions ``refs`` (in field order): ``validate``'s checks, inlined."""
    return " and ".join(_CONDITION[kind].format(r=ref) for (_, kind), ref in zip(spec, refs))


def _read_checked(spec, vs, indent: str, fail: str) -> list[str]:
    """Source lines that read ``spec``'s fields of body ``b`` into the locals ``vs`` and
    run ``fail`` (a statement) unless every one is well formed."""
    return [
        f"{indent}try:",
        *(f"{indent}    {v} = b[{f!r}]" for v, (f, _) in zip(vs, spec)),
        f"{indent}except (KeyError, TypeError):",
        f"{indent}    {fail}",
        f"{indent}if not ({_conditions(spec, vs)}):",
        f"{indent}    {fail}",
    ]


INVALID = object()  # a replay caller's answer for "not this operation" (quarantine)

_GENERATED_NS = {"INVALID": INVALID, "intern": sys.intern,
                 "NODE_KIND_SET": NODE_KIND_SET, "AREA_SET": AREA_SET,
                 "EDGE_KIND_SET": EDGE_KIND_SET, "_check_f32": _check_f32,
                 "_check_chunk": _check_chunk}


def _generate(src: str, name: str):
    ns = dict(_GENERATED_NS)
    exec(src, ns)  # noqa: S102 - generated from the constant SPECS table above
    return ns[name]


# --- binding the graph's appliers to bodies -------------------------------------------
#
# The graph applies each operation through a function of its fields in SPECS order
# (``model._appliers``); ``bind`` gives the two ways in from a body dict, generated
# from SPECS so that the field order, the checks and the clock rule are written once.

def _binder(spec):
    """Compile ``make(g, apply) -> (by_body, replay)`` for one operation's ``spec``."""
    vs = [f"v{i}" for i in range(len(spec) - 1)] + ["at"]  # every op ends with ``at``
    src = "\n".join([
        "def make(g, apply):",
        "    def by_body(b):",
        "        return apply(" + ", ".join(f"b[{f!r}]" for f, _ in spec) + ")",
        "    def replay(b):",
        *_read_checked(spec, vs, "        ", "return INVALID"),
        "        if at >= g.clock:",
        "            g.clock = at + 1",
        f"        return apply({', '.join(vs)})",
        "    return by_body, replay",
    ])
    return _generate(src, "make")


_BINDERS: dict = {}  # op name -> its generated binder, made on the first ``bind``


def bind(g, appliers: dict) -> tuple[dict, dict]:
    """``(by_body, replay)`` for ``appliers`` (op name -> function of the op's fields
    in SPECS order) over graph ``g``:

    - ``by_body[name](body)`` applies a validated body and leaves the clock alone (a
      write request's own ops: the request's ``at`` is the clock);
    - ``replay[name](body)`` checks the fields as ``validate`` does and gives back
      ``INVALID`` (changing nothing, not even the clock) when they are not that
      operation; else it moves ``g.clock`` past ``at`` (as Mnemo's sync does, even
      for an op that then cannot apply) and applies, ``ApplyError`` included.
    """
    if not _BINDERS:  # generated when first needed: a search of the index needs none
        _BINDERS.update((name, _binder(spec)) for name, spec in SPECS.items())
    by_body, replay = {}, {}
    for name, make in _BINDERS.items():
        by_body[name], replay[name] = make(g, appliers[name])
    return by_body, replay


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encode(name: str, body: dict) -> bytes:
    """One journal line (with its newline) for an operation, fields in Mnemo's order."""
    spec = SPECS[name]
    ordered = {f: body[f] for f, _ in spec}
    if name == "PushContext":
        c = body["chunk"]
        ordered["chunk"] = {"from": c["from"], "dim": c["dim"], "vec": list(c.get("vec", [])),
                            "note": c["note"]}
    return (_dumps({name: ordered}) + "\n").encode("utf-8")


# --- constructors (plain dicts; callers allocate ids) ---------------------------------

def create_node(id: int, kind: str, label: str, at: int):
    return "CreateNode", {"id": id, "kind": kind, "label": label, "at": at}


def add_fact(node: int, fact_id: int, key: str, value: str, at: int):
    return "AddFact", {"node": node, "fact_id": fact_id, "key": key, "value": value, "at": at}


def supersede_fact(node: int, old_fact: int, new_key: str, new_value: str,
                   new_fact_id: int, at: int):
    return "SupersedeFact", {"node": node, "old_fact": old_fact, "new_key": new_key,
                             "new_value": new_value, "new_fact_id": new_fact_id, "at": at}


def set_area(node: int, area: str, at: int):
    return "SetArea", {"node": node, "area": area, "at": at}


def delete_node(node: int, hard: bool, at: int):
    return "DeleteNode", {"node": node, "hard": hard, "at": at}


def link(id: int, src: int, dst: int, kind: str, at: int):
    return "Link", {"id": id, "src": src, "dst": dst, "kind": kind, "at": at}


def unlink(edge: int, at: int):
    return "Unlink", {"edge": edge, "at": at}


def reweight(edge: int, delta: float, at: int):
    return "Reweight", {"edge": edge, "delta": delta, "at": at}


def record_outcome(edge: int, success: bool, at: int):
    return "RecordOutcome", {"edge": edge, "success": success, "at": at}


def push_context(to: int, chunk: dict, at: int):
    return "PushContext", {"to": to, "chunk": chunk, "at": at}


def commit_log(node: int, kind: str, detail: str, at: int):
    return "CommitLog", {"node": node, "kind": kind, "detail": detail, "at": at}


def record_usefulness(node: int, useful: bool, at: int):
    return "RecordUsefulness", {"node": node, "useful": useful, "at": at}
