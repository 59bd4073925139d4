"""Generated folders of good, malformed, oversized, binary and hostile files.

The loader must never raise, must report every bad file, and must load every good one.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mino_memory_files import store
from mino_memory_files.names import TYPES

names = st.from_regex(r"[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,2}", fullmatch=True)
line_text = st.text(st.characters(blacklist_categories=("Cs",),
                                   blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                    min_size=1, max_size=40).filter(lambda s: bool(s.strip()))
memories = st.builds(lambda kind, summary, details: (kind, summary, details),
                     st.sampled_from(TYPES), line_text,
                     st.text(st.characters(blacklist_categories=("Cs",)), max_size=80))

HOSTILE = [
    # alias expansion ("billion laughs")
    "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n---\n",
    "---\n" + "[" * 20000 + "\n---\n",                       # nesting past the recursion limit
    "---\nname: !!python/object/apply:os.system ['true']\ntype: user\nsummary: x\n---\n",
    "---\n&a [*a]\n---\n",                                     # a recursive structure
    "---\nname: x\ntype: user\nsummary: !!binary aGVsbG8=\n---\n",
    "---\n? [a, b]\n: c\n---\n",                               # a complex key
    "---\nname: {a: 1}\ntype: [user]\nsummary: null\n---\n",
    "\ufeff---\n---\n",
    "---\r\n\x00\x01\x02\r\n---\r\n",
    "---\n%YAML 9.9\n---\n",
]


@st.composite
def bad_file(draw, stem):
    """(kind, bytes or None) for a file named ``stem``.md that must be skipped."""
    kind = draw(st.sampled_from(["binary", "oversized", "hostile", "mismatch", "long-summary",
                                 "bad-type", "extra-field", "not-utf8", "no-close", "symlink",
                                 "hardlink", "fifo", "directory", "bad-file-name"]))
    kind_, summary, details = draw(memories)
    good = store.format_memory(store.Memory(stem, kind_, summary, details)).encode()
    if kind == "binary":
        data = draw(st.binary(max_size=300))
        return kind, (b"\x00" + data) if data.startswith(b"---") else data
    if kind == "oversized":
        return kind, good + b"x" * (20 * 1024 + 1 - len(good) + draw(st.integers(0, 5000)))
    if kind == "hostile":
        return kind, draw(st.sampled_from(HOSTILE)).encode("utf-8", "surrogatepass")
    if kind == "mismatch":
        return kind, store.format_memory(store.Memory(stem + "-other", kind_, summary)).encode()
    if kind == "long-summary":
        return kind, f"---\nname: {stem}\ntype: user\nsummary: {'y' * 201}\n---\n".encode()
    if kind == "bad-type":
        return kind, f"---\nname: {stem}\ntype: secret\nsummary: s\n---\n".encode()
    if kind == "extra-field":
        return kind, f"---\nname: {stem}\ntype: user\nsummary: s\nx: y\n---\n".encode()
    if kind == "not-utf8":
        return kind, good.replace(b"---\n", b"---\n\xff\xfe", 1)
    if kind == "no-close":
        return kind, good[: good.rindex(b"---")]
    return kind, good


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), all_names=st.lists(names, min_size=1, max_size=12, unique=True))
def test_loader_never_raises_reports_every_bad_file_and_loads_every_good_one(data, all_names):
    split = data.draw(st.integers(0, len(all_names)))
    good_names, bad_names = all_names[:split], all_names[split:]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "memory"
        directory.mkdir()
        outside = Path(tmp) / "outside"
        outside.mkdir()
        expected = {}
        for name in good_names:
            kind, summary, details = data.draw(memories)
            memory = store.Memory(name, kind, summary, details)
            (directory / f"{name}.md").write_text(store.format_memory(memory), encoding="utf-8")
            expected[name] = memory
        bad_files = set()
        for name in bad_names:
            kind, content = data.draw(bad_file(name))
            file = f"{name}.md"
            path = directory / file
            if kind == "symlink":
                (outside / file).write_bytes(content)
                os.symlink(outside / file, path)
            elif kind == "hardlink":
                path.write_bytes(content)
                os.link(path, outside / file)
            elif kind == "fifo":
                os.mkfifo(path)
            elif kind == "directory":
                path.mkdir()
            elif kind == "bad-file-name":
                file = name.upper() + "_X.md"
                (directory / file).write_bytes(content)
            else:
                path.write_bytes(content)
            bad_files.add(file)
        # Ignored silently, never reported.
        (directory / ".dotfile.md").write_bytes(b"\x00")
        (directory / "readme.txt").write_bytes(b"\xff")

        for _ in range(2):  # a cold scan, then one served from the cache
            scan = store.scan(directory)
            assert {m.name: m for m in scan.memories} == expected
            assert {p.file for p in scan.problems} == bad_files
            assert all(p.reason for p in scan.problems)
            assert store.render(scan.indexed) == scan.text
