"""The raw server-sent event reader: what servers send that a JSON-per-line reader must survive."""
from __future__ import annotations

from mino_core.stream import DONE, events


def test_events_join_data_lines_skip_comments_and_bad_json_and_see_done():
    lines = [": keep-alive", "event: a", 'data: {"type": "a",', 'data:  "n": 1}', "",
             "data: not json", "", "data: [1, 2]", "", 'data:{"type": "b"}', "", "data: [DONE]", ""]
    assert list(events(lines)) == [{"type": "a", "n": 1}, {"type": "b"}, DONE]


def test_an_event_without_its_closing_blank_line_still_counts():
    assert list(events(['data: {"type": "last"}'])) == [{"type": "last"}]
