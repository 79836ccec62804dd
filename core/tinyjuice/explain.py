"""Why compaction fired (or did not): each past compaction and the current state, judged
by a trigger policy.

For every compaction event in the transcript, :func:`explain` reports the tokens
before it (the event's recorded ``pre_tokens``, else the usage point just before when
the transcript keeps the history the compaction replaced; unknown otherwise), the
policy's threshold and the rule that produced it, the tokens after (``post_tokens``,
else the next point), the savings, whether the next turn was still over the threshold,
and manual vs automatic. It flags what users ask about:

``far_below_threshold``
    an automatic (or unrecorded) compaction fired under half of the policy's threshold.
``ineffective``
    the turn after the compaction was still at or over the threshold: it would fire
    again at once (thrash risk).
``low_savings`` / ``consecutive_low_savings``
    the compaction saved under 10% of the prompt; twice in a row is a loop.
``estimate_inflated_by_tool_schemas``
    at the turn before, the counted estimate exceeds the measured prompt by more than
    a margin, and the tool schema tokens account for most of the difference.

For the current state: the prompt the next call would send, whether it would fire,
headroom in tokens and in turns at the recent growth rate, and the message at which
it would next fire. :attr:`Explanation.would_fire_at` replays the policy over the usage
series (see :func:`tinyjuice.policies.replay`). Nothing here reads transcript content
beyond counting it; every figure is a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tinyjuice.budget import (
    LOW_SAVINGS_RATIO,
    CompactionState,
    DecisionCode,
    PromptTokens,
    SummaryKind,
    record_compaction,
    record_reading,
    should_compress,
)
from tinyjuice.model import CompactionEvent, Transcript, Trigger
from tinyjuice.models import ModelLimits
from tinyjuice.policies import (
    Rule,
    Threshold,
    TriggerPolicy,
    UsagePoint,
    UsageSeries,
    WindowInfo,
    agent_threshold,
    replay,
    resolve_window,
    usage_series,
)
from tinyjuice.tokens import CountKind, TokenCounter, TranscriptTokens, count_transcript

__all__ = [
    "FAR_BELOW_RATIO",
    "GROWTH_WINDOW",
    "INFLATION_MARGIN",
    "INFLATION_MIN_TOKENS",
    "INFLATION_SCHEMA_SHARE",
    "CurrentState",
    "EventExplanation",
    "EventFlag",
    "Explanation",
    "Inflation",
    "TokenSource",
    "explain",
]

#: An automatic compaction under this share of the threshold fired "far below" it.
FAR_BELOW_RATIO = 0.50
#: The estimate must exceed the measured prompt by more than this share of it…
INFLATION_MARGIN = 0.05
#: …and by more than this many tokens, to be called inflated.
INFLATION_MIN_TOKENS = 1_000
#: Share of the excess the tool schemas must cover for "mostly tool schemas".
INFLATION_SCHEMA_SHARE = 0.50
#: Recent points (of the current live context) the growth rate is measured over.
GROWTH_WINDOW = 6


class EventFlag(StrEnum):
    FAR_BELOW_THRESHOLD = "far_below_threshold"
    INEFFECTIVE = "ineffective"
    LOW_SAVINGS = "low_savings"
    CONSECUTIVE_LOW_SAVINGS = "consecutive_low_savings"
    ESTIMATE_INFLATED_BY_TOOL_SCHEMAS = "estimate_inflated_by_tool_schemas"
    #: A rule of the compacted turns (CLAUDE.md, AGENTS.md, a skill, the user's "never
    #: …") is neither in the summary nor still in context (tinyjuice.survival).
    RULES_LOST = "rules_lost"


class TokenSource(StrEnum):
    """Where a before/after figure came from."""

    RECORDED = "recorded"  # the compaction event recorded it (Claude Code preTokens)
    MEASURED = "measured"  # a provider-measured usage point
    EXACT = "exact"  # counted with a tokenizer (no measurement involved)
    ESTIMATED = "estimated"  # the rough counter, or a count adjusted by a measurement
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Inflation:
    """An estimate compared with the measured prompt at the same turn."""

    message_index: int
    estimate: int
    measured: int
    tool_tokens: int

    @property
    def excess(self) -> int:
        return self.estimate - self.measured


def _inflation(point: UsagePoint | None, tool_tokens: int) -> Inflation | None:
    if point is None or not point.measured or tool_tokens <= 0:
        return None
    excess = point.estimate - point.tokens
    if excess <= max(INFLATION_MIN_TOKENS, INFLATION_MARGIN * point.tokens):
        return None
    if min(tool_tokens, excess) < INFLATION_SCHEMA_SHARE * excess:
        return None
    return Inflation(point.message_index, point.estimate, point.tokens, tool_tokens)


#: The count kind of a before/after figure, by where it came from.
_SOURCE_KINDS: dict[TokenSource, CountKind] = {
    TokenSource.RECORDED: CountKind.MEASURED,
    TokenSource.MEASURED: CountKind.MEASURED,
    TokenSource.EXACT: CountKind.EXACT,
}


def _source(point: UsagePoint) -> TokenSource:
    if point.measured:
        return TokenSource.MEASURED
    return TokenSource.EXACT if point.kind is CountKind.EXACT else TokenSource.ESTIMATED


@dataclass(frozen=True, slots=True)
class EventExplanation:
    """One past compaction, judged by the policy."""

    #: 1-based position among the transcript's compactions.
    number: int
    #: ``CompactionEvent.message_index``: the first message after the compaction.
    index: int
    trigger: Trigger
    pre_tokens: int | None
    pre_source: TokenSource
    threshold_tokens: int
    rule: Rule
    post_tokens: int | None
    post_source: TokenSource
    flags: tuple[EventFlag, ...] = ()
    #: Message index of the usage point used for "after" (None when recorded/unknown).
    post_index: int | None = None
    #: The policy's anti-thrash would have held this automatic compaction back
    #: (``blocked`` or ``low_savings``); None otherwise.
    anti_thrash: str | None = None
    inflation: Inflation | None = None
    #: The rules this compaction lost, with the index of the message that held each.
    rules_lost: tuple[tuple[str, int], ...] = ()

    @property
    def manual(self) -> bool:
        return self.trigger is Trigger.MANUAL

    @property
    def saved_tokens(self) -> int | None:
        if self.pre_tokens is None or self.post_tokens is None:
            return None
        return self.pre_tokens - self.post_tokens

    @property
    def saved_ratio(self) -> float | None:
        saved = self.saved_tokens
        if saved is None or not self.pre_tokens:
            return None
        return saved / self.pre_tokens

    @property
    def still_over(self) -> bool | None:
        """The next turn was still at or over the threshold (None when unknown)."""
        if self.post_tokens is None:
            return None
        return self.post_tokens >= self.threshold_tokens

    @property
    def threshold_share(self) -> float | None:
        """Tokens before as a share of the threshold."""
        if self.pre_tokens is None or not self.threshold_tokens:
            return None
        return self.pre_tokens / self.threshold_tokens

    def summary(self) -> str:
        """One line: trigger, before → after, the threshold and its rule."""
        pre = "?" if self.pre_tokens is None else f"{self.pre_tokens:,}"
        post = "?" if self.post_tokens is None else f"{self.post_tokens:,}"
        text = (
            f"#{self.number} at message {self.index} · {self.trigger.value} · "
            f"before {pre} ({self.pre_source.value}) → after {post} ({self.post_source.value})"
            f" · threshold {self.threshold_tokens:,} ({self.rule.value})"
        )
        if self.saved_tokens is not None and self.saved_ratio is not None:
            text += f" · saved {self.saved_tokens:,} ({self.saved_ratio:.0%})"
        return text

    def reasons(self) -> tuple[str, ...]:
        """A sentence per flag (and for the anti-thrash hold), in flag order."""
        out: list[str] = []
        share = self.threshold_share
        if share is not None:
            where = "at or over" if share >= 1 else f"at {share:.0%} of"
            out.append(
                f"fired {where} the threshold ({self.pre_tokens:,} vs {self.threshold_tokens:,})"
            )
        for flag in self.flags:
            if flag is EventFlag.FAR_BELOW_THRESHOLD:
                out.append(
                    f"far below the threshold (under {FAR_BELOW_RATIO:.0%}): a lower override, "
                    "a different window, a manual compaction or an inflated estimate"
                )
            elif flag is EventFlag.INEFFECTIVE:
                out.append(
                    f"ineffective: the next turn was still over the threshold "
                    f"({self.post_tokens:,} ≥ {self.threshold_tokens:,}); it fires again (thrash)"
                )
            elif flag is EventFlag.LOW_SAVINGS and self.saved_ratio is not None:
                out.append(f"low savings: {self.saved_ratio:.1%} (< {LOW_SAVINGS_RATIO:.0%})")
            elif flag is EventFlag.CONSECUTIVE_LOW_SAVINGS:
                out.append(
                    f"this and the previous compaction each saved < {LOW_SAVINGS_RATIO:.0%}: a loop"
                )
            elif flag is EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS and self.inflation:
                inf = self.inflation
                out.append(
                    f"estimate inflated: counted {inf.estimate:,} vs measured {inf.measured:,} "
                    f"(+{inf.excess:,}), mostly tool schemas ({inf.tool_tokens:,})"
                )
            elif flag is EventFlag.RULES_LOST and self.rules_lost:
                shown = "; ".join(f"#{i} {_clip(t)}" for t, i in self.rules_lost[:3])
                more = f" (+{len(self.rules_lost) - 3} more)" if len(self.rules_lost) > 3 else ""
                out.append(
                    f"lost {len(self.rules_lost)} rule(s) the summary should have kept: "
                    f"{shown}{more}"
                )
        if self.anti_thrash is not None:
            out.append(f"the policy's anti-thrash would have held it back ({self.anti_thrash})")
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "index": self.index,
            "trigger": self.trigger.value,
            "manual": self.manual,
            "pre_tokens": self.pre_tokens,
            "pre_source": self.pre_source.value,
            "threshold_tokens": self.threshold_tokens,
            "rule": self.rule.value,
            "post_tokens": self.post_tokens,
            "post_source": self.post_source.value,
            "post_index": self.post_index,
            "saved_tokens": self.saved_tokens,
            "saved_ratio": self.saved_ratio,
            "still_over_threshold": self.still_over,
            "flags": [f.value for f in self.flags],
            "anti_thrash": self.anti_thrash,
            "rules_lost": [{"text": t, "index": i} for t, i in self.rules_lost],
            "reasons": list(self.reasons()),
        }


def _clip(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def rules_lost_by_event(transcript: Transcript) -> dict[int, tuple[tuple[str, int], ...]]:
    """``{event.message_index: ((rule, index), …)}`` for every compaction whose summary
    lost a rule of the turns it replaced (:mod:`tinyjuice.survival`; kept = the
    messages after the summary, up to the next compaction, where an agent re-injects
    its rules files)."""
    from tinyjuice.survival import check_rules, find_rules

    msgs = transcript.messages
    events = sorted(
        (e for e in transcript.compactions if e.summary_index is not None),
        key=lambda e: e.summary_index or 0,
    )
    out: dict[int, tuple[tuple[str, int], ...]] = {}
    previous = 0
    for k, e in enumerate(events):
        at = e.summary_index or 0
        if not 0 <= at < len(msgs):
            continue
        nxt = events[k + 1].summary_index if k + 1 < len(events) else None
        after = msgs[at + 1 : nxt if nxt is not None else len(msgs)]
        report = check_rules(
            find_rules(msgs[previous:at], start_index=previous), msgs[at].text, after
        )
        if report.lost:
            out[e.message_index] = tuple((c.rule.text, c.rule.index) for c in report.lost)
        previous = at
    return out


@dataclass(frozen=True, slots=True)
class CurrentState:
    """Where the session stands now under the policy."""

    #: The prompt the next model call would send (last turn + messages since).
    tokens: int
    kind: CountKind
    threshold_tokens: int
    #: Tokens per assistant turn over the recent points (None with < 2 points).
    growth_per_turn: float | None
    #: Messages per assistant turn over the same points.
    messages_per_turn: float | None
    #: Message count of the transcript (the next message's index).
    message_count: int
    #: The last usage point of the live context (the growth projection starts there).
    last_index: int | None = None
    last_tokens: int | None = None
    anti_thrash: str | None = None
    flags: tuple[EventFlag, ...] = ()
    inflation: Inflation | None = None

    @property
    def would_fire(self) -> bool:
        return self.tokens >= self.threshold_tokens

    @property
    def headroom_tokens(self) -> int:
        """Tokens left before the threshold (negative when over it)."""
        return self.threshold_tokens - self.tokens

    @property
    def headroom_turns(self) -> int | None:
        """Assistant turns until it fires at the recent growth rate (0 = the next call).

        Counted from the last turn: the first turn whose projected prompt (last turn's
        tokens + turns × growth) reaches the threshold. None when not growing.
        """
        if self.would_fire:
            return 0
        if not self.growth_per_turn or self.growth_per_turn <= 0 or self.last_tokens is None:
            return None
        return max(1, math.ceil((self.threshold_tokens - self.last_tokens) / self.growth_per_turn))

    @property
    def next_fire_message(self) -> int | None:
        """Estimated index of the message at which it would next fire."""
        turns = self.headroom_turns
        if turns is None:
            return None
        if turns == 0 or self.last_index is None:
            return self.message_count
        per = self.messages_per_turn or 1.0
        return max(self.message_count, self.last_index + math.ceil(turns * per))

    def summary(self) -> str:
        text = f"{self.tokens:,} tokens ({self.kind.value}) vs threshold {self.threshold_tokens:,}"
        if self.would_fire:
            text += f" · would fire now ({-self.headroom_tokens:,} over)"
        else:
            text += f" · headroom {self.headroom_tokens:,} tokens"
            turns = self.headroom_turns
            if turns is not None and self.growth_per_turn:
                text += (
                    f" ≈ {turns:,} turns at +{self.growth_per_turn:,.0f}/turn"
                    f" → fires near message {self.next_fire_message:,}"
                )
            else:
                text += " · not growing: no fire predicted"
        if self.anti_thrash:
            text += f" · held back by anti-thrash ({self.anti_thrash})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "kind": self.kind.value,
            "threshold_tokens": self.threshold_tokens,
            "would_fire": self.would_fire,
            "headroom_tokens": self.headroom_tokens,
            "headroom_turns": self.headroom_turns,
            "growth_per_turn": self.growth_per_turn,
            "messages_per_turn": self.messages_per_turn,
            "next_fire_message": self.next_fire_message,
            "anti_thrash": self.anti_thrash,
            "flags": [f.value for f in self.flags],
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    policy: TriggerPolicy
    #: Why this policy: "given", "format claude-code", "model …", "default …".
    policy_source: str
    threshold: Threshold
    window: WindowInfo
    series: UsageSeries
    events: tuple[EventExplanation, ...]
    current: CurrentState
    #: Where the policy would have fired, replayed over the series (message indices).
    would_fire_at: tuple[int, ...]

    @property
    def threshold_tokens(self) -> int:
        return self.threshold.threshold_tokens

    @property
    def flagged(self) -> tuple[EventExplanation, ...]:
        return tuple(e for e in self.events if e.flags)

    def to_dict(self, *, include_series: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.policy.name.value,
            "policy_spec": self.policy.spec(),
            "policy_source": self.policy_source,
            "window": self.window.context_window,
            "window_source": self.window.source,
            "output_reservation": self.threshold.output_reservation,
            "effective_window": self.threshold.effective_window,
            "threshold_tokens": self.threshold_tokens,
            "rule": self.threshold.rule.value,
            "ratio": self.threshold.ratio,
            "threshold_explanation": self.threshold.explanation,
            "events": [e.to_dict() for e in self.events],
            "current": self.current.to_dict(),
            "would_fire_at": list(self.would_fire_at),
            "measured_points": self.series.measured_count,
            "points": len(self.series.points),
        }
        if include_series:
            out["series"] = self.series.to_dict()
        return out


def _pre(
    event: CompactionEvent, series: UsageSeries
) -> tuple[int | None, TokenSource, UsagePoint | None]:
    # Only a resetting compaction has the history it replaced before it; otherwise the
    # transcript is the compacted list and the turn before is the kept head, not "before".
    before = series.point_before(event.message_index)
    if event.pre_tokens is not None:
        return event.pre_tokens, TokenSource.RECORDED, before
    if before is not None and event.message_index in series.resets:
        return before.tokens, _source(before), before
    return None, TokenSource.UNKNOWN, before


def _post(
    event: CompactionEvent, series: UsageSeries, next_index: int | None
) -> tuple[int | None, TokenSource, int | None]:
    if event.post_tokens is not None:
        return event.post_tokens, TokenSource.RECORDED, None
    after = series.point_from(event.message_index)
    if after is None or (next_index is not None and after.message_index >= next_index):
        return None, TokenSource.UNKNOWN, None
    return after.tokens, _source(after), after.message_index


def _growth(series: UsageSeries) -> tuple[float | None, float | None]:
    live = series.live_start
    recent: list[UsagePoint] = []
    for p in reversed(series.points):
        if p.message_index < live or len(recent) == GROWTH_WINDOW:
            break
        recent.append(p)
    if len(recent) < 2:
        return None, None
    first, last = recent[-1], recent[0]
    steps = len(recent) - 1
    return (last.tokens - first.tokens) / steps, (last.message_index - first.message_index) / steps


def _held(code: DecisionCode) -> str | None:
    return code.value if code in (DecisionCode.BLOCKED, DecisionCode.LOW_SAVINGS) else None


def explain(
    transcript: Transcript,
    policy: TriggerPolicy | str | None = None,
    *,
    tokens: TranscriptTokens | None = None,
    counter: TokenCounter | None = None,
    context_window: int | None = None,
    limits: Mapping[str, ModelLimits] | None = None,
    series: UsageSeries | None = None,
) -> Explanation:
    """Judge every compaction of ``transcript`` and its current state by ``policy``.

    ``policy`` is a :class:`~tinyjuice.policies.TriggerPolicy`, a spec string
    (``"hermes"``, ``"claude-code:buffer=13k"``) or None to pick the transcript's own
    agent's. ``context_window`` overrides the window; ``limits`` adds model table
    entries. Pass ``tokens`` (or a prebuilt ``series``, e.g. when only the policy
    changes) to skip counting: the rest is O(messages).
    """
    window = resolve_window(transcript, context_window, limits)
    chosen, threshold, why = agent_threshold(
        transcript, window.context_window, window.max_output_tokens, policy
    )
    if series is None:
        if tokens is None:
            tokens = count_transcript(transcript, counter)
        series = usage_series(transcript, tokens)
    thr = threshold.threshold_tokens
    budget = threshold.budget if threshold.anti_thrash else None
    state = CompactionState()
    points = series.points
    pi = 0

    events = sorted(transcript.compactions, key=lambda e: e.message_index)
    lost_rules = rules_lost_by_event(transcript)
    out: list[EventExplanation] = []
    prev_low = False
    for number, event in enumerate(events, start=1):
        nxt = events[number].message_index if number < len(events) else None
        pre, pre_src, before = _pre(event, series)
        post, post_src, post_index = _post(event, series, nxt)
        flags: list[EventFlag] = []
        held: str | None = None
        auto = event.trigger is not Trigger.MANUAL
        if budget is not None:
            while pi < len(points) and points[pi].message_index < event.message_index:
                p = points[pi]
                state = record_reading(state, PromptTokens(p.tokens, p.kind), budget)
                pi += 1
            if auto and pre is not None:
                kind = _SOURCE_KINDS.get(pre_src, CountKind.ESTIMATED)
                held = _held(should_compress(PromptTokens(pre, kind), budget, state, now=0.0).code)
            if pre is not None and post is not None:
                state = record_compaction(
                    state,
                    tokens_before=pre,
                    tokens_after=post,
                    threshold=thr,
                    summary_kind=SummaryKind.LLM,
                )
        if auto and pre is not None and pre < FAR_BELOW_RATIO * thr:
            flags.append(EventFlag.FAR_BELOW_THRESHOLD)
        if post is not None and post >= thr:
            flags.append(EventFlag.INEFFECTIVE)
        low = False
        if pre and post is not None:
            low = (pre - post) / pre < LOW_SAVINGS_RATIO
            if low:
                flags.append(EventFlag.LOW_SAVINGS)
                if prev_low:
                    flags.append(EventFlag.CONSECUTIVE_LOW_SAVINGS)
        prev_low = low
        inflation = _inflation(before, series.tool_tokens)
        if inflation is not None:
            flags.append(EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS)
        lost = lost_rules.get(event.message_index, ())
        if lost:
            flags.append(EventFlag.RULES_LOST)
        out.append(
            EventExplanation(
                number=number,
                index=event.message_index,
                trigger=event.trigger,
                pre_tokens=pre,
                pre_source=pre_src,
                threshold_tokens=thr,
                rule=threshold.rule,
                post_tokens=post,
                post_source=post_src,
                flags=tuple(flags),
                post_index=post_index,
                anti_thrash=held,
                inflation=inflation,
                rules_lost=lost,
            )
        )

    current_held: str | None = None
    if budget is not None:
        for p in points[pi:]:
            state = record_reading(state, PromptTokens(p.tokens, p.kind), budget)
        decision = should_compress(
            PromptTokens(series.next_tokens, series.next_kind), budget, state, now=0.0
        )
        current_held = _held(decision.code)
    last_measured = next((p for p in reversed(points) if p.measured), None)
    current_inflation = _inflation(last_measured, series.tool_tokens)
    growth, per_turn = _growth(series)
    last = points[-1] if points and points[-1].message_index >= series.live_start else None
    current = CurrentState(
        tokens=series.next_tokens,
        kind=series.next_kind,
        threshold_tokens=thr,
        growth_per_turn=growth,
        messages_per_turn=per_turn,
        message_count=series.message_count,
        last_index=last.message_index if last else None,
        last_tokens=last.tokens if last else None,
        anti_thrash=current_held,
        flags=(EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS,) if current_inflation else (),
        inflation=current_inflation,
    )
    return Explanation(
        policy=chosen,
        policy_source=why,
        threshold=threshold,
        window=window,
        series=series,
        events=tuple(out),
        current=current,
        would_fire_at=replay(
            series,
            thr,
            [
                (e.message_index, e.pre_tokens)
                for e in events
                if e.pre_tokens is not None and e.message_index in series.resets
            ],
        ),
    )
