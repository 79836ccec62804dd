"""Handoff summaries: contract, prompt, wrappers, rehydration, fallback and failure policy.

The compressed middle of a conversation is replaced by one *handoff summary* message.
This module owns everything about that message except calling a model:

- the wrapper that makes a summary impossible to read as a fresh request
  (:data:`HANDOFF_PREFIX`, :data:`HANDOFF_PREAMBLE`, :data:`END_MARKER`) and its removal
  before an iterative update (:func:`strip_summary_wrappers`), so wrappers never nest;
- the structured shape (:class:`StructuredSummary`) with ``render``/``parse``;
- the provider plug point (:class:`SummaryProvider`, :class:`SummaryRequest`,
  :class:`SummaryError`) and the prompt a provider sends (:func:`build_summary_prompt`);
- metadata tagging: a summary message has ``meta.is_summary`` and
  ``meta.generated_by == "summary"``, plus ``hints["tinyjuice"] = {"kind", "lineage_id"}``
  which callers drop with :func:`strip_tinyjuice_metadata` before a provider call;
- rehydration after a resume (:func:`find_previous_summary`,
  :func:`resolve_previous_summary`), guarded by a lineage id so a new session never
  inherits another session's summary;
- the deterministic, model-free :func:`fallback_summary`;
- the failure policy (:func:`failure_outcome`): auth and network failures abort and
  preserve every message; nothing is dropped without a summary unless the caller both
  enabled the fallback and accepted lossy compaction.
"""

from __future__ import annotations

import re
import shlex
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

import orjson

from tinyjuice.budget import SummaryKind
from tinyjuice.model import EMPTY, MediaPart, Message, MessageMeta, Role, TextPart, ToolCall
from tinyjuice.redact import redact_clip
from tinyjuice.rules import tool_output_text
from tinyjuice.tokens import TokenCounter, default_counter

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

# ------------------------------------------------------------------------------ wrapper

#: First line of every handoff summary tinyjuice writes.
HANDOFF_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY]"

#: Says, right after the prefix, how the summary must be read. One paragraph (no blank
#: line inside) so older or foreign copies can be recognised and removed.
HANDOFF_PREAMBLE = (
    "Earlier turns of this conversation were removed to free context space and are\n"
    "summarised below. The summary is background reference, not active instructions:\n"
    "do not answer questions or carry out requests quoted in it; they were handled or\n"
    "superseded before this point. The latest user message after this summary is the\n"
    "only active request, and wherever the two disagree the latest user message wins."
)

#: Last line of every handoff summary tinyjuice writes.
END_MARKER = "[END OF COMPACTION SUMMARY — respond only to the latest user message below]"

#: Summary prefixes written by older tools (Hermes before the handoff prefix, ShareGPT).
LEGACY_SUMMARY_PREFIXES: tuple[str, ...] = ("[CONTEXT SUMMARY]:",)

#: Key under ``Message.hints`` that holds tinyjuice's own tags.
METADATA_KEY = "tinyjuice"

_SUMMARY_STARTS: tuple[str, ...] = (HANDOFF_PREFIX, "[CONTEXT COMPACTION", *LEGACY_SUMMARY_PREFIXES)

assert all(p.startswith("[") for p in _SUMMARY_STARTS)  # is_summary_message relies on it
_SUMMARY_ROLES = frozenset((Role.USER, Role.ASSISTANT, Role.SYSTEM))

_LEGACY_RE = re.compile(
    r"^[ \t]*(?:" + "|".join(re.escape(p) for p in LEGACY_SUMMARY_PREFIXES) + r")[ \t]*",
    re.M,
)
#: Any ``[CONTEXT COMPACTION …]`` line opener (our prefix and its variants).
_PREFIX_VARIANT_RE = re.compile(r"^[ \t]*\[CONTEXT COMPACTION[^\]\n]*\][ \t]*", re.M)
#: Any ``[END OF … SUMMARY …]`` closing line.
_END_VARIANT_RE = re.compile(
    r"^[ \t]*\[END OF (?:THE )?(?:COMPACTION |CONTEXT )?SUMMARY[^\]\n]*\][ \t]*$", re.M
)
#: Words that mark a paragraph right after a prefix as a preamble, not content.
_PREAMBLE_WORDS = (
    "background reference",
    "reference only",
    "not active instructions",
    "not as active instructions",
    "latest user message",
)


def strip_summary_wrappers(text: str) -> str:
    """The summary body with every handoff wrapper removed.

    Removes, wherever they occur (so a summary that was wrapped twice comes out clean):
    :data:`HANDOFF_PREFIX` and other ``[CONTEXT COMPACTION …]`` openers, the legacy
    ``[CONTEXT SUMMARY]:`` prefix, :data:`HANDOFF_PREAMBLE`, :data:`END_MARKER` and other
    ``[END OF … SUMMARY …]`` closers. A paragraph that directly follows an opener and reads
    like a preamble (it mentions "background reference", "latest user message", …) is
    dropped too, which covers preambles written by other tools and older versions.
    """
    out = text.replace("\r\n", "\n")
    out = out.replace(HANDOFF_PREAMBLE, "")
    out = out.replace(END_MARKER, "")
    out = _END_VARIANT_RE.sub("", out)
    out = _LEGACY_RE.sub("", out)
    out = _strip_openers(out)
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out.strip()


def _strip_openers(text: str) -> str:
    pieces: list[str] = []
    pos = 0
    for m in _PREFIX_VARIANT_RE.finditer(text):
        if m.start() < pos:
            continue
        pieces.append(text[pos : m.start()])
        pos = m.end()
        # The rest of the opener's paragraph: a preamble when it says so.
        para_end = _paragraph_end(text, pos)
        para = text[pos:para_end].lower()
        if any(w in para for w in _PREAMBLE_WORDS):
            pos = para_end
    pieces.append(text[pos:])
    return "".join(pieces)


def _paragraph_end(text: str, start: int) -> int:
    """End of the paragraph starting at ``start``: a blank line or a markdown heading."""
    blank = text.find("\n\n", start)
    heading = text.find("\n#", start)
    ends = [e for e in (blank, heading) if e >= 0]
    return min(ends) if ends else len(text)


def wrap_summary(body: str) -> str:
    """Prefix + preamble + body + end marker. Old wrappers inside ``body`` are removed first."""
    clean = strip_summary_wrappers(body)
    return f"{HANDOFF_PREFIX}\n{HANDOFF_PREAMBLE}\n\n{clean}\n\n{END_MARKER}"


# ------------------------------------------------------------------------- structured


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
        blocks = [f"## {title}\n{text.strip()}" for title, text in self.sections() if text.strip()]
        return "\n\n".join(blocks)

    @classmethod
    def parse(cls, text: str) -> StructuredSummary:
        """Read a summary back from markdown (wrappers are stripped first).

        Headings may use ``#``..``######`` or a bold line; spelling variants (seed 003's
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


# ---------------------------------------------------------------- provider contract


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


# ---------------------------------------------------------------------- failure policy


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    """What to do after a summary failure. Exactly one of ``retry_with_main_model``,
    ``drop_allowed`` and ``abort_preserve`` is true.

    - ``retry_with_main_model``: try once more with the main model, then ask again with
      ``retried=True``.
    - ``drop_allowed``: replace the middle with the deterministic fallback summary.
    - ``abort_preserve``: stop; return every original message unchanged.

    ``use_fallback`` says a fallback summary may be built (for a preview, or to insert when
    ``drop_allowed``); ``cooldown_seconds`` is how long automatic compaction should wait.
    """

    failure_class: FailureClass
    abort_preserve: bool
    retry_with_main_model: bool
    cooldown_seconds: int
    use_fallback: bool
    drop_allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class _Rule:
    cooldown: int
    retry_main: bool
    fallback_ok: bool
    what: str


_RULES: dict[FailureClass, _Rule] = {
    FailureClass.NO_PROVIDER: _Rule(600, False, True, "no summary provider is configured"),
    FailureClass.AUTH: _Rule(
        600, False, False, "the summary provider rejected the credentials (auth/permission)"
    ),
    FailureClass.NETWORK: _Rule(60, False, False, "the summary provider could not be reached"),
    FailureClass.MODEL_NOT_FOUND: _Rule(60, True, True, "the summary model was not found"),
    FailureClass.TIMEOUT: _Rule(30, True, True, "the summary request timed out"),
    FailureClass.RATE_LIMIT: _Rule(60, False, True, "the summary provider is rate limiting"),
    FailureClass.SERVER: _Rule(30, False, True, "the summary provider had a server error"),
    FailureClass.MALFORMED: _Rule(30, True, True, "the summary response was malformed"),
    FailureClass.STREAM_CLOSED: _Rule(30, True, True, "the summary stream closed early"),
    FailureClass.EMPTY: _Rule(30, True, True, "the summary came back empty"),
    FailureClass.TRUNCATED: _Rule(30, True, True, "the summary came back truncated"),
    FailureClass.OTHER: _Rule(30, False, True, "the summary failed"),
}


def failure_outcome(
    failure_class: FailureClass,
    *,
    abort_on_summary_failure: bool = False,
    fallback_enabled: bool = True,
    accept_lossy: bool = False,
    retried: bool = False,
) -> FailureOutcome:
    """The policy decision for one summary failure (Hermes defaults, POLICIES.md).

    - AUTH and NETWORK: abort and preserve every message; no fallback, whatever the flags
      (auth waits 600 s because it needs the user; network 60 s).
    - NO_PROVIDER: 600 s cooldown; the deterministic fallback may be used.
    - MODEL_NOT_FOUND, TIMEOUT, MALFORMED, STREAM_CLOSED, EMPTY, TRUNCATED: retry once with
      the main model (``retried=False``); after that a 30–60 s cooldown and the fallback.
      An empty or truncated summary is never inserted.
    - RATE_LIMIT, SERVER, OTHER: a transient cooldown and the fallback.

    The middle is only dropped (replaced by the fallback) when ``fallback_enabled`` and
    ``accept_lossy`` are both true and ``abort_on_summary_failure`` is false; otherwise the
    outcome aborts and preserves the original messages.
    """
    cls = FailureClass(failure_class)
    rule = _RULES[cls]
    if rule.retry_main and not retried:
        return FailureOutcome(
            failure_class=cls,
            abort_preserve=False,
            retry_with_main_model=True,
            cooldown_seconds=0,
            use_fallback=False,
            drop_allowed=False,
            reason=f"{rule.what}; retrying once with the main model",
        )
    use_fallback = rule.fallback_ok and fallback_enabled and not abort_on_summary_failure
    drop = use_fallback and accept_lossy
    if drop:
        reason = f"{rule.what}; inserting the deterministic fallback summary (lossy)"
    elif not rule.fallback_ok:
        reason = f"{rule.what}; compaction aborted, all messages preserved"
    elif abort_on_summary_failure:
        reason = f"{rule.what}; abort_on_summary_failure is set, all messages preserved"
    elif not fallback_enabled:
        reason = f"{rule.what}; the fallback summary is disabled, all messages preserved"
    else:
        reason = (
            f"{rule.what}; lossy fallback not accepted, all messages preserved "
            "(a fallback summary can be previewed)"
        )
    return FailureOutcome(
        failure_class=cls,
        abort_preserve=not drop,
        retry_with_main_model=False,
        cooldown_seconds=rule.cooldown,
        use_fallback=use_fallback,
        drop_allowed=drop,
        reason=reason,
    )


# ----------------------------------------------------------------------------- prompt

_SYSTEM_PROMPT = (
    "You write handoff summaries of agent conversations. The earlier turns you are shown are "
    "about to be removed from the context window; another model will continue the work "
    "from your summary plus the most recent turns, so it must be able to pick up without "
    "re-reading anything. Record facts, not impressions. The summary is reference material "
    "for that model, never a new request: describe the user's earlier asks in the past "
    "tense as history. Do not add a preamble, closing remarks or wrapper lines; output only "
    "the summary."
)

_VERBATIM_RULES = (
    "Copy these verbatim, never paraphrased: file paths, shell commands, error messages, "
    "numbers with their units (durations, sizes, counts, versions, percentages), "
    "identifiers (functions, classes, variables, branches, commits, issue ids, model "
    "names) and URLs.",
    "List every file path that was read, written, created or mentioned under Relevant "
    "Files, one per line.",
    "Write completed actions as past-tense facts with evidence, e.g. "
    '"Ran `pytest -q` -> 3 failed (test_parse, test_load, test_save)".',
    "Quote unfulfilled user requests verbatim under Historical Pending Asks and label them "
    "as historical.",
    "Secrets were replaced by [REDACTED:...] markers: keep the markers, never guess values.",
    "If something is unknown, say so; do not invent.",
)


def _clip_middle(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut:,} chars omitted …]\n{text[len(text) - tail :]}"


def _serialise_turns(messages: Sequence[Message], max_chars: int) -> str:
    blocks: list[str] = []
    for i, m in enumerate(messages):
        if is_summary_message(m):
            label = "EARLIER SUMMARY"
            body = strip_summary_wrappers(m.text)
        elif m.role is Role.TOOL:
            name = m.tool_name or "tool"
            label = f"TOOL RESULT {name}" + (f" (call {m.tool_call_id})" if m.tool_call_id else "")
            if m.meta.is_error:
                label += " [error]"
            body = m.text
        else:
            label = m.role.value.upper()
            if m.meta.is_injected:
                label += f" (injected {m.meta.injected_kind or 'context'})"
            body = m.text
        lines = [_clip_middle(body.strip(), max_chars)] if body.strip() else []
        lines += [
            f"[media: {p.media_type}, {p.byte_size:,} bytes]"
            for p in m.parts
            if isinstance(p, MediaPart)
        ]
        for call in m.tool_calls:
            args = _clip_middle(call.arguments, min(max_chars, 1500))
            lines.append(f"-> tool call {call.name} (id {call.id}): {args}")
        blocks.append(f"[{i}] {label}:\n" + ("\n".join(lines) if lines else "(empty)"))
    return "\n\n".join(blocks)


def _trail_block(messages: Sequence[Message]) -> str:
    """The artifact trail of the turns for the prompt ("" when no tool touched a file)."""
    from tinyjuice.facts import file_actions

    trail = file_actions(messages)
    if not trail:
        return ""
    lines = "\n".join(f"- {a.line()}" for a in trail)
    return (
        "Artifact trail (every file a tool touched, with what was done; extracted from the "
        "tool calls). Carry ALL of it under Relevant Files, each file with its actions, "
        f"before anything else:\n{lines}"
    )


def build_summary_prompt(
    request: SummaryRequest, *, max_chars_per_message: int = 6000
) -> list[dict[str, str]]:
    """Chat messages (``system`` + ``user``) asking a model for a handoff summary.

    With ``request.previous_summary`` the prompt asks to *update the previous summary
    with the new turns* (one complete updated summary, not a new one on top); wrappers
    around the previous summary and around summaries inside the turns are stripped first,
    so summaries never nest. With a ``focus_topic`` the model is told to spend 60–70% of
    the summary on it. Each message is clipped to ``max_chars_per_message`` (head and
    tail kept); reasoning is left out.
    """
    parts: list[str] = []
    previous = strip_summary_wrappers(request.previous_summary or "")
    turns = _serialise_turns(request.messages, max_chars_per_message)
    if previous:
        parts.append(
            "Update the previous summary with the new turns. Below are the PREVIOUS SUMMARY "
            "(from an earlier compaction) and the NEW TURNS that happened after it. Produce "
            "one complete, updated summary that replaces the previous one: keep everything "
            "from it that is still true, move work that is now finished to Completed "
            "Actions, add the new facts, files, commands, errors and decisions, and drop "
            "nothing a later step may need. Do not nest or quote the previous summary."
        )
        parts.append(f"<previous_summary>\n{previous}\n</previous_summary>")
        parts.append(f"<new_turns>\n{turns}\n</new_turns>")
    else:
        parts.append("Summarize the conversation turns below.")
        parts.append(f"<turns>\n{turns}\n</turns>")
    trail = _trail_block(request.messages)
    if trail:
        parts.append(trail)
    section_lines = "\n".join(f"## {title}\n({hint})" for _, title, hint in _SECTIONS)
    parts.append(
        "Write the summary in Markdown with exactly these sections, in this order, each as "
        'a "## " heading; write "None." under a section with nothing to say:\n' + section_lines
    )
    parts.append("Rules:\n" + "\n".join(f"- {rule}" for rule in _VERBATIM_RULES))
    parts.append(f"Length: at most about {max(1, request.token_budget):,} tokens.")
    topic = (request.focus_topic or "").strip()
    if topic:
        parts.append(
            f'Focus topic: "{topic}". Spend about 60-70% of the summary on everything '
            "related to this topic and keep its details in full; cover the rest briefly."
        )
    else:
        parts.append("Distribute attention evenly across the sections.")
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


# -------------------------------------------------------------- messages and metadata


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
    return text.lstrip().startswith(_SUMMARY_STARTS)


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


# --------------------------------------------------------------------------- fallback

_URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+", re.I)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_EXTENSIONS = _words(
    """
    py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte json jsonl ndjson yaml yml toml ini
    cfg conf env md mdx rst txt csv tsv html htm css scss sass less xml svg sh bash zsh
    fish ps1 bat cmd c h cc cpp cxx hpp hh cs go rs java kt kts scala swift m mm rb php pl
    lua r sql db sqlite sqlite3 lock log proto gradle tf tfvars hcl dockerfile mk cmake
    zig ex exs erl hs ml dart jl nix patch diff png jpg jpeg gif webp pdf zip gz tgz tar
    whl so dll dylib exe wasm tcss lockb sum mod
    """
)
_EXT_ALT = "|".join(sorted(set(_EXTENSIONS), key=lambda e: (-len(e), e)))
_DOTFILES = _words(
    """
    env gitignore gitattributes dockerignore cursorrules windsurfrules editorconfig npmrc
    nvmrc bashrc zshrc profile pre-commit-config
    """
)
_PATH_CHARS = r"[\w@+.~-]"
_PATH_RE = re.compile(
    r"(?<![\w./\\:-])(?:"
    r"[A-Za-z]:\\[^\s\"'`<>|*?,;()\[\]{}]+"  # windows absolute
    r"|(?:~|\.\.?)?/" + _PATH_CHARS + r"+(?:/" + _PATH_CHARS + r"*)*"  # unix abs, ~/, ./
    r"|" + _PATH_CHARS + r"+(?:/" + _PATH_CHARS + r"+)+/?"  # relative with a slash
    r"|[\w@+-][\w@+.-]*\.(?:" + _EXT_ALT + r")\b"  # bare file name with a known extension
    r"|\.(?:" + "|".join(re.escape(d) for d in _DOTFILES) + r")(?:\.[\w-]+)?\b"  # dotfiles
    r")"
)
_EXT_END_RE = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_NUMERIC_RE = re.compile(r"[\d/.:\-]+")
_UNIX_ROOTS = frozenset(
    _words(
        """
        tmp etc usr var home opt bin sbin dev proc srv mnt root lib Users Applications
        Library Volumes private workspace work app data
        """
    )
)
_PATH_KEYS = frozenset({"path", "workdir", "file_path", "output_path", "filename", "cwd"})
_SHELL_WORDS = ("terminal", "shell", "bash", "exec", "command", "powershell", "cmd")
_KEY_ARG_NAMES = (
    "path",
    "file_path",
    "filename",
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "workdir",
    "cwd",
    "output_path",
    "action",
    "goal",
    "description",
    "id",
)
_ERROR_RE = re.compile(
    r"Traceback|\b\w*(?:Error|Exception)\b|\bERROR\b|\berror:|\bfailed\b|\bFAILED\b"
    r"|No such file|[Pp]ermission denied|PERMISSION DENIED"
    r"|\bexit(?:ed)?(?: with)?(?: code| status)[\s:=]*(?P<code>-?\d+)"
    r"|->\s*exit\s+(?P<code2>-?\d+)"
)
_DIGEST_RE = re.compile(r"^\[[\w.:/-]{1,60}\] \S")

#: Budget priority (first = kept first) and the label of each category.
_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("artifacts", "artifact trail entries"),
    ("rules", "rules"),
    ("asks", "user asks"),
    ("paths", "paths"),
    ("commands", "commands"),
    ("errors", "errors"),
    ("urls", "URLs"),
    ("tools", "tool names"),
    ("tool_calls", "tool calls"),
    ("digests", "tool results"),
    ("last_turns", "last turns"),
)

_ASK_CHARS = 2000
_COMMAND_CHARS = 300
_ERROR_CHARS = 300
_TURN_CHARS = 200
_ARG_CHARS = 80


class _RedactedItems(Mapping[str, tuple[str, ...]]):
    """Items per category, redacted when first read.

    What the budget left out can run to tens of thousands of items on a long session;
    most callers only need the counts, so each category is redacted on first access
    (and kept), which reads exactly like a mapping redacted up front.
    """

    __slots__ = ("_done", "_raw")

    def __init__(self, raw: Mapping[str, Sequence[str]]) -> None:
        self._raw = {key: tuple(v) for key, v in raw.items() if v}
        self._done: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, key: str) -> tuple[str, ...]:
        done = self._done.get(key)
        if done is None:
            from tinyjuice.redact import redact_text

            done = self._done[key] = tuple(redact_text(i) for i in self._raw[key])
        return done

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return repr(dict(self))


@dataclass(frozen=True, slots=True)
class FallbackSummary:
    """A summary built locally without a model (low confidence).

    ``text`` is the unwrapped body (:func:`render_summary_message` wraps it);
    ``included`` / ``omitted`` count items per category (asks, paths, commands, errors,
    urls, tools, tool_calls, digests, last_turns); ``omitted`` are the ones left out to fit
    the budget, and ``omitted_items`` names them (redacted), so a review can show exactly
    what the budget cost.
    """

    text: str
    summary: StructuredSummary
    included: Mapping[str, int]
    omitted: Mapping[str, int]
    tokens: int
    source_messages: int
    confidence: Literal["low"] = "low"
    omitted_items: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Every item left out, as markdown (redacted); "" when nothing was. Stored in the
    #: archive by a commit under ``appendix_id`` (its sha256, whose first digits the
    #: summary's note names).
    appendix: str = ""
    appendix_id: str | None = None

    @property
    def kind(self) -> SummaryKind:
        return SummaryKind.FALLBACK


#: Characters of a long item redacted before it is clipped (the clip shows far fewer).
_CLIP_READ = 16_384


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    # Clipped after redacting, and redacted again: a cut never leaves part of a key.
    return redact_clip(text[: max(_CLIP_READ, 4 * limit)], lambda r: _cut_line(r, limit))


def _cut_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return redact_clip(text, lambda r: f"{r[:limit]} …[{more:,} more chars]")


#: Device files that show up in shell commands and diffs; nothing to remember.
_PSEUDO_FILES = frozenset(
    ("/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty")
)


def _accept_path(raw: str) -> str | None:
    p = raw.rstrip(".,:;!?'\"-")
    if len(p) < 2 or _NUMERIC_RE.fullmatch(p) or p in _PSEUDO_FILES:
        return None
    if p[1:3] == ":\\":
        return p
    if p.startswith(("~/", "./", "../")):
        return p if len(p) > 2 and not p.endswith(("~/", "./")) else None
    has_ext = bool(_EXT_END_RE.search(p.rsplit("/", 1)[-1])) and not p.endswith(".")
    if p.startswith("/"):
        segments = [s for s in p.split("/") if s]
        if not segments:
            return None
        if len(segments) == 1 and not has_ext and segments[0] not in _UNIX_ROOTS:
            return None  # "/compact", "/help": slash commands, not paths
        return p
    if "/" in p:
        return p if has_ext or p.endswith("/") or p.count("/") >= 2 else None
    return p  # a bare name with a known extension, or a dotfile


#: What a clipped text ends with (``_clip`` here and in digests).
_CLIPPED = "…"


def _paths_in(text: str) -> Iterator[str]:
    if "/" not in text and "\\" not in text and "." not in text:
        return
    scrubbed = _URL_RE.sub(" ", text) if "://" in text else text
    for m in _PATH_RE.finditer(scrubbed):
        if scrubbed.startswith(_CLIPPED, m.end()):
            continue  # cut short by a clip ("src/app/lo…"): not a path that exists
        p = _accept_path(m.group(0))
        if p is not None:
            yield p


def _string_leaves(value: Any) -> Iterator[tuple[str | None, str]]:
    """``(key, string)`` for every string leaf of a JSON value (key of the enclosing dict)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, str):
            yield key, v
        elif isinstance(v, dict):
            stack.extend(reversed([(str(k), x) for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(key, x) for x in v]))


def _is_shell_tool(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _SHELL_WORDS)


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if (
            len(value) >= 3
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            and value[1] in ("-c", "-lc")
        ):
            return value[-1].strip() or None
        return shlex.join(value)
    return None


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _call_summary(call: ToolCall, args: Any) -> str:
    if isinstance(args, dict):
        picked = [k for k in _KEY_ARG_NAMES if k in args and not isinstance(args[k], dict | list)]
        if not picked:
            picked = [k for k, v in args.items() if not isinstance(v, dict | list)][:2]
        shown = ", ".join(f"{k}={_one_line(_scalar_text(args[k]), _ARG_CHARS)}" for k in picked[:3])
    elif args is None and call.arguments:
        shown = _one_line(call.arguments, _ARG_CHARS)
    else:
        shown = "" if args is None else _one_line(_scalar_text(args), _ARG_CHARS)
    return f"{call.name}({shown})"


class _Collector:
    """First-seen-ordered, de-duplicated items per category."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, None]] = {key: {} for key, _ in _CATEGORIES}
        self.call_counts: dict[str, list[Any]] = {}

    def add(self, category: str, item: str) -> None:
        if item:
            self.items[category].setdefault(item, None)

    def add_call(self, rendered: str, call_id: str) -> None:
        entry = self.call_counts.get(rendered)
        if entry is None:
            self.call_counts[rendered] = [1, call_id]
        else:
            entry[0] += 1


def error_lines(text: str) -> Iterator[str]:
    """The whole lines of ``text`` holding an error (stripped, in order, each once).

    An error is a traceback, an ``…Error``/``…Exception`` word, ``ERROR``, ``error:``,
    ``failed``/``FAILED``, "No such file", "Permission denied" or a non-zero exit code
    (``exit code 0`` is not an error). The one rule the fallback summary, the review and
    :mod:`tinyjuice.facts` share; :func:`_error_lines_many` is its batched form.
    """
    last_start = -1
    for m in _ERROR_RE.finditer(text):
        code = m.group("code") or m.group("code2")
        if code is not None and code.lstrip("-") == "0":
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        if start == last_start:
            continue
        last_start = start
        end = text.find("\n", m.end())
        line = text[start : len(text) if end < 0 else end].strip()
        if line:
            yield line


_EXIT_ONLY_RE = re.compile(r"^exit(?:ed)?(?: with)? (?:code|status)[\s:=]*-?\d+$", re.I)
_WORDY_RE = re.compile(r"[A-Za-z]{3,}")


def error_head(text: str) -> list[str]:
    """The line(s) naming a failed tool result: its first non-blank line, and the next
    one too when the first only gives the exit code and the next has words ("Exit code
    127" then the shell's "python: command not found"; not a test-progress line)."""
    lines = []
    for line in text.splitlines():
        if line.strip():
            lines.append(line.strip())
            if len(lines) == 2:
                break
    if (
        len(lines) == 2
        and _EXIT_ONLY_RE.match(lines[0])
        and _WORDY_RE.search(lines[1])
        and not lines[1].startswith("Traceback (most recent call last)")
    ):
        return lines
    return lines[:1]


def _errors_in(text: str, out: _Collector, label: str) -> None:
    for line in error_lines(text):
        out.add("errors", label + _one_line(line, _ERROR_CHARS))


#: Where :data:`_ERROR_RE` can match: each of its alternatives starts with one of these
#: literals, except ``[Pp]ermission denied`` (its literal starts one character later) and
#: ``\b\w*(?:Error|Exception)\b`` (it starts where the word holding the literal starts).
_ERROR_NEEDLES: tuple[str, ...] = (
    "Traceback",
    "ERROR",
    "error:",
    "failed",
    "FAILED",
    "No such file",
    "PERMISSION DENIED",
    "exit",
    "->",
)
_ERROR_WORD_ENDS: tuple[str, ...] = ("Error", "Exception")
#: Joins texts for one error scan: no match or line can cross it (``\x00`` is neither a
#: word character nor whitespace, and each side is a line break).
_ERROR_JOIN = "\n\x00\n"


def _error_starts(big: str) -> list[int]:
    """Sorted positions of ``big`` where :data:`_ERROR_RE` may match (a superset)."""
    found: set[int] = set()
    add = found.add
    find = big.find
    for needle in _ERROR_NEEDLES:
        i = find(needle)
        while i >= 0:
            add(i)
            i = find(needle, i + 1)
    i = find("ermission denied")
    while i >= 0:
        if i > 0:
            add(i - 1)
        i = find("ermission denied", i + 1)
    for needle in _ERROR_WORD_ENDS:
        # The start of the word around each occurrence; a scan back stops at the previous
        # occurrence (same word: same start), so a long word is walked once.
        last_at = last_start = -1
        i = find(needle)
        while i >= 0:
            j = i
            while j > 0 and j != last_at and (big[j - 1].isalnum() or big[j - 1] == "_"):
                j -= 1
            start = last_start if j == last_at else j
            add(start)
            last_at, last_start = i, start
            i = find(needle, i + 1)
    return sorted(found)


def _error_lines_many(texts: Sequence[str]) -> dict[int, list[str]]:
    """``{k: lines}``: the stripped lines :func:`_errors_in` would take from ``texts[k]``,
    in order, for every text that has some.

    One scan of all texts joined: :data:`_ERROR_RE` is tried only where one of its
    literals occurs, which yields exactly the matches of ``finditer`` (a match can only
    start at such a place, and the places are tried in order, each from the end of the
    previous match) at a fraction of the cost of running it over every character.
    """
    out: dict[int, list[str]] = {}
    if not texts:
        return out
    starts: list[int] = []
    pos = 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + len(_ERROR_JOIN)
    big = _ERROR_JOIN.join(texts)
    size = len(big)
    match = _ERROR_RE.match
    rfind = big.rfind
    find = big.find
    cur = 0
    last_start = -1
    for p in _error_starts(big):
        if p < cur:
            continue
        m = match(big, p)
        if m is None:
            continue
        cur = m.end()
        code = m.group("code") or m.group("code2")
        if code is not None and code.lstrip("-") == "0":
            continue
        start = rfind("\n", 0, p) + 1
        if start == last_start:
            continue
        last_start = start
        end = find("\n", cur)
        line = big[start : size if end < 0 else end].strip()
        if line:
            k = bisect_right(starts, p) - 1
            found = out.get(k)
            if found is None:
                out[k] = [line]
            else:
                found.append(line)
    return out


#: A line can hold a path only if it has one of these: ``/``, ``\\``, or a dot followed by
#: the first letter of a known extension or dotfile (every alternative starts with a
#: literal, so the engine skips to candidates in C).
_PATH_HINT_RE = re.compile(
    "/|\\\\|\\.[" + "".join(sorted({re.escape(w[0]) for w in (*_EXTENSIONS, *_DOTFILES)})) + "]"
)
#: :data:`_PATH_RE` behind a guard every one of its matches passes (the first character
#: outside ``[\w@+~-]`` is one of ``/ . \\ :``), which fails plain words in one pass
#: instead of several backtracking ones. Same matches, fewer steps.
_PATH_SCAN_RE = re.compile(
    _PATH_RE.pattern.replace(r"(?<![\w./\\:-])(?:", r"(?<![\w./\\:-])(?=[\w@+~-]*+[/.\\:])(?:", 1)
)


def _paths_many(texts: Sequence[str]) -> dict[int, list[str]]:
    """``{k: list(_paths_in(texts[k]))}`` for the texts that hold a path, in one pass.

    Each distinct text is scanned once, in one pass over all of them (:func:`_scan_paths`).
    Texts with a URL take the per-text path (URLs are blanked first).
    """
    out: dict[int, list[str]] = {}
    first: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []
    batch: list[int] = []
    found: list[str] | None
    for k, t in enumerate(texts):
        if "/" not in t and "\\" not in t and "." not in t:
            continue
        seen = first.setdefault(t, k)
        if seen != k:
            repeats.append((k, seen))
        elif "://" in t:
            found = list(_paths_in(t))
            if found:
                out[k] = found
        else:
            batch.append(k)
    if batch:
        _scan_paths(texts, batch, out)
    for k, seen in repeats:
        found = out.get(seen)
        if found is not None:
            out[k] = found
    return out


#: The rest of a whitespace-delimited token.
_TOKEN_REST_RE = re.compile(r"\S*")


def _scan_paths(texts: Sequence[str], batch: list[int], out: dict[int, list[str]]) -> None:
    """Paths of ``texts[k]`` for every ``k`` in ``batch`` into ``out`` (see :func:`_paths_many`).

    The texts are joined by line breaks. A path match never crosses whitespace and holds
    a :data:`_PATH_HINT_RE` candidate, so only the tokens around candidates are scanned:
    from the whitespace before a candidate (or the end of the previous scan) to the end
    of its token. Each scan starts after whitespace and ends before whitespace, where the
    pattern behaves as at the ends of a text.
    """
    starts: list[int] = []
    pos = 0
    for k in batch:
        starts.append(pos)
        pos += len(texts[k]) + 1
    big = "\n".join([texts[k] for k in batch])
    accepted: dict[str, str] = {}
    hint = _PATH_HINT_RE.search
    scan = _PATH_SCAN_RE.finditer
    token_rest = _TOKEN_REST_RE.match
    rfind = big.rfind
    pos = 0
    while (h := hint(big, pos)) is not None:
        q = h.start()
        # Any whitespace will do as the start; these are the common ones (a rarer one in
        # between only makes the scan a little longer).
        start = max(rfind(" ", pos, q), rfind("\t", pos, q), rfind("\n", pos, q)) + 1 or pos
        end = token_rest(big, q).end()  # type: ignore[union-attr]  # (\S* always matches)
        for m in scan(big, start, end):
            if big.startswith(_CLIPPED, m.end()):
                continue  # cut short by a clip (see _paths_in)
            raw = m.group(0)
            p = accepted.get(raw)
            if p is None:
                p = accepted[raw] = _accept_path(raw) or ""
            if p:
                k = batch[bisect_right(starts, m.start()) - 1]
                found = out.get(k)
                if found is None:
                    out[k] = [p]
                else:
                    found.append(p)
        pos = end


def _undiff_paths(paths: dict[str, None]) -> dict[str, None]:
    """``paths`` with diff prefixes dropped: when both ``a/P`` and ``b/P`` were seen (a
    ``git diff`` header), both stand for ``P``. First-seen order, no duplicates."""
    diffed = {p[2:] for p in paths if p.startswith("a/") and "b/" + p[2:] in paths}
    if not diffed:
        return paths
    out: dict[str, None] = {}
    for p in paths:
        if p.startswith(("a/", "b/")) and p[2:] in diffed:
            p = p[2:]
        out.setdefault(p, None)
    return out


def _collect(middle: Sequence[Message], last_turns: int) -> _Collector:
    out = _Collector()
    add = out.add
    asks: list[str] = []
    # Paths and error lines are found in one batched scan after this loop; these keep
    # what to scan in first-seen order (flat lists: no per-item containers).
    path_texts: list[str] = []
    #: A path argument named by its key, listed just before the scan of its text.
    named_paths: dict[int, str] = {}
    error_texts: list[str] = []
    error_labels: list[str] = []
    #: The first line of an error result, listed after the lines found in its text.
    error_firsts: dict[int, str] = {}
    shell: dict[str, bool] = {}
    rendered_calls: dict[str, dict[str, str]] = {}
    tool_role = Role.TOOL
    user_role = Role.USER
    for m in middle:
        parts = m.parts
        text = parts[0].text if len(parts) == 1 and type(parts[0]) is TextPart else m.text
        role = m.role
        if (
            role is user_role
            and m.is_real_user
            and not m.meta.generated_by
            and not is_summary_message(m)
            and text.strip()
        ):
            asks.append(_clip(text, _ASK_CHARS))
        if role is tool_role:
            name = m.tool_name
            if name:
                add("tools", name)
            if text:
                path_texts.append(text)
                if "://" in text:
                    for u in _URL_RE.finditer(text):
                        add("urls", u.group(0).rstrip(".,:;!?'\""))
                stripped = text.strip()
                if m.meta.is_error and stripped:
                    first = " — ".join(error_head(text))
                    error_firsts[len(error_texts)] = f"[{name or 'tool'}] " + _one_line(
                        first, _ERROR_CHARS
                    )
                if stripped and (
                    m.meta.generated_by == "digest"
                    or ("\n" not in stripped and len(stripped) < 400 and _DIGEST_RE.match(stripped))
                ):
                    add("digests", _one_line(stripped, 400))
                # {"output": …, "exit_code": 1} results are scanned through their output.
                error_texts.append(tool_output_text(text) if text[:1] == "{" else text)
                error_labels.append(f"[{name or 'tool'}] ")
        elif text:
            path_texts.append(text)
            if "://" in text:
                for u in _URL_RE.finditer(text):
                    add("urls", u.group(0).rstrip(".,:;!?'\""))
            if role is not Role.ASSISTANT:
                # Errors are what tools (or the user, pasting) reported: "failed" in the
                # assistant's own prose is not one (tinyjuice.facts).
                error_texts.append(text)
                error_labels.append("")
        for call in m.tool_calls:
            # A call repeated verbatim (same tool, same arguments) adds nothing new but
            # its count: everything else it holds was collected at its first occurrence.
            same_tool = rendered_calls.get(call.name)
            if same_tool is None:
                same_tool = rendered_calls[call.name] = {}
            rendered = same_tool.get(call.arguments)
            if rendered is not None:
                out.add_call(rendered, call.id)
                continue
            add("tools", call.name)
            args = call.parsed_arguments()
            rendered = same_tool[call.arguments] = _call_summary(call, args)
            out.add_call(rendered, call.id)
            if args is None:
                path_texts.append(call.arguments)
                continue
            if type(args) is dict and not any(isinstance(v, dict | list) for v in args.values()):
                leaves: Iterable[tuple[str | None, Any]] = args.items()
            else:
                leaves = _string_leaves(args)
            for key, leaf in leaves:
                if not isinstance(leaf, str):
                    continue
                if key in _PATH_KEYS and len(leaf) <= 500 and leaf.strip():
                    named_paths[len(path_texts)] = leaf.strip()
                path_texts.append(leaf)
                if "://" in leaf:
                    for u in _URL_RE.finditer(leaf):
                        add("urls", u.group(0).rstrip(".,:;!?'\""))
            is_shell = shell.get(call.name)
            if is_shell is None:
                is_shell = shell[call.name] = _is_shell_tool(call.name)
            if is_shell and isinstance(args, dict):
                for key in ("command", "cmd"):
                    cmd = _command_text(args.get(key))
                    if cmd:
                        add("commands", "`" + _one_line(cmd, _COMMAND_CHARS) + "`")
    found = _paths_many(path_texts)
    for k in sorted({*found, *named_paths}):
        named = named_paths.get(k)
        if named is not None:
            add("paths", named)
        for p in found.get(k, ()):
            add("paths", p)
    out.items["paths"] = _undiff_paths(out.items["paths"])
    lines = _error_lines_many(error_texts)
    for k in sorted({*lines, *error_firsts}):
        label = error_labels[k]
        for line in lines.get(k, ()):
            add("errors", label + _one_line(line, _ERROR_CHARS))
        first_line = error_firsts.get(k)
        if first_line is not None:
            add("errors", first_line)
    for ask in reversed(asks):
        add("asks", ask)
    for rendered, (count, call_id) in out.call_counts.items():
        suffix = f" ×{count}, first id {call_id}" if count > 1 else f" id {call_id}"
        add("tool_calls", rendered + suffix)
    for m in middle[len(middle) - last_turns :] if last_turns > 0 else ():
        add("last_turns", _turn_line(m))
    return out


def _turn_line(m: Message) -> str:
    if m.role is Role.TOOL:
        label = f"tool result {m.tool_name or ''}".strip()
    elif is_summary_message(m):
        label = "earlier summary"
    else:
        label = m.role.value
    text = strip_summary_wrappers(m.text) if is_summary_message(m) else m.text
    body = _one_line(text, _TURN_CHARS) if text.strip() else ""
    if m.tool_calls:
        called = "called " + ", ".join(c.name for c in m.tool_calls)
        body = f"{body} ({called})" if body else called
    if m.media:
        body = (body + " " if body else "") + f"[{len(m.media)} media]"
    return f"[{label}] {body or '(empty)'}"


def _bullet(item: str) -> str:
    # Continuation lines are indented four spaces, so a "# heading" inside a quoted ask
    # cannot be read back as a section heading.
    return "- " + item.replace("\n", "\n    ")


def _note(
    n_messages: int,
    omitted: Mapping[str, int],
    focus: str | None = None,
    appendix_id: str | None = None,
) -> str:
    note = (
        f"Deterministic fallback summary of {n_messages:,} earlier message(s), generated "
        "locally without a model; it may be incomplete."
    )
    if focus:
        note += f" Focus: {_one_line(focus, 200)} (matching items are listed first)."
    left = [f"{omitted[key]:,} {label}" for key, label in _CATEGORIES if omitted.get(key)]
    if left:
        note += " Left out to fit the budget: " + ", ".join(left) + "."
    if left and appendix_id:
        note += (
            f" Every item left out is in appendix sha256:{appendix_id}, archived with the "
            f"commit (`tjui recover {appendix_id} -o FILE`)."
        )
    return note


def _assemble(
    n_messages: int,
    chosen: Mapping[str, list[str]],
    omitted: Mapping[str, int],
    focus: str | None = None,
    appendix_id: str | None = None,
) -> StructuredSummary:
    def block(key: str) -> str:
        return "\n".join(_bullet(i) for i in chosen.get(key, ()))

    def labelled(*pairs: tuple[str, str]) -> str:
        out = [f"{label}:\n{block(key)}" for label, key in pairs if chosen.get(key)]
        return "\n".join(out)

    asks = block("asks")
    if asks:
        asks = (
            "Newest first, verbatim; historical — the latest user message overrides them.\n" + asks
        )
    return StructuredSummary(
        historical_task_snapshot=_note(n_messages, omitted, focus, appendix_id),
        pending_asks=asks,
        relevant_files=labelled(
            ("Artifact trail (every file a tool touched: what was done)", "artifacts"),
            ("Other paths", "paths"),
        )
        if chosen.get("artifacts")
        else block("paths"),
        completed_actions=labelled(
            ("Tools used", "tools"),
            ("Commands run", "commands"),
            ("Tool calls", "tool_calls"),
            ("Tool results", "digests"),
        ),
        blockers=block("errors"),
        constraints_preferences=block("rules"),
        critical_context=labelled(("URLs", "urls")),
        active_state=labelled(("Last turns before the compacted span", "last_turns")),
    )


#: Anchors: what a continuation cannot re-derive and what a summary review measures.
#: They are all served before any of the verbose categories gets a token.
_ANCHORS: tuple[str, ...] = (
    "artifacts",
    "rules",
    "asks",
    "paths",
    "commands",
    "errors",
    "urls",
    "tools",
)
_VERBOSE: tuple[str, ...] = ("tool_calls", "digests", "last_turns")

#: Pass-one share per category, priority order, unused shares flowing down: anchors
#: share the whole room; verbose categories share what the anchors left.
_SHARES: dict[str, float] = {
    "artifacts": 0.20,
    "rules": 0.08,
    "asks": 0.27,
    "paths": 0.10,
    "commands": 0.14,
    "errors": 0.12,
    "urls": 0.06,
    "tools": 0.03,
    "tool_calls": 0.50,
    "digests": 0.30,
    "last_turns": 0.20,
}


def _allocate(
    items: Mapping[str, list[str]], room: int, counter: TokenCounter
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Choose items per category within ``room`` tokens (see :func:`fallback_summary`).

    Returns the chosen items and the omitted ones, per category.
    """
    costs: dict[str, list[int]] = {}
    for key, _ in _CATEGORIES:
        lines = items[key]
        costs[key] = (
            [c + 1 for c in counter.count_many([_bullet(i) for i in lines])] if lines else []
        )
    taken: dict[str, list[bool]] = {key: [False] * len(items[key]) for key, _ in _CATEGORIES}
    picked: dict[str, list[str]] = {key: list(items[key]) for key, _ in _CATEGORIES}
    used = 0

    def share_out(group: tuple[str, ...], group_room: int) -> None:
        # Each category, in priority order, gets its share plus what the ones above left
        # unused; within it, items too large for what is left are skipped.
        nonlocal used
        carry = 0
        for key in group:
            allowance = int(group_room * _SHARES[key]) + carry
            for i, cost in enumerate(costs[key]):
                if cost <= allowance:
                    taken[key][i] = True
                    allowance -= cost
                    used += cost
            carry = max(0, allowance)

    def leftovers(group: tuple[str, ...]) -> None:
        # The room still left goes to the skipped items, highest priority first.
        nonlocal used
        for key in group:
            for i, cost in enumerate(costs[key]):
                if taken[key][i]:
                    continue
                if cost <= room - used:
                    taken[key][i] = True
                    used += cost
                elif key == "asks" and i == 0 and room - used > 40:
                    # The newest ask never disappears entirely: keep as much as fits.
                    clipped = _clip(picked[key][0], (room - used) * 3)
                    picked[key][0] = clipped
                    taken[key][0] = True
                    used += counter.count(_bullet(clipped)) + 1

    share_out(_ANCHORS, room)
    leftovers(_ANCHORS)
    share_out(_VERBOSE, max(0, room - used))
    leftovers(_VERBOSE)
    chosen = {
        key: [item for item, ok in zip(picked[key], taken[key], strict=True) if ok]
        for key, _ in _CATEGORIES
    }
    omitted = {
        key: [item for item, ok in zip(picked[key], taken[key], strict=True) if not ok]
        for key, _ in _CATEGORIES
    }
    return chosen, omitted


#: Categories a focus topic reorders (asks stay newest first, last turns in order).
_FOCUSABLE: tuple[str, ...] = (
    "artifacts",
    "paths",
    "commands",
    "errors",
    "urls",
    "tools",
    "tool_calls",
    "digests",
)
_FOCUS_STOPWORDS = frozenset(("the", "and", "for", "with", "from", "into", "about", "that"))


def _focus_terms(focus: str | None) -> tuple[str, ...]:
    """The words of a focus topic worth matching (3+ characters, lower case)."""
    if not focus:
        return ()
    words = re.findall(r"[\w./-]{3,}", focus.lower())
    return tuple(dict.fromkeys(w for w in words if w not in _FOCUS_STOPWORDS))


def _focus_first(items: list[str], terms: tuple[str, ...]) -> list[str]:
    """``items`` with those that mention a focus term first (each group in its order)."""
    hit = [i for i in items if any(t in i.lower() for t in terms)]
    if not hit or len(hit) == len(items):
        return items
    hits = set(hit)
    return hit + [i for i in items if i not in hits]


def fallback_summary(
    middle: Sequence[Message],
    *,
    budget_tokens: int,
    counter: TokenCounter | None = None,
    last_turns: int = 3,
    redact: bool = True,
    focus: str | None = None,
    appendix: bool = True,
) -> FallbackSummary:
    """A model-free summary of ``middle`` (messages that were ALREADY redacted).

    Extracts, in first-seen order without duplicates: the real user asks (verbatim, newest
    first, each clipped at 2,000 chars), every path (text and tool arguments, plus JSON
    fields ``path``, ``workdir``, ``file_path``, ``output_path``, ``filename``, ``cwd``),
    shell commands (``command``/``cmd`` of terminal/shell/bash-like tools), URLs,
    error/blocker lines, the names of the tools used, tool calls with key arguments and
    call ids, digest lines of tool results, and the last ``last_turns`` messages (short).

    Path rule: Windows absolute paths; unix paths starting with ``/``, ``~/``, ``./`` or
    ``../`` (a single segment without extension only for well-known roots such as
    ``/tmp``, so slash commands are skipped); relative paths with a slash when they end in
    an extension or a slash, or have two slashes ("and/or" and dates are skipped); bare file names
    with a known extension; common dotfiles.

    The *artifact trail* comes first: every file a tool call touched with what was done
    to it (``path — read, edited``; :func:`tinyjuice.facts.file_actions`), under Relevant
    Files, and those paths leave the plain path list.

    The body is clamped to ``budget_tokens`` (the explanatory note always stays). The
    compact *anchors* come first — artifact trail > rules > asks > paths > commands >
    errors > URLs > tool names — and only the room they leave goes to the verbose parts —
    tool calls > tool results > last turns — so whenever the budget can hold every
    anchor, all of them are in. *Rules* are those of injected context in the span (a
    CLAUDE.md / AGENTS.md, a skill: :func:`tinyjuice.survival.find_rules`), under
    Constraints & Preferences. Within each group pass one gives every category, in
    priority order, a share (anchors: 20, 8, 27, 10, 14, 12, 6 and 3% of the budget;
    verbose: 50, 30 and 20% of what the anchors left) plus whatever the categories above
    left unused,
    so thousands of old asks cannot crowd out every path; pass two hands the room still
    left to skipped items, highest priority first. The newest ask is always kept (clipped
    to the room left if it alone is too big). What was left out is counted per category
    in ``omitted``, named in ``omitted_items`` and counted in the text ("Left out to fit
    the budget: …"); ``appendix`` lists every such item and the note names its id
    (``appendix_id``, the first 16 hex digits of its sha256), under which a commit
    archives it, so nothing is silently lost (``appendix=False``: no appendix, for
    callers that archive nothing, such as ``tjui batch``).
    A ``focus`` topic puts the paths, commands, errors, URLs, tools, tool calls and tool
    results that mention one of its words first in their category (so they are the ones a
    tight budget keeps), and the note names it; asks and last turns keep their order.
    With ``redact`` the chosen items go through :func:`tinyjuice.redact.redact_text` once
    more, and so do the items of ``omitted_items`` (each category when first read).
    Linear in the size of ``middle``.
    """
    counter = counter or default_counter()
    collected = _collect(middle, last_turns)
    items = {key: list(collected.items[key]) for key, _ in _CATEGORIES}
    _add_trail(middle, items)
    _add_rules(middle, items)
    terms = _focus_terms(focus)
    if terms:
        for key in _FOCUSABLE:
            items[key] = _focus_first(items[key], terms)
    else:
        focus = None
    totals = {key: len(v) for key, v in items.items()}

    # Fixed cost: the note at its longest, every heading and label that may appear.
    fixed_text = _assemble(
        len(middle),
        {key: [""] for key in items if items[key]},
        {key: n for key, n in totals.items() if n},
        focus,
        "f" * _APPENDIX_ID_CHARS if appendix else None,
    ).render()
    remaining = max(0, budget_tokens - counter.count(fixed_text))

    chosen, left_out = _allocate(items, remaining, counter)

    if redact:
        from tinyjuice.redact import redact_text

        chosen = {key: [redact_text(i) for i in v] for key, v in chosen.items()}
    omitted = {key: len(v) for key, v in left_out.items() if v}

    # Token counts are not exactly additive (and redaction may lengthen an item): trim
    # from the lowest priority until the text fits.
    order = [key for key, _ in reversed(_CATEGORIES)]
    while True:
        listed = _appendix(len(middle), left_out, redact) if appendix else ""
        appendix_id = _appendix_id(listed)
        summary = _assemble(len(middle), chosen, omitted, focus, appendix_id)
        text = summary.render()
        tokens = counter.count(text)
        if tokens <= budget_tokens or not any(chosen[k] for k in order):
            break
        excess = tokens - budget_tokens
        while excess > 0 and any(chosen[k] for k in order):
            key = next(k for k in order if chosen[k])
            dropped = chosen[key].pop()
            excess -= counter.count(_bullet(dropped)) + 1
            omitted[key] = omitted.get(key, 0) + 1
            left_out[key].insert(0, dropped)

    if omitted and tokens < budget_tokens:
        # The note was reserved at its longest: give the room it did not need back.
        def render() -> int:
            listed = _appendix(len(middle), left_out, redact) if appendix else ""
            return counter.count(
                _assemble(len(middle), chosen, omitted, focus, _appendix_id(listed)).render()
            )

        _Fill(chosen, left_out, omitted, redact).run(render, budget_tokens)
        listed = _appendix(len(middle), left_out, redact) if appendix else ""
        appendix_id = _appendix_id(listed)
        summary = _assemble(len(middle), chosen, omitted, focus, appendix_id)
        text = summary.render()
        tokens = counter.count(text)

    included = {key: len(v) for key, v in chosen.items()}
    return FallbackSummary(
        text=text,
        summary=summary,
        included=included,
        omitted={key: omitted[key] for key, _ in _CATEGORIES if omitted.get(key)},
        tokens=tokens,
        source_messages=len(middle),
        omitted_items=(
            _RedactedItems({key: left_out[key] for key, _ in _CATEGORIES})
            if redact
            else {key: tuple(left_out[key]) for key, _ in _CATEGORIES if left_out[key]}
        ),
        appendix=listed,
        appendix_id=appendix_id,
    )


class _Fill:
    """Moves left-out items back into a summary while the rendered text still fits.

    The note was reserved at its longest, and a tight budget can leave room it did not
    need. Highest priority first, each item is tried by rendering the whole summary
    (``render`` returns its token count), at most :attr:`TRIES` times, so the cost stays
    small however many items were left out.
    """

    TRIES = 24

    def __init__(
        self,
        chosen: dict[str, list[str]],
        left_out: dict[str, list[str]],
        omitted: dict[str, int],
        redact: bool,
    ) -> None:
        self.chosen, self.left_out, self.omitted, self.redact = chosen, left_out, omitted, redact

    def run(self, render: Callable[[], int], budget: int) -> None:
        from tinyjuice.redact import redact_text

        tries = self.TRIES
        for key, _ in _CATEGORIES:
            while self.left_out.get(key) and tries > 0:
                tries -= 1
                item = self.left_out[key].pop(0)
                self.chosen[key].append(redact_text(item) if self.redact else item)
                self._count(key, -1)
                if render() <= budget:
                    continue
                self.chosen[key].pop()
                self.left_out[key].insert(0, item)
                self._count(key, +1)
                break

    def _count(self, key: str, delta: int) -> None:
        self.omitted[key] = self.omitted.get(key, 0) + delta
        if not self.omitted[key]:
            del self.omitted[key]


#: Hex digits of an appendix id (the first characters of its sha256).
_APPENDIX_ID_CHARS = 16


def _add_trail(middle: Sequence[Message], items: dict[str, list[str]]) -> None:
    """The artifact trail (:func:`tinyjuice.facts.file_actions`) into ``items``; the
    paths it names leave the plain path list (the trail already says them)."""
    from tinyjuice.facts import file_actions, norm_path

    trail = file_actions(middle)
    if not trail:
        return
    items["artifacts"] = [a.line() for a in trail]
    named = {norm_path(a.path) for a in trail}
    relative = tuple("/" + k for k in named if not k.startswith(("/", "~")))

    def covered(p: str) -> bool:
        key = norm_path(p)
        return key in named or (key.startswith("/") and key.endswith(relative))

    items["paths"] = [p for p in items["paths"] if not covered(p)]


def _add_rules(middle: Sequence[Message], items: dict[str, list[str]]) -> None:
    """Rules of injected context in the span (a CLAUDE.md / AGENTS.md re-read, a skill, a
    rules section; :func:`tinyjuice.survival.find_rules`) that must outlive the
    compaction. The user's own constraints are already in the asks, verbatim."""
    from tinyjuice.survival import find_rules

    items["rules"] = [f"[{r.source}] {r.text}" for r in find_rules(middle) if r.source != "user"]


def _appendix(n_messages: int, left_out: Mapping[str, list[str]], redact: bool) -> str:
    """Everything the budget left out, per category, as markdown; "" when nothing was."""
    if not any(left_out.get(key) for key, _ in _CATEGORIES):
        return ""
    if redact:
        from tinyjuice.redact import redact_text
    else:

        def redact_text(text: str) -> str:
            return text

    blocks = [
        f"# Appendix to the fallback summary of {n_messages:,} message(s)\n"
        "Every item the summary left out to fit its budget, by category."
    ]
    for key, label in _CATEGORIES:
        lines = left_out.get(key)
        if lines:
            body = "\n".join(_bullet(redact_text(i)) for i in lines)
            blocks.append(f"## {label} ({len(lines):,})\n{body}")
    return "\n\n".join(blocks) + "\n"


def _appendix_id(appendix: str) -> str | None:
    """The id an appendix is archived under: the first hex digits of its sha256."""
    if not appendix:
        return None
    import hashlib

    return hashlib.sha256(appendix.encode()).hexdigest()[:_APPENDIX_ID_CHARS]
