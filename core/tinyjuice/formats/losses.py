"""What a writable format leaves out when a transcript is converted to it.

Writers never fail on content their format has no place for: ShareGPT has no media, only
Anthropic keeps thinking signatures, redacted thinking and tool-error flags, no writable
format records measured usage or subagent sidechains, and every writable format records
a compaction only as a summary message whose text starts with the compaction prefix
(its reader rebuilds the event from that: trigger unknown, no token counts).
:func:`conversion_losses` lists what a given transcript would lose, so a conversion is
never silent.

One entry is a caveat rather than a loss: reasoning from another format is written to
Anthropic as ``thinking`` blocks without a ``signature``. The text is kept (and reads
back as reasoning), but the Anthropic API accepts a thinking block back only with the
signature it issued, so such a file is for reading, not for sending as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tinyjuice.formats._base import SaveError, clip
from tinyjuice.formats._common import is_summary_text
from tinyjuice.model import MediaPart, Role, ThinkingPart, Transcript, Trigger

__all__ = ["ConversionLoss", "conversion_losses"]


@dataclass(frozen=True, slots=True)
class ConversionLoss:
    """One kind of content the target format drops, with how much of it there is."""

    #: media | thinking_signature | redacted_thinking | tool_error_flag | usage |
    #: compaction_summary | compaction_record | sidechain | unsigned_thinking (a caveat:
    #: the reasoning text is kept, in a form the Anthropic API does not accept back)
    kind: str
    count: int
    #: A user-facing line, e.g. "3 images (sharegpt has no media)".
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class _Carries:
    media: bool
    thinking_signatures: bool
    redacted_thinking: bool
    error_flags: bool


#: What each writable format's writer can carry over from another format.
_CARRIES: dict[str, _Carries] = {
    "openai": _Carries(
        media=True, thinking_signatures=False, redacted_thinking=False, error_flags=False
    ),
    "anthropic": _Carries(
        media=True, thinking_signatures=True, redacted_thinking=True, error_flags=True
    ),
    "hermes": _Carries(
        media=True, thinking_signatures=False, redacted_thinking=False, error_flags=False
    ),
    "sharegpt": _Carries(
        media=False, thinking_signatures=False, redacted_thinking=False, error_flags=False
    ),
}


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _thinking(transcript: Transcript) -> list[ThinkingPart]:
    return [p for m in transcript.messages for p in m.parts if isinstance(p, ThinkingPart)]


def _media(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    if _CARRIES[fmt].media:
        return None
    media = [p for m in transcript.messages for p in m.parts if isinstance(p, MediaPart)]
    if not media:
        return None
    images = all(p.media_type.startswith("image/") for p in media)
    what = _plural(len(media), "image" if images else "media attachment")
    return ConversionLoss("media", len(media), f"{what} ({fmt} has no media)")


def _signatures(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    if _CARRIES[fmt].thinking_signatures:
        return None
    n = sum(1 for p in _thinking(transcript) if p.signature and not p.redacted)
    if not n:
        return None
    return ConversionLoss(
        "thinking_signature",
        n,
        f"{_plural(n, 'thinking signature')} ({fmt} has no field for them;"
        " the reasoning text is kept)",
    )


def _redacted(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    if _CARRIES[fmt].redacted_thinking:
        return None
    n = sum(1 for p in _thinking(transcript) if p.redacted)
    if not n:
        return None
    return ConversionLoss(
        "redacted_thinking",
        n,
        f"{_plural(n, 'redacted thinking block')} ({fmt} cannot carry encrypted reasoning)",
    )


def _error_flags(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    if _CARRIES[fmt].error_flags or fmt == transcript.format:
        return None
    n = sum(1 for m in transcript.messages if m.role is Role.TOOL and m.meta.is_error)
    if not n:
        return None
    return ConversionLoss(
        "tool_error_flag",
        n,
        f"{_plural(n, 'tool-error flag')} ({fmt} has no is_error field; the error output is kept)",
    )


def _usage(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    n = len(transcript.usage)
    if not n or fmt == transcript.format:
        return None
    return ConversionLoss(
        "usage",
        n,
        f"{_plural(n, 'measured usage record')} ({fmt} output carries no usage;"
        " token counts will be estimated)",
    )


def _summaries(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    # Every writable format tells a summary by its text prefix only; one marked another
    # way (Claude Code's isCompactSummary, Codex's compacted item) becomes a plain turn.
    n = sum(1 for m in transcript.messages if m.meta.is_summary and not is_summary_text(m.text))
    if not n or fmt == transcript.format:
        return None
    return ConversionLoss(
        "compaction_summary",
        n,
        f"{_plural(n, 'compaction summary marker')} ({fmt} tells a summary by its"
        " text prefix only; the summary text is kept as an ordinary message)",
    )


def _compaction_records(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    """Recorded compactions that do not come back as they were.

    A writable format's reader rebuilds one event per prefixed summary message, with the
    trigger unknown and no token counts. So an event whose summary lacks the prefix (or
    that has no summary) is lost entirely, and one with a known trigger or token counts
    loses those. Events tinyjuice's own compaction made are left out: its report gives
    their figures, and no writable format, the source's own included, stores them.
    """
    messages = transcript.messages
    whole = whole_detailed = details = 0
    for e in transcript.compactions:
        if e.extra.get("generated_by") == "tinyjuice":
            continue
        detailed = (
            e.trigger is not Trigger.UNKNOWN
            or e.pre_tokens is not None
            or e.post_tokens is not None
        )
        i = e.summary_index
        if i is None or not 0 <= i < len(messages) or not is_summary_text(messages[i].text):
            whole += 1
            whole_detailed += detailed
        elif detailed:
            details += 1
    n = whole + details
    if not n:
        return None
    what = []
    if whole:
        too = ", trigger and token counts too" if whole_detailed else ""
        what.append(f"{whole} lost entirely{too}")
    if details:
        what.append(f"the trigger and token counts of {details}")
    return ConversionLoss(
        "compaction_record",
        n,
        f"{_plural(n, 'compaction record')} ({'; '.join(what)}; {fmt} records a compaction"
        " only as a summary message starting with the compaction prefix)",
    )


def _unsigned_thinking(transcript: Transcript) -> int:
    """How many thinking blocks the Anthropic writer emits without a signature."""
    n = 0
    prev: Role | None = None
    for m in transcript.messages:
        role = m.role
        if role is not Role.SYSTEM and role is not Role.DEVELOPER:
            thinking = m.thinking
            n += sum(1 for p in thinking if not p.redacted and not p.signature)
            # Reasoning kept beside content becomes one unsigned block, on an assistant
            # turn or a user turn of its own (text after tool results joins their turn).
            if (
                m.reasoning
                and not thinking
                and (role is Role.ASSISTANT or (role is Role.USER and prev is not Role.TOOL))
            ):
                n += 1
        prev = role
    return n


def _signature_caveat(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    if fmt != "anthropic" or transcript.format == fmt:
        return None
    n = _unsigned_thinking(transcript)
    if not n:
        return None
    blocks = _plural(n, "reasoning block")
    return ConversionLoss(
        "unsigned_thinking",
        n,
        f"API replay of {blocks}: written as unsigned thinking (the reasoning text is"
        " kept; the API needs a signature to accept them back)",
    )


def _sidechains(transcript: Transcript, fmt: str) -> ConversionLoss | None:
    n = len(transcript.sidechains)
    if not n:
        return None
    messages = sum(len(ms) for ms in transcript.sidechains.values())
    them = "it" if n == 1 else "them"
    return ConversionLoss(
        "sidechain",
        n,
        f"{_plural(n, 'subagent sidechain')} ({_plural(messages, 'message')};"
        f" {fmt} has no place for {them})",
    )


_CHECKS: tuple[Callable[[Transcript, str], ConversionLoss | None], ...] = (
    _media,
    _signatures,
    _redacted,
    _error_flags,
    _usage,
    _summaries,
    _compaction_records,
    _sidechains,
    _signature_caveat,
)


def conversion_losses(transcript: Transcript, format: str) -> list[ConversionLoss]:
    """What writing ``transcript`` as ``format`` drops, one entry per kind; [] if nothing.

    Raises :class:`SaveError` when ``format`` is not writable.
    """
    if format not in _CARRIES:
        raise SaveError(
            f"cannot write format {clip(format)}; writable formats: " + ", ".join(_CARRIES)
        )
    return [loss for check in _CHECKS if (loss := check(transcript, format)) is not None]
