"""Transcript statistics: counts and tokens by role and by kind, with their provenance.

This is what ``tjui inspect`` prints and what the inspector's header shows. Every token
figure says whether it is exact (a tokenizer), estimated (rough counter, flat media
estimate) or measured (provider-reported usage).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tinyjuice.breakdown import tool_definitions_in
from tinyjuice.model import Message, Role, ThinkingPart, Transcript
from tinyjuice.model_limits import resolve_context_window
from tinyjuice.tokens import (
    IMAGE_TOKENS,
    CountKind,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
    counted_kind,
    default_counter,
)

__all__ = ["KINDS", "TranscriptStats", "compute_stats", "message_kind"]

#: Conversation kinds, in display order.
KINDS: tuple[str, ...] = (
    "user",
    "assistant",
    "tool_output",
    "reasoning",
    "media",
    "summaries",
    "injected",
    "system",
)


def message_kind(message: Message) -> str:
    """The conversation kind a message's text belongs to."""
    if message.meta.is_summary:
        return "summaries"
    if message.meta.is_injected:
        return "injected"
    if message.role is Role.TOOL:
        return "tool_output"
    if message.role in (Role.SYSTEM, Role.DEVELOPER):
        return "system"
    if message.role is Role.USER:
        return "user"
    return "assistant"


@dataclass(frozen=True, slots=True)
class TranscriptStats:
    format: str
    path: str | None
    model: str | None
    session_id: str | None
    context_window: int | None
    #: Where the window figure came from: "transcript", "model table", "override" or None.
    context_window_source: str | None
    messages: int
    roles: dict[str, int]
    tool_calls: int
    images: int
    tokens_total: int
    tokens_counter: str
    tokens_kind: CountKind
    tokens_system_prompt: int
    tokens_tools: int
    tokens_by_role: dict[str, int]
    tokens_by_kind: dict[str, int]
    #: The last provider-reported prompt size, when the transcript records usage.
    measured_prompt_tokens: int | None
    measured_points: int
    compactions: list[dict[str, Any]] = field(default_factory=list)
    warnings: tuple[str, ...] = ()
    sidechains: int = 0
    #: The live context (what the agent sends next): ``messages``, ``tokens`` (system
    #: prompt + tools + the messages from ``from_index``), ``measured_prompt``.
    live: dict[str, Any] = field(default_factory=dict)
    #: The messages before the last reset: ``messages``, ``tokens``.
    history: dict[str, Any] = field(default_factory=dict)
    #: The session's subagents (``tinyjuice.subagents.Subagent.to_dict``), when listed.
    subagents: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "path": self.path,
            "model": self.model,
            "session_id": self.session_id,
            "context_window": self.context_window,
            "context_window_source": self.context_window_source,
            "messages": self.messages,
            "roles": dict(self.roles),
            "tool_calls": self.tool_calls,
            "images": self.images,
            "tokens": {
                "total": self.tokens_total,
                "counter": self.tokens_counter,
                "kind": self.tokens_kind.value,
                "system_prompt": self.tokens_system_prompt,
                "tools": self.tokens_tools,
                "by_role": dict(self.tokens_by_role),
                "by_kind": dict(self.tokens_by_kind),
                "measured_prompt": self.measured_prompt_tokens,
                "measured_points": self.measured_points,
            },
            "compactions": list(self.compactions),
            "sidechains": self.sidechains,
            "live": dict(self.live),
            "history": dict(self.history),
            "subagents": list(self.subagents),
            "warnings": list(self.warnings),
        }


def _split_message(message: Message, total: int, counter: TokenCounter) -> list[tuple[str, int]]:
    """Split one message's tokens across kinds (media and reasoning apart from the rest)."""
    media = IMAGE_TOKENS * len(message.media)
    reasoning = 0
    if message.reasoning:
        reasoning += counter.count(message.reasoning)
    for part in message.parts:
        if isinstance(part, ThinkingPart) and not part.redacted:
            reasoning += counter.count(part.text)
    rest = max(0, total - media - reasoning)
    out = [(message_kind(message), rest)]
    if media:
        out.append(("media", media))
    if reasoning:
        out.append(("reasoning", reasoning))
    return out


def _prompt_tool_tokens(
    transcript: Transcript, tokens: TranscriptTokens, counter: TokenCounter
) -> int:
    """Tokens of the ``<tools>`` sections in the system prompt and leading system messages."""
    pieces = [(transcript.system_prompt or "", tokens.system_prompt)]
    for m, n in zip(transcript.messages, tokens.per_message, strict=False):
        if m.role not in (Role.SYSTEM, Role.DEVELOPER):
            break
        pieces.append((m.text, n))
    total = 0
    for text, available in pieces:
        section = tool_definitions_in(text)
        if section:
            total += min(counter.count(section), available)
    return total


def compute_stats(
    transcript: Transcript,
    counter: TokenCounter | None = None,
    *,
    tokens: TranscriptTokens | None = None,
    context_window: int | None = None,
    whole_file: bool = False,
) -> TranscriptStats:
    """Counts and tokens of ``transcript``; ``live``/``history`` split it at its last
    reset (``whole_file``: the whole file is live)."""
    counter = counter or default_counter()
    tokens = tokens or count_transcript(transcript, counter)
    by_role: dict[str, int] = {}
    by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
    for m, n in zip(transcript.messages, tokens.per_message, strict=True):
        by_role[m.role.value] = by_role.get(m.role.value, 0) + n
        for kind, k in _split_message(m, n, counter):
            by_kind[kind] += k
    by_kind["system"] += tokens.system_prompt
    # Tool schemas written into the system prompt (a ShareGPT system turn's <tools>
    # block) are tool definitions, as in the context breakdown: moved out of "system".
    in_prompt = _prompt_tool_tokens(transcript, tokens, counter)
    by_kind["system"] -= in_prompt
    window, source, _ = resolve_context_window(
        transcript.context_window, transcript.model, context_window
    )
    measured = transcript.usage[-1].prompt_tokens if transcript.usage else None
    compactions = [
        {
            "index": e.message_index,
            "trigger": e.trigger.value,
            "pre_tokens": e.pre_tokens,
            "post_tokens": e.post_tokens,
            "summary_index": e.summary_index,
        }
        for e in transcript.compactions
    ]
    start = 0 if whole_file else transcript.live_start
    history_tokens = sum(tokens.per_message[:start])
    live_measured = next(
        (
            u.prompt_tokens
            for u in reversed(transcript.usage)
            if u.message_index is not None and u.message_index >= start
        ),
        None,
    )
    return TranscriptStats(
        live={
            "from_index": start,
            "messages": len(transcript.messages) - start,
            "tokens": tokens.total - history_tokens,
            "measured_prompt": live_measured,
        },
        history={"messages": start, "tokens": history_tokens},
        format=transcript.format,
        path=transcript.path,
        model=transcript.model,
        session_id=transcript.session_id,
        context_window=window,
        context_window_source=source,
        messages=len(transcript.messages),
        roles=transcript.role_counts(),
        tool_calls=transcript.tool_call_count,
        images=sum(len(m.media) for m in transcript.messages),
        tokens_total=tokens.total,
        tokens_counter=tokens.counter,
        # Images are counted with a flat estimate: a total holding one is an estimate.
        tokens_kind=counted_kind(transcript.messages, tokens.kind),
        tokens_system_prompt=tokens.system_prompt,
        tokens_tools=tokens.tools + in_prompt,
        tokens_by_role=by_role,
        tokens_by_kind=by_kind,
        measured_prompt_tokens=measured,
        measured_points=len(transcript.usage),
        compactions=compactions,
        warnings=transcript.warnings,
        sidechains=sum(len(v) for v in transcript.sidechains.values()),
    )
