"""The tinyjuice context engine's logic, independent of Hermes.

:class:`EngineCore` implements what Hermes Agent's ``ContextEngine`` contract asks
(hermes-agent 0.19, ``agent/context_engine.py``) with plain Python:
:mod:`tinyjuice.hermes.engine` mixes it into a real ``ContextEngine`` subclass.

Hermes decides *when* from ``should_compress`` (tinyjuice's threshold, cooldown and
anti-thrash state) and then calls ``compress``, which runs tinyjuice's pipeline on the
live OpenAI-shaped list. The engine never raises into Hermes and never writes Hermes'
state.db (Hermes persists the returned list itself); on any failure, and on an
auth or network summary failure (Hermes' policy), the input list comes back unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from tinyjuice.boundary import sanitize_tool_pairs
from tinyjuice.budget import (
    Budget,
    PromptTokens,
    SummaryKind,
    compute_budget,
    record_reading,
    should_compress,
)
from tinyjuice.messages import from_messages, to_messages
from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.pipeline import compress as compress_transcript
from tinyjuice.pipeline import plan_boundary
from tinyjuice.report import DEFAULT_CONTEXT_WINDOW, CompactionReport, Status
from tinyjuice.summary import SummaryProvider
from tinyjuice.tokens import CountKind

__all__ = ["ENGINE_NAME", "EngineCore", "ProviderFactory"]

#: The name ``context.engine`` selects in Hermes' config.yaml.
ENGINE_NAME = "tinyjuice"

#: Builds the summary provider from Hermes' main runtime (model, provider, base_url,
#: api_key, api_mode); None means the deterministic fallback summary.
ProviderFactory = Callable[[Mapping[str, str]], SummaryProvider | None]


def _no_provider(runtime: Mapping[str, str]) -> SummaryProvider | None:
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class EngineCore:
    """Token tracking, the compaction decision and ``compress`` for Hermes."""

    # Hermes reads these for its preflight and status bar (ContextEngine's fields).
    threshold_percent: float = 0.50
    protect_first_n: int = 3
    protect_last_n: int = 20
    #: tinyjuice's Hermes rule: the threshold is never below this (small windows: 85%).
    threshold_floor: int = 64_000
    #: Read by Hermes after compress(): why the summary failed, if it did.
    _last_summary_error: str | None

    def __init__(
        self,
        provider_factory: ProviderFactory | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._provider_factory = provider_factory or _no_provider
        self._clock = clock
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0
        self.session_id: str | None = None
        self.state = CompactionState()
        self.last_decision: dict[str, Any] | None = None
        self.last_compaction: dict[str, Any] | None = None
        self._runtime: dict[str, str] = {}
        self._reset_attempt()
        self.update_model("", DEFAULT_CONTEXT_WINDOW)

    @property
    def name(self) -> str:
        return ENGINE_NAME

    # ------------------------------------------------------------------ model and usage

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
        **_: Any,
    ) -> None:
        """A model switch: the window, the threshold and the summary runtime."""
        window = _int(context_length) or DEFAULT_CONTEXT_WINDOW
        self.model = model or ""
        self.context_length = window
        self.budget: Budget = compute_budget(
            window, threshold_ratio=self.threshold_percent, floor=self.threshold_floor
        )
        self.threshold_tokens = self.budget.threshold_tokens
        # The key stays in memory for Hermes' own client; get_status never shows it.
        self._runtime = {
            "model": self.model,
            "provider": provider or "",
            "base_url": base_url or "",
            "api_key": api_key or "",
            "api_mode": api_mode or "",
        }

    def update_from_response(self, usage: Mapping[str, Any]) -> None:
        """The provider's measured usage after a call (a reading for the anti-thrash state)."""
        usage = usage if isinstance(usage, Mapping) else {}
        prompt = _int(usage.get("prompt_tokens"))
        completion = _int(usage.get("completion_tokens"))
        self.last_prompt_tokens = prompt
        self.last_completion_tokens = completion
        self.last_total_tokens = _int(usage.get("total_tokens")) or prompt + completion
        if prompt > 0:
            self.state = record_reading(self.state, prompt, self.budget)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """tinyjuice's decision: threshold, then cooldown, strikes and low-savings back-off.

        ``last_prompt_tokens`` is -1 right after a compaction (Hermes' "awaiting real
        usage" sentinel): a negative or missing reading counts as 0.
        """
        tokens = _int(prompt_tokens if prompt_tokens is not None else self.last_prompt_tokens)
        decision = should_compress(
            PromptTokens(max(tokens, 0), CountKind.MEASURED),
            self.budget,
            self.state,
            now=self._clock(),
        )
        self.last_decision = {
            "fire": decision.fire,
            "code": decision.code.value,
            "reason": decision.reason,
            "prompt_tokens": decision.prompt_tokens,
            "threshold_tokens": decision.threshold_tokens,
        }
        return decision.fire

    # ------------------------------------------------------------------------ compress

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        **_: Any,
    ) -> list[dict[str, Any]]:
        """The compacted OpenAI-format list, or ``messages`` itself when nothing changed,
        the summary failed with an auth or network error, or anything went wrong."""
        self._reset_attempt()
        started = time.perf_counter()
        try:
            return self._compress(messages, focus_topic, started)
        except Exception as exc:  # never raise into the agent loop
            self._last_compress_aborted = True
            self._last_summary_error = f"tinyjuice: {type(exc).__name__}: {exc}"[:300]
            self.last_compaction = {
                "status": "error",
                "reason": self._last_summary_error,
                "messages_before": len(messages) if isinstance(messages, list) else 0,
                "at": self._clock(),
            }
            return messages

    def _compress(
        self, messages: list[dict[str, Any]], focus_topic: str | None, started: float
    ) -> list[dict[str, Any]]:
        transcript = from_messages(messages, "openai", model=self.model or None)
        options = self._options(focus_topic)
        provider = self._provider_factory(self._runtime)
        result = compress_transcript(transcript, options, provider, self.state, now=self._clock())
        self.state = result.state
        report = result.report
        if report.status is Status.ABORTED:
            self._last_compress_aborted = True
            self._last_summary_error = report.reason
        if not result.changed:
            self._remember(report, messages, messages, started, provider)
            return messages
        checked = sanitize_tool_pairs(result.transcript.messages, keep_in_flight=True)
        if checked.removed_results or checked.stripped_calls or checked.dropped_messages:
            raise RuntimeError("the compacted list would break a tool-call pair")
        out = to_messages(result.transcript, "openai")
        self.compression_count += 1
        self._last_compression_made_progress = True
        if report.summary_kind is SummaryKind.FALLBACK:
            self._last_summary_fallback_used = True
            self._last_summary_error = report.failure_class or None
        self._remember(report, messages, out, started, provider)
        return out

    def _options(self, focus_topic: str | None = None) -> CompactionOptions:
        # Hermes decided to compact (its should_compress, a manual /compress, or a
        # context-overflow recovery): tinyjuice's own threshold check is bypassed.
        return CompactionOptions(
            context_window=self.context_length,
            threshold_ratio=self.threshold_percent,
            threshold_floor=self.threshold_floor,
            protect_first_n=self.protect_first_n,
            protect_last_n=self.protect_last_n,
            focus_topic=focus_topic or None,
            force=True,
            lineage_id=self.session_id,
        )

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        """Whether tinyjuice's boundary leaves a middle to compact (the gateway's
        ``/compress`` guard); True when the list cannot be read, so compress() decides."""
        try:
            transcript = from_messages(messages, "openai", model=self.model or None)
            plan = plan_boundary(transcript, self._options(), state=self.state)
        except Exception:
            return True
        return plan.middle_messages > 0

    def _reset_attempt(self) -> None:
        # The per-call fields Hermes' compression step reads after compress() returns.
        self._last_compress_aborted = False
        self._last_summary_error = None
        self._last_summary_fallback_used = False
        self._last_compression_made_progress = False

    def _remember(
        self,
        report: CompactionReport,
        before: list[dict[str, Any]],
        after: list[dict[str, Any]],
        started: float,
        provider: SummaryProvider | None,
    ) -> None:
        self.last_compaction = {
            "status": report.status.value,
            "reason": report.reason,
            "messages_before": len(before),
            "messages_after": len(after),
            "tokens_before": report.before_tokens,
            "tokens_after": report.after_tokens,
            "summary_kind": report.summary_kind.value,
            "summary_provider": report.summary_provider
            or (provider.name if provider is not None else None),
            "failure_class": report.failure_class,
            "threshold_rule": self.budget.explanation,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            "at": self._clock(),
        }

    # ----------------------------------------------------------------- session hooks

    def on_session_start(self, session_id: str, **_: Any) -> None:
        if session_id != self.session_id:
            self.state = CompactionState(lineage_id=session_id or None)
        self.session_id = session_id or None

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Nothing to flush: tinyjuice keeps no files and Hermes stores the messages."""

    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0
        self.state = CompactionState(lineage_id=self.session_id)
        self.last_decision = None
        self.last_compaction = None
        self._reset_attempt()

    # ------------------------------------------------------------------------ status

    def get_status(self) -> dict[str, Any]:
        """Hermes' standard status fields and the engine's decisions (never a key)."""
        last_prompt = self.last_prompt_tokens if self.last_prompt_tokens > 0 else 0
        state = self.state
        return {
            "engine": ENGINE_NAME,
            "last_prompt_tokens": last_prompt,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": min(100.0, last_prompt / self.context_length * 100),
            "compression_count": self.compression_count,
            "threshold_rule": self.budget.explanation,
            "last_decision": self.last_decision,
            "last_compaction": self.last_compaction,
            "strikes": state.strikes,
            "auto_blocked": state.auto_blocked,
            "cooldown_until": state.cooldown_until,
            "summary_runtime": {k: v for k, v in self._runtime.items() if k != "api_key"},
        }
