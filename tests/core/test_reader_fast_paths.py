"""A reader's fast path must build exactly what its readable path builds.

The OpenAI message reader (shared by Hermes and SWE-agent) has one seam:
:func:`tinyjuice.formats.openai.fast_message` (common shapes, no checks) and
:func:`tinyjuice.formats.openai.message_from_dict` (every shape, checked, with JSON
paths in errors). Every shape the fast path accepts must come out equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tinyjuice.formats._io import Source
from tinyjuice.formats.openai import fast_message, known_keys, message_from_dict

_CALL = {
    "id": "call_q1",
    "type": "function",
    "function": {"name": "run_shell", "arguments": '{"cmd": "make lint"}'},
}

SHAPES: list[dict[str, Any]] = [
    {"role": "system", "content": "You tidy gardens in the greenhouse project."},
    {"role": "developer", "content": "Prefer short answers."},
    {"role": "user", "content": "Why does seedling_tray.py fail on empty trays?"},
    {"role": "user", "content": ""},
    {"role": "user", "content": None},
    {"role": "assistant", "content": "Looking at the tray loader.", "tool_calls": [_CALL]},
    {"role": "assistant", "content": None, "tool_calls": [_CALL, {**_CALL, "id": "call_q2"}]},
    {"role": "assistant", "content": "Done: trays load.", "name": "helper"},
    {"role": "tool", "tool_call_id": "call_q1", "content": "lint: 0 problems"},
    {"role": "tool", "tool_call_id": "call_q1", "name": "run_shell", "content": "ok"},
    {"role": "user", "content": "with an extra key", "x_trace": {"span": 7}},
    {"role": "assistant", "content": "extra on the call", "tool_calls": [{**_CALL, "index": 0}]},
]


@pytest.mark.parametrize("raw", SHAPES, ids=lambda r: f"{r['role']}-{len(r)}")
def test_openai_fast_message_equals_the_readable_path(raw: dict[str, Any], tmp_path: Path) -> None:
    source = Source(path=tmp_path / "s.json", data=b"", doc=None, kind="json")
    fast = fast_message(raw, 4, known_keys())
    slow = message_from_dict(source, raw, "$.messages[4]", index=4)
    if fast is None:
        pytest.skip("not a shape the fast path takes")
    assert fast == slow


def test_the_fast_path_takes_the_common_shapes() -> None:
    taken = [r for r in SHAPES if fast_message(r, 0, known_keys()) is not None]
    assert len(taken) >= 8  # else the equality test above checks little
