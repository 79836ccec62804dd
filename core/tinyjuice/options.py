"""What the caller passes to ``compress`` and carries between compactions.

:class:`CompactionOptions` holds every knob of the pipeline (Hermes' defaults);
:class:`CompactionState` is the caller-owned anti-thrash state of one session
(strikes, cooldowns, recent savings), read and updated by :mod:`tinyjuice.budget`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["LOW_SAVINGS_RATIO", "CompactionOptions", "CompactionState", "Profile"]

#: A compaction saving less than this fraction of the prompt is "low savings".
LOW_SAVINGS_RATIO = 0.10


class Profile(StrEnum):
    HERMES = "hermes"
    RULES = "rules"


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """Every knob of the pipeline, with Hermes' defaults."""

    profile: Profile = Profile.HERMES
    # budget
    context_window: int | None = None
    max_output_tokens: int | None = None
    threshold_ratio: float = 0.50
    threshold_floor: int = 64_000
    raise_ratio_small_windows: bool = True
    #: The trigger policy (a spec such as ``"claude-code"`` or ``"hermes:ratio=0.6"``);
    #: None picks the transcript's own agent's, as ``explain`` and the inspector do
    #: (:func:`tinyjuice.policies.agent_threshold`). Hermes' rule uses the knobs above.
    policy: str | None = None
    # head
    protect_system: bool = True
    protect_first_n: int = 3
    decay_head_after_first_compaction: bool = True
    # tail
    tail_target_ratio: float = 0.20
    tail_token_budget: int | None = None
    protect_last_n: int = 20
    soft_ceiling_ratio: float = 1.5
    # anchors
    anchor_latest_user: bool = True
    anchor_latest_assistant: bool = True
    # manual boundary
    keep_last: int | None = None
    boundary: int | None = None
    force: bool = False
    # summary
    focus_topic: str | None = None
    abort_on_summary_failure: bool = False
    fallback_enabled: bool = True
    accept_lossy_fallback: bool = True
    lineage_id: str | None = None
    # prune
    digest_min_chars: int = 200
    dedup: bool = True
    shrink_args_over: int = 500
    shrink_args_to: int = 200
    # safety
    redact: bool = True
    reduce_media: bool = True
    orphan_calls: str = "strip"
    # persistence
    prefer_child_continuation: bool = False
    # reporting
    include_preview: bool = False
    #: Count every message exactly. Off (and no ``tokens`` passed to compress(), no
    #: provider): the middle about to be replaced is estimated where no decision turns
    #: on it (tinyjuice.decisive), and its figures are labelled estimated.
    exact_counts: bool = False
    # rules profile settings (tinyjuice.rules.RulesConfig keys), used when profile == RULES
    rules: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tail_floor(self) -> int:
        """Hermes: max(3, min(protect_last_n, 8)) messages."""
        return max(3, min(self.protect_last_n, 8))

    @property
    def manual(self) -> bool:
        return self.keep_last is not None or self.boundary is not None


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
