"""Context usage breakdown: where the tokens of a prompt go, as numbers and labels only.

Details: docs/compaction.md (`tinyjuice.breakdown`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tinyjuice.model import Message, Role, ThinkingPart, Transcript
from tinyjuice.tokens import (
    IMAGE_TOKENS,
    CountKind,
    TokenCounter,
    TranscriptTokens,
    default_counter,
    tool_schema_text,
)

__all__ = [
    "BUCKET_KEYS",
    "CONVERSATION_KEYS",
    "STATIC_KEYS",
    "SUBAGENT_TOOLS",
    "BreakdownSums",
    "ContextBreakdown",
    "ContextBucket",
    "breakdown_sums",
    "compute_breakdown",
    "is_mcp_tool",
    "tool_definitions_in",
]

#: Tool names whose calls start a subagent (Claude Code's Task tool, later Agent).
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

_LABELS: dict[str, str] = {
    "system_prompt": "System prompt",
    "tool_definitions": "Tool definitions",
    "rules": "Rules / context files",
    "skills": "Skills",
    "mcp_tools": "MCP tools",
    "subagents": "Subagents",
    "memory": "Memory",
    "user": "User",
    "assistant": "Assistant",
    "tool_output": "Tool output",
    "reasoning": "Reasoning",
    "summaries": "Summaries",
    "media": "Media",
    "injected": "Injected context",
}

STATIC_KEYS: tuple[str, ...] = (
    "system_prompt",
    "tool_definitions",
    "rules",
    "skills",
    "mcp_tools",
    "subagents",
    "memory",
)
CONVERSATION_KEYS: tuple[str, ...] = (
    "user",
    "assistant",
    "tool_output",
    "reasoning",
    "summaries",
    "media",
    "injected",
)
BUCKET_KEYS: tuple[str, ...] = STATIC_KEYS + CONVERSATION_KEYS


@dataclass(frozen=True, slots=True)
class ContextBucket:
    key: str
    label: str
    tokens: int
    kind: CountKind
    group: Literal["static", "conversation"]


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """Token buckets of one prompt. Holds numbers and fixed labels only, never text."""

    categories: tuple[ContextBucket, ...]
    estimated_total_tokens: int
    measured_prompt_tokens: int | None
    context_max_tokens: int | None
    #: Name of the counter behind the estimates ("cl100k_base", "rough", ...).
    counter: str
    #: Index of the message the measured usage belongs to, when known.
    measured_at_message: int | None = None
    #: How many subagents the session has (when the caller says; see list_subagents).
    subagents: int = 0
    #: What counting finds in the prompt the measurement covers (static + messages up
    #: to the measured one); None without a measurement.
    counted_at_measurement: int | None = None

    @property
    def unrecorded_tokens(self) -> int:
        """The measured prompt minus what the transcript records up to that reading: the
        agent's own system prompt and tool schemas (and tokenizer differences) that the
        file never wrote down. 0 without a measurement; never negative."""
        if self.measured_prompt_tokens is None or self.counted_at_measurement is None:
            return 0
        return max(0, self.measured_prompt_tokens - self.counted_at_measurement)

    @property
    def total_tokens(self) -> int:
        """The measured prompt size when known, else the estimate."""
        if self.measured_prompt_tokens is not None:
            return self.measured_prompt_tokens
        return self.estimated_total_tokens

    @property
    def total_kind(self) -> CountKind:
        if self.measured_prompt_tokens is not None:
            return CountKind.MEASURED
        return self.counted_kind

    @property
    def counted_kind(self) -> CountKind:
        """How :attr:`estimated_total_tokens` was counted: exact when every non-empty
        bucket was counted exactly, else estimated."""
        kinds = {b.kind for b in self.categories if b.tokens}
        return CountKind.EXACT if kinds <= {CountKind.EXACT} else CountKind.ESTIMATED

    @property
    def static_tokens(self) -> int:
        return sum(b.tokens for b in self.categories if b.group == "static")

    @property
    def conversation_tokens(self) -> int:
        return sum(b.tokens for b in self.categories if b.group == "conversation")

    @property
    def used_ratio(self) -> float | None:
        """Share of the context window in use, when the window is known."""
        if not self.context_max_tokens:
            return None
        return self.total_tokens / self.context_max_tokens

    def bucket(self, key: str) -> ContextBucket:
        for b in self.categories:
            if b.key == key:
                return b
        raise KeyError(f"no bucket {key!r}; buckets are: {', '.join(BUCKET_KEYS)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "categories": [
                {
                    "key": b.key,
                    "label": b.label,
                    "tokens": b.tokens,
                    "kind": b.kind.value,
                    "group": b.group,
                }
                for b in self.categories
            ],
            "estimated_total_tokens": self.estimated_total_tokens,
            "measured_prompt_tokens": self.measured_prompt_tokens,
            "measured_at_message": self.measured_at_message,
            "unrecorded_tokens": self.unrecorded_tokens,
            "context_max_tokens": self.context_max_tokens,
            "total_tokens": self.total_tokens,
            "total_kind": self.total_kind.value,
            "counted_kind": self.counted_kind.value,
            "static_tokens": self.static_tokens,
            "conversation_tokens": self.conversation_tokens,
            "counter": self.counter,
        }


# ------------------------------------------------------------------- classification

_RULE_FILES = (
    "agents.md",
    "claude.md",
    "gemini.md",
    "cursorrules",
    ".cursor/rules",
    "windsurfrules",
    "copilot-instructions",
    "claudemd",
)
_CLASS_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rules", _RULE_FILES),
    ("mcp_tools", ("model context protocol",)),
    ("skills", ("skill",)),
    ("subagents", ("subagent", "sub-agent", "agent types", "available agents", "agent definition")),
    ("memory", ("memory", "memories", "user profile")),
    (
        "rules",
        (
            "project instructions",
            "user instructions",
            "project context",
            "context file",
            "project rules",
            "user rules",
            "rules file",
        ),
    ),
)
_MCP_WORD = re.compile(r"\bmcp\b|mcp_|mcp-")

_TAG_CLASSES: dict[str, str] = {
    "available_skills": "skills",
    "skills": "skills",
    "skill": "skills",
    "available_agents": "subagents",
    "agents": "subagents",
    "subagents": "subagents",
    "agent_definitions": "subagents",
    "memory": "memory",
    "memories": "memory",
    "user_memory": "memory",
    "user_profile": "memory",
    "user_instructions": "rules",
    "project_instructions": "rules",
    "rules": "rules",
    "user_rules": "rules",
    "project_rules": "rules",
    "cursor_rules": "rules",
    "context_files": "rules",
    "project_context": "rules",
    "mcp_servers": "mcp_tools",
    "mcp_instructions": "mcp_tools",
    "mcp": "mcp_tools",
    "tools": "tool_definitions",
}

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
#: A banner line such as ``══════ MEMORY (your notes) ══════`` (a level-1 heading).
_BANNER = re.compile(r"^\s*[═=─━-]{3,}\s*(\S.*?)\s*[═=─━-]{3,}\s*$")
_CONTENTS = re.compile(r"^Contents of (.+?)(?: \(.*\))?:\s*$")
_OPEN_TAG = re.compile(r"^\s*<([A-Za-z_][\w-]*)(?:\s[^>]*)?>")
_CLOSE_TAG = re.compile(r"^\s*</([A-Za-z_][\w-]*)>\s*$")


def _classify_title(title: str) -> str | None:
    low = title.lower()
    for cls, words in _CLASS_WORDS[:1]:
        if any(w in low for w in words):
            return cls
    if _MCP_WORD.search(low):
        return "mcp_tools"
    for cls, words in _CLASS_WORDS[1:]:
        if any(w in low for w in words):
            return cls
    return None


def _classified_sections(text: str) -> dict[str, str]:
    """Classified sections of ``text`` joined per bucket (unclassified text left out)."""
    if not text:
        return {}
    out: dict[str, list[str]] = {}
    cls: str | None = None
    level = 0
    tag: str | None = None  # open known tag: everything up to its close is ``cls``
    contents = False  # inside a "Contents of <file>:" region
    for line in text.split("\n"):
        if tag is not None:
            out.setdefault(cls or "", []).append(line)
            close = _CLOSE_TAG.match(line)
            if close and close.group(1).lower() == tag:
                tag, cls = None, None
            continue
        opened = _OPEN_TAG.match(line)
        if opened and opened.group(1).lower() in _TAG_CLASSES:
            name = opened.group(1).lower()
            cls = _TAG_CLASSES[name]
            out.setdefault(cls, []).append(line)
            if f"</{name}>" not in line.lower():
                tag = name
            else:
                cls = None
            continue
        if _CLOSE_TAG.match(line) and contents:
            contents, cls = False, None
            continue
        found = _CONTENTS.match(line)
        if found:
            cls, level, contents = _classify_title(found.group(1)), 0, True
            if cls is None:
                contents = False
        else:
            heading = _HEADING.match(line)
            banner = None if heading else _BANNER.match(line)
            title = heading.group(2) if heading else banner.group(1) if banner else None
            if title is not None:
                h_level = len(heading.group(1)) if heading else 1
                h_cls = _classify_title(title)
                if h_cls is not None:
                    cls = h_cls
                    level = h_level if not contents else level
                elif cls is not None and h_level > level:
                    pass  # a sub-heading of a classified section
                else:
                    cls, level, contents = None, h_level, False
        if cls is not None:
            out.setdefault(cls, []).append(line)
    return {k: "\n".join(v) for k, v in out.items() if k}


def tool_definitions_in(text: str) -> str:
    """The tool-schema sections (``<tools>`` blocks) written into a prompt text, or ""."""
    if "<tools>" not in text:  # (the common case: no line-by-line pass)
        return ""
    return _classified_sections(text).get("tool_definitions", "")


def is_mcp_tool(tool: Mapping[str, Any]) -> bool:
    """A tool schema that comes from an MCP server (see the module docstring)."""
    fn = tool.get("function")
    name = tool.get("name")
    if not isinstance(name, str) and isinstance(fn, Mapping):
        name = fn.get("name")
    if isinstance(name, str) and name.startswith("mcp__"):
        return True
    if str(tool.get("type", "")).lower() == "mcp":
        return True
    for holder in (tool, fn if isinstance(fn, Mapping) else {}):
        for key, value in holder.items():
            if str(key).lower().startswith("mcp"):
                return True
            if (
                key in ("source", "origin", "provider", "server_type")
                and str(value).lower() == "mcp"
            ):
                return True
    return False


def _split_piece(
    text: str, total: int, counter: TokenCounter, sink: dict[str, int], rest_key: str
) -> None:
    """Move classified sections of one piece out of its total; the rest goes to rest_key."""
    remaining = total
    for cls, section in _classified_sections(text).items():
        n = min(counter.count(section), remaining)
        sink[cls] += n
        remaining -= n
    sink[rest_key] += remaining


def _reasoning_tokens(message: Message, counter: TokenCounter) -> int:
    n = counter.count(message.reasoning) if message.reasoning else 0
    for part in message.parts:
        if isinstance(part, ThinkingPart) and not part.redacted:
            n += counter.count(part.text)
    return n


def _fold(
    messages: tuple[Message, ...],
    per_message: tuple[int, ...],
    counter: TokenCounter,
    sink: dict[str, int],
    lead: bool,
) -> bool:
    """Add ``messages`` to the buckets in ``sink``; returns whether every message so far
    is a leading system message (``lead``: whether every earlier one was)."""
    for m, per in zip(messages, per_message, strict=True):
        if lead and m.role in (Role.SYSTEM, Role.DEVELOPER):
            _split_piece(m.text, per, counter, sink, "system_prompt")
            continue
        lead = False
        media = min(IMAGE_TOKENS * len(m.media), per)
        reasoning = min(_reasoning_tokens(m, counter), per - media)
        rest = per - media - reasoning
        sink["media"] += media
        sink["reasoning"] += reasoning
        if m.meta.is_summary:
            sink["summaries"] += rest
        elif m.meta.is_injected and m.meta.injected_kind == "agents_md":
            sink["rules"] += rest
        elif m.meta.is_injected or m.role in (Role.SYSTEM, Role.DEVELOPER):
            _split_piece(m.text, rest, counter, sink, "injected")
        elif m.role is Role.TOOL:
            # A subagent's report (Claude Code's Task/Agent result) is the subagent's cost.
            sink["subagents" if m.tool_name in SUBAGENT_TOOLS else "tool_output"] += rest
        elif m.role is Role.USER:
            sink["user"] += rest
        else:
            sink["assistant"] += rest
    return lead


@dataclass(frozen=True, slots=True)
class BreakdownSums:
    """The messages' part of a breakdown's buckets, kept so that a transcript that grew
    (a followed file) adds only its new messages: see :func:`breakdown_sums`."""

    messages: tuple[Message, ...]
    per_message: tuple[int, ...]
    counter: str
    sink: Mapping[str, int]
    #: Every message is a leading system message (static, not conversation).
    lead: bool

    def of(self, transcript: Transcript, tokens: TranscriptTokens, counter: TokenCounter) -> bool:
        """Whether these are the sums of ``transcript``'s messages counted as ``tokens``."""
        return (
            self.counter == counter.name
            and (self.messages is transcript.messages or self.messages == transcript.messages)
            and self.per_message == tokens.per_message
        )


def breakdown_sums(
    transcript: Transcript,
    tokens: TranscriptTokens,
    counter: TokenCounter | None = None,
    previous: BreakdownSums | None = None,
) -> BreakdownSums:
    """The buckets' sums over ``transcript``'s messages (pass to :func:`compute_breakdown`).

    ``previous`` (the sums of a transcript whose messages ``transcript`` extends: the
    same (or equal) messages first, counted the same) is extended by the new messages
    only.
    """
    counter = counter or default_counter()
    msgs, per = transcript.messages, tokens.per_message
    k = 0 if previous is None else len(previous.messages)
    if (
        previous is not None
        and previous.counter == counter.name
        and k <= len(msgs)
        and per[:k] == previous.per_message
        and previous.messages == msgs[:k]  # in C: identity first, then equality
    ):
        sink = dict(previous.sink)
        lead = _fold(msgs[k:], per[k:], counter, sink, previous.lead)
    else:
        sink = dict.fromkeys(BUCKET_KEYS, 0)
        lead = _fold(msgs, per, counter, sink, lead=True)
    return BreakdownSums(msgs, per, counter.name, sink, lead)


# Long on purpose: one pass over the messages filling every bucket; the buckets must
# sum to the total, which is easiest to see in one place.
def compute_breakdown(
    transcript: Transcript,
    tokens: TranscriptTokens,
    *,
    counter: TokenCounter | None = None,
    measured_prompt_tokens: int | None = None,
    context_max_tokens: int | None = None,
    subagents: int = 0,
    sums: BreakdownSums | None = None,
) -> ContextBreakdown:
    """Buckets for ``transcript`` from its precomputed ``tokens``.

    ``sums`` (from :func:`breakdown_sums` of the same transcript, tokens and counter)
    saves the pass over the messages.

    ``counter`` counts the pieces inside the totals (sections, MCP schemas, reasoning) and
    should be the counter that produced ``tokens`` (default: :func:`default_counter`).
    ``measured_prompt_tokens`` overrides the last recorded usage; ``context_max_tokens``
    overrides the transcript's window.
    """
    if len(tokens.per_message) != len(transcript.messages):
        raise ValueError(
            f"tokens cover {len(tokens.per_message)} messages but the transcript has "
            f"{len(transcript.messages)}; count the same transcript (count_transcript)"
        )
    counter = counter or default_counter()
    sink: dict[str, int] = dict.fromkeys(BUCKET_KEYS, 0)

    # Static: top-level system prompt and tool schemas.
    if transcript.system_prompt:
        _split_piece(transcript.system_prompt, tokens.system_prompt, counter, sink, "system_prompt")
    else:
        sink["system_prompt"] += tokens.system_prompt
    mcp = sum(counter.count(tool_schema_text([t])) for t in transcript.tools if is_mcp_tool(t))
    mcp = min(mcp, tokens.tools)
    sink["mcp_tools"] += mcp
    sink["tool_definitions"] += tokens.tools - mcp

    # Messages: leading system messages are static; the rest is conversation.
    if sums is not None and sums.of(transcript, tokens, counter):
        for key, value in sums.sink.items():
            sink[key] += value
    else:
        _fold(transcript.messages, tokens.per_message, counter, sink, lead=True)

    kind = tokens.kind
    categories = tuple(
        ContextBucket(
            key=key,
            label=_LABELS[key],
            tokens=sink[key],
            kind=CountKind.ESTIMATED if key == "media" else kind,
            group="static" if key in STATIC_KEYS else "conversation",
        )
        for key in BUCKET_KEYS
    )
    last = transcript.usage[-1] if transcript.usage else None
    measured_at: int | None = None
    if measured_prompt_tokens is None and last is not None and last.prompt_tokens > 0:
        measured_prompt_tokens = last.prompt_tokens
        measured_at = last.message_index
    window = context_max_tokens or transcript.context_window
    if window is None and last is not None:
        window = last.context_window
    counted_at = None
    if measured_prompt_tokens is not None:
        n = len(transcript.messages)
        upto = n if measured_at is None else min(n, max(0, measured_at + 1))
        counted_at = tokens.system_prompt + tokens.tools + tokens.prefix[upto]
    return ContextBreakdown(
        categories=categories,
        estimated_total_tokens=sum(sink.values()),
        measured_prompt_tokens=measured_prompt_tokens,
        context_max_tokens=window,
        counter=tokens.counter,
        measured_at_message=measured_at,
        subagents=subagents,
        counted_at_measurement=counted_at,
    )
