"""The inspector's view of one loaded transcript: core results, held for the UI.

Holds no compaction rule: every boundary, total and projection comes from
``tinyjuice`` (``plan_boundary`` over a prebuilt ``BoundaryIndex`` and the token prefix
sums), so moving the boundary costs a few microseconds, not a re-count.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tinyjuice.analysis import TranscriptAnalysis
from tinyjuice.boundary import BoundaryIndex
from tinyjuice.breakdown import BreakdownSums, ContextBreakdown, breakdown_sums, compute_breakdown
from tinyjuice.live import LiveSplit
from tinyjuice.model import Transcript
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import BoundaryPlan, compress, plan_boundary
from tinyjuice.policies import Threshold, agent_threshold, resolve_window
from tinyjuice.report import CompactionResult
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
    #: The file cut at the agent's last compaction: ``transcript`` is its live part.
    split: LiveSplit | None = None
    #: How many subagents the session has (counted in the breakdown).
    subagents: int = 0
    #: The breakdown's sums over the messages: a grown transcript adds only its new ones.
    sums: BreakdownSums | None = None

    @property
    def live_from(self) -> int:
        """Index in the file of the live context's first message (0: no reset shown)."""
        return self.split.start if self.split is not None else 0

    @property
    def whole(self) -> Transcript:
        """The transcript as loaded, history before the last compaction included."""
        return self.split.whole if self.split is not None else self.transcript

    #: The compaction last computed (main screen, preview or commit dialog) and the
    #: settings it was computed for: every screen shows its figures while they hold.
    computed: CompactionResult | None = None
    computed_for: tuple[object, ...] | None = None

    # ------------------------------------------------------- computed result

    def settings_key(self) -> tuple[object, ...]:
        """What a compaction result depends on: boundary, profile, focus, counter."""
        o = self.options
        return (self.plan.end, o.profile, o.focus_topic, self.counter.name, self.tokens.kind)

    def remember(self, result: CompactionResult, key: tuple[object, ...]) -> None:
        """Keep ``result`` (computed for ``key``) as the figure every screen shows."""
        self.computed, self.computed_for = result, key

    @property
    def current_result(self) -> CompactionResult | None:
        """The computed compaction for the settings on screen now, if there is one."""
        return self.computed if self.computed_for == self.settings_key() else None

    def compute(self, options: CompactionOptions | None = None) -> CompactionResult:
        """Run core's ``compress`` for the boundary on screen (fallback summary) and
        remember it. Safe in a worker thread: it reads the session, never mutates it
        but for the final ``remember``."""
        key = self.settings_key()
        result = compress(
            self.transcript,
            options or self.compaction_options(),
            tokens=self.tokens,
            counter=self.counter,
            index=self.index,
            analysis=self.analysis,
        )
        self.remember(result, key)
        return result

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
        split: LiveSplit | None = None,
        subagents: int = 0,
        previous: InspectorSession | None = None,
    ) -> InspectorSession:
        """A session on ``transcript`` (the live part of ``split`` when given).

        ``previous`` (the session before a followed file grew) lends what core can
        extend by the new messages alone: the boundary index and the breakdown's sums,
        and its per-message analysis for the next compress.
        """
        if index is None:
            index = (
                previous.index.extended(transcript.messages)
                if previous is not None
                else BoundaryIndex(transcript.messages)
            )
        same_counter = previous is not None and previous.counter.name == counter.name
        sums = breakdown_sums(
            transcript, tokens, counter, previous.sums if same_counter and previous else None
        )
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
            subagents=subagents,
            sums=sums,
        )
        trigger = _trigger(transcript, plan)
        # Per-message results are keyed by the message objects: the grown transcript's
        # compress reuses what the last one computed for the messages they share. A file
        # read whole again (a rewind, a compaction) shares none: the old results would
        # only keep the old messages alive, so the analysis starts afresh.
        analysis = (
            previous.analysis
            if previous is not None and _shares_messages(previous.transcript, transcript)
            else TranscriptAnalysis()
        )
        return cls(
            transcript,
            tokens,
            counter,
            index,
            options,
            plan,
            breakdown,
            trigger,
            split,
            subagents,
            sums,
            analysis=analysis,
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
        sums = breakdown_sums(self.transcript, tokens, counter)
        breakdown = compute_breakdown(
            self.transcript,
            tokens,
            counter=counter,
            context_max_tokens=plan.context_window,
            subagents=self.subagents,
            sums=sums,
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
            self.split,
            self.subagents,
            sums,
            analysis=self.analysis,
        )


def _trigger(transcript: Transcript, plan: BoundaryPlan) -> Threshold | None:
    """The agent's own trigger on the plan's window: the policy compress and explain use."""
    try:
        max_out = resolve_window(transcript, plan.context_window).max_output_tokens
        _, threshold, _ = agent_threshold(transcript, plan.context_window, max_out)
    except ValueError:  # a window no policy fits
        return None
    return threshold


def _shares_messages(old: Transcript, new: Transcript) -> bool:
    """Whether ``new`` holds ``old``'s first or newest message object: it grew from
    ``old`` (the first is kept; the newest may be merged with what was appended, as a
    Claude Code message streamed over several lines is), or its live part moved on (the
    newest is kept). Each is looked for from the end of ``new`` that keeps it."""
    if not old.messages:
        return False
    first, last = old.messages[0], old.messages[-1]
    return any(m is first for m in new.messages) or any(m is last for m in reversed(new.messages))
