"""Offline trajectory compression: fit whole trajectories under a token target.

Details: docs/policies.md (`tinyjuice.fit`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tinyjuice.boundary import BoundaryIndex, latest_real_user_index, rejoin
from tinyjuice.budget import SummaryKind
from tinyjuice.model import Message, Role, TextPart, Transcript
from tinyjuice.options import Profile
from tinyjuice.redact import redact_messages, texts_without_secrets
from tinyjuice.summary import (
    SummaryError,
    SummaryProvider,
    SummaryRequest,
    failure_outcome,
    fallback_summary,
    render_summary_message,
    summary_body,
)
from tinyjuice.summary.fallback import line_counter
from tinyjuice.tokens import (
    CountKind,
    RoughCounter,
    TokenCounter,
    TranscriptTokens,
    count_span,
    count_transcript,
    default_counter,
    floor_over,
    has_piece_floor,
    message_tokens,
    tools_in_text,
)

if TYPE_CHECKING:
    from tinyjuice.formats.sharegpt import ReadTurns

__all__ = [
    "DEFAULT_KEEP_LAST",
    "DEFAULT_SUMMARY_TOKENS",
    "BatchAggregator",
    "BatchOptions",
    "BatchSummary",
    "FactRetention",
    "LineResult",
    "RegionPlan",
    "TrajectoryMetrics",
    "TrajectoryResult",
    "TrajectoryStatus",
    "compress_trajectory",
    "count_for_target",
    "extract_facts",
    "fact_retention",
    "head_end",
    "plan_region",
    "process_file",
    "process_line",
    "tail_start",
]

#: Turns at the end of a trajectory kept verbatim unless told otherwise (Hermes: 4).
DEFAULT_KEEP_LAST = 4
#: Tokens reserved for the summary turn that replaces the region (Hermes: 750).
DEFAULT_SUMMARY_TOKENS = 750
#: The smallest body budget handed to the fallback summary.
_MIN_SUMMARY_BODY = 64
#: How many times the region may grow when the built summary did not fit the estimate.
_MAX_ATTEMPTS = 4
_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)


class TrajectoryStatus(StrEnum):
    """What happened to one trajectory (or one input line)."""

    #: Over the target before; under or at it after (always rewritten: ``compacted``).
    COMPRESSED = "compressed"
    #: Already at or under the target: written through unchanged.
    SKIPPED_UNDER_TARGET = "skipped_under_target"
    #: Over the target and still over it after compressing all that may be compressed:
    #: rewritten (``compacted``) or unchanged when nothing could be cut (the protected
    #: head and tail alone are over the target, or no summary was smaller than its region).
    STILL_OVER_LIMIT = "still_over_limit"
    #: The summary provider failed with a class that forbids dropping anything (auth,
    #: network): the trajectory is written through unchanged.
    SUMMARY_FAILED = "summary_failed"
    #: The line or file could not be read as a trajectory: written through unchanged.
    BAD_INPUT = "bad_input"


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How every trajectory of a batch is compressed."""

    #: The token target each trajectory should fit (system prompt and tool schemas included).
    target_tokens: int
    #: Trailing turns (messages) kept verbatim.
    keep_last: int = DEFAULT_KEEP_LAST
    #: Tokens reserved for the summary turn (the fallback summary is built to fit it).
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    profile: Profile = Profile.HERMES
    #: Keep the latest real user ask verbatim even when it is older than the last N turns.
    anchor_latest_user: bool = True
    #: Redact secrets in the region before summarising it (and in the summary).
    redact: bool = True
    #: Settings for the rules profile (:class:`~tinyjuice.rules.RulesConfig` keys); defaults when empty.
    rules: Mapping[str, Any] = field(default_factory=dict)
    #: A trigger policy spec: each trajectory must also end below that policy's
    #: threshold on its model's window (the lower target wins). None: the trajectory's
    #: own agent's policy, picked from its format as ``compress`` and ``explain`` do.
    policy: str | None = None
    #: Compress every message, the history before an agent's last compaction included
    #: (default: the live context; see :func:`tinyjuice.live.live_view`).
    whole_file: bool = False

    def __post_init__(self) -> None:
        if self.target_tokens < 1:
            raise ValueError(f"target_tokens must be at least 1, got {self.target_tokens}")
        if self.keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {self.keep_last}")
        if self.summary_tokens < 1:
            raise ValueError(f"summary_tokens must be at least 1, got {self.summary_tokens}")
        object.__setattr__(self, "profile", Profile(self.profile))


@dataclass(frozen=True, slots=True)
class RegionPlan:
    """Which part of a trajectory to compress, and the target math behind the choice.

    ``messages[head_end:tail_start]`` may be compressed; ``messages[head_end:end]`` is the
    region chosen. ``estimated_after = total - region_tokens + summary_tokens``.
    """

    total: int
    target: int
    #: Tokens to lose: ``total - target`` (<= 0 means nothing to do).
    need: int
    head_end: int
    tail_start: int
    end: int
    region_tokens: int
    summary_tokens: int
    estimated_after: int
    reason: str

    @property
    def compressible(self) -> bool:
        """There is a non-empty region to compress."""
        return self.end > self.head_end

    @property
    def fits(self) -> bool:
        return self.estimated_after <= self.target


class _Savings:
    """Savings derived from ``tokens_before`` / ``tokens_after`` (one trajectory or a run)."""

    __slots__ = ()
    tokens_before: int
    tokens_after: int

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def ratio(self) -> float:
        """``tokens_after / tokens_before`` (1.0 for an unchanged or empty trajectory)."""
        return self.tokens_after / self.tokens_before if self.tokens_before else 1.0

    @property
    def percent_saved(self) -> float:
        return 100.0 * self.tokens_saved / self.tokens_before if self.tokens_before else 0.0


@dataclass(frozen=True, slots=True)
class TrajectoryMetrics(_Savings):
    """Figures for one trajectory. Token figures use one counter (``counter``)."""

    status: TrajectoryStatus
    tokens_before: int = 0
    tokens_after: int = 0
    turns_before: int = 0
    turns_after: int = 0
    #: The compressed region in the input's message indices ``[start, end)``, if any.
    region_start: int | None = None
    region_end: int | None = None
    #: Calls made to a summary provider (0 with the deterministic fallback).
    summary_calls: int = 0
    #: Provider failures (each failure also counts as a call).
    summary_errors: int = 0
    #: Deterministic fallback summaries inserted.
    fallback_summaries: int = 0
    #: Rule applications (rules profile), by rule.
    rules_applied: int = 0
    duration_s: float = 0.0
    counter: str = ""
    #: 1-based input line (JSONL datasets), else None.
    line: int | None = None
    #: Why a line was bad, or why the summary failed.
    error: str | None = None
    failure_class: str | None = None
    #: How ``tokens_before`` (and so ``tokens_saved`` and ``ratio``) was counted:
    #: ``exact``, or ``estimated`` when the middle of a trajectory proven over the target
    #: was estimated (:func:`count_for_target`) or the counter is the rough one.
    tokens_before_kind: str = CountKind.EXACT.value
    #: How ``tokens_after`` was counted: after a summary, ``counter``'s kind (``estimated``
    #: for the rough one); without one it is ``tokens_before`` (or the rules' rewrite),
    #: labelled as that was counted.
    tokens_after_kind: str = CountKind.EXACT.value

    @property
    def turns_removed(self) -> int:
        return self.turns_before - self.turns_after

    @property
    def compacted(self) -> bool:
        """The trajectory was rewritten: a region was replaced (by a summary or the rules'
        rewrite). True for every ``compressed`` one, and for a ``still_over_limit`` one
        that lost tokens without reaching the target."""
        return self.region_start is not None

    @property
    def skipped_under_target(self) -> bool:
        return self.status is TrajectoryStatus.SKIPPED_UNDER_TARGET

    @property
    def still_over_limit(self) -> bool:
        """Over the target at the end: failed to fit, or left whole by a summary failure
        (the aggregate counts the two apart: ``still_over_limit``, ``summary_failed``)."""
        return self.status in (TrajectoryStatus.STILL_OVER_LIMIT, TrajectoryStatus.SUMMARY_FAILED)

    def to_dict(self, *, timings: bool = True) -> dict[str, Any]:
        """The per-trajectory JSON record (``--metrics`` writes one per line)."""
        out: dict[str, Any] = {
            "line": self.line,
            "status": self.status.value,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_saved,
            "ratio": round(self.ratio, 4),
            "tokens_before_kind": self.tokens_before_kind,
            "tokens_after_kind": self.tokens_after_kind,
            "turns_before": self.turns_before,
            "turns_after": self.turns_after,
            "turns_removed": self.turns_removed,
            "region": None
            if self.region_start is None
            else {"start": self.region_start, "end": self.region_end},
            "summary_calls": self.summary_calls,
            "summary_errors": self.summary_errors,
            "fallback_summaries": self.fallback_summaries,
            "rules_applied": self.rules_applied,
            "skipped_under_target": self.skipped_under_target,
            "still_over_limit": self.still_over_limit,
            "compacted": self.compacted,
            "counter": self.counter,
            "error": self.error,
            "failure_class": self.failure_class,
        }
        if timings:
            out["duration_s"] = round(self.duration_s, 6)
        return out


@dataclass(frozen=True, slots=True)
class TrajectoryResult:
    """The trajectory after :func:`compress_trajectory` (the input object when unchanged)."""

    transcript: Transcript
    metrics: TrajectoryMetrics
    #: The last region plan of the summary step (None when it did not run).
    plan: RegionPlan | None = None
    #: The inserted summary turn, when there is one.
    summary_message: Message | None = None
    #: Whether ``transcript`` differs from the input.
    changed: bool = False


# ------------------------------------------------------------------------------ planning


def head_end(messages: Sequence[Message], *, index: BoundaryIndex | None = None) -> int:
    """End (exclusive) of the protected head: past the first system, user, assistant and
    tool turn among the first half of the trajectory, moved forward to a legal boundary.
    """
    n = len(messages)
    if n == 0:
        return 0
    firsts: dict[str, int] = {}
    for i, m in enumerate(messages):
        key = "system" if m.role in _SYSTEM_ROLES else m.role.value
        if key not in firsts:
            firsts[key] = i
            if len(firsts) == 4:
                break
    half = n // 2
    protected = [i for i in firsts.values() if i < half] or [min(firsts.values())]
    end = max(protected) + 1
    idx = index or BoundaryIndex(messages)
    return idx.align_start_forward(end)


def tail_start(
    messages: Sequence[Message],
    keep_last: int,
    head: int,
    *,
    anchor_latest_user: bool = True,
    index: BoundaryIndex | None = None,
) -> int:
    """Start of the verbatim tail: the last ``keep_last`` turns, earlier when the latest
    real user ask comes before them, moved back to a legal boundary; never before
    ``head``."""
    n = len(messages)
    idx = index or BoundaryIndex(messages)
    start = max(head, n - keep_last)
    if anchor_latest_user:
        u = latest_real_user_index(messages)
        if u is not None and head <= u < start:
            start = u
    return max(head, idx.align_end_backward(start))


def plan_region(
    messages: Sequence[Message],
    tokens: TranscriptTokens,
    target: int,
    *,
    keep_last: int = DEFAULT_KEEP_LAST,
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS,
    anchor_latest_user: bool = True,
    index: BoundaryIndex | None = None,
) -> RegionPlan:
    """The smallest legal region from the start of the middle whose replacement fits.

    ``need = tokens.total - target``; the region ``[head_end, end)`` is grown from the
    head until its tokens ``R`` satisfy ``R >= need + summary_tokens`` (then
    ``total - R + summary_tokens <= target``), with ``end`` on a legal boundary and at
    most the tail start. When no such end exists the whole compressible middle is
    chosen and :attr:`RegionPlan.fits` is False.
    """
    if len(tokens.per_message) != len(messages):
        raise ValueError("tokens were counted for a different message list")
    idx = index or BoundaryIndex(messages)
    total = tokens.total
    need = total - target
    head = head_end(messages, index=idx)
    tail = tail_start(messages, keep_last, head, anchor_latest_user=anchor_latest_user, index=idx)
    prefix = tokens.prefix

    def plan(end: int, reason: str) -> RegionPlan:
        region = prefix[end] - prefix[head]
        estimated = total - region + summary_tokens if end > head else total
        return RegionPlan(
            total=total,
            target=target,
            need=need,
            head_end=head,
            tail_start=tail,
            end=end,
            region_tokens=region,
            summary_tokens=summary_tokens,
            estimated_after=estimated,
            reason=reason,
        )

    if need <= 0:
        return plan(head, f"{total:,} tokens already fit the target {target:,}")
    if tail <= head:
        return plan(
            head,
            f"nothing to compress: the protected head (messages before {head}) and tail "
            f"(from {tail}) cover the whole trajectory",
        )
    wanted = need + summary_tokens
    available = prefix[tail] - prefix[head]
    if available < wanted:
        return plan(
            tail,
            f"the compressible middle ({head}–{tail - 1}, {available:,} tokens) is smaller "
            f"than the {wanted:,} needed ({need:,} to lose + {summary_tokens:,} for the "
            "summary); compressing all of it",
        )
    # Smallest raw end with prefix[end] - prefix[head] >= wanted (prefix is non-decreasing).
    lo, hi = head + 1, tail
    goal = prefix[head] + wanted
    while lo < hi:
        mid = (lo + hi) // 2
        if prefix[mid] >= goal:
            hi = mid
        else:
            lo = mid + 1
    end = min(idx.align_start_forward(lo), tail)
    moved = "" if end == lo else f" (moved from {lo} to {end} to keep tool groups whole)"
    return plan(
        end,
        f"compressing messages {head}–{end - 1} ({prefix[end] - prefix[head]:,} tokens) to "
        f"lose {need:,} tokens with a {summary_tokens:,}-token summary{moved}",
    )


def count_for_target(
    transcript: Transcript,
    counter: TokenCounter,
    target: int,
    *,
    keep_last: int = DEFAULT_KEEP_LAST,
    reserve: int = DEFAULT_SUMMARY_TOKENS,
    anchor_latest_user: bool = True,
    index: BoundaryIndex | None = None,
) -> TranscriptTokens:
    """:func:`count_transcript`, with the middle of a trajectory proven over ``target``
    estimated (``kind`` estimated, :class:`~tinyjuice.tokens.RoughCounter`'s figures).

    Counted exactly: the system prompt and tools, the protected head (:func:`head_end`),
    the verbatim tail (:func:`tail_start`) and the messages before it back to where the
    head and what is counted from the end hold more than ``target`` (the last of those,
    under a known pre-tokenizer, only when its :func:`~tinyjuice.tokens.floor_over`
    does not already prove it: :func:`_count_back`). Everything is
    counted when the rough estimate puts the whole under the target, or when the head,
    the tail and ``reserve`` exceed it (the whole middle would go).

    From these counts :func:`plan_region` picks the region an all-exact count picks,
    for any summary reserve: every end it weighs either leaves only counted messages
    after it, or keeps more than ``target`` whatever the estimates (never negative).
    ``estimated_after`` and the tokens after a summary are exact; ``total``, ``need``
    and ``region_tokens`` are estimates. A result that fits the target on the first
    summary needs no more (:func:`_fit`).
    """
    return _count_for_target(
        transcript, counter, target, keep_last, reserve, anchor_latest_user, index
    )[0]


def _count_for_target(
    transcript: Transcript,
    counter: TokenCounter,
    target: int,
    keep_last: int,
    reserve: int,
    anchor_latest_user: bool,
    index: BoundaryIndex | None,
) -> tuple[TranscriptTokens, BoundaryIndex | None]:
    """:func:`count_for_target`, and the boundary index it used (``index``, None when
    the rough count puts the trajectory under the target: most of a batch needs none)."""
    msgs = transcript.messages
    rough = count_transcript(transcript, RoughCounter())
    if rough.total <= target:
        return count_transcript(transcript, counter), index  # most likely under the target
    idx = index or BoundaryIndex(msgs)
    head = head_end(msgs, index=idx)
    tail = tail_start(msgs, keep_last, head, anchor_latest_user=anchor_latest_user, index=idx)
    front_part = replace(transcript, messages=msgs[:head])
    if tools_in_text(front_part) != tools_in_text(transcript):
        return count_transcript(transcript, counter), idx  # the tools would count elsewhere
    front = count_transcript(front_part, counter)
    kept = front.total
    back = count_span(transcript, tail, len(msgs), counter)
    room = target - kept - sum(back)
    if room < reserve:
        between = list(count_span(transcript, head, tail, counter))  # cannot keep any middle
        i, bounded = head, False
    else:
        between, i, bounded = _count_back(msgs, head, tail, room, counter, rough.per_message)
    kind = CountKind.ESTIMATED if i > head or bounded else counter.kind
    return front.extended((*rough.per_message[head:i], *between, *back), kind), idx


def _count_back(
    msgs: Sequence[Message],
    head: int,
    end: int,
    room: int,
    counter: TokenCounter,
    rough: Sequence[int],
) -> tuple[list[int], int, bool]:
    """Counts of the messages before ``end`` (not before ``head``), from the last back,
    while they fit in ``room``: the first one over it ends them.

    Returns ``(counts, start, bounded)``: ``counts`` for ``msgs[start:end]``. Under a
    :func:`has_piece_floor` counter a message whose :func:`message_floor` alone exceeds
    the room left is not encoded: its figure is that floor or its rough estimate,
    whichever is more (``bounded``; it leaves more than the room kept whatever its
    exact count). A long tool output before the kept messages is mostly that one."""
    floors = has_piece_floor(counter)
    counts: list[int] = []
    start = end
    while start > head and room >= 0:
        start -= 1
        m = msgs[start]
        least = floor_over(m, counter, room) if floors else None
        if least is not None:
            counts.append(max(least, rough[start]))
            counts.reverse()
            return counts, start, True
        n = message_tokens(m, counter)
        counts.append(n)
        room -= n
    counts.reverse()
    return counts, start, False


# ----------------------------------------------------------------------------- compress

_WRAPPER_COST: dict[str, int] = {}


def _wrapper_cost(counter: TokenCounter) -> int:
    """Tokens a summary message costs beyond its body (prefix, preamble, end marker)."""
    cost = _WRAPPER_COST.get(counter.name)
    if cost is None:
        probe = "x"
        msg = render_summary_message(probe, kind=SummaryKind.FALLBACK, redact=False)
        # +2: token counts are not additive where the body meets the wrapper.
        cost = message_tokens(msg, counter) - counter.count(probe) + 2
        _WRAPPER_COST[counter.name] = cost
    return cost


def _readable(m: Message) -> Message:
    """A JSON tool result (``{"output": ..., "exit_code": ...}``) with its output decoded,
    so the summary sees real lines (errors, paths) instead of one escaped string."""
    if m.role is not Role.TOOL or len(m.parts) != 1 or not isinstance(m.parts[0], TextPart):
        return m
    from tinyjuice.rules import tool_output_text

    text = m.parts[0].text
    decoded = tool_output_text(text)
    return m if decoded is text else replace(m, parts=(TextPart(decoded),))


@dataclass(slots=True)
class _Summary:
    message: Message | None
    calls: int = 0
    errors: int = 0
    fallback: int = 0
    failure_class: str | None = None
    error: str | None = None


def _summarise(
    region: Sequence[Message],
    budget: int,
    counter: TokenCounter,
    provider: SummaryProvider | None,
    redact: bool,
    lines: TokenCounter | None = None,
) -> _Summary:
    # The whole region is redacted first, the fallback included: its own redaction of
    # the items it emits cannot see a secret's context (``password=/a/b.txt`` would leave
    # the path). One batched scan of the region (:func:`redact_messages`, the same result
    # as redacting each message) redacts in full only the messages that may hold one.
    cleaned = redact_messages(region)[0] if redact else region
    source = [_readable(m) for m in cleaned]
    out = _Summary(None)
    if provider is not None:
        out.calls += 1
        request = SummaryRequest(messages=tuple(source), token_budget=budget)
        try:
            body = summary_body(provider.summarize(request))
            out.message = _summary_message(body, SummaryKind.LLM, redact)
            return out
        except SummaryError as exc:
            out.errors += 1
            out.failure_class = exc.failure_class.value
            outcome = failure_outcome(
                exc.failure_class, fallback_enabled=True, accept_lossy=True, retried=True
            )
            out.error = f"summary provider failed ({exc.failure_class.value}): {outcome.reason}"
            if not outcome.drop_allowed:
                return out
    # Nothing archives a batch's appendix: the summary only counts what it left out.
    fb = fallback_summary(
        source, budget_tokens=budget, counter=counter, redact=redact, appendix=False, lines=lines
    )
    out.fallback += 1
    out.message = _summary_message(fb.text, SummaryKind.FALLBACK, redact)
    return out


def _summary_message(text: str, kind: SummaryKind, redact: bool) -> Message:
    """``render_summary_message(text, kind=kind, role=Role.USER, redact=redact)``: the
    body is redacted only when one joined scan (:func:`texts_without_secrets`) cannot
    show that redaction would leave it as it is; most summaries hold no secret, and a
    full scan of one costs several times more."""
    if redact:
        body = summary_body(text)
        redact = body not in texts_without_secrets((body,))
    return render_summary_message(text, kind=kind, role=Role.USER, redact=redact)


def _rules_pass(
    transcript: Transcript,
    options: BatchOptions,
    counter: TokenCounter,
    index: BoundaryIndex,
) -> tuple[Transcript, int, int, int] | None:
    """The rules profile's first step: (new transcript, applied, head, tail) or None."""
    from tinyjuice.rules import RulesConfig, apply_rules

    msgs = transcript.messages
    head = head_end(msgs, index=index)
    tail = tail_start(
        msgs, options.keep_last, head, anchor_latest_user=options.anchor_latest_user, index=index
    )
    if tail <= head:
        return None
    cfg = RulesConfig.from_mapping(options.rules) if options.rules else RulesConfig()
    res = apply_rules(msgs, head, tail, cfg, redact=options.redact)
    applied = sum(res.applied.values())
    if not applied:
        return None
    new_msgs = tuple(res.messages)
    return replace(transcript, messages=new_msgs), applied, head, tail


#: :func:`effective_target` by what decides it (a dataset's lines mostly share one).
_TARGETS: dict[tuple[str, str | None, int | None, str | None, int], int] = {}
#: Distinct keys remembered before the memory is emptied (bounded memory).
_TARGETS_MAX = 1024


def effective_target(transcript: Transcript, options: BatchOptions) -> int:
    """``options.target_tokens``, or lower: just under the policy's threshold.

    The policy is ``options.policy``, else the trajectory's own agent's: the same choice
    ``compress`` and ``explain`` make (:func:`tinyjuice.policies.agent_threshold`), on
    the trajectory's window. A trajectory left at its agent's trigger would only be
    compacted again by that agent.

    The answer depends only on the trajectory's format, model and window and on the
    options' policy and target, so it is remembered by those (a batch works it out
    once per distinct model instead of once per line).
    """
    key = (
        transcript.format,
        transcript.model,
        transcript.context_window,
        options.policy,
        options.target_tokens,
    )
    known = _TARGETS.get(key)
    if known is not None:
        return known
    from tinyjuice.policies import agent_threshold, resolve_window

    window = resolve_window(transcript)
    _, threshold, _ = agent_threshold(
        transcript, window.context_window, window.max_output_tokens, options.policy
    )
    target = max(1, min(options.target_tokens, threshold.threshold_tokens - 1))
    if len(_TARGETS) >= _TARGETS_MAX:
        _TARGETS.clear()
    _TARGETS[key] = target
    return target


def _work_on(transcript: Transcript, options: BatchOptions) -> Transcript:
    """The live context (the whole transcript with ``whole_file``)."""
    if options.whole_file:
        return transcript
    from tinyjuice.live import live_view

    return live_view(transcript)


def compress_trajectory(
    transcript: Transcript,
    options: BatchOptions,
    *,
    counter: TokenCounter | None = None,
    tokens: TranscriptTokens | None = None,
    provider: SummaryProvider | None = None,
    index: BoundaryIndex | None = None,
    target: int | None = None,
) -> TrajectoryResult:
    """Fit one trajectory under ``options.target_tokens`` (see the module docstring).

    The input is never modified; head and tail messages come back as the same objects.
    Without ``provider`` the region is replaced by the deterministic fallback summary;
    with one, its summary is used, an auth or network failure leaves the trajectory
    unchanged (``summary_failed``) and any other failure falls back. ``tokens`` and
    ``target`` (:func:`effective_target`) are what the caller already worked out for
    this transcript, when it did.
    """
    started = time.perf_counter()
    result = _compress(transcript, options, counter, tokens, provider, index, target)
    return replace(
        result, metrics=replace(result.metrics, duration_s=time.perf_counter() - started)
    )


# Long on purpose: the status ladder (under target, rules, summary search, failed, still
# over, compressed) reads best in one place; the stages are _rules_stage and
# _search_summary.
def _compress(
    transcript: Transcript,
    options: BatchOptions,
    counter: TokenCounter | None,
    tokens: TranscriptTokens | None,
    provider: SummaryProvider | None,
    index: BoundaryIndex | None,
    target: int | None,
) -> TrajectoryResult:
    """:func:`compress_trajectory` without its duration (``duration_s`` 0: the batch
    times the whole line instead)."""
    counter = counter or default_counter()
    tokens = tokens or count_transcript(transcript, counter)
    n = len(transcript.messages)
    if target is None:
        target = effective_target(transcript, options)
    base = TrajectoryMetrics(
        status=TrajectoryStatus.SKIPPED_UNDER_TARGET,
        tokens_before=tokens.total,
        tokens_after=tokens.total,
        turns_before=n,
        turns_after=n,
        counter=counter.name,
        tokens_before_kind=tokens.kind.value,
        # tokens_after is tokens.total until a summary is placed (then counter's kind).
        tokens_after_kind=tokens.kind.value,
    )

    def done(
        work: Transcript,
        metrics: TrajectoryMetrics,
        plan: RegionPlan | None = None,
        message: Message | None = None,
    ) -> TrajectoryResult:
        return TrajectoryResult(work, metrics, plan, message, work is not transcript)

    if tokens.total <= target:
        return done(transcript, base)

    idx = index or BoundaryIndex(transcript.messages)
    work, work_tokens, work_idx, rules_applied, rules_span = _rules_stage(
        transcript, options, counter, tokens, idx
    )

    # Without a rewrite the figures are the input's (the same values as ``base``).
    after_rules = (
        base
        if work is transcript
        else replace(
            base,
            tokens_after=work_tokens.total,
            tokens_after_kind=work_tokens.kind.value,
            turns_after=len(work.messages),
            rules_applied=rules_applied,
            region_start=rules_span[0] if rules_span else None,
            region_end=rules_span[1] if rules_span else None,
        )
    )
    if work_tokens.total <= target:
        return done(work, replace(after_rules, status=TrajectoryStatus.COMPRESSED))

    plan, best, summary, (calls, errors, fallbacks) = _search_summary(
        work, work_tokens, work_idx, target, options, counter, provider
    )
    if summary.message is None and summary.errors:
        # Auth / network: nothing may be dropped, not even the rules' rewrite.
        failed = replace(
            base,
            status=TrajectoryStatus.SUMMARY_FAILED,
            summary_calls=calls,
            summary_errors=errors,
            failure_class=summary.failure_class,
            error=summary.error,
        )
        return done(transcript, failed, plan)
    if best is None:
        status = (
            TrajectoryStatus.COMPRESSED
            if work_tokens.total <= target
            else TrajectoryStatus.STILL_OVER_LIMIT
        )
        reason = plan.reason if plan is not None else None
        metrics = replace(
            after_rules,
            status=status,
            summary_calls=calls,
            summary_errors=errors,
            fallback_summaries=fallbacks,
            failure_class=summary.failure_class,
            error=summary.error or reason,
        )
        return done(work, metrics, plan)
    new, after, message, used, chosen = best
    region = rules_span if rules_span is not None else (chosen.head_end, chosen.end)
    final = replace(
        after_rules,
        status=TrajectoryStatus.COMPRESSED
        if after <= target
        else TrajectoryStatus.STILL_OVER_LIMIT,
        summary_calls=calls,
        summary_errors=errors,
        fallback_summaries=fallbacks,
        tokens_after=after,
        tokens_after_kind=counter.kind.value,
        turns_after=len(new.messages),
        region_start=region[0],
        region_end=region[1],
        failure_class=used.failure_class,
        error=used.error,
    )
    return done(new, final, chosen, message)


#: The best compaction found: the new transcript, its tokens, the summary message as
#: placed, the summary and the region plan it replaced.
_Best = tuple[Transcript, int, Message, _Summary, RegionPlan]


def _rules_stage(
    transcript: Transcript,
    options: BatchOptions,
    counter: TokenCounter,
    tokens: TranscriptTokens,
    idx: BoundaryIndex,
) -> tuple[Transcript, TranscriptTokens, BoundaryIndex, int, tuple[int, int] | None]:
    """The rules profile's rewrite when it makes the trajectory smaller, else the input:
    ``(transcript, tokens, index, rules applied, rewritten span)``."""
    if options.profile is not Profile.RULES:
        return transcript, tokens, idx, 0, None
    ruled = _rules_pass(transcript, options, counter, idx)
    if ruled is None:
        return transcript, tokens, idx, 0, None
    work, rules_applied, r_head, r_tail = ruled
    work_tokens = count_transcript(work, counter)
    if work_tokens.total >= tokens.total:
        return transcript, tokens, idx, 0, None
    return work, work_tokens, BoundaryIndex(work.messages), rules_applied, (r_head, r_tail)


def _search_summary(
    work: Transcript,
    work_tokens: TranscriptTokens,
    work_idx: BoundaryIndex,
    target: int,
    options: BatchOptions,
    counter: TokenCounter,
    provider: SummaryProvider | None,
) -> tuple[RegionPlan | None, _Best | None, _Summary, tuple[int, int, int]]:
    """Summarise a region, growing the reserve until the result fits (at most
    ``_MAX_ATTEMPTS``): ``(last plan, best result, last summary, (calls, errors,
    fallbacks))``."""
    wmsgs = work.messages
    reserve = options.summary_tokens
    wrapper = _wrapper_cost(counter)
    # The same counts; the summary's lines were counted as it was fitted (and kept), and
    # so were its sections, by this one counter (the fallback is handed it).
    lines = line_counter(counter)
    body_budget = max(_MIN_SUMMARY_BODY, options.summary_tokens - wrapper)
    plan: RegionPlan | None = None
    best: _Best | None = None
    summary = _Summary(None)
    calls = errors = fallbacks = 0
    for _ in range(_MAX_ATTEMPTS):
        plan = plan_region(
            wmsgs,
            work_tokens,
            target,
            keep_last=options.keep_last,
            summary_tokens=reserve,
            anchor_latest_user=options.anchor_latest_user,
            index=work_idx,
        )
        if not plan.compressible:
            break
        head, end = plan.head_end, plan.end
        summary = _summarise(wmsgs[head:end], body_budget, counter, provider, options.redact, lines)
        calls += summary.calls
        errors += summary.errors
        fallbacks += summary.fallback
        if summary.message is None:
            break
        combined = rejoin(wmsgs[:head], [summary.message], wmsgs[end:])
        inserted = combined[head : len(combined) - (len(wmsgs) - end)]
        inserted_cost = sum(message_tokens(m, lines) for m in inserted)
        after = work_tokens.total - plan.region_tokens + inserted_cost
        new = replace(work, messages=tuple(combined))
        if after < work_tokens.total and (best is None or after < best[1]):
            # rejoin may have given the summary the other role: keep the inserted object.
            placed = next((m for m in inserted if m.meta.is_summary), summary.message)
            best = (new, after, placed, summary, plan)
        if after <= target or end >= plan.tail_start or provider is not None:
            break
        # The summary cost more than reserved: reserve what it really cost, and grow.
        reserve = max(reserve + 1, inserted_cost)
    return plan, best, summary, (calls, errors, fallbacks)


def _fit(
    transcript: Transcript,
    options: BatchOptions,
    counter: TokenCounter,
    provider: SummaryProvider | None,
    exact: bool,
    size: int,
) -> TrajectoryResult:
    """:func:`compress_trajectory` counting exactly only what decides, unless ``exact``.

    The result (transcript, status, region, ``tokens_after``) is the all-exact one;
    ``tokens_before`` is estimated when :func:`count_for_target` left a middle uncounted
    and the first summary fits the target. Any other outcome of an estimated count (a
    second attempt, still over the limit) is redone counted exactly. Only the
    deterministic fallback with the hermes profile and an exact counter estimates: a
    provider is not asked twice, and the rules profile counts its rewrite anyway.
    A source of at most 4 × the target bytes (``size``) is counted whole at once: its
    rough estimate (about characters / 4) would most likely be under the target anyway.
    """
    target = effective_target(transcript, options)
    estimate = (
        not exact
        and provider is None
        and options.profile is not Profile.RULES
        and counter.kind is CountKind.EXACT
        and size > 4 * target
    )
    idx: BoundaryIndex | None = None

    def run(tokens: TranscriptTokens) -> TrajectoryResult:
        # Without an index _compress builds one, only for a trajectory over the target.
        return _compress(transcript, options, counter, tokens, provider, idx, target)

    if not estimate:
        return run(count_transcript(transcript, counter))
    tokens, idx = _count_for_target(
        transcript,
        counter,
        target,
        options.keep_last,
        options.summary_tokens,
        options.anchor_latest_user,
        None,
    )
    result = run(tokens)
    if tokens.kind is counter.kind or _settled(result.metrics):
        return result
    return run(count_transcript(transcript, counter))


def _settled(metrics: TrajectoryMetrics) -> bool:
    """Whether a result planned on :func:`count_for_target`'s estimates is the all-exact
    one: the first summary fits the target, so it replaced more than it costs."""
    return metrics.status is TrajectoryStatus.COMPRESSED and metrics.fallback_summaries == 1


# ------------------------------------------------------------------------- line helpers


@dataclass(frozen=True, slots=True)
class LineResult:
    """One input unit's outcome: ``output`` None means "write the input through unchanged"."""

    output: bytes | None
    metrics: TrajectoryMetrics


def _line_ending(raw: bytes) -> tuple[bytes, bytes]:
    if raw.endswith(b"\r\n"):
        return raw[:-2], b"\r\n"
    if raw.endswith(b"\n"):
        return raw[:-1], b"\n"
    return raw, b""


def _bad(problem: str, line: int | None, started: float) -> LineResult:
    return LineResult(
        None,
        TrajectoryMetrics(
            status=TrajectoryStatus.BAD_INPUT,
            line=line,
            error=problem,
            duration_s=time.perf_counter() - started,
        ),
    )


def _one_line(transcript: Transcript, format: str, read: ReadTurns | None) -> bytes:
    """``transcript`` written in ``format`` on one compact line, without a line ending
    (``read``: what reading the ShareGPT line it came from kept, if any)."""
    if format == "sharegpt":
        from tinyjuice.formats.sharegpt import write_compact

        # The same bytes, without the round trip below.
        return write_compact(transcript, read)
    from tinyjuice.formats import dumps

    # Writers may indent; a dataset line must stay one line.
    return orjson.dumps(orjson.loads(dumps(transcript, format)))


def process_line(
    raw: bytes,
    format: str,
    options: BatchOptions,
    *,
    counter: TokenCounter | None = None,
    line: int | None = None,
    path: str = "<line>",
    provider: SummaryProvider | None = None,
    exact: bool = False,
) -> LineResult:
    """Load one JSONL line as a ``format`` trajectory, compress it, render it on one line.

    The output keeps the line's ending (``\\n``, ``\\r\\n`` or none). A line that cannot be
    read, or that fails in any way, comes back as ``bad_input`` with ``output=None`` (the
    caller writes the line through verbatim); this function never raises for bad data.
    The output is the same with ``exact``; without it, ``tokens_before`` of a trajectory
    over the target may be an estimate (:func:`count_for_target`, ``tokens_before_kind``).
    """
    from tinyjuice.formats import LoadError, load_bytes
    from tinyjuice.formats.sharegpt import read_line

    started = time.perf_counter()
    body, ending = _line_ending(raw)
    counter = counter or default_counter()
    read = None
    try:
        if format == "sharegpt":
            transcript, read = read_line(body, path)
        else:
            transcript = load_bytes(body, path, format)
    except LoadError as exc:
        return _bad(exc.problem + (f" at {exc.json_path}" if exc.json_path else ""), line, started)
    try:
        transcript = _work_on(transcript, options)
        result = _fit(transcript, options, counter, provider, exact, len(body))
        output = None
        if result.changed:
            output = _one_line(result.transcript, format, read) + ending
    except Exception as exc:  # a bug must not stop a dataset run: report the line
        return _bad(f"could not compress: {type(exc).__name__}: {exc}", line, started)
    metrics = replace(result.metrics, line=line, duration_s=time.perf_counter() - started)
    return LineResult(output, metrics)


def process_file(
    path: str | Path,
    options: BatchOptions,
    *,
    counter: TokenCounter | None = None,
    provider: SummaryProvider | None = None,
    exact: bool = False,
) -> LineResult:
    """Compress the single transcript in ``path``; the output is the file's new bytes.

    Formats tinyjuice cannot write (Claude Code, Codex, SWE-agent, Hermes ``state.db``)
    are reported as ``bad_input`` and left for the caller to copy through.
    """
    from tinyjuice.formats import JSONL_SUFFIXES, WRITABLE_FORMATS, LoadError, dumps, load_bytes
    from tinyjuice.formats._io import SQLITE_MAGIC, read_bytes

    started = time.perf_counter()
    counter = counter or default_counter()
    try:
        data = read_bytes(path)
        if data.startswith(SQLITE_MAGIC):
            return _bad(
                "SQLite databases are not compressed by batch; export the session", None, started
            )
        transcript = load_bytes(data, path)
    except LoadError as exc:
        return _bad(exc.problem + (f" at {exc.json_path}" if exc.json_path else ""), None, started)
    if transcript.format not in WRITABLE_FORMATS:
        return _bad(
            f"{transcript.format} transcripts cannot be written back; writable formats: "
            + ", ".join(WRITABLE_FORMATS),
            None,
            started,
        )
    try:
        transcript = _work_on(transcript, options)
        result = _fit(transcript, options, counter, provider, exact, len(data))
        output = None
        if result.changed:
            # A .jsonl file stays JSON lines (a Hermes gateway log, a one-line document).
            jsonl = True if Path(path).suffix.lower() in JSONL_SUFFIXES else None
            output = dumps(result.transcript, transcript.format, jsonl=jsonl)
    except Exception as exc:  # never stop a directory run on one file
        return _bad(f"could not compress: {type(exc).__name__}: {exc}", None, started)
    return LineResult(output, replace(result.metrics, duration_s=time.perf_counter() - started))


# ------------------------------------------------------------------------------ aggregate


@dataclass(frozen=True, slots=True)
class BatchSummary(_Savings):
    """Aggregate figures of a batch run."""

    trajectories: int
    compressed: int
    skipped_under_target: int
    still_over_limit: int
    summary_failed: int
    bad_inputs: int
    tokens_before: int
    tokens_after: int
    turns_before: int
    turns_after: int
    summary_calls: int
    summary_errors: int
    fallback_summaries: int
    rules_applied: int
    #: Sum of per-trajectory durations (CPU time across workers, roughly).
    duration_s: float
    #: Lines of the first bad inputs: (source, line or None, problem), at most 100.
    bad: tuple[tuple[str, int | None, str], ...] = ()
    #: Trajectories whose ``tokens_before`` / ``tokens_after`` is an estimate
    #: (:attr:`TrajectoryMetrics.tokens_before_kind`, ``tokens_after_kind``).
    estimated_before: int = 0
    estimated_after: int = 0
    #: Trajectories rewritten (:attr:`TrajectoryMetrics.compacted`): every ``compressed``
    #: one, and ``compacted_still_over_limit`` of the ``still_over_limit`` ones.
    compacted: int = 0
    compacted_still_over_limit: int = 0
    #: Bad inputs that are whole files (no line number), out of ``bad_inputs``.
    bad_files: int = 0

    @property
    def unchanged_over_limit(self) -> int:
        """``still_over_limit`` trajectories left unchanged: nothing could be cut."""
        return self.still_over_limit - self.compacted_still_over_limit

    @property
    def tokens_before_kind(self) -> str:
        """``estimated`` when any trajectory's ``tokens_before`` is (then so are
        ``tokens_saved``, ``ratio`` and ``percent_saved``), else ``exact``."""
        return _kind(self.estimated_before)

    @property
    def tokens_after_kind(self) -> str:
        return _kind(self.estimated_after)

    def to_dict(self, *, timings: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trajectories": self.trajectories,
            "compressed": self.compressed,
            "skipped_under_target": self.skipped_under_target,
            "still_over_limit": self.still_over_limit,
            "summary_failed": self.summary_failed,
            "bad_inputs": self.bad_inputs,
            "bad_files": self.bad_files,
            "compacted": self.compacted,
            "compacted_still_over_limit": self.compacted_still_over_limit,
            "unchanged_over_limit": self.unchanged_over_limit,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_saved,
            "ratio": round(self.ratio, 4),
            "percent_saved": round(self.percent_saved, 2),
            "tokens_before_kind": self.tokens_before_kind,
            "tokens_after_kind": self.tokens_after_kind,
            "estimated_before": self.estimated_before,
            "estimated_after": self.estimated_after,
            "turns_before": self.turns_before,
            "turns_after": self.turns_after,
            "turns_removed": self.turns_before - self.turns_after,
            "summary_calls": self.summary_calls,
            "summary_errors": self.summary_errors,
            "fallback_summaries": self.fallback_summaries,
            "rules_applied": self.rules_applied,
            "bad": [{"source": s, "line": ln, "problem": p} for s, ln, p in self.bad],
        }
        if timings:
            out["duration_s"] = round(self.duration_s, 3)
        return out


_ESTIMATED = CountKind.ESTIMATED.value


def _kind(estimated: int) -> str:
    return _ESTIMATED if estimated else CountKind.EXACT.value


class BatchAggregator:
    """Adds up :class:`TrajectoryMetrics` (order-independent, so any worker count agrees)."""

    _KEEP_BAD = 100

    def __init__(self) -> None:
        self._counts = dict.fromkeys(TrajectoryStatus, 0)
        self._sums = {
            k: 0
            for k in (
                "tokens_before",
                "tokens_after",
                "turns_before",
                "turns_after",
                "summary_calls",
                "summary_errors",
                "fallback_summaries",
                "rules_applied",
                "estimated_before",
                "estimated_after",
                "compacted",
                "compacted_still_over_limit",
                "bad_files",
            )
        }
        self._duration = 0.0
        self._bad: list[tuple[str, int | None, str]] = []

    def add(self, metrics: TrajectoryMetrics, source: str = "") -> None:
        self._counts[metrics.status] += 1
        s = self._sums
        s["tokens_before"] += metrics.tokens_before
        s["tokens_after"] += metrics.tokens_after
        s["turns_before"] += metrics.turns_before
        s["turns_after"] += metrics.turns_after
        s["summary_calls"] += metrics.summary_calls
        s["summary_errors"] += metrics.summary_errors
        s["fallback_summaries"] += metrics.fallback_summaries
        s["rules_applied"] += metrics.rules_applied
        s["estimated_before"] += metrics.tokens_before_kind == _ESTIMATED
        s["estimated_after"] += metrics.tokens_after_kind == _ESTIMATED
        s["compacted"] += metrics.compacted
        s["compacted_still_over_limit"] += (
            metrics.compacted and metrics.status is TrajectoryStatus.STILL_OVER_LIMIT
        )
        bad = metrics.status is TrajectoryStatus.BAD_INPUT
        s["bad_files"] += bad and metrics.line is None
        self._duration += metrics.duration_s
        if bad and len(self._bad) < self._KEEP_BAD:
            self._bad.append((source, metrics.line, metrics.error or "unreadable"))

    @property
    def count(self) -> int:
        return sum(self._counts.values())

    def summary(self) -> BatchSummary:
        c = self._counts
        return BatchSummary(
            trajectories=sum(v for k, v in c.items() if k is not TrajectoryStatus.BAD_INPUT),
            compressed=c[TrajectoryStatus.COMPRESSED],
            skipped_under_target=c[TrajectoryStatus.SKIPPED_UNDER_TARGET],
            still_over_limit=c[TrajectoryStatus.STILL_OVER_LIMIT],
            summary_failed=c[TrajectoryStatus.SUMMARY_FAILED],
            bad_inputs=c[TrajectoryStatus.BAD_INPUT],
            duration_s=self._duration,
            bad=tuple(self._bad),
            **self._sums,
        )


# --------------------------------------------------------------------------- fact retention

_URL_RE = re.compile(r"\bhttps?://[^\s\"'<>)\]}]+")
_PATH_RE = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.[A-Za-z0-9]{1,8}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|rs|go|java|rb|c|h|cpp|json|jsonl|yaml|yml|toml|md|txt|sh|sql|html|css|log|cfg|ini)\b"
)
_ERROR_RE = re.compile(
    r"^.*(?:\b(?:[A-Z]\w*Error|[A-Z]\w*Exception|Traceback|FAILED|fatal|panic)\b"
    r"|\berror:|\bError \d).*$",
    re.M,
)
_SHELL_KEYS = ("command", "cmd")


@dataclass(frozen=True, slots=True)
class FactRetention:
    """How many facts (paths, commands, URLs, error lines) of a removed span survive."""

    #: Per kind: (facts found in the removed span, of those present in the output).
    by_kind: Mapping[str, tuple[int, int]]
    #: A few facts that did not survive, for a reader (at most 10).
    missing: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(t for t, _ in self.by_kind.values())

    @property
    def kept(self) -> int:
        return sum(k for _, k in self.by_kind.values())

    @property
    def rate(self) -> float:
        """Share of facts kept (1.0 when the span held none)."""
        return self.kept / self.total if self.total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "facts": self.total,
            "kept": self.kept,
            "rate": round(self.rate, 4),
            "by_kind": {k: {"facts": t, "kept": n} for k, (t, n) in self.by_kind.items()},
            "missing": list(self.missing),
        }


def _texts(m: Message) -> Iterable[str]:
    from tinyjuice.rules import tool_output_text

    for p in m.parts:
        if isinstance(p, TextPart):
            # A JSON tool result ({"output": ..., "exit_code": ...}) is read through its output.
            yield tool_output_text(p.text) if m.role is Role.TOOL else p.text
    if m.reasoning:
        yield m.reasoning
    for c in m.tool_calls:
        yield c.arguments


def extract_facts(messages: Sequence[Message]) -> dict[str, list[str]]:
    """Paths, shell commands, URLs and error lines in ``messages``, first seen first.

    Commands are the ``command``/``cmd`` arguments of tool calls; error lines are lines
    of tool results naming an exception, a traceback, a failure or ``error:`` (stripped,
    at most 200 characters); JSON tool results are read through their ``output``.
    Deterministic; used to measure what a compaction kept.
    """
    found: dict[str, dict[str, None]] = {k: {} for k in ("paths", "commands", "urls", "errors")}
    for m in messages:
        for call in m.tool_calls:
            args = call.parsed_arguments()
            if isinstance(args, dict):
                for key in _SHELL_KEYS:
                    value = args.get(key)
                    if isinstance(value, str) and value.strip():
                        found["commands"][value.strip()] = None
        for text in _texts(m):
            for url in _URL_RE.findall(text):
                found["urls"][url.rstrip(".,;:")] = None
            for path in _PATH_RE.findall(_URL_RE.sub(" ", text)):
                found["paths"][path] = None
            if m.role is Role.TOOL:
                for line in _ERROR_RE.findall(text):
                    line = line.strip()
                    if line:
                        found["errors"][line[:200]] = None
    return {k: list(v) for k, v in found.items()}


def fact_retention(removed: Sequence[Message], output: Sequence[Message]) -> FactRetention:
    """Which facts of ``removed`` (the compressed span) appear anywhere in ``output``."""
    facts = extract_facts(removed)
    haystack = "\n".join(t for m in output for t in _texts(m))
    by_kind: dict[str, tuple[int, int]] = {}
    missing: list[str] = []
    for kind, items in facts.items():
        kept = 0
        for item in items:
            if item in haystack:
                kept += 1
            elif len(missing) < 10:
                missing.append(f"{kind}: {item[:80]}")
        by_kind[kind] = (len(items), kept)
    return FactRetention(by_kind=by_kind, missing=tuple(missing))
