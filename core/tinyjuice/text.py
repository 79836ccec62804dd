"""Small text helpers: one line, cut to a length at the end or in the middle.

These do not redact. Clips that may cut a secret in half go through
:func:`tinyjuice.redact.redact_clip` around them (``digest._clip_end``,
``summary.fallback._one_line``).
"""

from __future__ import annotations

__all__ = ["cut_end", "cut_middle", "flatten", "one_line"]


def flatten(text: str) -> str:
    """``text`` on one line: every run of whitespace becomes one space, ends trimmed."""
    return " ".join(text.split())


def cut_end(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis ending the cut (not flattened)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` flattened, then cut to ``limit`` characters at the end."""
    return cut_end(flatten(text), limit)


def cut_middle(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters in the middle, keeping its last third."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    return text[: limit - tail - 1] + "…" + text[len(text) - tail :]
