"""Agents' native record shapes, spelled once for both sample generators.

``data/shapes.json`` holds each record with the agent's own keys in the agent's own order
(``"$name"`` a filled-in value, ``"$name?"`` one whose key is left out when it is None).
``scripts/samples`` (the bundled sessions) and ``benchmarks/gen.py`` (the large synthetic
transcripts) build their records with :func:`shape`; ids, timestamps, serialising and
counting stay with the callers. Nothing here imports tinyjuice: the files must test its
readers, not echo its writers.
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
