"""Small text helpers: one line, cut to a length at the end or in the middle; many
texts scanned as one.

These do not redact. Clips that may cut a secret in half go through
:func:`tinyjuice.redact.redact_clip` around them (``digest._clip_end``,
``summary.fallback._one_line``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate

__all__ = ["cut_end", "cut_middle", "flatten", "join_pieces", "one_line", "pieces_matching"]


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


def join_pieces(pieces: Sequence[str], sep: str) -> tuple[str, list[int]]:
    """``sep.join(pieces)``, and where each piece starts in it (one entry more, past the
    end): one scan of many short texts runs at C speed where a scan each would not."""
    starts = list(accumulate(map(len(sep).__add__, map(len, pieces)), initial=0))
    return sep.join(pieces), starts


def pieces_matching(pattern: re.Pattern[str], joined: str, starts: list[int]) -> Iterator[int]:
    """The index of each piece of :func:`join_pieces`'s ``joined`` where ``pattern``
    matches, in order, each once: after a match the search goes on at the next piece.
    ``pattern`` must not match across the separator."""
    search = pattern.search
    m = search(joined)
    while m is not None:
        k = bisect_right(starts, m.start()) - 1
        yield k
        m = search(joined, starts[k + 1])
