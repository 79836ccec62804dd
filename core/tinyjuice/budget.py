"""When compaction fires: effective window, threshold, anti-thrash state, token budgets.

The threshold follows Hermes (see ``POLICIES.md``)::

    effective window = context window − output reservation
    threshold        = max(int(effective × ratio), floor)          # ratio 0.50, floor 64,000
    ratio            = max(ratio, 0.75) when the effective window is under 512K (a flag)
    small window     = when floor >= effective window:
                       threshold = min(int(effective × 0.85), effective − 1)

Whether to fire is decided by :func:`should_compress` from a prompt size, the
:class:`Budget` and the caller-owned :class:`CompactionState` (cooldowns, strikes and
savings history). Nothing here reads a clock: ``now`` is always passed in.

Anti-thrash, both rules apply:

* Hermes strikes: a compaction that was a no-op, or after which the prompt is still at
  or over the threshold, counts one strike. Two strikes, or two fallback summaries in a
  row, block automatic compaction until a reading below the threshold arrives
  (:func:`record_reading`).
* Seed 003: when each of the last two compactions saved under 10% of the prompt,
  automatic compaction backs off, again until a reading below the threshold.

``force=True`` (a manual ``/compress``) bypasses the threshold, every cooldown and both
anti-thrash rules. That is safe because a forced run still goes through the summary
failure policy: an auth or network failure aborts with the messages unchanged, so the
worst a forced retry can do is fail again. The decision still names what it bypassed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from tinyjuice.tokens import CountKind

__all__ = [
    "DEFAULT_FLOOR",
    "DEFAULT_THRESHOLD_RATIO",
    "LOW_SAVINGS_RATIO",
    "SMALL_WINDOW_RATIO",
    "Budget",
    "CompactionState",
    "Decision",
    "DecisionCode",
    "PromptTokens",
    "SummaryKind",
    "ThresholdRule",
    "adopt_lineage",
    "compute_budget",
    "record_compaction",
    "record_failure",
    "record_reading",
    "should_compress",
    "summary_token_budget",
    "tail_token_budget",
]

DEFAULT_THRESHOLD_RATIO = 0.50
DEFAULT_FLOOR = 64_000
#: Windows under this size get the ratio raised to at least :data:`RAISED_RATIO`.
RAISE_RATIO_BELOW = 512_000
RAISED_RATIO = 0.75
#: Threshold ratio used when the floor reaches the effective window.
SMALL_WINDOW_RATIO = 0.85
#: A compaction saving less than this fraction of the prompt is "low savings".
LOW_SAVINGS_RATIO = 0.10
#: Strikes (or fallback summaries in a row) that block automatic compaction.
STRIKE_LIMIT = 2
#: How many savings ratios :class:`CompactionState` remembers.
SAVINGS_HISTORY = 5

TAIL_RATIO_DEFAULT = 0.20
TAIL_RATIO_MIN = 0.10
TAIL_RATIO_MAX = 0.80

SUMMARY_MIN_TOKENS = 2_000
SUMMARY_CEILING_TOKENS = 10_000
SUMMARY_WINDOW_SHARE = 0.05
SUMMARY_MIDDLE_SHARE = 0.20


class ThresholdRule(StrEnum):
    """Which rule produced the threshold."""

    RATIO = "ratio"  # int(effective × ratio) was above the floor
    FLOOR = "floor"  # the floor was higher than int(effective × ratio)
    SMALL_WINDOW = "small_window"  # the floor reached the window: 85% of it instead
    BUFFER = "buffer"  # another agent's policy: the window minus a reserved buffer
    LIMIT = "limit"  # another agent's policy: a configured token limit


@dataclass(frozen=True, slots=True)
class Budget:
    """The compaction threshold for one model window, with how it was derived."""

    context_window: int
    output_reservation: int
    effective_window: int
    threshold_tokens: int
    rule: ThresholdRule
    #: The ratio actually applied (after the small-window raise, or 0.85).
    ratio: float
    floor: int = DEFAULT_FLOOR
    #: The ratio the caller configured, before any raise.
    configured_ratio: float = DEFAULT_THRESHOLD_RATIO
    #: How another agent's policy derived the threshold (see :mod:`tinyjuice.policies`);
    #: the explanation when set.
    note: str | None = None

    @property
    def explanation(self) -> str:
        """One line saying how the threshold was derived (no transcript content)."""
        if self.note is not None:
            return self.note
        eff = f"{self.effective_window:,}"
        if self.output_reservation:
            eff = (
                f"{self.effective_window:,} ({self.context_window:,} window − "
                f"{self.output_reservation:,} output reservation)"
            )
        raised = (
            f" (raised from {self.configured_ratio:.0%} for a window under "
            f"{RAISE_RATIO_BELOW // 1000}K)"
            if self.ratio != self.configured_ratio and self.rule is not ThresholdRule.SMALL_WINDOW
            else ""
        )
        if self.rule is ThresholdRule.SMALL_WINDOW:
            return (
                f"threshold {self.threshold_tokens:,} = {self.ratio:.0%} of effective window "
                f"{eff}, because the {self.floor:,} floor reaches the window"
            )
        if self.rule is ThresholdRule.FLOOR:
            return (
                f"threshold {self.threshold_tokens:,} = the {self.floor:,} floor "
                f"({self.ratio:.0%}{raised} of effective window {eff} is lower)"
            )
        return f"threshold {self.threshold_tokens:,} = {self.ratio:.0%}{raised} of effective window {eff}"


def compute_budget(
    context_window: int,
    *,
    max_output_tokens: int | None = None,
    threshold_ratio: float = DEFAULT_THRESHOLD_RATIO,
    floor: int = DEFAULT_FLOOR,
    raise_ratio_small_windows: bool = True,
) -> Budget:
    """The Hermes threshold for ``context_window``.

    ``max_output_tokens`` is reserved only when it is a positive int (as Hermes does).
    """
    if (
        isinstance(context_window, bool)
        or not isinstance(context_window, int)
        or context_window <= 0
    ):
        raise ValueError(
            f"context_window must be a positive number of tokens, got {context_window!r}"
        )
    if not 0.0 < threshold_ratio <= 1.0:
        raise ValueError(f"threshold_ratio must be in (0, 1], got {threshold_ratio!r}")
    if floor < 0:
        raise ValueError(f"floor must be >= 0 tokens, got {floor!r}")
    reservation = 0
    if (
        isinstance(max_output_tokens, int)
        and not isinstance(max_output_tokens, bool)
        and max_output_tokens > 0
    ):
        reservation = max_output_tokens
    if reservation >= context_window:
        raise ValueError(
            f"max_output_tokens ({reservation:,}) must be smaller than the context window "
            f"({context_window:,}); nothing would be left for the prompt"
        )
    effective = context_window - reservation
    if floor >= effective:
        return Budget(
            context_window=context_window,
            output_reservation=reservation,
            effective_window=effective,
            threshold_tokens=max(1, min(int(effective * SMALL_WINDOW_RATIO), effective - 1)),
            rule=ThresholdRule.SMALL_WINDOW,
            ratio=SMALL_WINDOW_RATIO,
            floor=floor,
            configured_ratio=threshold_ratio,
        )
    ratio = threshold_ratio
    if raise_ratio_small_windows and effective < RAISE_RATIO_BELOW:
        ratio = max(ratio, RAISED_RATIO)
    by_ratio = int(effective * ratio)
    rule = ThresholdRule.RATIO if by_ratio >= floor else ThresholdRule.FLOOR
    return Budget(
        context_window=context_window,
        output_reservation=reservation,
        effective_window=effective,
        threshold_tokens=max(by_ratio, floor),
        rule=rule,
        ratio=ratio,
        floor=floor,
        configured_ratio=threshold_ratio,
    )


@dataclass(frozen=True, slots=True)
class PromptTokens:
    """A prompt size and whether it was estimated, exactly counted or provider-measured."""

    value: int
    kind: CountKind = CountKind.ESTIMATED

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError(f"prompt tokens cannot be negative, got {self.value}")

    def __str__(self) -> str:
        return f"{self.value:,} {self.kind.value} tokens"


def _prompt(prompt_tokens: int | PromptTokens, default_kind: CountKind) -> PromptTokens:
    if isinstance(prompt_tokens, PromptTokens):
        return prompt_tokens
    return PromptTokens(int(prompt_tokens), default_kind)


class SummaryKind(StrEnum):
    """What replaced the middle in a compaction."""

    LLM = "llm"
    FALLBACK = "fallback"
    NONE = "none"  # digests only, or an empty middle


@dataclass(frozen=True, slots=True)
class CompactionState:
    """Caller-owned state carried between compactions of one session."""

    compaction_count: int = 0
    strikes: int = 0
    fallback_streak: int = 0
    #: Fraction of the prompt each recent compaction saved, oldest first.
    recent_savings: tuple[float, ...] = ()
    cooldown_until: float | None = None
    cooldown_reason: str | None = None
    auto_blocked: bool = False
    previous_summary: str | None = None
    lineage_id: str | None = None
    #: A compaction happened and the next reading decides whether it earned a strike.
    awaiting_reading: bool = field(default=False)

    @property
    def low_savings_backoff(self) -> bool:
        """The last two compactions each saved less than 10%."""
        last = self.recent_savings[-2:]
        return len(last) == 2 and all(s < LOW_SAVINGS_RATIO for s in last)

    def in_cooldown(self, now: float) -> bool:
        return self.cooldown_until is not None and now < self.cooldown_until


class DecisionCode(StrEnum):
    FIRE = "fire"
    FORCED = "forced"
    BELOW_THRESHOLD = "below_threshold"
    COOLDOWN = "cooldown"
    BLOCKED = "blocked"
    LOW_SAVINGS = "low_savings"


@dataclass(frozen=True, slots=True)
class Decision:
    fire: bool
    reason: str
    budget: Budget
    code: DecisionCode = DecisionCode.FIRE
    #: The prompt size the decision was made on (value and whether it is measured).
    prompt: PromptTokens = field(default_factory=lambda: PromptTokens(0))

    @property
    def prompt_tokens(self) -> int:
        return self.prompt.value

    @property
    def count_kind(self) -> CountKind:
        return self.prompt.kind

    @property
    def threshold_tokens(self) -> int:
        return self.budget.threshold_tokens

    @property
    def effective_window(self) -> int:
        return self.budget.effective_window


def _block_reason(state: CompactionState) -> str:
    if state.fallback_streak >= STRIKE_LIMIT:
        return f"{state.fallback_streak} fallback summaries in a row"
    return f"{state.strikes} ineffective compactions (strikes)"


def _savings_text(state: CompactionState) -> str:
    return ", ".join(f"{s:.0%}" for s in state.recent_savings[-2:])


def should_compress(
    prompt_tokens: int | PromptTokens,
    budget: Budget,
    state: CompactionState | None = None,
    *,
    force: bool = False,
    now: float,
) -> Decision:
    """Whether to compact now. A plain int is treated as an estimate.

    Order: force → below threshold → cooldown → strike block → low-savings back-off.
    """
    prompt = _prompt(prompt_tokens, CountKind.ESTIMATED)
    state = state or CompactionState()
    threshold = budget.threshold_tokens
    size = f"prompt {prompt}"
    if force:
        bypassed: list[str] = []
        if prompt.value < threshold:
            bypassed.append(f"below threshold {threshold:,}")
        if state.in_cooldown(now):
            bypassed.append(f"cooldown after {state.cooldown_reason or 'a failure'}")
        if state.auto_blocked:
            bypassed.append(f"anti-thrash block ({_block_reason(state)})")
        elif state.low_savings_backoff:
            bypassed.append(f"low-savings back-off ({_savings_text(state)})")
        note = f"; bypassed {', '.join(bypassed)}" if bypassed else ""
        return Decision(True, f"forced ({size}){note}", budget, DecisionCode.FORCED, prompt)
    if prompt.value < threshold:
        return Decision(
            False,
            f"{size} is below threshold {threshold:,}",
            budget,
            DecisionCode.BELOW_THRESHOLD,
            prompt,
        )
    over = f"{size} >= threshold {threshold:,}"
    if state.in_cooldown(now):
        assert state.cooldown_until is not None
        left = state.cooldown_until - now
        return Decision(
            False,
            f"{over}, but in cooldown after {state.cooldown_reason or 'a failure'} "
            f"for another {left:.0f} s",
            budget,
            DecisionCode.COOLDOWN,
            prompt,
        )
    if state.auto_blocked:
        return Decision(
            False,
            f"{over}, but automatic compaction is blocked after {_block_reason(state)} "
            "until a reading below the threshold",
            budget,
            DecisionCode.BLOCKED,
            prompt,
        )
    if state.low_savings_backoff:
        return Decision(
            False,
            f"{over}, but the last two compactions each saved under "
            f"{LOW_SAVINGS_RATIO:.0%} ({_savings_text(state)})",
            budget,
            DecisionCode.LOW_SAVINGS,
            prompt,
        )
    return Decision(True, over, budget, DecisionCode.FIRE, prompt)


def record_compaction(
    state: CompactionState,
    *,
    tokens_before: int,
    tokens_after: int,
    threshold: int,
    summary_kind: SummaryKind | str,
    lineage_id: str | None = None,
    summary: str | None = None,
) -> CompactionState:
    """The state after a compaction that went from ``tokens_before`` to ``tokens_after``.

    A no-op (no saving) or a result still at or over ``threshold`` is a strike now;
    otherwise the next :func:`record_reading` decides. Any completed compaction clears
    the cooldown. ``summary`` (the new summary text) becomes ``previous_summary``.
    """
    if tokens_before < 0 or tokens_after < 0:
        raise ValueError("token counts cannot be negative")
    kind = SummaryKind(summary_kind)
    saved = (tokens_before - tokens_after) / tokens_before if tokens_before > 0 else 0.0
    strike_now = tokens_after >= tokens_before or tokens_after >= threshold
    strikes = state.strikes + (1 if strike_now else 0)
    streak = state.fallback_streak + 1 if kind is SummaryKind.FALLBACK else 0
    return replace(
        state,
        compaction_count=state.compaction_count + 1,
        strikes=strikes,
        fallback_streak=streak,
        recent_savings=(*state.recent_savings, saved)[-SAVINGS_HISTORY:],
        cooldown_until=None,
        cooldown_reason=None,
        auto_blocked=state.auto_blocked or strikes >= STRIKE_LIMIT or streak >= STRIKE_LIMIT,
        previous_summary=summary if summary is not None else state.previous_summary,
        lineage_id=lineage_id if lineage_id is not None else state.lineage_id,
        awaiting_reading=not strike_now,
    )


def record_reading(
    state: CompactionState, prompt_tokens: int | PromptTokens, budget: Budget
) -> CompactionState:
    """The state after the host observed a prompt size (a plain int means measured).

    The first reading after a compaction that is still at or over the threshold is a
    strike. Any reading below the threshold lifts every anti-thrash block: strikes,
    the fallback streak and the savings history are cleared.
    """
    prompt = _prompt(prompt_tokens, CountKind.MEASURED)
    if prompt.value < budget.threshold_tokens:
        cleared = replace(
            state,
            strikes=0,
            fallback_streak=0,
            recent_savings=(),
            auto_blocked=False,
            awaiting_reading=False,
        )
        return state if cleared == state else cleared
    if not state.awaiting_reading:
        return state
    strikes = state.strikes + 1
    return replace(
        state,
        strikes=strikes,
        auto_blocked=state.auto_blocked or strikes >= STRIKE_LIMIT,
        awaiting_reading=False,
    )


def record_failure(
    state: CompactionState, failure_class: str, now: float, cooldown_s: float
) -> CompactionState:
    """The state after a failed summary: a cooldown of ``cooldown_s`` seconds from ``now``.

    ``cooldown_s <= 0`` records no cooldown. A longer cooldown already running is kept.
    """
    if cooldown_s <= 0:
        return state
    until = now + cooldown_s
    if state.cooldown_until is not None and state.cooldown_until >= until:
        return state
    return replace(state, cooldown_until=until, cooldown_reason=str(failure_class))


def adopt_lineage(state: CompactionState | None, lineage_id: str | None) -> CompactionState:
    """State for a session of ``lineage_id``: another lineage's state is never inherited.

    Same lineage → ``state`` unchanged. A different (or unknown) lineage → fresh state,
    so a new session cannot pick up another session's previous summary.
    """
    if state is not None and lineage_id is not None and state.lineage_id == lineage_id:
        return state
    return CompactionState(lineage_id=lineage_id)


def tail_token_budget(budget: Budget, target_ratio: float = TAIL_RATIO_DEFAULT) -> int:
    """Tokens the protected tail may hold: threshold × ratio (ratio clamped to 0.10–0.80)."""
    ratio = min(TAIL_RATIO_MAX, max(TAIL_RATIO_MIN, target_ratio))
    return int(budget.threshold_tokens * ratio)


def summary_token_budget(context_window: int, middle_tokens: int) -> int:
    """Target summary size: max(2,000, min(20% of the middle, min(5% of window, 10,000))).

    Like Hermes, the 2,000 minimum wins even when 5% of a small window is lower.
    """
    ceiling = min(int(context_window * SUMMARY_WINDOW_SHARE), SUMMARY_CEILING_TOKENS)
    return max(SUMMARY_MIN_TOKENS, min(int(middle_tokens * SUMMARY_MIDDLE_SHARE), ceiling))
