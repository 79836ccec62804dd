"""Historical media reduction: old images become short, stable placeholder text.

Details: docs/compaction.md (`tinyjuice.media`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from tinyjuice.model import MediaPart, Message, Part, Role, TextPart
from tinyjuice.tokens import IMAGE_TOKENS

__all__ = ["FlatMediaReducer", "MediaReducer", "media_placeholder"]


@runtime_checkable
class MediaReducer(Protocol):
    """Estimates media cost and strips media that history no longer needs."""

    def estimate_media_tokens(self, part: MediaPart) -> int: ...

    def replace_historical_media(
        self, messages: Sequence[Message]
    ) -> tuple[list[Message], int]: ...


def media_placeholder(part: MediaPart) -> str:
    """The placeholder text for one media part; the same part always gives the same text."""
    if part.byte_size > 0:
        size = f"{part.byte_size:,} bytes"
    elif part.source == "url":
        size = "remote URL"
    else:
        size = "size unknown"
    return f"[image omitted: {part.media_type}, {size}]"


def _is_input_turn(message: Message) -> bool:
    return message.role in (Role.USER, Role.TOOL) and not message.meta.is_summary


class FlatMediaReducer:
    """Flat per-image estimate; keeps the newest ``keep_turns`` image-bearing input turns."""

    def __init__(self, *, image_tokens: int = IMAGE_TOKENS, keep_turns: int = 1) -> None:
        if image_tokens <= 0:
            raise ValueError(f"image_tokens must be positive, got {image_tokens}")
        if keep_turns < 0:
            raise ValueError(f"keep_turns must be 0 or more, got {keep_turns}")
        self.image_tokens = image_tokens
        self.keep_turns = keep_turns

    def estimate_media_tokens(self, part: MediaPart) -> int:
        """A conservative flat estimate, whatever the payload size (never near zero)."""
        return self.image_tokens

    def keep_from(self, messages: Sequence[Message]) -> int:
        """Index of the oldest kept image-bearing input turn (``len`` when none is kept)."""
        if self.keep_turns == 0:
            return len(messages)
        found = 0
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if _is_input_turn(m) and m.media:
                found += 1
                if found == self.keep_turns:
                    return i
        # Fewer image-bearing input turns than keep_turns: keep them all.
        return 0

    def replace_historical_media(self, messages: Sequence[Message]) -> tuple[list[Message], int]:
        """``(messages, replaced)``: media before the kept turn become placeholder text.

        Messages without media are returned as the same objects; the order and number of
        parts stay the same (each image part becomes one text part in its place).
        """
        keep = self.keep_from(messages)
        out: list[Message] = []
        replaced = 0
        for i, m in enumerate(messages):
            if i >= keep or not m.media:
                out.append(m)
                continue
            parts: list[Part] = []
            for p in m.parts:
                if isinstance(p, MediaPart):
                    parts.append(TextPart(media_placeholder(p)))
                    replaced += 1
                else:
                    parts.append(p)
            out.append(replace(m, parts=tuple(parts)))
        return out, replaced
