"""The summary message: rendering, metadata tags, and rehydration after a resume.

A summary message has ``meta.is_summary``, ``meta.generated_by == "summary"`` and
``hints["tinyjuice"] = {"kind", "lineage_id"}``; :func:`find_previous_summary` and
:func:`resolve_previous_summary` are guarded by a lineage id so a new session never
inherits another session's summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from tinyjuice.budget import SummaryKind
from tinyjuice.markers import (
    METADATA_KEY,
    SUMMARY_STARTS,
    strip_summary_wrappers,
    wrap_summary,
)
from tinyjuice.model import EMPTY, Message, MessageMeta, Role, TextPart
from tinyjuice.summary.contract import StructuredSummary, SummaryText, summary_body

_SUMMARY_ROLES = frozenset((Role.USER, Role.ASSISTANT, Role.SYSTEM))


@dataclass(frozen=True, slots=True)
class SummaryTag:
    """tinyjuice's own tags on a summary message (``hints["tinyjuice"]``)."""

    kind: SummaryKind
    lineage_id: str | None


def render_summary_message(
    summary: str | SummaryText | StructuredSummary,
    *,
    kind: SummaryKind | str = SummaryKind.LLM,
    role: Role = Role.USER,
    lineage_id: str | None = None,
    redact: bool = True,
) -> Message:
    """A handoff summary message: prefix, preamble, body, end marker.

    Old wrappers in the text are removed first (no nesting). With ``redact`` the body goes
    through :func:`tinyjuice.redact.redact_text` (a summary is redacted after generation,
    not only its input before). The message has ``meta.is_summary``,
    ``meta.generated_by == "summary"`` and ``hints["tinyjuice"] = {"kind", "lineage_id"}``.
    Raises :class:`SummaryError` (``EMPTY``) for an empty body and ``ValueError`` for a
    role other than user or assistant.
    """
    if role not in (Role.USER, Role.ASSISTANT):
        raise ValueError(f"a handoff summary must be a user or assistant message, not {role!s}")
    body = summary_body(summary)
    if redact:
        from tinyjuice.redact import redact_text

        body = redact_text(body)
    tag = {"kind": SummaryKind(kind).value, "lineage_id": lineage_id}
    return Message(
        role=role,
        parts=(TextPart(wrap_summary(body)),),
        meta=MessageMeta(is_summary=True, generated_by="summary"),
        hints={METADATA_KEY: tag},
    )


def is_summary_message(message: Message) -> bool:
    """A compaction summary: flagged in meta, or starting with a known summary prefix."""
    if message.meta.is_summary:
        return True
    if message.role not in _SUMMARY_ROLES:
        return False
    parts = message.parts
    text = parts[0].text if len(parts) == 1 and type(parts[0]) is TextPart else message.text
    # Every known start begins with "[": most texts are decided by their first character.
    first = text[:1]
    if first != "[" and not first.isspace():
        return False
    return text.lstrip().startswith(SUMMARY_STARTS)


def summary_tag(message: Message) -> SummaryTag | None:
    """tinyjuice's tags on a message, or None when it carries none."""
    raw = message.hints.get(METADATA_KEY)
    if not isinstance(raw, Mapping) or "kind" not in raw:
        return None
    try:
        kind = SummaryKind(raw["kind"])
    except ValueError:
        return None
    lineage = raw.get("lineage_id")
    return SummaryTag(kind=kind, lineage_id=lineage if isinstance(lineage, str) else None)


def strip_tinyjuice_metadata(messages: Iterable[Message]) -> list[Message]:
    """The messages without ``hints["tinyjuice"]`` (unchanged messages are returned as is)."""
    out: list[Message] = []
    for m in messages:
        if METADATA_KEY in m.hints:
            rest = {k: v for k, v in m.hints.items() if k != METADATA_KEY}
            m = replace(m, hints=rest or EMPTY)
        out.append(m)
    return out


def find_previous_summary(
    messages: Sequence[Message], lineage_id: str | None = None
) -> tuple[int, str] | None:
    """``(index, stripped body)`` of the newest summary message, for an iterative update.

    Lineage rule: a summary tagged by tinyjuice belongs to the lineage it was written for;
    when that differs from ``lineage_id`` (``None`` included) the result is ``None`` — a
    new session never inherits another session's summary, and an older summary is not
    searched instead. An untagged summary (written by an agent, or loaded from a file,
    where hints do not survive) is part of this message list and is returned.
    """
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not is_summary_message(m):
            continue
        tag = summary_tag(m)
        if tag is not None and tag.lineage_id != lineage_id:
            return None
        body = strip_summary_wrappers(m.text)
        return (i, body) if body else None
    return None


def resolve_previous_summary(
    messages: Sequence[Message],
    *,
    state_summary: str | None,
    state_lineage_id: str | None,
    lineage_id: str | None,
) -> str | None:
    """The summary an iterative update should build on.

    A summary found in ``messages`` wins (rehydration after a resume). Otherwise the
    summary held in compaction state is used only when the caller passes a lineage id and
    the state was recorded for that same lineage; stale cross-session state is dropped.
    """
    found = find_previous_summary(messages, lineage_id)
    if found is not None:
        return found[1]
    if lineage_id is None or state_lineage_id != lineage_id or not state_summary:
        return None
    return strip_summary_wrappers(state_summary) or None
