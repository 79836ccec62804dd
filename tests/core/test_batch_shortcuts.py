"""The batch's shortcuts (issue #14) give exactly what the long way round gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fallback_speed import _ITEMS

from benchmarks.trajectories import trajectory_line
from tinyjuice import markers
from tinyjuice.formats import load_bytes
from tinyjuice.summary import fallback as fb
from tinyjuice.tokens import TiktokenCounter, default_counter


def _fresh_counter() -> TiktokenCounter:
    counter = default_counter()
    if not isinstance(counter, TiktokenCounter):
        pytest.skip("needs a tiktoken encoding")
    return TiktokenCounter(counter._enc, counter.name)


@settings(max_examples=150, deadline=None)
@given(
    st.fixed_dictionaries({key: _ITEMS for key, _ in fb._CATEGORIES}),
    st.integers(min_value=0, max_value=1500),
)
def test_take_all_is_what_allocate_chooses_when_everything_fits(
    items: dict[str, list[str]], room: int
) -> None:
    counter = _fresh_counter()
    memo: dict[str, int] = {}
    whole = fb._take_all(items, room, counter, memo)
    allocated = fb._allocate(items, room, counter)
    everything = (
        {k: list(items[k]) for k, _ in fb._CATEGORIES},
        {k: [] for k, _ in fb._CATEGORIES},
    )
    if whole is not None:
        assert whole == allocated == everything
    elif sum(len(i) for v in items.values() for i in v) <= fb._FLOORS_OVER * max(room, 1):
        # Declined only when the allocation does not take every item whole.
        assert allocated != everything
    # The costs it counted are the allocation's.
    assert all(memo[i] == counter.count(fb._bullet(i)) + 1 for i in memo)


def _middles() -> list[list[object]]:
    """Spans of generated batch trajectories, short and long (the tool results decoded
    as the batch decodes them)."""
    from tinyjuice.fit import _readable

    out: list[list[object]] = []
    for i in range(12):
        msgs = [
            _readable(m) for m in load_bytes(trajectory_line(i), "t.jsonl", "sharegpt").messages
        ]
        for start, size in ((1, 2), (1, 6), (2, 15), (1, len(msgs))):
            out.append(msgs[start : start + size])
    return out


@pytest.mark.parametrize("budget", [40, 120, 300, 638, 2000])
@pytest.mark.parametrize("appendix", [False, True])
def test_fallback_summary_equals_its_general_path(
    budget: int, appendix: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _fresh_counter()
    middles = _middles()

    def run() -> list[fb.FallbackSummary]:
        return [
            fb.fallback_summary(m, budget_tokens=budget, counter=counter, appendix=appendix)  # type: ignore[arg-type]
            for m in middles
        ]

    fast = run()
    monkeypatch.setattr(fb, "_take_all", lambda *a: None)
    monkeypatch.setattr(fb._Draft, "_fit_whole", lambda *a: None)
    slow = run()
    for a, b in zip(fast, slow, strict=True):
        assert (a.text, a.included, a.omitted, a.tokens, a.appendix, a.appendix_id) == (
            b.text,
            b.included,
            b.omitted,
            b.tokens,
            b.appendix,
            b.appendix_id,
        )
        assert a.summary == b.summary
        assert dict(a.omitted_items) == dict(b.omitted_items)


_WRAPPER_PIECES = st.sampled_from(
    [
        "## Goal",
        "text",
        " ",
        "\n",
        "\r\n",
        "\n\n\n",
        "[END OF",
        "[END OF SUMMARY]",
        "[END OF THE COMPACTION SUMMARY — x]",
        "[CONTEXT",
        "[CONTEXT SUMMARY]:",
        "[CONTEXT COMPACTION — REFERENCE ONLY]",
        "background reference",
        "\t",
        markers.HANDOFF_PREAMBLE,
        markers.END_MARKER,
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WRAPPER_PIECES, max_size=10).map("".join))
def test_strip_summary_wrappers_equals_every_pass(text: str) -> None:
    assert markers.strip_summary_wrappers(text) == markers._strip_all(text)
    wrapped = markers.wrap_summary(text)
    assert markers.strip_summary_wrappers(wrapped) == markers._strip_all(wrapped)
