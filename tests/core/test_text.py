"""tinyjuice.text: the small clipping helpers shared by digest, summary, review, explain."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.text import (
    cut_end,
    cut_middle,
    flatten,
    join_pieces,
    one_line,
    pieces_matching,
)


def test_flatten_joins_every_whitespace_run() -> None:
    assert flatten("  a\n\tb   c \n") == "a b c"


def test_cut_end_keeps_short_text_and_ends_a_cut_with_an_ellipsis() -> None:
    assert cut_end("abc", 3) == "abc"
    assert cut_end("abcdef", 4) == "abc…"
    assert cut_end("a\nbcdef", 4) == "a\nb…"  # not flattened


def test_one_line_flattens_before_cutting() -> None:
    assert one_line("a\n\nbcdef", 4) == "a b…"
    assert one_line(" x ", 4) == "x"
    assert len(one_line("word " * 50, 20)) == 20


def test_cut_middle_keeps_the_last_third() -> None:
    assert cut_middle("short", 10) == "short"
    out = cut_middle("src/" + "x" * 50 + "/main.py", 21)
    assert len(out) == 21 and out.startswith("src/") and out.endswith("main.py")
    assert "…" in out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\n xy", max_size=12), max_size=12))
def test_pieces_matching_is_a_search_of_each_piece(pieces: list[str]) -> None:
    """One scan of the joined pieces flags exactly the pieces a search of each flags."""
    pattern = re.compile(r"a[^\n]*b|xy")  # never across the line break that joins them
    joined, starts = join_pieces(pieces, "\n")
    assert joined == "\n".join(pieces)
    assert [joined[s : s + len(p)] for s, p in zip(starts, pieces, strict=False)] == pieces
    found = list(pieces_matching(pattern, joined, starts))
    assert found == [k for k, p in enumerate(pieces) if pattern.search(p)]
