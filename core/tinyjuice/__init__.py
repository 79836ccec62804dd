"""tinyjuice: provider-neutral conversation compaction for LLM agent transcripts.

Pure Python; imports nothing from textual or rich, does no I/O outside ``formats``,
``providers`` and ``store``, and never logs raw transcript content.

The front door for an agent host is this package's ``__all__``: ``from_messages`` /
``to_messages`` (live message dicts ↔ :class:`Transcript`), ``compress`` and
``plan_boundary`` with :class:`CompactionOptions`, :class:`CompactionResult`,
:class:`CompactionState` and the :class:`SummaryProvider` protocol, and ``load`` /
``save`` for files. Names load on first use, so ``import tinyjuice`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinyjuice.formats import (
        FORMAT_NAMES,
        WRITABLE_FORMATS,
        LoadError,
        SaveError,
        load,
        save,
    )
    from tinyjuice.messages import from_messages, system_text, to_messages
    from tinyjuice.model import (
        CompactionEvent,
        MediaPart,
        Message,
        MessageMeta,
        Role,
        TextPart,
        ThinkingPart,
        ToolCall,
        Transcript,
        Trigger,
        Usage,
    )
    from tinyjuice.options import CompactionOptions, CompactionState
    from tinyjuice.pipeline import BoundaryPlan, compress, plan_boundary
    from tinyjuice.report import CompactionReport, CompactionResult
    from tinyjuice.summary import SummaryProvider
    from tinyjuice.tokens import (
        CountKind,
        RoughCounter,
        TiktokenCounter,
        TokenCounter,
        count_transcript,
        default_counter,
        message_tokens,
    )

__version__ = "0.1.0"

#: Public name → the module it lives in (imported on first access).
_HOME: dict[str, str] = {
    # the host's front door
    "compress": "tinyjuice.pipeline",
    "plan_boundary": "tinyjuice.pipeline",
    "BoundaryPlan": "tinyjuice.pipeline",
    "CompactionOptions": "tinyjuice.options",
    "CompactionReport": "tinyjuice.report",
    "CompactionResult": "tinyjuice.report",
    "CompactionState": "tinyjuice.options",
    "SummaryProvider": "tinyjuice.summary",
    "from_messages": "tinyjuice.messages",
    "to_messages": "tinyjuice.messages",
    "system_text": "tinyjuice.messages",
    # files
    "FORMAT_NAMES": "tinyjuice.formats",
    "WRITABLE_FORMATS": "tinyjuice.formats",
    "LoadError": "tinyjuice.formats",
    "SaveError": "tinyjuice.formats",
    "load": "tinyjuice.formats",
    "save": "tinyjuice.formats",
    # the model
    **dict.fromkeys(
        (
            "CompactionEvent",
            "MediaPart",
            "Message",
            "MessageMeta",
            "Role",
            "TextPart",
            "ThinkingPart",
            "ToolCall",
            "Transcript",
            "Trigger",
            "Usage",
        ),
        "tinyjuice.model",
    ),
    # token counting
    **dict.fromkeys(
        (
            "CountKind",
            "RoughCounter",
            "TiktokenCounter",
            "TokenCounter",
            "count_transcript",
            "default_counter",
            "message_tokens",
        ),
        "tinyjuice.tokens",
    ),
}

# (Every key of _HOME; a test keeps the two the same.)
__all__ = [
    "FORMAT_NAMES",
    "WRITABLE_FORMATS",
    "BoundaryPlan",
    "CompactionEvent",
    "CompactionOptions",
    "CompactionReport",
    "CompactionResult",
    "CompactionState",
    "CountKind",
    "LoadError",
    "MediaPart",
    "Message",
    "MessageMeta",
    "Role",
    "RoughCounter",
    "SaveError",
    "SummaryProvider",
    "TextPart",
    "ThinkingPart",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "Transcript",
    "Trigger",
    "Usage",
    "__version__",
    "compress",
    "count_transcript",
    "default_counter",
    "from_messages",
    "load",
    "message_tokens",
    "plan_boundary",
    "save",
    "system_text",
    "to_messages",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'tinyjuice' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
