"""Plan a boundary counting exactly only what decides it.

Details: docs/compaction.md (`tinyjuice.decisive`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tinyjuice.boundary import BoundaryIndex
from tinyjuice.budget import (
    SUMMARY_CEILING_TOKENS,
    SUMMARY_MIDDLE_SHARE,
    SUMMARY_MIN_TOKENS,
    SUMMARY_WINDOW_SHARE,
)
from tinyjuice.model import Role, Transcript
from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.pipeline import BoundaryPlan, plan_boundary
from tinyjuice.tokens import (
    CountKind,
    RoughCounter,
    TokenCounter,
    TranscriptTokens,
    count_span,
    count_transcript,
)

__all__ = [
    "ESTIMATE_SLACK",
    "DecisivePlan",
    "budget_clamped",
    "plan_counting_what_decides",
    "slack_bounds",
]

#: Messages counted exactly at first, at each end; doubled until the plan fits inside.
_FIRST_HEAD = 16
_FIRST_TAIL = 64
#: How far a rough estimate may be off (either way) for a clamp to still hold.
ESTIMATE_SLACK = 2.0


def slack_bounds(exact: int, estimated: int) -> tuple[int, int]:
    """The least and most ``exact`` tokens plus ``estimated`` estimated ones can count
    exactly (the estimate off by :data:`ESTIMATE_SLACK` either way)."""
    return exact + int(estimated / ESTIMATE_SLACK), exact + int(estimated * ESTIMATE_SLACK) + 1


@dataclass(frozen=True, slots=True)
class DecisivePlan:
    plan: BoundaryPlan
    #: Per-message costs: exact on ``[0, exact_head)`` and ``[exact_tail, n)``, estimated
    #: between (``tokens.kind`` is estimated when anything is).
    tokens: TranscriptTokens
    exact_head: int
    exact_tail: int

    @property
    def middle_exact(self) -> bool:
        return self.exact_tail <= self.exact_head

    def kinds(self, counter: TokenCounter) -> dict[str, str]:
        """The count kind of each figure of the plan: head, middle, tail, total."""
        exact = counter.kind.value
        middle = exact if self.middle_exact or self.plan.middle_messages == 0 else "estimated"
        return {"head": exact, "middle": middle, "tail": exact, "total": middle}


def _leading_system(transcript: Transcript) -> int:
    k = 0
    for m in transcript.messages:
        if m.role is not Role.SYSTEM and m.role is not Role.DEVELOPER:
            break
        k += 1
    return k


def _mixed(
    transcript: Transcript, counter: TokenCounter, rough: tuple[int, ...], head: int, tail: int
) -> TranscriptTokens:
    msgs = transcript.messages
    # The head keeps the leading system messages, so the tool schemas count as in full.
    front = count_transcript(replace(transcript, messages=msgs[:head]), counter)
    back = count_span(transcript, tail, len(msgs), counter)
    kind = counter.kind if tail <= head else CountKind.ESTIMATED
    return front.extended((*rough[head:tail], *back), kind)


def budget_clamped(context_window: int, middle_tokens: int) -> bool:
    """Whether the summary budget (:func:`tinyjuice.budget.summary_token_budget`) of a
    middle estimated at ``middle_tokens`` is clamped to its floor or ceiling whatever
    the middle's exact size (within :data:`ESTIMATE_SLACK` of the estimate)."""
    share = middle_tokens * SUMMARY_MIDDLE_SHARE
    ceiling = min(int(context_window * SUMMARY_WINDOW_SHARE), SUMMARY_CEILING_TOKENS)
    if ceiling <= SUMMARY_MIN_TOKENS:
        return True  # the floor wins whatever the middle holds
    if share * ESTIMATE_SLACK <= SUMMARY_MIN_TOKENS:
        return True  # at the floor
    return share >= ceiling * ESTIMATE_SLACK  # at the ceiling


def _budget_decided(plan: BoundaryPlan) -> bool:
    """Whether the summary budget is clamped whatever the middle's exact size."""
    return budget_clamped(plan.context_window, plan.middle_tokens)


def plan_counting_what_decides(
    transcript: Transcript,
    options: CompactionOptions,
    counter: TokenCounter,
    *,
    index: BoundaryIndex | None = None,
    state: CompactionState | None = None,
) -> DecisivePlan:
    """``plan_boundary`` with exact counts where they decide, estimates elsewhere.

    The boundary, head and tail totals equal an all-exact plan's; the middle and total
    are estimates unless the summary budget depends on them.
    """
    msgs = transcript.messages
    n = len(msgs)
    idx = index or BoundaryIndex(msgs)
    rough = count_transcript(replace(transcript, system_prompt=None, tools=()), RoughCounter())
    head = min(n, max(_FIRST_HEAD, _leading_system(transcript)))
    tail = max(head, n - _FIRST_TAIL)
    while True:
        tokens = _mixed(transcript, counter, rough.per_message, head, tail)
        plan = plan_boundary(transcript, options, tokens, index=idx, state=state, counter=counter)
        if tail <= head:
            break
        # The tail walk read the unit just before the cut; the head is counted in full.
        last_read = idx.group_start[plan.end - 1] if plan.end > 0 else 0
        head_ok = plan.start <= head
        tail_ok = last_read >= tail
        if head_ok and tail_ok:
            if _budget_decided(plan):
                break
            tail = head  # the budget turns on the middle: count it all
            continue
        if not head_ok:
            head = min(n, max(2 * head, plan.start))
        if not tail_ok:
            tail = min(tail, max(0, n - 2 * (n - tail)), last_read)
        tail = max(head, tail)
    return DecisivePlan(plan, tokens, head, tail)
