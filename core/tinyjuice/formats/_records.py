"""Small builders shared by the read-only agent formats (Gemini CLI, Cline, opencode, Aider).

Those formats record tool calls and results as JSON records of their own; these helpers
turn a record's pieces into model messages, so each reader only maps its shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from tinyjuice.formats._common import meta_for_text
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    Message,
    Part,
    Role,
    TextPart,
    ToolCall,
    Trigger,
)

__all__ = [
    "count",
    "json_text",
    "reset_event",
    "text_message",
    "tool_call_of",
    "tool_result",
]


def count(value: Any) -> int:
    """A token count field: a non-negative integer, else 0 (bools and floats too)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return int(value) if isinstance(value, float) and value >= 0 else 0
    return max(value, 0)


def json_text(value: Any) -> str:
    """The text of a tool output value: a string as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def tool_call_of(
    call_id: str, name: str, arguments: Any, extra: Mapping[str, Any] = EMPTY
) -> ToolCall:
    """A tool call whose arguments are a JSON value (kept verbatim when already a string)."""
    args = (
        arguments
        if isinstance(arguments, str)
        else json_text(arguments if arguments is not None else {})
    )
    return ToolCall(id=call_id, name=name, arguments=args, extra=extra)


def text_message(
    role: Role,
    parts: Sequence[Part],
    *,
    source_id: str | None = None,
    tool_calls: Sequence[ToolCall] = (),
    extra: Mapping[str, Any] = EMPTY,
    hints: Mapping[str, Any] = EMPTY,
    summary: bool = False,
) -> Message:
    """A message with its summary/injected flags derived from its text (or forced ``summary``)."""
    text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    meta = meta_for_text(role, text, source_id=source_id)
    if summary:
        meta = replace(meta, is_summary=True, is_injected=False, injected_kind=None)
    return Message(
        role=role,
        parts=tuple(parts),
        tool_calls=tuple(tool_calls),
        meta=meta,
        extra=extra,
        hints=hints,
    )


def tool_result(
    call_id: str,
    name: str | None,
    text: str,
    *,
    is_error: bool = False,
    source_id: str | None = None,
    hints: Mapping[str, Any] = EMPTY,
) -> Message:
    """The tool message answering ``call_id``."""
    meta = meta_for_text(Role.TOOL, "", source_id=source_id, is_error=is_error)
    return Message(
        role=Role.TOOL,
        parts=(TextPart(text),),
        tool_call_id=call_id,
        tool_name=name,
        meta=meta,
        hints=hints,
    )


def reset_event(
    index: int,
    *,
    summary_index: int | None,
    trigger: Trigger = Trigger.UNKNOWN,
    pre: int | None = None,
    post: int | None = None,
    source_id: str | None = None,
    extra: Mapping[str, Any] = EMPTY,
) -> CompactionEvent:
    """A compaction event at ``index`` (its summary at ``summary_index``, when there is one)."""
    return CompactionEvent(
        message_index=index,
        trigger=trigger,
        pre_tokens=pre,
        post_tokens=post,
        summary_index=summary_index,
        source_id=source_id,
        extra=extra,
    )
