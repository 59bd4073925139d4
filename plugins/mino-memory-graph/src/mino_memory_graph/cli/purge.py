"""``mino memory purge ID``: a node's text really removed, from the journal itself.

``forget`` (Mnemo's ``DeleteNode``) only hides a node: the journal, the source of truth,
keeps every line it ever had. A purge rewrites the journal under the exclusive lock
(``Store.rewrite``) with the node's texts replaced by ``TOMBSTONE``:

- its label, every fact value it ever had (current and superseded), its log details and
  the notes of context chunks to or from it; fact keys become ``purged fact 1``, ``2``...
  (one per distinct key, so replay retires the same facts as before);
- in every other line, a quote of its label or of a fact value (``MIN_QUOTE`` characters
  or longer; shorter ones are too common to remove from other memories), and the same in
  quarantined lines, the ``.corrupt`` records and any journal kept by ``check --repair``.

Ids, kinds, edges and times stay, so every other memory replays exactly as before. The
derived files are rebuilt (the index) or removed (the cache); the node is then forgotten
(a ``DeleteNode`` with a dated provenance line saying it was purged).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..core import ops as _ops
from ..journal.journal import parse_one, replace_file

TOMBSTONE = "[purged]"
MIN_QUOTE = 8
# facts mino writes about a node rather than text a person or the model wrote: shared by
# many nodes (a session id), so never removed from other nodes
BOOKKEEPING = frozenset({"session", "turn", "started", "date", "signature", "agent",
                         "model", "learned from"})
_TEXT = {"CreateNode": ("label",), "AddFact": ("key", "value"),
         "SupersedeFact": ("new_key", "new_value"), "CommitLog": ("kind", "detail")}


class Purge:
    """What a purge of ``node`` removes, learned from the journal (``learn``), and the
    line transform that removes it (``line``)."""

    def __init__(self, node: int):
        self.node = node
        self.quotes: set[str] = set()   # its label and values: removed wherever quoted
        self.details: set[str] = set()  # its log details: removed from garbage lines too
        self.keys: dict[str, str] = {}
        self.touched = 0       # lines of the node rewritten
        self.scrubbed = 0      # other lines a quote was removed from
        self._quotes_b: list[bytes] = []
        # how a line naming it must look, with any JSON spacing (replay accepts any)
        self._digits = b"%d" % node
        self._names = re.compile(rb":\s*%d\s*[,}]" % node)

    # --- pass 1 ---------------------------------------------------------------------

    def _mine(self, name: str, body: dict) -> bool:
        n = self.node
        if name == "CreateNode":
            return body["id"] == n
        if name == "PushContext":
            return body["to"] == n or body["chunk"].get("from") == n
        return name in ("AddFact", "SupersedeFact", "CommitLog") and body["node"] == n

    def learn(self, lines) -> bool:
        """Collect the node's texts; True when the node was created in ``lines``."""
        created = False
        for line in lines:
            if not self._may_name(line):
                continue
            op = _parse(line)
            if op is None or not self._mine(*op):
                continue
            name, body = op
            if name == "CreateNode":
                created = True
                self._quote(body["label"])
            elif name in ("AddFact", "SupersedeFact"):
                key = body["key" if name == "AddFact" else "new_key"]
                self.keys.setdefault(key, f"purged fact {len(self.keys) + 1}")
                if key not in BOOKKEEPING:
                    self._quote(body["value" if name == "AddFact" else "new_value"])
            elif name == "PushContext":
                self._quote(body["chunk"].get("note", ""))
            elif name == "CommitLog" and len(body["detail"].strip()) >= MIN_QUOTE:
                self.details.add(body["detail"].strip())
        forms = set()
        for q in self.quotes:
            forms.add(json.dumps(q, ensure_ascii=False)[1:-1].encode("utf-8", "replace"))
            forms.add(json.dumps(q, ensure_ascii=True)[1:-1].encode("ascii"))
            forms.add(q.encode("utf-8", "replace"))
        self._quotes_b = sorted(forms, key=len, reverse=True)
        return created

    def _may_name(self, line: bytes) -> bool:
        return self._digits in line and self._names.search(line) is not None

    def _quote(self, text: str) -> None:
        text = str(text).strip()
        if len(text) >= MIN_QUOTE and text != TOMBSTONE:
            self.quotes.add(text)

    # --- pass 2 ---------------------------------------------------------------------

    def scrub_text(self, text: str) -> str:
        for q in sorted(self.quotes, key=len, reverse=True):
            if q in text:
                text = text.replace(q, TOMBSTONE)
        return text

    def scrub_bytes(self, data: bytes) -> bytes:
        tomb = TOMBSTONE.encode()
        for q in self._quotes_b:
            if q in data:
                data = data.replace(q, tomb)
        return data

    def scrub_fragments(self, text: str) -> str:
        """``text`` with every run of ``MIN_QUOTE`` or more characters that also occurs
        in one of the node's texts replaced: for lines that are no memory at all
        (quarantined garbage, its ``.corrupt`` records), where a torn line may hold any
        piece of the node's text and no other memory can lose a word by it."""
        pieces = self.quotes | self.details
        if not pieces:
            return text
        grams = {q[i:i + MIN_QUOTE] for q in pieces for i in range(len(q) - MIN_QUOTE + 1)}
        out, i, n = [], 0, len(text)
        while i < n:
            if text[i:i + MIN_QUOTE] in grams:
                j = i + MIN_QUOTE
                while j < n and any(text[i:j + 1] in q for q in pieces):
                    j += 1
                out.append(TOMBSTONE)
                i = j
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def scrub_garbage(self, data: bytes) -> bytes:
        """``scrub_fragments`` over the bytes of a line that is not an operation."""
        data = self.scrub_bytes(data)
        text = data.decode("utf-8", "surrogateescape")
        new = self.scrub_fragments(text)
        return data if new == text else new.encode("utf-8", "surrogateescape")

    def line(self, line: bytes, suspect: bool = True) -> bytes:
        """One journal line (with its newline, if it had one), purged. Without
        ``suspect`` (not a known bad line), a line that is shaped like an operation and
        names neither the node nor a quote of it is kept without being parsed: most of
        a journal, and parsing it all was most of a purge."""
        if (not suspect and line.startswith(b'{"') and line.rstrip(b"\n").endswith(b"}}")
                and not self._may_name(line)
                and not any(q in line for q in self._quotes_b)):
            return line
        op = _parse(line)
        if op is None:  # not an operation (quarantined): any piece of the text goes
            return self.scrub_garbage(line)
        name, body = op
        if self._mine(name, body):
            self.touched += 1
            return _encode(name, self._tombstoned(name, body), line)
        if not any(q in line for q in self._quotes_b):
            return line
        new = self._scrubbed(name, body)
        if new == body:
            return line
        self.scrubbed += 1
        return _encode(name, new, line)

    def _tombstoned(self, name: str, body: dict) -> dict:
        b = dict(body)
        if name == "CreateNode":
            b["label"] = TOMBSTONE
        elif name == "AddFact":
            b["key"], b["value"] = self.keys.get(b["key"], TOMBSTONE), TOMBSTONE
        elif name == "SupersedeFact":
            b["new_key"], b["new_value"] = self.keys.get(b["new_key"], TOMBSTONE), TOMBSTONE
        elif name == "CommitLog":
            b["detail"] = TOMBSTONE
        elif name == "PushContext":
            b["chunk"] = dict(b["chunk"], note=TOMBSTONE, vec=[])
        return b

    def _scrubbed(self, name: str, body: dict) -> dict:
        b = dict(body)
        for f in _TEXT.get(name, ()):
            b[f] = self.scrub_text(b[f])
        if name == "PushContext":
            b["chunk"] = dict(b["chunk"], note=self.scrub_text(b["chunk"]["note"]))
        return b


def _parse(line: bytes):
    try:
        return parse_one(line.decode("utf-8").rstrip("\n"))
    except (UnicodeDecodeError, ValueError):
        return None


def _encode(name: str, body: dict, original: bytes) -> bytes:
    out = _ops.encode(name, body)
    return out if original.endswith(b"\n") else out[:-1]


def _lines(path: Path):
    with open(path, "rb") as fh:
        yield from fh


def kept_journals(path: Path) -> list[Path]:
    """Journals ``check --repair`` kept beside ``path`` (see ``journal.kept_name``)."""
    from glob import escape

    return sorted(path.parent.glob(f"{escape(path.stem)}.before-repair-*{escape(path.suffix)}"))


def _rewrite_file(path: Path, transform) -> None:
    """Replace a side file with ``transform`` applied to each line (0600, atomically)."""
    replace_file(path, (transform(line) for line in _lines(path)))


def _scrub_record(p: Purge):
    def one(line: bytes) -> bytes:
        try:
            r = json.loads(line)
        except ValueError:
            return p.scrub_garbage(line)
        if isinstance(r, dict) and isinstance(r.get("raw"), str):
            r["raw"] = p.scrub_fragments(r["raw"])
            return (json.dumps(r, ensure_ascii=True) + "\n").encode()
        return p.scrub_garbage(line)
    return one


def _bad_offsets(corrupt: Path) -> set:
    """Offsets of the lines replay quarantined, as ``.corrupt`` records them (records of
    an older journal only make a good line parsed for nothing)."""
    from ..journal.journal import _records

    return {r.get("offset") for r in _records(corrupt)}


def purge(store, node: int, when: str) -> dict:
    """Purge ``node`` from ``store``'s journal (see the module docstring). ``when``: the
    date written in the provenance line. Raises ``LookupError`` for an unknown node."""
    p = Purge(node)
    path = store.path

    def make_chunks(journal):
        if not p.learn(_lines(journal.path)):
            raise LookupError(f"node {node} does not exist")
        # side files first, still under the lock: they may quote the same text
        if journal.corrupt_path.exists():
            _rewrite_file(journal.corrupt_path, _scrub_record(p))
        for kept in kept_journals(path):
            _rewrite_file(kept, p.line)
        bad = _bad_offsets(journal.corrupt_path)
        pos = 0
        for line in _lines(journal.path):
            yield p.line(line, pos in bad)
            pos += len(line)

    store.rewrite(make_chunks)
    with store.write() as req:
        n = req.graph.nodes.get(node)
        if n is not None:
            req.commit_log(node, "provenance", f"purged by the user on {when}: its text is "
                                               "gone from the journal")
            if not n.deleted:
                req.delete(node, False)
    return {"purged": node, "lines": p.touched, "quoted_elsewhere": p.scrubbed,
            "kept_journals": [str(k) for k in kept_journals(path)]}
