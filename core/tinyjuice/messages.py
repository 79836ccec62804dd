"""Live message lists ↔ transcripts, for a host that holds plain message dicts.

``from_messages`` builds the model straight from the dicts with the OpenAI or Anthropic
reader's own per-message code (no bytes round trip); ``to_messages`` is the writers'
per-message code the other way. A list read and written in the same shape comes back
as the same dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from tinyjuice.formats._io import LoadOptions, Source
from tinyjuice.model import Message, Role, Transcript

__all__ = ["SHAPES", "Shape", "from_messages", "system_text", "to_messages"]

Shape = Literal["openai", "anthropic"]
SHAPES: tuple[str, ...] = ("openai", "anthropic")

#: What a LoadError names as the "file" a message list came from.
_ORIGIN = Path("<messages>")


def _shape(shape: str) -> str:
    if shape not in SHAPES:
        raise ValueError(f"unknown message shape {shape!r}: expected 'openai' or 'anthropic'")
    return shape


def from_messages(
    messages: Sequence[Any],
    shape: Shape = "openai",
    *,
    system: str | None = None,
    model: str | None = None,
    tools: Sequence[Any] = (),
) -> Transcript:
    """A transcript of ``messages`` (Chat Completions or Anthropic Messages dicts).

    ``system``, ``model`` and ``tools`` are the request's top-level fields (Anthropic's
    system prompt lives outside its message list). The dicts are not modified. A message
    that is not a valid dict of its shape raises :class:`tinyjuice.LoadError` naming it
    (``<messages>`` at ``$[i]``).
    """
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of message dicts")
    doc: Any = list(messages)
    if system is not None or model is not None or tools:
        doc = {"messages": doc}
        if model is not None:
            doc["model"] = model
        if tools:
            doc["tools"] = list(tools)
        if system is not None:
            if _shape(shape) == "openai":
                doc["messages"].insert(0, {"role": "system", "content": system})
            else:
                doc["system"] = system
    if _shape(shape) == "openai":
        from tinyjuice.formats import openai as reader
    else:
        from tinyjuice.formats import anthropic as reader  # type: ignore[no-redef]
    return reader.read(Source(_ORIGIN, b"", doc, "json"), LoadOptions())


def to_messages(transcript: Transcript, shape: Shape = "openai") -> list[dict[str, Any]]:
    """The transcript's messages as plain dicts of ``shape``.

    OpenAI: a ``system_prompt`` held outside the messages becomes a leading system
    message. Anthropic has no system role: leading system messages and the
    ``system_prompt`` are left out of the list — read them with :func:`system_text` and
    send them as the request's ``system``; a system message further in becomes a user
    turn (the writer's rule).
    """
    if _shape(shape) == "openai":
        from tinyjuice.formats.openai import OPENAI_SHAPED, message_to_dict

        own = transcript.format in OPENAI_SHAPED
        out = [message_to_dict(m, own_extra=own) for m in transcript.messages]
        if transcript.system_prompt and not _leads_with_system(transcript.messages):
            out.insert(0, {"role": "system", "content": transcript.system_prompt})
        return out
    from tinyjuice.formats.anthropic import messages_to_dicts

    rest = list(transcript.messages)
    while rest and rest[0].role in (Role.SYSTEM, Role.DEVELOPER):
        rest.pop(0)
    return messages_to_dicts(rest, own=transcript.format == "anthropic")


def system_text(transcript: Transcript) -> str | None:
    """The system prompt an Anthropic request carries for ``transcript``: its
    ``system_prompt`` and leading system messages joined (None when there are none)."""
    lead = [transcript.system_prompt or ""]
    for m in transcript.messages:
        if m.role not in (Role.SYSTEM, Role.DEVELOPER):
            break
        lead.append(m.text)
    return "\n".join(t for t in lead if t) or None


def _leads_with_system(messages: Sequence[Message]) -> bool:
    return bool(messages) and messages[0].role in (Role.SYSTEM, Role.DEVELOPER)
