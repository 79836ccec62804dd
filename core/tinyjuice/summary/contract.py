"""The summary provider contract: request, result types, errors, structured shape.

:class:`SummaryProvider` turns a :class:`SummaryRequest` into a :class:`SummaryText` or a
:class:`StructuredSummary` (``render``/``parse``), or raises :class:`SummaryError`.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from tinyjuice.markers import strip_summary_wrappers
from tinyjuice.model import Message

_SECTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "historical_task_snapshot",
        "Historical Task Snapshot",
        "what was being worked on when these turns ended, in one or two sentences",
    ),
    ("goal", "Goal", "what the user wants overall"),
    (
        "constraints_preferences",
        "Constraints & Preferences",
        "hard constraints, conventions and preferences the user stated",
    ),
    (
        "completed_actions",
        "Completed Actions",
        "past-tense facts with evidence: commands run and their results, files changed",
    ),
    ("active_state", "Active State", "the state of the code, environment and data now"),
    ("in_progress", "Historical In-Progress State", "work that was started and not finished"),
    ("blockers", "Blockers", "errors and obstacles not yet resolved, error text verbatim"),
    ("key_decisions", "Key Decisions", "choices made and why (APIs, designs, trade-offs)"),
    ("resolved_questions", "Resolved Questions", "questions already answered, with the answer"),
    (
        "pending_asks",
        "Historical Pending Asks",
        "user requests not yet fulfilled, quoted verbatim and marked as historical",
    ),
    (
        "relevant_files",
        "Relevant Files",
        "every file path read, written or mentioned, verbatim, each touched file with what "
        "was done to it (read / created / edited / deleted / ran)",
    ),
    ("remaining_work", "Historical Remaining Work", "what still had to happen"),
    (
        "critical_context",
        "Critical Context",
        "anything else needed to continue: ids, URLs, numbers",
    ),
)

#: The section headings of a handoff summary, in order.
SECTION_TITLES: tuple[str, ...] = tuple(title for _, title, _ in _SECTIONS)

_NOTES_TITLE = "Notes"

#: Every section's text, in order, the notes last (StructuredSummary.render).
_FIELDS = operator.attrgetter(*(name for name, _, _ in _SECTIONS), "notes")
#: Every section's heading line, likewise.
_HEADS: tuple[str, ...] = tuple(f"## {title}\n" for title in (*SECTION_TITLES, _NOTES_TITLE))

#: Heading spellings (normalised) accepted by :meth:`StructuredSummary.parse`.
_ALIASES: dict[str, str] = {
    "task snapshot": "historical_task_snapshot",
    "active task": "historical_task_snapshot",
    "current task": "historical_task_snapshot",
    "goal": "goal",
    "goals": "goal",
    "goal and constraints": "goal",
    "constraints and preferences": "constraints_preferences",
    "constraints": "constraints_preferences",
    "preferences": "constraints_preferences",
    "user preferences": "constraints_preferences",
    "completed actions": "completed_actions",
    "completed": "completed_actions",
    "actions taken": "completed_actions",
    "active state": "active_state",
    "current state": "active_state",
    "in progress state": "in_progress",
    "in progress": "in_progress",
    "in progress blocked": "in_progress",
    "blockers": "blockers",
    "blocked": "blockers",
    "key decisions": "key_decisions",
    "key decisions made": "key_decisions",
    "decisions": "key_decisions",
    "resolved questions": "resolved_questions",
    "pending asks": "pending_asks",
    "pending user asks": "pending_asks",
    "pending requests": "pending_asks",
    "relevant files": "relevant_files",
    "files": "relevant_files",
    "key files": "relevant_files",
    "remaining work": "remaining_work",
    "next steps": "remaining_work",
    "critical context": "critical_context",
    "notes": "notes",
}

_HEADING_RE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+(.+?)|\*\*(.+?)\*\*)[ \t]*:?[ \t]*$")


def _normalise_title(title: str) -> str:
    t = title.lower().replace("&", " and ")
    t = re.sub(r"[-_/]", " ", t)
    t = re.sub(r"[^a-z0-9 ]", "", t)
    t = " ".join(t.split())
    return t.removeprefix("historical ").strip()


@dataclass(frozen=True, slots=True)
class StructuredSummary:
    """A handoff summary in the seed's section shape. Every section is free text."""

    historical_task_snapshot: str = ""
    goal: str = ""
    constraints_preferences: str = ""
    completed_actions: str = ""
    active_state: str = ""
    in_progress: str = ""
    blockers: str = ""
    key_decisions: str = ""
    resolved_questions: str = ""
    pending_asks: str = ""
    relevant_files: str = ""
    remaining_work: str = ""
    critical_context: str = ""
    #: Text that was not under a known heading (kept, never dropped).
    notes: str = ""

    def sections(self) -> tuple[tuple[str, str], ...]:
        """``(title, text)`` for every section, in order, the notes last."""
        out = [(title, getattr(self, name)) for name, title, _ in _SECTIONS]
        out.append((_NOTES_TITLE, self.notes))
        return tuple(out)

    @property
    def is_empty(self) -> bool:
        return not any(text.strip() for _, text in self.sections())

    def render(self) -> str:
        """Markdown with one ``## Title`` heading per non-empty section."""
        texts = map(str.strip, _FIELDS(self))
        return "\n\n".join([head + text for head, text in zip(_HEADS, texts, strict=True) if text])

    @classmethod
    def parse(cls, text: str) -> StructuredSummary:
        """Read a summary back from markdown (wrappers are stripped first).

        Headings may use ``#``..``######`` or a bold line; spelling variants (Hermes'
        "Active Task", "Key Decisions Made", "In Progress / Blocked", …) map onto the
        sections. Text under an unknown heading stays in the current section with its
        heading line; text before the first heading goes to ``notes``.
        """
        body = strip_summary_wrappers(text)
        buckets: dict[str, list[str]] = {}
        current = "notes"
        for line in body.split("\n"):
            m = _HEADING_RE.match(line)
            if m:
                key = _ALIASES.get(_normalise_title(m.group(1) or m.group(2) or ""))
                if key is not None:
                    current = key
                    continue
            buckets.setdefault(current, []).append(line)
        values = {k: "\n".join(v).strip() for k, v in buckets.items()}
        return cls(**{k: v for k, v in values.items() if v})


@dataclass(frozen=True, slots=True)
class SummaryText:
    """Free-text summary returned by a provider (wrappers, if any, are removed on insert)."""

    text: str
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a provider needs to summarise a middle span.

    ``messages`` must already be redacted (the pipeline redacts before calling).
    ``previous_summary`` is the stripped body of the summary being updated, if any.
    """

    messages: tuple[Message, ...]
    previous_summary: str | None = None
    focus_topic: str | None = None
    token_budget: int = 2000
    lineage_id: str | None = None


class FailureClass(StrEnum):
    NO_PROVIDER = "no_provider"
    AUTH = "auth"
    NETWORK = "network"
    MODEL_NOT_FOUND = "model_not_found"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    MALFORMED = "malformed"
    STREAM_CLOSED = "stream_closed"
    EMPTY = "empty"
    TRUNCATED = "truncated"
    OTHER = "other"


_RETRYABLE: frozenset[FailureClass] = frozenset(
    {
        FailureClass.NETWORK,
        FailureClass.TIMEOUT,
        FailureClass.RATE_LIMIT,
        FailureClass.SERVER,
        FailureClass.MALFORMED,
        FailureClass.STREAM_CLOSED,
        FailureClass.EMPTY,
        FailureClass.TRUNCATED,
    }
)


class SummaryError(Exception):
    """A summary provider failed. ``retryable`` says whether a later attempt may succeed."""

    def __init__(
        self,
        failure_class: FailureClass,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.failure_class = FailureClass(failure_class)
        self.message = message
        self.retryable = self.failure_class in _RETRYABLE if retryable is None else retryable
        self.status = status


@runtime_checkable
class SummaryProvider(Protocol):
    """Something that turns a :class:`SummaryRequest` into a summary, or raises SummaryError."""

    @property
    def name(self) -> str: ...  # (read-only: a frozen dataclass provider qualifies)

    def summarize(self, request: SummaryRequest) -> SummaryText | StructuredSummary: ...


def classify_http_status(status: int) -> FailureClass:
    """The failure class of an HTTP error status from a summary endpoint."""
    if status in (401, 403):
        return FailureClass.AUTH
    if status == 404:
        return FailureClass.MODEL_NOT_FOUND
    if status in (408, 504):
        return FailureClass.TIMEOUT
    if status == 429:
        return FailureClass.RATE_LIMIT
    if 500 <= status <= 599:
        return FailureClass.SERVER
    return FailureClass.OTHER


def summary_body(output: SummaryText | StructuredSummary | str) -> str:
    """The stripped summary body of a provider's output.

    Raises :class:`SummaryError` (``EMPTY``) when nothing is left: an empty summary is never
    inserted.
    """
    if isinstance(output, StructuredSummary):
        text = output.render()
    elif isinstance(output, SummaryText):
        text = output.text
    else:
        text = output
    body = strip_summary_wrappers(text or "")
    if not body:
        raise SummaryError(
            FailureClass.EMPTY,
            "the summary provider returned an empty summary; nothing was inserted",
        )
    return body
