"""The inspector's view of one loaded transcript: core results, held for the UI.

Holds no compaction rule: every boundary, total and projection comes from
``tinyjuice`` (``plan_boundary`` over a prebuilt ``BoundaryIndex`` and the token prefix
sums), so moving the boundary costs a few microseconds, not a re-count.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tinyjuice.analysis import TranscriptAnalysis
from tinyjuice.boundary import BoundaryIndex
from tinyjuice.breakdown import ContextBreakdown, compute_breakdown
from tinyjuice.model import Transcript
from tinyjuice.pipeline import BoundaryPlan, plan_boundary
from tinyjuice.policies import Threshold, pick_policy
from tinyjuice.report import CompactionOptions, Profile
from tinyjuice.tokens import TokenCounter, TranscriptTokens


@dataclass
class InspectorSession:
    transcript: Transcript
    tokens: TranscriptTokens
    counter: TokenCounter
    index: BoundaryIndex
    options: CompactionOptions
    plan: BoundaryPlan
    breakdown: ContextBreakdown
    #: The trigger of the agent that wrote the transcript (its policy, on this window).
    trigger: Threshold | None = None
    #: Per-message work (redaction) the preview's compress() runs reuse.
    analysis: TranscriptAnalysis = field(default_factory=TranscriptAnalysis)

    @classmethod
    def build(
        cls,
        transcript: Transcript,
        tokens: TranscriptTokens,
        counter: TokenCounter,
        *,
        context_window: int | None = None,
        index: BoundaryIndex | None = None,
    ) -> InspectorSession:
        index = index or BoundaryIndex(transcript.messages)
        options = CompactionOptions(context_window=context_window, force=True)
        plan = plan_boundary(transcript, options, tokens, index=index, counter=counter)
        # Start from the agent policy's own boundary, made explicit so moves are manual.
        options = replace(options, boundary=plan.end)
        plan = plan_boundary(transcript, options, tokens, index=index, counter=counter)
        breakdown = compute_breakdown(
            transcript,
            tokens,
            counter=counter,
            context_max_tokens=plan.context_window,
        )
        return cls(
            transcript, tokens, counter, index, options, plan, breakdown, _trigger(transcript, plan)
        )

    # ----------------------------------------------------------- boundary

    def replan(self, options: CompactionOptions) -> BoundaryPlan:
        self.options = options
        self.plan = plan_boundary(
            self.transcript, options, self.tokens, index=self.index, counter=self.counter
        )
        return self.plan

    def set_boundary(self, index: int) -> BoundaryPlan:
        """Compress up to ``index`` (snapped by core to a legal boundary)."""
        n = len(self.transcript.messages)
        return self.replan(replace(self.options, boundary=max(0, min(index, n)), keep_last=None))

    def step_legal(self, delta: int) -> BoundaryPlan:
        snap = self.index.step_legal(self.plan.end, delta)
        return self.set_boundary(snap.index)

    def step_exchange(self, delta: int) -> BoundaryPlan:
        snap = self.index.step(self.plan.end, delta)
        return self.set_boundary(snap.index)

    def keep_last(self, n: int) -> BoundaryPlan:
        return self.replan(replace(self.options, keep_last=n, boundary=None))

    def set_focus(self, topic: str | None) -> None:
        self.options = replace(self.options, focus_topic=topic or None)

    def set_profile(self, profile: Profile) -> BoundaryPlan:
        return self.replan(replace(self.options, profile=profile))

    def compaction_options(self) -> CompactionOptions:
        """Options for ``compress`` that reproduce the boundary on screen exactly."""
        return replace(self.options, keep_last=None, boundary=self.plan.end, force=True)

    def with_tokens(self, tokens: TranscriptTokens, counter: TokenCounter) -> InspectorSession:
        """The same session with refined (exact) token counts; the boundary is kept."""
        plan = plan_boundary(
            self.transcript, self.options, tokens, index=self.index, counter=counter
        )
        breakdown = compute_breakdown(
            self.transcript, tokens, counter=counter, context_max_tokens=plan.context_window
        )
        return InspectorSession(
            self.transcript,
            tokens,
            counter,
            self.index,
            self.options,
            plan,
            breakdown,
            self.trigger,
            self.analysis,
        )


def _trigger(transcript: Transcript, plan: BoundaryPlan) -> Threshold | None:
    """The agent's own trigger on the plan's window (None when its policy cannot apply)."""
    policy, _ = pick_policy(transcript)
    try:
        return policy.threshold(plan.context_window)
    except ValueError:  # e.g. a reserved buffer larger than a tiny window
        return None
