"""Threshold, anti-thrash and token-budget rules (numbers from POLICIES.md, Hermes)."""

from __future__ import annotations

import pytest

from tinyjuice.budget import (
    Budget,
    DecisionCode,
    PromptTokens,
    SummaryKind,
    ThresholdRule,
    adopt_lineage,
    compute_budget,
    record_compaction,
    record_failure,
    record_reading,
    should_compress,
    summary_token_budget,
    tail_token_budget,
)
from tinyjuice.options import CompactionState
from tinyjuice.tokens import CountKind

NOW = 1_000.0


# ------------------------------------------------------------------------ threshold


@pytest.mark.parametrize(
    ("window", "raise_small", "threshold", "rule", "ratio"),
    [
        # 200K window: 0.50 raised to 0.75 because it is under 512K.
        (200_000, True, 150_000, ThresholdRule.RATIO, 0.75),
        (200_000, False, 100_000, ThresholdRule.RATIO, 0.50),
        # 1M window: not raised.
        (1_000_000, True, 500_000, ThresholdRule.RATIO, 0.50),
        # 512K exactly is not "under 512K".
        (512_000, True, 256_000, ThresholdRule.RATIO, 0.50),
        (511_999, True, 383_999, ThresholdRule.RATIO, 0.75),
        # 100K without the raise: 50,000 is below the 64,000 floor.
        (100_000, False, 64_000, ThresholdRule.FLOOR, 0.50),
        (100_000, True, 75_000, ThresholdRule.RATIO, 0.75),
        # 80K: 0.75 × 80,000 = 60,000 < 64,000 floor, floor still below the window.
        (80_000, True, 64_000, ThresholdRule.FLOOR, 0.75),
        # Floor reaches the window: min(int(window × 0.85), window − 1).
        (32_000, True, 27_200, ThresholdRule.SMALL_WINDOW, 0.85),
        (8_192, True, 6_963, ThresholdRule.SMALL_WINDOW, 0.85),
    ],
)
def test_threshold_rules(
    window: int, raise_small: bool, threshold: int, rule: ThresholdRule, ratio: float
) -> None:
    b = compute_budget(window, raise_ratio_small_windows=raise_small)
    assert b.threshold_tokens == threshold
    assert b.rule is rule
    assert b.ratio == ratio
    assert b.effective_window == window
    assert b.output_reservation == 0


def test_64k_window_with_64k_floor_threshold_below_64k() -> None:
    b = compute_budget(64_000, floor=64_000)
    assert b.rule is ThresholdRule.SMALL_WINDOW
    assert b.threshold_tokens == 54_400  # int(64,000 × 0.85)
    assert b.threshold_tokens < 64_000
    # A 64Ki window minus a typical output reservation lands in the same rule.
    b2 = compute_budget(65_536, max_output_tokens=4_096)
    assert b2.effective_window == 61_440
    assert b2.rule is ThresholdRule.SMALL_WINDOW
    assert b2.threshold_tokens == 52_224
    assert b2.threshold_tokens < b2.effective_window


def test_small_window_threshold_is_always_below_the_window() -> None:
    # min(int(w × 0.85), w − 1): tiny windows still leave room.
    assert compute_budget(1).threshold_tokens == 1
    assert compute_budget(2).threshold_tokens == 1
    assert compute_budget(10).threshold_tokens == 8
    for w in (3, 50, 999, 63_999):
        b = compute_budget(w)
        assert 0 < b.threshold_tokens < w


def test_output_reservation_reduces_input_budget() -> None:
    plain = compute_budget(200_000)
    reserved = compute_budget(200_000, max_output_tokens=32_000)
    assert reserved.output_reservation == 32_000
    assert reserved.effective_window == 168_000
    assert reserved.threshold_tokens == 126_000  # 0.75 × 168,000
    assert reserved.threshold_tokens < plain.threshold_tokens
    # A reservation can push a window into the small-window rule.
    b = compute_budget(128_000, max_output_tokens=64_000)
    assert b.effective_window == 64_000
    assert b.rule is ThresholdRule.SMALL_WINDOW
    assert b.threshold_tokens == 54_400


@pytest.mark.parametrize("bad", [None, 0, -5, True, 1.5, "4096"])
def test_output_reservation_only_for_positive_int(bad: object) -> None:
    b = compute_budget(200_000, max_output_tokens=bad)  # type: ignore[arg-type]
    assert b.output_reservation == 0
    assert b.effective_window == 200_000


def test_invalid_budget_inputs_raise_actionable_errors() -> None:
    with pytest.raises(ValueError, match="context window"):
        compute_budget(100_000, max_output_tokens=100_000)
    with pytest.raises(ValueError, match="context_window"):
        compute_budget(0)
    with pytest.raises(ValueError, match="threshold_ratio"):
        compute_budget(100_000, threshold_ratio=1.5)


def test_configured_ratio_above_raise_is_kept() -> None:
    b = compute_budget(200_000, threshold_ratio=0.9)
    assert b.ratio == 0.9
    assert b.threshold_tokens == 180_000


def test_budget_explanation_names_the_rule_and_numbers() -> None:
    assert "64,000 floor" in compute_budget(100_000, raise_ratio_small_windows=False).explanation
    text = compute_budget(200_000, max_output_tokens=32_000).explanation
    assert "126,000" in text and "32,000 output reservation" in text and "raised from 50%" in text
    assert "85%" in compute_budget(32_000).explanation


# ------------------------------------------------------------------ token budgets


def test_tail_token_budget_is_threshold_times_clamped_ratio() -> None:
    b = compute_budget(200_000)  # threshold 150,000
    assert tail_token_budget(b) == 30_000
    assert tail_token_budget(b, 0.05) == 15_000  # clamped up to 0.10
    assert tail_token_budget(b, 0.95) == 120_000  # clamped down to 0.80
    assert tail_token_budget(b, 0.5) == 75_000


@pytest.mark.parametrize(
    ("window", "middle", "expected"),
    [
        (200_000, 100_000, 10_000),  # 20% = 20,000, capped by min(5% = 10,000, 10,000)
        (200_000, 30_000, 6_000),  # 20% of the middle
        (200_000, 5_000, 2_000),  # the 2,000 minimum
        (1_000_000, 1_000_000, 10_000),  # 5% = 50,000 but the ceiling is 10,000
        (100_000, 100_000, 5_000),  # 5% of the window
        (32_000, 100_000, 2_000),  # 5% = 1,600 < 2,000: the minimum wins
    ],
)
def test_summary_token_budget(window: int, middle: int, expected: int) -> None:
    assert summary_token_budget(window, middle) == expected


# --------------------------------------------------------------------- decisions


def test_fires_at_and_over_threshold_not_below() -> None:
    b = compute_budget(200_000)
    assert not should_compress(149_999, b, now=NOW).fire
    at = should_compress(150_000, b, now=NOW)
    assert at.fire and at.code is DecisionCode.FIRE
    below = should_compress(10, b, now=NOW)
    assert below.code is DecisionCode.BELOW_THRESHOLD
    assert "150,000" in below.reason


def test_now_is_required() -> None:
    b = compute_budget(200_000)
    with pytest.raises(TypeError):
        should_compress(1, b)  # type: ignore[call-arg]


def test_report_distinguishes_estimated_and_measured_prompt_tokens() -> None:
    b = compute_budget(200_000)
    est = should_compress(160_000, b, now=NOW)
    assert est.count_kind is CountKind.ESTIMATED and est.prompt_tokens == 160_000
    assert "estimated" in est.reason
    measured = should_compress(PromptTokens(160_000, CountKind.MEASURED), b, now=NOW)
    assert measured.count_kind is CountKind.MEASURED
    assert "measured" in measured.reason
    assert measured.threshold_tokens == 150_000
    assert measured.effective_window == 200_000
    with pytest.raises(ValueError):
        PromptTokens(-1)


def test_force_bypasses_transient_cooldown() -> None:
    b = compute_budget(200_000)
    state = record_failure(CompactionState(), "timeout", NOW, 60)
    assert state.cooldown_until == NOW + 60
    blocked = should_compress(180_000, b, state, now=NOW + 30)
    assert not blocked.fire and blocked.code is DecisionCode.COOLDOWN
    assert "timeout" in blocked.reason
    forced = should_compress(180_000, b, state, force=True, now=NOW + 30)
    assert forced.fire and forced.code is DecisionCode.FORCED
    assert "cooldown" in forced.reason
    # Once the cooldown has passed, automatic compaction fires again.
    assert should_compress(180_000, b, state, now=NOW + 60).fire


def test_force_fires_below_threshold_and_says_so() -> None:
    b = compute_budget(200_000)
    d = should_compress(1_000, b, force=True, now=NOW)
    assert d.fire and "below threshold" in d.reason


def test_failure_cooldown_rules() -> None:
    s = CompactionState()
    assert record_failure(s, "auth", NOW, 0) is s  # no cooldown recorded
    long = record_failure(s, "no_provider", NOW, 600)
    # A shorter cooldown does not cut a longer one short.
    assert record_failure(long, "timeout", NOW + 10, 30) is long
    longer = record_failure(long, "rate_limit", NOW + 590, 60)
    assert longer.cooldown_until == NOW + 650 and longer.cooldown_reason == "rate_limit"


def _compact(
    state: CompactionState,
    before: int,
    after: int,
    budget: Budget,
    kind: SummaryKind = SummaryKind.LLM,
) -> CompactionState:
    return record_compaction(
        state,
        tokens_before=before,
        tokens_after=after,
        threshold=budget.threshold_tokens,
        summary_kind=kind,
    )


def test_repeated_under_10_percent_savings_backs_off() -> None:
    b = compute_budget(1_000_000)  # threshold 500,000
    s = _compact(CompactionState(), 520_000, 490_000, b)  # 5.8%
    assert s.strikes == 0
    assert should_compress(510_000, b, s, now=NOW).fire  # one low saving is not enough
    s = _compact(s, 530_000, 495_000, b)  # 6.6%
    d = should_compress(510_000, b, s, now=NOW)
    assert not d.fire and d.code is DecisionCode.LOW_SAVINGS
    assert "10%" in d.reason
    assert should_compress(510_000, b, s, force=True, now=NOW).fire
    # A reading below the threshold lifts the back-off.
    s2 = record_reading(s, 400_000, b)
    assert s2.recent_savings == ()
    assert should_compress(510_000, b, s2, now=NOW).fire


def test_savings_of_exactly_10_percent_do_not_back_off() -> None:
    b = compute_budget(1_000_000)
    s = _compact(CompactionState(), 500_000, 450_000, b)  # 10%
    s = _compact(s, 500_000, 450_000, b)
    assert should_compress(510_000, b, s, now=NOW).fire
    # One low and one good compaction in the last two: no back-off either.
    s = _compact(_compact(CompactionState(), 520_000, 500_000, b), 520_000, 100_000, b)
    assert should_compress(510_000, b, s, now=NOW).fire


def test_two_strikes_block_auto_until_reading_below_threshold() -> None:
    b = compute_budget(200_000)  # threshold 150,000
    s = _compact(CompactionState(), 190_000, 120_000, b)
    assert s.strikes == 0 and s.awaiting_reading
    s = record_reading(s, 160_000, b)  # still over the threshold after compaction
    assert s.strikes == 1 and not s.auto_blocked
    assert record_reading(s, 170_000, b) is s  # no compaction since: no new strike
    assert should_compress(170_000, b, s, now=NOW).fire
    s = _compact(s, 170_000, 110_000, b)
    s = record_reading(s, 155_000, b)
    assert s.strikes == 2 and s.auto_blocked
    d = should_compress(180_000, b, s, now=NOW)
    assert not d.fire and d.code is DecisionCode.BLOCKED and "strikes" in d.reason
    assert should_compress(180_000, b, s, force=True, now=NOW).fire
    # Readings still over the threshold keep the block.
    assert record_reading(s, 200_000, b).auto_blocked
    s = record_reading(s, PromptTokens(90_000, CountKind.MEASURED), b)
    assert not s.auto_blocked and s.strikes == 0
    assert should_compress(180_000, b, s, now=NOW).fire


def test_no_op_compaction_is_a_strike_immediately() -> None:
    b = compute_budget(200_000)
    s = _compact(CompactionState(), 160_000, 160_000, b)
    assert s.strikes == 1 and not s.awaiting_reading
    # Its next reading does not count it twice.
    assert record_reading(s, 170_000, b).strikes == 1
    s = _compact(s, 160_000, 161_000, b)
    assert s.strikes == 2 and s.auto_blocked


def test_compaction_still_over_threshold_is_a_strike() -> None:
    b = compute_budget(200_000)
    s = _compact(CompactionState(), 190_000, 155_000, b)
    assert s.strikes == 1


def test_two_fallback_summaries_in_a_row_block_auto() -> None:
    b = compute_budget(200_000)
    s = _compact(CompactionState(), 190_000, 60_000, b, SummaryKind.FALLBACK)
    assert s.fallback_streak == 1 and not s.auto_blocked
    s = _compact(s, 190_000, 60_000, b, SummaryKind.LLM)
    assert s.fallback_streak == 0
    s = _compact(s, 190_000, 60_000, b, SummaryKind.FALLBACK)
    s = _compact(s, 190_000, 60_000, b, "fallback")
    assert s.fallback_streak == 2 and s.auto_blocked and s.strikes == 0
    d = should_compress(170_000, b, s, now=NOW)
    assert not d.fire and "fallback" in d.reason
    s = record_reading(s, 50_000, b)
    assert not s.auto_blocked and s.fallback_streak == 0


def test_record_compaction_bookkeeping() -> None:
    b = compute_budget(200_000)
    s = record_failure(CompactionState(), "timeout", NOW, 60)
    s = record_compaction(
        s,
        tokens_before=180_000,
        tokens_after=45_000,
        threshold=b.threshold_tokens,
        summary_kind=SummaryKind.LLM,
        lineage_id="sess-1",
        summary="## Goal\nship it",
    )
    assert s.compaction_count == 1
    assert s.recent_savings == (0.75,)
    assert s.cooldown_until is None and s.cooldown_reason is None
    assert s.lineage_id == "sess-1" and s.previous_summary == "## Goal\nship it"
    for _ in range(6):
        s = _compact(s, 100_000, 50_000, b)
    assert len(s.recent_savings) == 5 and s.compaction_count == 7
    with pytest.raises(ValueError):
        _compact(s, -1, 0, b)
    with pytest.raises(ValueError):
        _compact(s, 10, 5, b, "summary-of-sorts")  # type: ignore[arg-type]


def test_adopt_lineage_never_inherits_another_session() -> None:
    s = CompactionState(compaction_count=3, previous_summary="old", lineage_id="a")
    assert adopt_lineage(s, "a") is s
    fresh = adopt_lineage(s, "b")
    assert fresh.previous_summary is None and fresh.compaction_count == 0
    assert fresh.lineage_id == "b"
    assert adopt_lineage(s, None).previous_summary is None
    assert adopt_lineage(None, "c") == CompactionState(lineage_id="c")
