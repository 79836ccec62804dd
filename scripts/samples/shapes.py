"""Agents' native record shapes (``data/shapes.json``: the agent's keys in its order,
``"$name"`` a filled-in value, ``"$name?"`` one left out when None), spelled once for the
bundled samples and ``benchmarks/gen.py``. Nothing here imports tinyjuice: the files must
test its readers, not echo its writers.
"""

from __future__ import annotations

from typing import Any

from .common import data_json, fill

SHAPES: dict[str, Any] = data_json("shapes.json")


def shape(record: str, /, **values: Any) -> Any:
    """A fresh ``record`` of ``data/shapes.json`` with ``values`` filled in."""
    return fill(SHAPES[record], **values)


def tagged(tag: str, text: str) -> str:
    """ShareGPT / Hermes-format markup: ``<think>``, ``<tool_call>``, ``<tool_response>``."""
    return f"<{tag}>\n{text}\n</{tag}>"
