"""Counting only what decides cuts exactly where counting everything cuts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gen import conversation, render
from tinyjuice.decisive import plan_counting_what_decides
from tinyjuice.formats import load, load_bytes
from tinyjuice.model import Transcript
from tinyjuice.pipeline import plan_boundary
from tinyjuice.report import CompactionOptions, Profile
from tinyjuice.tokens import TiktokenCounter, TokenCounter, count_transcript, default_counter

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"

OPTIONS = [
    CompactionOptions(),
    CompactionOptions(force=True),
    CompactionOptions(keep_last=2),
    CompactionOptions(boundary=150),
    CompactionOptions(profile=Profile.RULES),
    CompactionOptions(force=True, context_window=32_000),
    CompactionOptions(force=True, tail_token_budget=60_000),
]


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = default_counter()
    if not isinstance(c, TiktokenCounter):
        pytest.skip("no tokenizer")
    return c


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    big = load_bytes(render(conversation(1500), "openai"), "gen.json")
    return [big, load(SESSIONS / "demo.json"), load(SESSIONS / "claude-code.jsonl")]


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
def test_same_cut_and_exact_head_and_tail(
    transcripts: list[Transcript], options: CompactionOptions, counter: TokenCounter
) -> None:
    for t in transcripts:
        full = plan_boundary(t, options, count_transcript(t, counter), counter=counter)
        d = plan_counting_what_decides(t, options, counter)
        got = d.plan
        assert (got.start, got.end, got.no_op, got.reason, got.snap_reason) == (
            full.start,
            full.end,
            full.no_op,
            full.reason,
            full.snap_reason,
        )
        assert (got.head_tokens, got.tail_tokens, got.static_tokens) == (
            full.head_tokens,
            full.tail_tokens,
            full.static_tokens,
        )
        assert got.summary_budget == full.summary_budget
        kinds = d.kinds(counter)
        assert kinds["head"] == kinds["tail"] == "exact"
        if kinds["middle"] == "exact":
            assert got.middle_tokens == full.middle_tokens
            assert d.tokens.per_message == count_transcript(t, counter).per_message


def test_a_long_middle_is_estimated_and_labelled(
    transcripts: list[Transcript], counter: TokenCounter
) -> None:
    big = transcripts[0]
    d = plan_counting_what_decides(
        big, CompactionOptions(force=True, context_window=64_000), counter
    )
    assert d.kinds(counter) == {
        "head": "exact",
        "middle": "estimated",
        "tail": "exact",
        "total": "estimated",
    }
    assert d.tokens.kind.value == "estimated"
    assert d.exact_tail - d.exact_head > len(big.messages) // 2
