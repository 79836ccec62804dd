"""compress() counting only what decides: the same result as counting everything.

Without ``tokens`` (and no provider, the Hermes profile, an exact counter) compress()
plans with tinyjuice.decisive and estimates the middle it replaces; every output but the
estimated figures (labelled so) equals an all-exact run's, and ``exact_counts`` counts
everything again.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.gen import conversation, render
from tinyjuice import pipeline
from tinyjuice.formats import dumps, load, load_bytes
from tinyjuice.model import Message, Role, TextPart, Transcript
from tinyjuice.options import LOW_SAVINGS_RATIO, CompactionOptions
from tinyjuice.pipeline import compress, plan_boundary
from tinyjuice.report import CompactionResult
from tinyjuice.tokens import (
    CountKind,
    TiktokenCounter,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
    counted_kind,
    default_counter,
)

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"

OPTIONS = [
    CompactionOptions(force=True),
    CompactionOptions(force=True, context_window=200_000),
    CompactionOptions(force=True, context_window=32_000, focus_topic="error tests"),
    CompactionOptions(keep_last=20),
    CompactionOptions(boundary=150),
    CompactionOptions(),
    CompactionOptions(context_window=1_000_000),
]

#: Figures of the report that may be estimates (labelled by ``counts``).
_ESTIMATED = {"before", "saved", "zones", "steps", "tokens_kind", "prompt_tokens", "counts"}


def _counter() -> TokenCounter:
    c = default_counter()
    if not isinstance(c, TiktokenCounter):
        pytest.skip("no tokenizer")
    # A fresh cache, as a process counting for the first time.
    return TiktokenCounter(c._enc, c.name)


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    big = load_bytes(render(conversation(1500), "openai"), "gen.json")
    return [big, load(SESSIONS / "demo.json"), load(SESSIONS / "claude-code.jsonl")]


def _same_outputs(got: CompactionResult, want: CompactionResult) -> None:
    assert got.transcript.messages == want.transcript.messages
    assert dumps(got.transcript, "openai") == dumps(want.transcript, "openai")
    assert got.compacted_middle == want.compacted_middle
    assert got.summary_message == want.summary_message
    assert got.appendix == want.appendix
    g, w = got.report.to_dict(), want.report.to_dict()
    assert {k: v for k, v in g.items() if k not in _ESTIMATED} == {
        k: v for k, v in w.items() if k not in _ESTIMATED
    }
    assert g["zones"]["head"] == w["zones"]["head"]
    assert g["zones"]["tail"] == w["zones"]["tail"]
    assert g["zones"]["middle"]["messages"] == w["zones"]["middle"]["messages"]
    assert got.report.after_tokens == want.report.after_tokens
    assert got.state.compaction_count == want.state.compaction_count
    assert got.state.strikes == want.state.strikes
    assert got.state.previous_summary == want.state.previous_summary
    # The saved share is an estimate, on the same side of the low-savings back-off.
    low = [s < LOW_SAVINGS_RATIO for s in got.state.recent_savings]
    assert low == [s < LOW_SAVINGS_RATIO for s in want.state.recent_savings]


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
def test_counting_what_decides_gives_the_all_exact_result(
    transcripts: list[Transcript], options: CompactionOptions
) -> None:
    for t in transcripts:
        want = compress(t, replace(options, exact_counts=True), counter=_counter(), now=1e6)
        got = compress(t, options, counter=_counter(), now=1e6)
        _same_outputs(got, want)
        exact = count_transcript(t, _counter())
        counts = got.report.counts
        if not counts:
            assert got.report.before_tokens == exact.total
        else:
            assert counts["middle"] == counts["total"] == "estimated"
            assert got.report.to_dict()["counts"] == counts
            assert got.report.tokens_kind == "estimated"
            if got.report.status.value == "compacted":
                events = got.transcript.compactions
                assert events[-1].extra["pre_tokens_kind"] == "estimated"
                # The prune and summary figures read the estimated middle.
                kinds = {st.step: st.kind for st in got.report.steps}
                assert kinds["prune"] == kinds["summary"] == "estimated"
        _assert_exact_step_kinds(t, want)


def test_a_long_middle_is_not_counted_and_exact_counts_forces_it(
    transcripts: list[Transcript],
) -> None:
    big = transcripts[0]
    opts = CompactionOptions(force=True, context_window=200_000)
    got = compress(big, opts, counter=_counter())
    exact = count_transcript(big, _counter())
    assert got.report.to_dict()["counts"]["middle"] == "estimated"
    assert got.report.before_tokens != exact.total
    forced = compress(big, replace(opts, exact_counts=True), counter=_counter())
    assert forced.report.before_tokens == exact.total
    assert set(forced.report.to_dict()["counts"].values()) == {forced.report.tokens_kind}
    assert "pre_tokens_kind" not in forced.transcript.compactions[-1].extra


def test_a_threshold_the_estimate_cannot_decide_is_counted(
    transcripts: list[Transcript],
) -> None:
    """A window whose threshold falls within the estimate's slack: the check reads the
    exact total, so the run fires (or not) exactly as counting everything does."""
    big = transcripts[0]
    tokens = count_transcript(big, _counter())
    total = tokens.total
    for target in (total * 0.98, total * 1.02):
        opts = _threshold_near(big, tokens, target)
        want = compress(big, replace(opts, exact_counts=True), counter=_counter(), now=1e6)
        got = compress(big, opts, counter=_counter(), now=1e6)
        assert got.report.status == want.report.status
        assert got.report.before_tokens == want.report.before_tokens == total
        _same_outputs(got, want)


def _threshold_near(t: Transcript, tokens: TranscriptTokens, target: float) -> CompactionOptions:
    """Options whose threshold is within 1% of ``target`` tokens."""
    low, high = 1_000, 100_000_000
    while True:
        mid = (low + high) // 2
        opts = CompactionOptions(context_window=mid, threshold_floor=0)
        threshold = plan_boundary(t, opts, tokens).budget.threshold_tokens
        if abs(threshold - target) <= target * 0.01:
            return opts
        low, high = (mid, high) if threshold < target else (low, mid)


def _asks(exchanges: int, words_per_ask: int) -> Transcript:
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    msgs = [Message(Role.SYSTEM, (TextPart("You are a helpful agent."),))]
    for i in range(exchanges):
        ask = " ".join(words[(i * 7 + k) % len(words)] + str(k % 13) for k in range(words_per_ask))
        msgs.append(Message(Role.USER, (TextPart(f"ask {i}: {ask}"),)))
        msgs.append(Message(Role.ASSISTANT, (TextPart(f"done with ask {i}"),)))
    return Transcript(messages=tuple(msgs), format="openai")


def test_a_result_that_may_not_be_smaller_is_judged_on_exact_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A small middle of asks the summary quotes verbatim: whether the result is smaller
    turns on the estimate, so the run starts again counted exactly."""
    t = _asks(60, 20)
    restarts: list[int] = []
    counted = pipeline._counted_exactly

    def spy(run: Any, index: Any) -> Any:
        restarts.append(run.estimated)
        return counted(run, index)

    monkeypatch.setattr(pipeline, "_counted_exactly", spy)
    for keep in (20, 30, 40):
        opts = CompactionOptions(keep_last=keep)
        want = compress(t, replace(opts, exact_counts=True), counter=_counter(), now=1e6)
        got = compress(t, opts, counter=_counter(), now=1e6)
        assert got.report.to_dict() == want.report.to_dict()
        assert got.transcript == want.transcript
    assert restarts and all(restarts)


def _steps(result: CompactionResult) -> dict[str, Any]:
    return {st.step: st for st in result.report.steps}


def _assert_exact_step_kinds(t: Transcript, counted: CompactionResult) -> None:
    """Counted exactly, a step's figure is exact unless what it reads holds an image (a
    flat estimate, tokens.counted_kind): the middle, for the prune and summary."""
    middle = t.messages[counted.report.boundary_start : counted.report.boundary_end]
    for st in counted.report.steps:
        span = middle if st.step in ("prune", "summary") else t.messages
        assert st.kind == counted_kind(span, CountKind.EXACT).value, st


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
def test_a_preview_estimates_the_digests_where_the_budget_cannot_turn_on_them(
    transcripts: list[Transcript], options: CompactionOptions
) -> None:
    """Exact ``tokens`` given (the inspector's preview): the prune's new messages are
    estimated only where the summary budget is the same for any count within the slack;
    then the prune and summary figures (which read them) are labelled estimated, and
    every other output equals counting them exactly."""
    for t in transcripts:
        tokens = count_transcript(t, _counter())
        want = compress(t, replace(options, exact_counts=True), tokens=tokens, counter=_counter())
        got = compress(t, options, tokens=tokens, counter=_counter())
        assert got.transcript == want.transcript
        assert got.compacted_middle == want.compacted_middle
        g, w = got.report.to_dict(), want.report.to_dict()
        del g["steps"], w["steps"]
        assert g == w  # the summary too: its budget came out the same
        gs, ws = _steps(got), _steps(want)
        assert gs.keys() == ws.keys()
        _assert_exact_step_kinds(t, want)
        if "prune" not in gs or gs["prune"].kind == "exact":
            assert gs == ws
            continue
        assert gs["summary"].kind == "estimated"
        # Together they are still the middle less the summary, exactly.
        assert (
            gs["prune"].tokens_saved + gs["summary"].tokens_saved
            == ws["prune"].tokens_saved + ws["summary"].tokens_saved
        )


def test_a_preview_labels_both_kinds_and_exact_counts_counts_the_digests(
    transcripts: list[Transcript], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The big transcript's preview at a 200k window (the budget at its ceiling) skips
    counting the digests; at the default window the budget turns on them (counted, exact);
    ``exact_counts`` always counts them. (Its images are taken out: a figure reading
    one is an estimate however it is counted, see the test after this one.)"""
    big = _without_media(transcripts[0])
    tokens = count_transcript(big, _counter())
    counted: list[int] = []
    costs = pipeline._Work.costs

    def spy(self: Any, ms: Any) -> list[int]:
        counted.append(len(ms))
        return costs(self, ms)

    monkeypatch.setattr(pipeline._Work, "costs", spy)
    clamped = CompactionOptions(force=True, context_window=200_000)
    got = compress(big, clamped, tokens=tokens, counter=_counter())
    assert _steps(got)["prune"].kind == "estimated" and not counted
    assert got.report.to_dict()["steps"][0]["kind"] == "estimated"
    forced = compress(big, replace(clamped, exact_counts=True), tokens=tokens, counter=_counter())
    assert _steps(forced)["prune"].kind == "exact" and counted
    counted.clear()
    open_budget = compress(big, CompactionOptions(force=True), tokens=tokens, counter=_counter())
    assert _steps(open_budget)["prune"].kind == "exact" and counted
    assert open_budget.report.to_dict()["steps"][0]["kind"] == "exact"


def _without_media(t: Transcript) -> Transcript:
    from tinyjuice.model import MediaPart

    return replace(
        t,
        messages=tuple(
            replace(m, parts=tuple(p for p in m.parts if not isinstance(p, MediaPart)))
            if m.media
            else m
            for m in t.messages
        ),
    )


def test_a_step_over_an_image_is_labelled_estimated(transcripts: list[Transcript]) -> None:
    """An image is counted with a flat estimate (tokens.counted_kind): the prune and
    summary figures of a middle holding one are estimated, even counted with an exact
    counter, and exact again without it; so are figures read from estimated counts."""
    from tinyjuice.model import MediaPart

    big = _without_media(transcripts[0])
    options = CompactionOptions(force=True, exact_counts=True)
    plain = compress(big, options, tokens=count_transcript(big, _counter()), counter=_counter())
    assert {s.kind for s in plain.report.steps} == {"exact"}
    start, end = plain.report.boundary_start, plain.report.boundary_end
    assert start is not None and end is not None
    msgs = list(big.messages)
    i = next(k for k in range(start + 5, end) if msgs[k].role is Role.USER)
    msgs[i] = replace(msgs[i], parts=(*msgs[i].parts, MediaPart("image/png", 5000)))
    pictured = replace(big, messages=tuple(msgs))
    got = compress(
        pictured, options, tokens=count_transcript(pictured, _counter()), counter=_counter()
    )
    assert got.report.boundary_start == start and got.report.boundary_end == end  # the middle
    assert _steps(got)["prune"].kind == "estimated"
    assert _steps(got)["summary"].kind == "estimated"
    rough = replace(count_transcript(big, _counter()), kind=CountKind.ESTIMATED)
    given = compress(big, options, tokens=rough, counter=_counter())
    assert {s.kind for s in given.report.steps} == {"estimated"}
