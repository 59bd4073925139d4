"""One YAML loader for every file mino reads from disk (config, skill and memory front matter).

``yaml.safe_load`` builds only plain data, but two inputs still hurt: an alias bomb (nine
anchors of nine aliases each are a billion strings once anything walks the result, so
start-up hangs) and deep nesting (the composer recurses: RecursionError). A first pass over
the parser's events, which does not recurse, refuses both before anything is built.
"""
from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 64
# Nodes that aliases may add in total, counting what each alias stands for in full.
MAX_ALIAS_NODES = 10_000

try:  # libyaml's parser when present: the same events, far faster
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pure-Python PyYAML
    _Loader = yaml.SafeLoader


class YAMLRefused(yaml.YAMLError):
    """The text parses, but mino will not build it (too deep, or aliases that expand too far)."""


def _check(text: str) -> None:
    depth = 0
    added = 0
    # One entry per open collection: [anchor, node count so far]; sizes count aliases expanded.
    open_: list[list[Any]] = []
    sizes: dict[str, int] = {}

    def close(anchor: str | None, size: int) -> None:
        if anchor:
            sizes[anchor] = size
        if open_:
            open_[-1][1] += size

    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise YAMLRefused(f"it nests deeper than {MAX_DEPTH} levels")
            open_.append([event.anchor, 1])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
            anchor, size = open_.pop()
            close(anchor, size)
        elif isinstance(event, yaml.ScalarEvent):
            close(event.anchor, 1)
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)  # an unknown anchor fails in the real load
            added += size
            if added > MAX_ALIAS_NODES:
                raise YAMLRefused(f"its aliases expand to more than {MAX_ALIAS_NODES} values "
                                  "(an alias bomb?)")
            close(None, size)


def load_yaml(text: str) -> Any:
    """Plain data from YAML ``text``, as ``yaml.safe_load`` gives it.

    Raises ``yaml.YAMLError`` for text that is not YAML, and its subclass ``YAMLRefused``
    (with a message saying why) for nesting deeper than MAX_DEPTH or aliases that would
    add more than MAX_ALIAS_NODES values.
    """
    _check(text)
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
