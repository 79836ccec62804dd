"""Plan a boundary counting exactly only what decides it.

Most of a long transcript's tokens sit in the middle that is about to be replaced; where
the cut falls depends only on the kept head and tail (the tail walk reads the counts of
the messages it takes and of the one unit it stops at), and the summary budget on the
middle's size only while it is not clamped to its floor or ceiling. So
:func:`plan_counting_what_decides` counts the head and a stretch at the end exactly,
estimates the rest (chars/4), plans, and widens the exact stretch until the plan's
boundary lies inside it — the plan then cuts exactly where an all-exact plan cuts, with
exact head and tail totals. The middle (and the total) stay estimates, labelled so,
unless the summary budget could turn on them: then the middle is counted too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import accumulate

from tinyjuice.boundary import BoundaryIndex
from tinyjuice.budget import (
    SUMMARY_CEILING_TOKENS,
    SUMMARY_MIDDLE_SHARE,
    SUMMARY_MIN_TOKENS,
    SUMMARY_WINDOW_SHARE,
)
from tinyjuice.model import Role, Transcript
from tinyjuice.pipeline import BoundaryPlan, plan_boundary
from tinyjuice.report import CompactionOptions
from tinyjuice.tokens import (
    CountKind,
    RoughCounter,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
)

__all__ = ["DecisivePlan", "plan_counting_what_decides"]

#: Messages counted exactly at first, at each end; doubled until the plan fits inside.
_FIRST_HEAD = 16
_FIRST_TAIL = 64
#: How far a rough estimate may be off (either way) for a clamp to still hold.
_ESTIMATE_SLACK = 2.0


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
    back = count_transcript(
        replace(transcript, messages=msgs[tail:], system_prompt=None, tools=()), counter
    )
    per = (*front.per_message, *rough[head:tail], *back.per_message)
    kind = counter.kind if tail <= head else CountKind.ESTIMATED
    return TranscriptTokens(
        per_message=per,
        prefix=(0, *accumulate(per)),
        system_prompt=front.system_prompt,
        tools=front.tools,
        counter=counter.name,
        kind=kind,
    )


def _budget_decided(plan: BoundaryPlan) -> bool:
    """Whether the summary budget is clamped whatever the middle's exact size."""
    share = plan.middle_tokens * SUMMARY_MIDDLE_SHARE
    ceiling = min(int(plan.context_window * SUMMARY_WINDOW_SHARE), SUMMARY_CEILING_TOKENS)
    if ceiling <= SUMMARY_MIN_TOKENS:
        return True  # the floor wins whatever the middle holds
    if plan.summary_budget > SUMMARY_MIN_TOKENS:
        return share >= plan.summary_budget * _ESTIMATE_SLACK  # at the ceiling
    return share * _ESTIMATE_SLACK <= SUMMARY_MIN_TOKENS  # at the floor


def plan_counting_what_decides(
    transcript: Transcript,
    options: CompactionOptions,
    counter: TokenCounter,
    *,
    index: BoundaryIndex | None = None,
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
        plan = plan_boundary(transcript, options, tokens, index=idx, counter=counter)
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
