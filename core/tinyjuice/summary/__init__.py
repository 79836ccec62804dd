"""Handoff summaries, one module per job.

The compressed middle of a conversation is replaced by one *handoff summary* message;
this package owns everything about that message except calling a model:

- :mod:`~tinyjuice.markers` — the prefix, preamble and end marker that make a
  summary impossible to read as a fresh request, and their removal (wrappers never nest);
- :mod:`~tinyjuice.summary.contract` — the provider plug point (:class:`SummaryProvider`,
  :class:`SummaryRequest`, :class:`SummaryText`, :class:`SummaryError`) and the
  structured shape (:class:`StructuredSummary`);
- :mod:`~tinyjuice.summary.failure` — what to do after a provider failed;
- :mod:`~tinyjuice.summary.prompt` — the prompt a provider sends;
- :mod:`~tinyjuice.summary.wrapper` — the summary message, its metadata and rehydration;
- :mod:`~tinyjuice.summary.scan` — paths, commands and error lines in tool text (shared
  with :mod:`tinyjuice.facts` and :mod:`tinyjuice.review`);
- :mod:`~tinyjuice.summary.fallback` — the deterministic, model-free summary.

Every public name is re-exported here, so ``from tinyjuice.summary import X`` works for
all of them.
"""

from __future__ import annotations

from tinyjuice.budget import SummaryKind
from tinyjuice.markers import (
    END_MARKER,
    HANDOFF_PREAMBLE,
    HANDOFF_PREFIX,
    LEGACY_SUMMARY_PREFIXES,
    METADATA_KEY,
    strip_summary_wrappers,
    wrap_summary,
)
from tinyjuice.summary.contract import (
    SECTION_TITLES,
    FailureClass,
    StructuredSummary,
    SummaryError,
    SummaryProvider,
    SummaryRequest,
    SummaryText,
    classify_http_status,
    summary_body,
)
from tinyjuice.summary.failure import (
    FailureOutcome,
    failure_outcome,
)
from tinyjuice.summary.fallback import (
    FallbackSummary,
    fallback_summary,
)
from tinyjuice.summary.prompt import (
    build_summary_prompt,
)
from tinyjuice.summary.scan import (
    error_head,
    error_lines,
)
from tinyjuice.summary.wrapper import (
    SummaryTag,
    find_previous_summary,
    is_summary_message,
    render_summary_message,
    resolve_previous_summary,
    strip_tinyjuice_metadata,
    summary_tag,
)

__all__ = [
    "END_MARKER",
    "HANDOFF_PREAMBLE",
    "HANDOFF_PREFIX",
    "LEGACY_SUMMARY_PREFIXES",
    "METADATA_KEY",
    "SECTION_TITLES",
    "FailureClass",
    "FailureOutcome",
    "FallbackSummary",
    "StructuredSummary",
    "SummaryError",
    "SummaryKind",
    "SummaryProvider",
    "SummaryRequest",
    "SummaryTag",
    "SummaryText",
    "build_summary_prompt",
    "classify_http_status",
    "error_head",
    "error_lines",
    "failure_outcome",
    "fallback_summary",
    "find_previous_summary",
    "is_summary_message",
    "render_summary_message",
    "resolve_previous_summary",
    "strip_summary_wrappers",
    "strip_tinyjuice_metadata",
    "summary_body",
    "summary_tag",
    "wrap_summary",
]
