"""Provider-neutral transcript model: the frozen `Transcript`, `Message`, parts, tool calls,
usage and compaction events every reader produces and every compaction step takes.

Details: docs/compaction.md (`tinyjuice.model`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import orjson

__all__ = [
    "EMPTY",
    "CompactionEvent",
    "MediaPart",
    "Message",
    "MessageMeta",
    "Part",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "Transcript",
    "Trigger",
    "Usage",
]


class _EmptyMapping(Mapping[str, Any]):
    """A read-only, hashable empty mapping (a valid dataclass default)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    # Answered directly: Mapping's own raise and catch a KeyError on every lookup, and
    # most messages' hints and source fields are this mapping.
    def get(self, key: str, default: Any = None) -> Any:
        return default

    def __contains__(self, key: object) -> bool:
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


#: A shared, read-only empty mapping used as the default for ``extra``/``hints``.
EMPTY: Mapping[str, Any] = _EmptyMapping()


class Role(StrEnum):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Trigger(StrEnum):
    MANUAL = "manual"
    AUTO = "auto"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    extra: Mapping[str, Any] = EMPTY
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image (or other media) attachment.

    ``data`` keeps the source payload (a URL or base64 string) so writers can render
    it back; ``byte_size`` is the decoded size when known, else the payload length.
    """

    media_type: str
    byte_size: int
    source: Literal["base64", "url", "file", "placeholder"] = "base64"
    data: str | None = None
    extra: Mapping[str, Any] = EMPTY
    kind: Literal["media"] = "media"


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning carried inside content (Anthropic thinking, ``<think>`` blocks)."""

    text: str
    signature: str | None = None
    redacted: bool = False
    extra: Mapping[str, Any] = EMPTY
    kind: Literal["thinking"] = "thinking"


Part = TextPart | MediaPart | ThinkingPart


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call made by an assistant message.

    ``arguments`` is the raw arguments string exactly as the source had it (it may be
    invalid JSON in real logs); it is never re-serialised unless a step changes it.
    """

    id: str
    name: str
    arguments: str = ""
    kind: str = "function"
    extra: Mapping[str, Any] = EMPTY

    def parsed_arguments(self) -> Any | None:
        """The arguments as JSON, or ``None`` when they are not valid JSON."""
        if not self.arguments:
            return None
        try:
            return orjson.loads(self.arguments)
        except orjson.JSONDecodeError:
            return None

    @property
    def arguments_valid(self) -> bool:
        if not self.arguments:
            return True
        try:
            orjson.loads(self.arguments)
        except orjson.JSONDecodeError:
            return False
        return True


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """What tinyjuice knows about a message beyond its provider content."""

    #: A compaction/handoff summary (written by an agent or by tinyjuice).
    is_summary: bool = False
    #: Injected context that is not a real user ask (AGENTS.md, environment blocks).
    is_injected: bool = False
    #: What kind of injected context ("agents_md", "environment", "system_reminder", ...).
    injected_kind: str | None = None
    #: The source's id for this message (Claude Code uuid, Hermes row id, ...).
    source_id: str | None = None
    #: Index of this message in the transcript it was loaded from.
    original_index: int | None = None
    #: A tool result whose call could not be found (loaded and flagged).
    orphan: bool = False
    #: A tool result that reported an error.
    is_error: bool = False
    #: A Claude Code sidechain / subagent message.
    sidechain: bool = False
    #: Set by tinyjuice on messages it generated (summaries, digests, bridges).
    generated_by: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    #: For ``tool`` messages: the id of the call this result answers.
    tool_call_id: str | None = None
    #: For ``tool`` messages: the tool's name when the source records it.
    tool_name: str | None = None
    #: Reasoning text kept beside content (Hermes ``reasoning``, Codex summaries).
    reasoning: str | None = None
    meta: MessageMeta = field(default_factory=MessageMeta)
    #: Source fields the model does not interpret, written back verbatim.
    extra: Mapping[str, Any] = EMPTY
    #: Format-specific rendering hints (e.g. ``content_form``: "string" | "parts" | "null").
    hints: Mapping[str, Any] = EMPTY

    @property
    def text(self) -> str:
        """The visible text of the message (text parts joined by newlines)."""
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is TextPart:
            return parts[0].text  # most messages: no list to build
        texts = [p.text for p in parts if isinstance(p, TextPart)]
        if len(texts) == 1:
            return texts[0]
        return "\n".join(texts)

    @property
    def media(self) -> tuple[MediaPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, MediaPart))

    @property
    def thinking(self) -> tuple[ThinkingPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ThinkingPart))

    @property
    def is_tool_result(self) -> bool:
        return self.role is Role.TOOL

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def is_real_user(self) -> bool:
        """A user message that is a genuine ask: not a summary, not injected context."""
        return (
            self.role is Role.USER
            and not self.meta.is_summary
            and not self.meta.is_injected
            and self.meta.generated_by is None
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported token usage for one model call.

    ``input_tokens`` excludes cached tokens; the prompt size the model saw is
    :attr:`prompt_tokens`.
    """

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    #: Index of the message (in ``Transcript.messages``) the usage was measured at.
    message_index: int | None = None
    #: Context window reported beside the usage (Codex ``model_context_window``).
    context_window: int | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """A compaction recorded in the transcript (see the module docstring's contract)."""

    #: Index of the first message after the compaction: the first message of the context
    #: the agent continued with (the summary when nothing was re-sent before it).
    message_index: int
    trigger: Trigger = Trigger.UNKNOWN
    pre_tokens: int | None = None
    post_tokens: int | None = None
    #: Index of the summary message, when the transcript holds one.
    summary_index: int | None = None
    source_id: str | None = None
    extra: Mapping[str, Any] = EMPTY
    #: Whether the messages before ``message_index`` are history the agent no longer
    #: sends (an append-only log). ``False``: the list was compacted in place and the
    #: file holds only what is sent (a summary between a protected head and the tail).
    resets_context: bool = True


@dataclass(frozen=True, slots=True)
class Transcript:
    messages: tuple[Message, ...]
    format: str
    #: A top-level system prompt (Anthropic ``system``, Hermes ``system_prompt``,
    #: Codex instructions). In-band system messages stay in ``messages``.
    system_prompt: str | None = None
    #: Tool schemas as the source declared them.
    tools: tuple[Mapping[str, Any], ...] = ()
    model: str | None = None
    context_window: int | None = None
    path: str | None = None
    session_id: str | None = None
    compactions: tuple[CompactionEvent, ...] = ()
    usage: tuple[Usage, ...] = ()
    #: Messages kept apart from the main chain (Claude Code sidechains), by key.
    sidechains: Mapping[str, tuple[Message, ...]] = EMPTY
    #: Top-level source fields needed to write the transcript back.
    extra: Mapping[str, Any] = EMPTY
    #: Things the loader noticed and flagged (orphan results, skipped bad lines, ...).
    warnings: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def live_start(self) -> int:
        """Index of the first message of the live context (0 when nothing reset it).

        The ``message_index`` of the last compaction event that resets the context,
        clamped to the message count.
        """
        for ev in reversed(self.compactions):
            if ev.resets_context:
                return max(0, min(ev.message_index, len(self.messages)))
        return 0

    @property
    def reset_event(self) -> CompactionEvent | None:
        """The compaction the live context starts at (None when nothing reset it)."""
        return next((ev for ev in reversed(self.compactions) if ev.resets_context), None)

    def live_messages(self) -> tuple[Message, ...]:
        """What the agent sends on its next call (besides system prompt and tools)."""
        return self.messages[self.live_start :]

    def history_messages(self) -> tuple[Message, ...]:
        """The messages before the last reset: already compacted, no longer sent."""
        return self.messages[: self.live_start]

    @property
    def system_text(self) -> str:
        """The system prompt: the top-level one, else the leading in-band system messages."""
        if self.system_prompt:
            return self.system_prompt
        lead: list[str] = []
        for m in self.messages:
            if m.role not in (Role.SYSTEM, Role.DEVELOPER):
                break
            lead.append(m.text)
        return "\n".join(lead)

    @property
    def tool_call_count(self) -> int:
        return sum(len(m.tool_calls) for m in self.messages)

    def role_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.messages:
            counts[m.role.value] = counts.get(m.role.value, 0) + 1
        return counts
