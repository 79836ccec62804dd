"""Compaction reports and results: what ``compress`` returns.

A report never holds raw transcript text unless a preview was asked for
(:attr:`tinyjuice.options.CompactionOptions.include_preview`); it carries counts, token figures labelled
by provenance, the boundary and why it snapped, the summary kind and confidence,
per-step savings, cache-cold tokens and a persistence recommendation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from tinyjuice.budget import SummaryKind
from tinyjuice.model import Message, Transcript
from tinyjuice.model_limits import DEFAULT_CONTEXT_WINDOW
from tinyjuice.options import Profile
from tinyjuice.redact import redact_json

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "CompactionReport",
    "CompactionResult",
    "PersistenceRecommendation",
    "Status",
    "StepSaving",
    "SummaryKind",
]


class Status(StrEnum):
    COMPACTED = "compacted"
    NOOP = "noop"
    BELOW_THRESHOLD = "below_threshold"
    COOLDOWN = "cooldown"
    BACKED_OFF = "backed_off"
    ABORTED = "aborted"
    LEASE_BUSY = "lease_busy"


class PersistenceRecommendation(StrEnum):
    IN_PLACE_ARCHIVE = "in_place_archive"
    CHILD_CONTINUATION = "child_continuation"
    NO_PERSISTENCE_CHANGE = "no_persistence_change"


@dataclass(frozen=True, slots=True)
class StepSaving:
    step: str
    tokens_saved: int
    detail: str = ""
    #: How ``tokens_saved`` was counted: ``exact``, or ``estimated`` when it reads
    #: estimated messages (an estimated middle, digests the prune did not count because
    #: the summary budget could not turn on them (``exact_counts`` counts them), estimated
    #: counts given, or an image's flat estimate).
    kind: str = "exact"


@dataclass(frozen=True, slots=True)
class CompactionReport:
    status: Status
    reason: str
    profile: Profile
    before_messages: int
    before_tokens: int
    after_messages: int
    after_tokens: int
    #: Provenance of the "before" figure used for the threshold check.
    prompt_tokens: int
    prompt_tokens_kind: str
    tokens_kind: str
    counter: str
    context_window: int
    context_window_source: str
    effective_window: int
    threshold_tokens: int
    threshold_rule: str
    boundary_start: int | None = None
    boundary_end: int | None = None
    boundary_requested: int | None = None
    snap_reason: str | None = None
    head_messages: int = 0
    middle_messages: int = 0
    tail_messages: int = 0
    head_tokens: int = 0
    middle_tokens: int = 0
    tail_tokens: int = 0
    compaction_count: int = 0
    summary_kind: SummaryKind = SummaryKind.NONE
    summary_confidence: str | None = None
    summary_tokens: int = 0
    summary_provider: str | None = None
    summary_omitted: Mapping[str, int] = field(default_factory=dict)
    #: The id (sha256 prefix) of the appendix holding what the summary left out.
    summary_appendix: str | None = None
    steps: tuple[StepSaving, ...] = ()
    digests: tuple[Mapping[str, Any], ...] = ()
    rules_applied: Mapping[str, int] = field(default_factory=dict)
    #: Messages redaction changed among what leaves the original: the middle as
    #: ``compacted_middle`` holds it (Hermes: texts only, its source records dropped;
    #: rules: source records included). docs/compaction.md, "What redaction covers".
    redactions: int = 0
    media_replaced: int = 0
    sanitizer: Mapping[str, int] = field(default_factory=dict)
    cache_cold_tokens: int = 0
    cache_key: str | None = None
    cache_hints: tuple[Mapping[str, Any], ...] = ()
    persistence: PersistenceRecommendation = PersistenceRecommendation.NO_PERSISTENCE_CHANGE
    failure_class: str | None = None
    retry_class: str | None = None
    dropped: bool = False
    recoverable: str = "original transcript unchanged; archive it before replacing"
    warnings: tuple[str, ...] = ()
    preview: Mapping[str, Any] | None = None
    #: The kind of the head, middle, tail and total figures when they differ: the
    #: middle estimated where no decision turned on it (tinyjuice.decisive, as
    #: ``compress --dry-run``'s ``counts``); empty when every one is ``tokens_kind``.
    counts: Mapping[str, str] = field(default_factory=dict)

    @property
    def tokens_saved(self) -> int:
        return self.before_tokens - self.after_tokens

    @property
    def percent_saved(self) -> float:
        return 100.0 * self.tokens_saved / self.before_tokens if self.before_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by ``tjui compress --json``, every string redacted (a
        reason, warning or preview may quote the transcript)."""
        shaped: dict[str, Any] = redact_json(self._shape(asdict(self)))
        return shaped

    def _shape(self, raw: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "reason": self.reason,
            "profile": self.profile.value,
            "boundary": {
                "start": self.boundary_start,
                "end": self.boundary_end,
                "requested": self.boundary_requested,
                "snap_reason": self.snap_reason,
            },
            "before": {"messages": self.before_messages, "tokens": self.before_tokens},
            "after": {"messages": self.after_messages, "tokens": self.after_tokens},
            "saved": {"tokens": self.tokens_saved, "percent": round(self.percent_saved, 2)},
            "tokens_kind": self.tokens_kind,
            "counts": dict(self.counts)
            or dict.fromkeys(("head", "middle", "tail", "total"), self.tokens_kind),
            "counter": self.counter,
            "prompt_tokens": {"value": self.prompt_tokens, "kind": self.prompt_tokens_kind},
            "budget": {
                "context_window": self.context_window,
                "context_window_source": self.context_window_source,
                "effective_window": self.effective_window,
                "threshold_tokens": self.threshold_tokens,
                "threshold_rule": self.threshold_rule,
            },
            "zones": {
                "head": {"messages": self.head_messages, "tokens": self.head_tokens},
                "middle": {"messages": self.middle_messages, "tokens": self.middle_tokens},
                "tail": {"messages": self.tail_messages, "tokens": self.tail_tokens},
            },
            "compaction_count": self.compaction_count,
            "summary": {
                "kind": self.summary_kind.value,
                "confidence": self.summary_confidence,
                "tokens": self.summary_tokens,
                "provider": self.summary_provider,
                "omitted": dict(self.summary_omitted),
                "appendix": self.summary_appendix,
            },
            "steps": [asdict(s) for s in self.steps],
            "digests": {"count": len(self.digests), "items": [dict(d) for d in self.digests]},
            "rules_applied": dict(self.rules_applied),
            "redactions": self.redactions,
            "media_replaced": self.media_replaced,
            "sanitizer": dict(self.sanitizer),
            "cache_cold_tokens": self.cache_cold_tokens,
            "cache": {"key": self.cache_key, "hints": [dict(h) for h in self.cache_hints]},
            "persistence": self.persistence.value,
            "failure": {
                "class": self.failure_class,
                "retry_class": self.retry_class,
                "dropped": self.dropped,
            },
            "recoverable": self.recoverable,
            "warnings": list(raw["warnings"]),
            "preview": dict(self.preview) if self.preview is not None else None,
        }


@dataclass(frozen=True, slots=True)
class CompactionResult:
    transcript: Transcript
    report: CompactionReport
    #: The caller-kept state after this run (anti-thrash strikes, cooldown, summary).
    state: Any
    #: The middle as compaction rewrote it (hermes: after digests, as sent to the
    #: summariser, redacted and without source records; rules: the rules' output).
    #: ``meta.original_index`` maps each back.
    compacted_middle: tuple[Message, ...] = ()
    #: The inserted handoff summary, when there is one.
    summary_message: Message | None = None
    #: What the fallback summary left out to fit its budget (redacted markdown), which a
    #: commit archives under its sha256; the summary names its first 16 hex digits.
    appendix: str | None = None

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.transcript.messages

    @property
    def changed(self) -> bool:
        return self.report.status is Status.COMPACTED
