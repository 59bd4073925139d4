"""Every string a JSON value holds (dict values and list items, depth first): what a
filter or a grader reads of a tool's arguments or a request's body."""
from __future__ import annotations

from typing import Any, Iterator


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
