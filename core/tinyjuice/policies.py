"""When each agent compacts: trigger policies as values, and the usage series they judge.

Details: docs/policies.md (`tinyjuice.policies`).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias, runtime_checkable

from tinyjuice.budget import Budget, ThresholdRule, compute_budget
from tinyjuice.model import Role, Transcript, Usage
from tinyjuice.model_limits import ModelLimits, lookup_model
from tinyjuice.tokens import CountKind, TranscriptTokens

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "CLAUDE_CODE_BUFFER",
    "CODEX_LIMIT_RATIO",
    "DEFAULT_WINDOW",
    "OPENCODE_RESERVE_CAP",
    "POLICY_NAMES",
    "ClaudeCodePolicy",
    "CodexPolicy",
    "CustomPolicy",
    "HermesPolicy",
    "OpencodePolicy",
    "PolicyName",
    "Rule",
    "RulesPolicy",
    "Threshold",
    "TriggerPolicy",
    "UsagePoint",
    "UsageSeries",
    "WindowInfo",
    "agent_threshold",
    "default_policy",
    "extend_usage_series",
    "parse_policy",
    "pick_policy",
    "replay",
    "resolve_window",
    "threshold_budget",
    "usage_series",
]

#: Claude Code's reserved buffer (the newer observation; the older one was ~13K).
CLAUDE_CODE_BUFFER = 33_000
#: Codex's auto-compact limit when the model sets none: this share of the window.
CODEX_LIMIT_RATIO = 0.90
#: opencode reserves min(this, the model's max output tokens).
OPENCODE_RESERVE_CAP = 20_000
#: Window used when neither the user, the transcript nor the model table knows it.
DEFAULT_WINDOW = 128_000


class PolicyName(StrEnum):
    HERMES = "hermes"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENCODE = "opencode"
    RULES = "rules"
    CUSTOM = "custom"


POLICY_NAMES: tuple[str, ...] = tuple(p.value for p in PolicyName)


class Rule(StrEnum):
    """Which rule produced a threshold."""

    RATIO = "ratio"  # a share of the (effective) window
    FLOOR = "floor"  # a minimum number of tokens was higher than the share
    SMALL_WINDOW = "small_window"  # the floor reached the window: 85% of it instead
    BUFFER = "buffer"  # the window minus a reserved buffer
    LIMIT = "limit"  # a configured token limit


@dataclass(frozen=True, slots=True)
class Threshold:
    """What a policy computes for one context window."""

    policy: PolicyName
    context_window: int
    output_reservation: int
    effective_window: int
    threshold_tokens: int
    rule: Rule
    #: One line saying how the threshold was derived.
    explanation: str
    #: The ratio applied, when a ratio produced (or was compared for) the threshold.
    ratio: float | None = None
    #: The Hermes budget behind it (hermes, rules and custom policies).
    budget: Budget | None = None
    #: Whether the policy holds automatic compaction back after ineffective ones.
    anti_thrash: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.value,
            "window": self.context_window,
            "output_reservation": self.output_reservation,
            "effective_window": self.effective_window,
            "threshold_tokens": self.threshold_tokens,
            "rule": self.rule.value,
            "ratio": self.ratio,
            "anti_thrash": self.anti_thrash,
            "explanation": self.explanation,
        }


@runtime_checkable
class TriggerPolicy(Protocol):
    """A trigger policy: a value that computes a threshold for a window."""

    @property
    def name(self) -> PolicyName: ...

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        """The threshold for ``context_window``; ``max_output_tokens`` is the model's."""
        ...

    def spec(self) -> str:
        """The policy as a spec string :func:`parse_policy` reads back."""
        ...


def _check_window(context_window: int) -> None:
    if (
        isinstance(context_window, bool)
        or not isinstance(context_window, int)
        or context_window <= 0
    ):
        raise ValueError(
            f"context window must be a positive number of tokens, got {context_window!r}"
        )


def _from_budget(policy: PolicyName, budget: Budget, *, anti_thrash: bool, label: str) -> Threshold:
    return Threshold(
        policy=policy,
        context_window=budget.context_window,
        output_reservation=budget.output_reservation,
        effective_window=budget.effective_window,
        threshold_tokens=budget.threshold_tokens,
        rule=Rule(budget.rule.value),
        explanation=f"{label}: {budget.explanation}",
        ratio=budget.ratio,
        budget=budget,
        anti_thrash=anti_thrash,
    )


def _whole_window(
    policy: PolicyName,
    context_window: int,
    value: int,
    rule: Rule,
    explanation: str,
    ratio: float | None = None,
) -> Threshold:
    """A threshold of a policy that reserves nothing for output (the whole window counts)."""
    return Threshold(
        policy=policy,
        context_window=context_window,
        output_reservation=0,
        effective_window=context_window,
        threshold_tokens=value,
        rule=rule,
        explanation=explanation,
        ratio=ratio,
    )


def _spec(name: PolicyName, value: DataclassInstance, defaults: DataclassInstance) -> str:
    changed = [
        f"{_ALIASES_OUT.get(f.name, f.name)}={_fmt(getattr(value, f.name))}"
        for f in fields(value)
        if getattr(value, f.name) != getattr(defaults, f.name)
    ]
    return f"{name.value}:{','.join(changed)}" if changed else name.value


def _fmt(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    return str(v)


@dataclass(frozen=True, slots=True)
class HermesPolicy:
    """Hermes: ratio, floor, the small-window rule, output reservation, anti-thrash."""

    ratio: float = 0.50
    floor: int = 64_000
    raise_ratio_small_windows: bool = True
    #: Reserved for output only when a positive int is configured (as Hermes does).
    max_output_tokens: int | None = None
    anti_thrash: bool = True

    name: ClassVar[PolicyName] = PolicyName.HERMES

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        budget = compute_budget(
            context_window,
            max_output_tokens=self.max_output_tokens,
            threshold_ratio=self.ratio,
            floor=self.floor,
            raise_ratio_small_windows=self.raise_ratio_small_windows,
        )
        return _from_budget(self.name, budget, anti_thrash=self.anti_thrash, label="hermes")

    def spec(self) -> str:
        return _spec(self.name, self, HermesPolicy())


@dataclass(frozen=True, slots=True)
class ClaudeCodePolicy:
    """Claude Code: the window minus a reserved buffer (``pct`` can only lower it)."""

    buffer: int = CLAUDE_CODE_BUFFER
    #: ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` as a fraction (0.5 = 50%); None = not set.
    pct: float | None = None

    name: ClassVar[PolicyName] = PolicyName.CLAUDE_CODE

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        _check_window(context_window)
        if not 0 <= self.buffer < context_window:
            raise ValueError(
                f"claude-code buffer ({self.buffer:,}) must be between 0 and the context "
                f"window ({context_window:,})"
            )
        if self.pct is not None and not 0.0 < self.pct <= 1.0:
            raise ValueError(f"claude-code pct must be in (0, 1], got {self.pct!r}")
        by_buffer = context_window - self.buffer
        text = (
            f"claude-code: threshold {by_buffer:,} = {context_window:,} window − "
            f"{self.buffer:,} reserved buffer"
        )
        if self.pct is not None and int(context_window * self.pct) < by_buffer:
            by_pct = int(context_window * self.pct)
            text = (
                f"claude-code: threshold {by_pct:,} = {self.pct:.0%} of the "
                f"{context_window:,} window (the override is lower than window − "
                f"{self.buffer:,} buffer = {by_buffer:,})"
            )
            return _whole_window(self.name, context_window, by_pct, Rule.RATIO, text, self.pct)
        return _whole_window(self.name, context_window, by_buffer, Rule.BUFFER, text)

    def spec(self) -> str:
        return _spec(self.name, self, ClaudeCodePolicy())


@dataclass(frozen=True, slots=True)
class CodexPolicy:
    """Codex CLI: ``model_auto_compact_token_limit`` (default 90% of the window)."""

    limit: int | None = None
    limit_ratio: float = CODEX_LIMIT_RATIO

    name: ClassVar[PolicyName] = PolicyName.CODEX

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        _check_window(context_window)
        if self.limit is not None:
            if self.limit <= 0:
                raise ValueError(f"codex limit must be a positive number, got {self.limit!r}")
            value = self.limit
            text = f"codex: threshold {value:,} = model_auto_compact_token_limit"
            if value >= context_window:
                text += f" (at or above the {context_window:,} window: it cannot fire)"
            ratio = None
        else:
            if not 0.0 < self.limit_ratio <= 1.0:
                raise ValueError(f"codex limit_ratio must be in (0, 1], got {self.limit_ratio!r}")
            value = int(context_window * self.limit_ratio)
            ratio = self.limit_ratio
            text = (
                f"codex: threshold {value:,} = auto-compact limit, by default "
                f"{self.limit_ratio:.0%} of the {context_window:,} window"
            )
        return _whole_window(self.name, context_window, value, Rule.LIMIT, text, ratio)

    def spec(self) -> str:
        return _spec(self.name, self, CodexPolicy())


@dataclass(frozen=True, slots=True)
class OpencodePolicy:
    """opencode: input limit − min(20K, max output)."""

    reserve_cap: int = OPENCODE_RESERVE_CAP
    #: The model's max output; None = take the model table's (20K cap when unknown).
    max_output_tokens: int | None = None

    name: ClassVar[PolicyName] = PolicyName.OPENCODE

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        _check_window(context_window)
        out = self.max_output_tokens if self.max_output_tokens is not None else max_output_tokens
        reserved = self.reserve_cap if out is None or out <= 0 else min(self.reserve_cap, out)
        if not 0 <= reserved < context_window:
            raise ValueError(
                f"opencode reserve ({reserved:,}) must be smaller than the context window "
                f"({context_window:,})"
            )
        value = context_window - reserved
        why = "max output unknown" if out is None or out <= 0 else f"max output {out:,}"
        return Threshold(
            policy=self.name,
            context_window=context_window,
            output_reservation=reserved,
            effective_window=value,
            threshold_tokens=value,
            rule=Rule.BUFFER,
            explanation=(
                f"opencode: threshold {value:,} = {context_window:,} window − {reserved:,} "
                f"reserved (min({self.reserve_cap:,}, {why}))"
            ),
        )

    def spec(self) -> str:
        return _spec(self.name, self, OpencodePolicy())


@dataclass(frozen=True, slots=True)
class RulesPolicy:
    """The rule-based profile: fire at 60% of the window."""

    ratio: float = 0.60

    name: ClassVar[PolicyName] = PolicyName.RULES

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        budget = compute_budget(
            context_window, threshold_ratio=self.ratio, floor=0, raise_ratio_small_windows=False
        )
        return _from_budget(self.name, budget, anti_thrash=False, label="rules")

    def spec(self) -> str:
        return _spec(self.name, self, RulesPolicy())


@dataclass(frozen=True, slots=True)
class CustomPolicy:
    """Any ratio, floor and output reserve (no ratio raise)."""

    ratio: float = 0.75
    floor: int = 0
    reserve: int = 0
    anti_thrash: bool = False

    name: ClassVar[PolicyName] = PolicyName.CUSTOM

    def threshold(self, context_window: int, max_output_tokens: int | None = None) -> Threshold:
        budget = compute_budget(
            context_window,
            max_output_tokens=self.reserve or None,
            threshold_ratio=self.ratio,
            floor=self.floor,
            raise_ratio_small_windows=False,
        )
        return _from_budget(self.name, budget, anti_thrash=self.anti_thrash, label="custom")

    def spec(self) -> str:
        return _spec(self.name, self, CustomPolicy())


#: The built-in policies: frozen dataclasses (parse_policy sets their fields by replace()).
_Builtin: TypeAlias = (
    HermesPolicy | ClaudeCodePolicy | CodexPolicy | OpencodePolicy | RulesPolicy | CustomPolicy
)

_CLASSES: dict[PolicyName, type[_Builtin]] = {
    PolicyName.HERMES: HermesPolicy,
    PolicyName.CLAUDE_CODE: ClaudeCodePolicy,
    PolicyName.CODEX: CodexPolicy,
    PolicyName.OPENCODE: OpencodePolicy,
    PolicyName.RULES: RulesPolicy,
    PolicyName.CUSTOM: CustomPolicy,
}

#: Short spec keys for long field names.
_ALIASES_IN = {
    "raise": "raise_ratio_small_windows",
    "max_output": "max_output_tokens",
    "reserve": "reserve",
    "cap": "reserve_cap",
}
#: Settings that are shares of a window: (0, 1], written as 0.75 or 75%.
_RATIO_KEYS = frozenset({"ratio", "pct", "limit_ratio"})
_ALIASES_OUT = {
    "raise_ratio_small_windows": "raise",
    "max_output_tokens": "max_output",
    "reserve_cap": "cap",
}


def default_policy(name: str | PolicyName) -> TriggerPolicy:
    """The named policy with its defaults."""
    return _builtin(name)


def _builtin(name: str | PolicyName) -> _Builtin:
    try:
        key = PolicyName(name)
    except ValueError:
        raise ValueError(
            f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}"
        ) from None
    return _CLASSES[key]()


def _parse_value(policy: str, key: str, raw: str, current: object) -> object:
    text = raw.strip().lower().replace("_", "")
    if isinstance(current, bool):
        if text in ("true", "yes", "on", "1"):
            return True
        if text in ("false", "no", "off", "0"):
            return False
        raise ValueError(f"{policy}: {key} must be true or false, got {raw!r}")
    if text in ("none", "null", ""):
        return None
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    elif text.endswith("k"):
        text, scale = text[:-1], 1000.0
    try:
        number = float(text) * scale
    except ValueError:
        raise ValueError(f"{policy}: {key} must be a number, got {raw!r}") from None
    name = _ALIASES_OUT.get(key, key)
    if not math.isfinite(number):
        raise ValueError(f"{policy}: {name} must be a finite number, got {raw!r}")
    if number < 0:
        raise ValueError(f"{policy}: {name} must not be negative, got {raw.strip()!r}")
    if key in _RATIO_KEYS and not 0.0 < number <= 1.0:
        raise ValueError(
            f"{policy}: {name} must be a fraction in (0, 1] or a percentage (e.g. 0.75 or"
            f" 75%), got {raw.strip()!r}"
        )
    if isinstance(current, float) or scale == 0.01 or number != int(number):
        return number
    return int(number)


def parse_policy(spec: str) -> TriggerPolicy:
    """A policy from a spec: ``name`` or ``name:key=value,key=value``.

    Keys are the policy's fields (``raise`` for ``raise_ratio_small_windows``,
    ``max_output`` for ``max_output_tokens``, ``cap`` for ``reserve_cap``). Numbers may
    use ``k`` (``buffer=13k``); ratios may be written as percentages (``ratio=60%``).
    """
    name, _, settings = spec.strip().partition(":")
    policy = _builtin(name.strip().lower())
    if not settings.strip():
        return policy
    known = {f.name for f in fields(policy)}
    values: dict[str, Any] = {}  # (each parsed to its field's type by _parse_value)
    for item in settings.split(","):
        if not item.strip():
            continue
        key, eq, raw = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        key = _ALIASES_IN.get(key, key)
        if not eq or key not in known:
            names = sorted(_ALIASES_OUT.get(k, k) for k in known)
            raise ValueError(
                f"{policy.name.value}: unknown setting {item.strip()!r}; "
                f"settings are {', '.join(names)} (as key=value)"
            )
        values[key] = _parse_value(policy.name.value, key, raw, getattr(policy, key))
    return replace(policy, **values)


def pick_policy(transcript: Transcript) -> tuple[TriggerPolicy, str]:
    """The policy of the agent that wrote ``transcript``, and why it was picked.

    By source format (claude-code, codex, opencode; hermes and ShareGPT trajectories →
    hermes),
    then by model name (a ``codex`` model → codex); otherwise hermes, the reference
    policy the engine itself follows.
    """
    fmt = transcript.format
    if fmt == "claude-code":
        return ClaudeCodePolicy(), "format claude-code"
    if fmt == "codex":
        return CodexPolicy(), "format codex"
    if fmt == "opencode":
        return OpencodePolicy(), "format opencode"
    if fmt in ("hermes", "sharegpt"):
        return HermesPolicy(), f"format {fmt}"
    model = (transcript.model or "").lower()
    if "codex" in model:
        return CodexPolicy(), f"model {transcript.model}"
    return HermesPolicy(), "default (no agent-specific policy for this format)"


def agent_threshold(
    transcript: Transcript,
    context_window: int,
    max_output_tokens: int | None = None,
    policy: TriggerPolicy | str | None = None,
) -> tuple[TriggerPolicy, Threshold, str]:
    """(policy, its threshold on ``context_window``, why it was picked) — the one choice
    ``compress``, ``explain``, ``batch`` and the inspector all make.

    ``policy`` is a policy, a spec string, or None for the transcript's own agent's
    (:func:`pick_policy`). When the agent's own policy does not fit the window (a 33K
    buffer in a 32K window) Hermes' rule, which fits any window, stands in; a policy
    that was asked for raises ``ValueError`` instead.
    """
    if policy is None:
        chosen, why = pick_policy(transcript)
    elif isinstance(policy, str):
        chosen, why = parse_policy(policy), "given"
    else:
        chosen, why = policy, "given"
    try:
        threshold = chosen.threshold(context_window, max_output_tokens)
    except ValueError as exc:
        if policy is not None:
            raise
        why = f"{why}; {chosen.name.value} does not fit: {exc}; using hermes"
        chosen = HermesPolicy()
        threshold = chosen.threshold(context_window, max_output_tokens)
    return chosen, threshold, why


def threshold_budget(threshold: Threshold) -> Budget:
    """The :class:`~tinyjuice.budget.Budget` the pipeline runs on, for any policy's threshold."""
    if threshold.budget is not None:
        return threshold.budget
    effective = threshold.effective_window
    ratio = threshold.ratio or threshold.threshold_tokens / max(effective, 1)
    rule = {Rule.BUFFER: "buffer", Rule.LIMIT: "limit"}.get(threshold.rule, threshold.rule.value)
    return Budget(
        context_window=threshold.context_window,
        output_reservation=threshold.output_reservation,
        effective_window=effective,
        threshold_tokens=threshold.threshold_tokens,
        rule=ThresholdRule(rule),
        ratio=ratio,
        floor=0,
        configured_ratio=ratio,
        note=threshold.explanation,
    )


# ---------------------------------------------------------------------------- window


@dataclass(frozen=True, slots=True)
class WindowInfo:
    """The context window to judge against, and where it came from."""

    context_window: int
    #: "override", "transcript", "model table" or "default".
    source: str
    #: The model's max output tokens from the table (None when unknown).
    max_output_tokens: int | None = None


def resolve_window(
    transcript: Transcript,
    override: int | None = None,
    limits: Mapping[str, ModelLimits] | None = None,
) -> WindowInfo:
    """Window: ``override`` wins, then the transcript's, then the model table, then 128K.

    ``limits`` adds or replaces model table entries (user overrides).
    """
    found = lookup_model(transcript.model, limits)
    max_out = found.max_output_tokens if found else None
    if override is not None:
        _check_window(override)
        return WindowInfo(override, "override", max_out)
    if transcript.context_window:
        return WindowInfo(transcript.context_window, "transcript", max_out)
    if found is not None:
        return WindowInfo(found.context_window, "model table", max_out)
    return WindowInfo(DEFAULT_WINDOW, "default", max_out)


# ---------------------------------------------------------------------------- series


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """The prompt size at one assistant turn (the prompt that produced that message)."""

    message_index: int
    tokens: int
    #: ``measured`` (provider usage); ``exact`` (counted with a tokenizer, before any
    #: measurement); ``estimated`` (the rough counter, or a count adjusted by the last
    #: measurement's offset).
    kind: CountKind
    #: System prompt + tool schemas + live messages before this turn, counted.
    estimate: int
    #: Which live context the point belongs to (0 before the first reset).
    segment: int

    @property
    def measured(self) -> bool:
        return self.kind is CountKind.MEASURED


@dataclass(frozen=True, slots=True)
class UsageSeries:
    points: tuple[UsagePoint, ...]
    #: System prompt + tool schema tokens (counted).
    static_tokens: int
    tool_tokens: int
    message_count: int
    #: Message indices where a compaction reset the live context.
    resets: tuple[int, ...]
    #: The prompt the next model call would send (last point + messages since).
    next_tokens: int
    next_kind: CountKind
    counter: str
    #: ``message_index`` of every point, for bisection.
    point_indices: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: Indices of the messages holding media (set by :func:`usage_series`; None: not
    #: known), for :func:`extend_usage_series`.
    media_indices: tuple[int, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "point_indices", tuple(p.message_index for p in self.points))

    @property
    def live_start(self) -> int:
        return self.resets[-1] if self.resets else 0

    @property
    def measured_count(self) -> int:
        return sum(1 for p in self.points if p.kind is CountKind.MEASURED)

    def point_before(self, message_index: int) -> UsagePoint | None:
        """The last point at an index below ``message_index``."""
        i = self._bisect(message_index - 1)
        return self.points[i - 1] if i > 0 else None

    def point_from(self, message_index: int) -> UsagePoint | None:
        """The first point at an index at or above ``message_index``."""
        i = self._bisect(message_index - 1)
        return self.points[i] if i < len(self.points) else None

    def _bisect(self, message_index: int) -> int:
        return bisect_right(self.point_indices, message_index)

    def to_dict(self) -> dict[str, Any]:
        return {
            "counter": self.counter,
            "static_tokens": self.static_tokens,
            "tool_tokens": self.tool_tokens,
            "resets": list(self.resets),
            "points": [
                {
                    "index": p.message_index,
                    "tokens": p.tokens,
                    "kind": p.kind.value,
                    "estimate": p.estimate,
                }
                for p in self.points
            ],
        }


def _reset_indices(transcript: Transcript) -> tuple[int, ...]:
    """Where compactions reset the live context (``CompactionEvent.resets_context``)."""
    n = len(transcript.messages)
    out = {
        ev.message_index
        for ev in transcript.compactions
        if ev.resets_context and 0 < ev.message_index <= n
    }
    return tuple(sorted(out))


def _count_kind(kind: CountKind, media: list[int], lo: int, hi: int) -> CountKind:
    """The kind of a plain count of messages ``[lo, hi)`` made with a counter of
    ``kind``; ``media`` lists the messages holding images, which are counted with a flat
    estimate — a count that includes one is an estimate (as the context bar says)."""
    if kind is not CountKind.EXACT:
        return kind
    k = bisect_left(media, lo)
    return CountKind.ESTIMATED if k < len(media) and media[k] < hi else CountKind.EXACT


def usage_series(transcript: Transcript, tokens: TranscriptTokens) -> UsageSeries:
    """One point per assistant turn (and per measured usage), in message order. O(n)."""
    msgs = transcript.messages
    n = len(msgs)
    if len(tokens.per_message) != n:
        raise ValueError(
            f"token counts are for {len(tokens.per_message):,} messages but the transcript "
            f"has {n:,}; count this transcript (count_transcript) and pass those counts"
        )
    return _series(transcript, tokens, 0, (), None, ())


def extend_usage_series(
    previous: UsageSeries,
    before: Transcript,
    before_tokens: TranscriptTokens,
    transcript: Transcript,
    tokens: TranscriptTokens,
) -> UsageSeries:
    """:func:`usage_series` of ``transcript``, which grew from ``before`` (``previous`` is
    ``usage_series(before, before_tokens)``): the points of the leading messages that
    are the same objects, counted and measured the same, are kept; only the rest is
    computed. Anything else (a new reset, other counts) is computed whole."""
    msgs, old = transcript.messages, before.messages
    k = len(old)
    media = previous.media_indices
    if (
        media is None
        or previous.message_count != k
        or k > len(msgs)
        or len(tokens.per_message) != len(msgs)
        or before_tokens.kind is not tokens.kind
        or before_tokens.counter != tokens.counter
        or (before_tokens.system_prompt, before_tokens.tools)
        != (tokens.system_prompt, tokens.tools)
        or _reset_indices(transcript) != previous.resets
    ):
        return usage_series(transcript, tokens)
    per, old_per = tokens.per_message, before_tokens.per_message
    # The first message that changed (a grown file: none, or its last turn). The tuple
    # comparisons run in C (identity first, then equality: an equal message has the
    # same points); the scan finds the exact index only when they differ.
    if old[: k - 1] == msgs[: k - 1] and old_per[: k - 1] == per[: k - 1]:
        j = k - 1 if k and (old[-1] != msgs[k - 1] or old_per[-1] != per[k - 1]) else k
    else:
        j = next((i for i in range(k) if old[i] != msgs[i] or per[i] != old_per[i]), k)
    j = max(j, 0)

    def measured_before(t: Transcript) -> list[Usage]:
        # (the Usage objects themselves: compared in C, identity first)
        return [u for u in t.usage if u.message_index is not None and u.message_index < j]

    if measured_before(before) != measured_before(transcript):
        return usage_series(transcript, tokens)
    cut = bisect_left(previous.point_indices, j)
    kept = previous.points[:cut]
    last = next((p for p in reversed(kept) if p.kind is CountKind.MEASURED), None)
    kept_media = media[: bisect_left(media, j)]
    return _series(transcript, tokens, j, kept, last, kept_media)


def _measured_prompts(transcript: Transcript, start: int) -> dict[int, int]:
    """``{message index: prompt tokens}`` of the usage records from message ``start`` on
    (a record with no index, or no tokens, measures nothing)."""
    n = len(transcript.messages)
    measured: dict[int, int] = {}
    for u in transcript.usage:
        i = u.message_index
        if i is None or not start <= i < n or u.prompt_tokens <= 0:
            continue
        measured[i] = u.prompt_tokens
    return measured


def _after_last_point(
    last: UsagePoint,
    prefix: Sequence[int],
    live: int,
    n: int,
    count_kind: Callable[[int, int], CountKind],
) -> tuple[int, CountKind]:
    """The next prompt's size and kind from the last point of the live context (which
    starts at message ``live`` of ``n``): it, plus the messages counted since."""
    since = prefix[n] - prefix[last.message_index]
    if last.measured:
        return last.tokens + since, CountKind.MEASURED if not since else CountKind.ESTIMATED
    # A count plus counted messages: the same kind, unless they hold an image.
    return last.tokens + since, count_kind(live, n) if last.kind is CountKind.EXACT else last.kind


def _series(
    transcript: Transcript,
    tokens: TranscriptTokens,
    start: int,
    kept: tuple[UsagePoint, ...],
    measured_point: UsagePoint | None,
    kept_media: tuple[int, ...],
) -> UsageSeries:
    """The series whose points before message ``start`` are ``kept`` (the last measured
    of them ``measured_point``, the media messages before it ``kept_media``)."""
    msgs = transcript.messages
    n = len(msgs)
    prefix = tokens.prefix
    static = tokens.system_prompt + tokens.tools
    measured = _measured_prompts(transcript, start)
    assistant = Role.ASSISTANT
    turns = [i for i in range(start, n) if msgs[i].role is assistant]
    extra = [i for i in measured if msgs[i].role is not assistant]
    indices = sorted(turns + extra) if extra else turns
    resets = _reset_indices(transcript)
    points: list[UsagePoint] = list(kept)
    append = points.append
    measured_kind = CountKind.MEASURED
    # Before any measurement a point is a plain count (exact with a tokenizer); after
    # one it carries the measured offset, an estimate.
    point_kind = tokens.kind
    # Measured − counted at the last measured turn: what counting misses (an unrecorded
    # system prompt and tool schemas, tokenizer differences). Estimates add it.
    offset = 0
    if measured_point is not None:
        offset = measured_point.tokens - measured_point.estimate
        point_kind = CountKind.ESTIMATED
    seg = 0
    base = static  # static − prefix[start of the live context]
    seg_start = 0
    next_reset = resets[0] if resets else n + 1
    media = [*kept_media, *(i for i in range(start, n) if msgs[i].media)]

    def count_kind(lo: int, hi: int) -> CountKind:
        return _count_kind(point_kind, media, lo, hi)

    for i in indices:
        while i >= next_reset:
            base = static - prefix[next_reset]
            seg_start = next_reset
            seg += 1
            next_reset = resets[seg] if seg < len(resets) else n + 1
        raw = base + prefix[i]
        value = measured.get(i)
        if value is not None:
            append(UsagePoint(i, value, measured_kind, raw, seg))
            offset = value - raw
            point_kind = CountKind.ESTIMATED
        else:
            append(UsagePoint(i, max(0, raw + offset), count_kind(seg_start, i), raw, seg))
    live = resets[-1] if resets else 0
    last = points[-1] if points else None
    if last is not None and last.message_index >= live:
        next_tokens, next_kind = _after_last_point(last, prefix, live, n, count_kind)
    else:
        next_tokens = max(0, static + prefix[n] - prefix[min(live, n)] + offset)
        next_kind = count_kind(live, n)
    series = UsageSeries(
        points=tuple(points),
        static_tokens=static,
        tool_tokens=tokens.tools,
        message_count=n,
        resets=resets,
        next_tokens=next_tokens,
        next_kind=next_kind,
        counter=tokens.counter,
    )
    object.__setattr__(series, "media_indices", tuple(media))
    return series


def replay(
    series: UsageSeries,
    threshold_tokens: int,
    recorded: Sequence[tuple[int, int]] = (),
) -> tuple[int, ...]:
    """Where a policy with ``threshold_tokens`` would have fired: message indices.

    Each index is an assistant turn whose prompt reached the threshold after the
    previous turn of the same live context was below it (the first turn of a live
    context counts as coming from below, so a compaction that left the prompt over the
    threshold fires again at once — a loop). ``recorded`` adds readings taken at a
    compaction (``(event message_index, pre_tokens)`` of resetting events): they close
    the live context before the event, and a fire there is reported at the event.
    """
    resets = series.resets
    readings: list[tuple[float, int, int, int]] = [
        (p.message_index, p.message_index, p.tokens, p.segment) for p in series.points
    ]
    for index, tokens in recorded:
        readings.append((index - 0.5, index, tokens, bisect_right(resets, index - 1)))
    if recorded:
        readings.sort(key=lambda r: r[0])
    out: list[int] = []
    below = True
    segment = -1
    for _, index, tokens, seg in readings:
        if seg != segment:
            segment = seg
            below = True
        over = tokens >= threshold_tokens
        if over and below:
            out.append(index)
        below = not over
    return tuple(out)
