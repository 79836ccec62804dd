"""Prompt-cache hints, kept apart from compression.

Details: docs/compaction.md (`tinyjuice.cache_hints`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from tinyjuice.model import MediaPart, Message, Role, TextPart, Transcript

__all__ = [
    "PREFIX_KEY_PREFIX",
    "CacheHintReport",
    "CacheMarkerPlacement",
    "PromptCacheHint",
    "PromptCacheTtl",
    "anthropic_cache_hints",
    "cache_cold_tokens",
    "cache_hints",
    "prompt_cache_key",
    "stable_prefix_cache_key",
]

#: Prefix of every static-prefix cache key (never confused with a session id).
PREFIX_KEY_PREFIX = "tjpfx_"


class PromptCacheTtl(StrEnum):
    FIVE_MINUTES = "5m"
    ONE_HOUR = "1h"


class CacheMarkerPlacement(StrEnum):
    #: On the system prompt (its last block).
    SYSTEM = "system"
    #: On the last content block of the rendered message.
    LAST_BLOCK = "last_block"
    #: On the message envelope itself (envelope-style tool messages).
    MESSAGE = "message"


@dataclass(frozen=True, slots=True)
class PromptCacheHint:
    """Where a provider adapter may place one cache breakpoint.

    ``message_index`` indexes ``Transcript.messages``; it is ``None`` for a top-level
    system prompt (``Transcript.system_prompt``).
    """

    provider: str
    message_index: int | None
    ttl: PromptCacheTtl
    placement: CacheMarkerPlacement


@dataclass(frozen=True, slots=True)
class CacheHintReport:
    """Cache hints for one request, reported apart from any compaction report."""

    prefix_cache_key: str
    #: The key to send: the static-prefix key, else the session id, else None.
    prompt_cache_key: str | None
    hints: tuple[PromptCacheHint, ...]


# ------------------------------------------------------------------------ prefix key


def _tool_sort_key(tool: Mapping[str, Any]) -> tuple[str, str, bytes]:
    fn = tool.get("function")
    name = tool.get("name")
    if not isinstance(name, str) and isinstance(fn, Mapping):
        name = fn.get("name")
    kind = tool.get("type")
    return (
        name if isinstance(name, str) else "",
        kind if isinstance(kind, str) else "",
        _canonical(tool),  # ties (same name and type) break on content, not on input order
    )


def _canonical(value: Any) -> bytes:
    # Sorted keys, compact separators, unicode kept as UTF-8.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def stable_prefix_cache_key(system_prompt: str | None, tools: Sequence[Mapping[str, Any]]) -> str:
    """``tjpfx_`` + sha256 hex of ``system + NUL + tools`` (sorted by name/type, sorted keys)."""
    ordered = sorted(tools, key=_tool_sort_key)
    digest = hashlib.sha256()
    digest.update((system_prompt or "").encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(_canonical([dict(t) for t in ordered]))
    return PREFIX_KEY_PREFIX + digest.hexdigest()


def prompt_cache_key(
    system_prompt: str | None,
    tools: Sequence[Mapping[str, Any]],
    session_id: str | None = None,
) -> str | None:
    """The cache key to send: the static-prefix key when there is a static prefix.

    The session id is only a fallback for requests with neither a system prompt nor
    tools, so a recurring job with a fresh, timestamped session id per run stays warm.
    """
    if system_prompt or tools:
        return stable_prefix_cache_key(system_prompt, tools)
    return session_id


# -------------------------------------------------------------------------- carriers


def _can_carry(message: Message) -> bool:
    if message.role is Role.TOOL or message.tool_calls:
        return True
    for part in message.parts:
        if isinstance(part, MediaPart):
            return True
        if isinstance(part, TextPart) and part.text.strip():
            return True
    return False


def _user_side(message: Message) -> bool:
    return message.role in (Role.USER, Role.TOOL)


def _leading_system(messages: Sequence[Message]) -> int:
    n = 0
    for m in messages:
        if m.role not in (Role.SYSTEM, Role.DEVELOPER):
            break
        n += 1
    return n


def anthropic_cache_hints(
    source: Transcript | Sequence[Message],
    system_present: bool | None = None,
    *,
    native_layout: bool = True,
    ttl: PromptCacheTtl | str = PromptCacheTtl.FIVE_MINUTES,
    message_breakpoints: int = 3,
    provider: str = "anthropic",
) -> list[PromptCacheHint]:
    """Breakpoints for an Anthropic-style request: system prompt + last three carriers.

    ``system_present`` defaults to whether the transcript has a system prompt (top-level,
    or leading in-band system messages). A top-level prompt gets ``message_index=None``;
    an in-band one points at the last leading system message. See the module docstring for
    which messages can carry a marker and how native tool-result layout is handled.
    """
    ttl = PromptCacheTtl(ttl)
    if isinstance(source, Transcript):
        messages: Sequence[Message] = source.messages
        top_level = bool(source.system_prompt)
    else:
        messages = source
        top_level = False
    lead = _leading_system(messages)
    if system_present is None:
        system_present = top_level or lead > 0
    hints: list[PromptCacheHint] = []
    if system_present:
        index = None if top_level or lead == 0 else lead - 1
        hints.append(PromptCacheHint(provider, index, ttl, CacheMarkerPlacement.SYSTEM))

    picked: list[PromptCacheHint] = []
    i = len(messages) - 1
    while i >= lead and len(picked) < message_breakpoints:
        m = messages[i]
        if m.role in (Role.SYSTEM, Role.DEVELOPER):
            i -= 1
            continue
        if native_layout and _user_side(m):
            # One rendered user message: the run of user-side messages ending here.
            start = i
            while start - 1 >= lead and _user_side(messages[start - 1]):
                start -= 1
            carrier = next((j for j in range(i, start - 1, -1) if _can_carry(messages[j])), None)
            if carrier is not None:
                picked.append(
                    PromptCacheHint(provider, carrier, ttl, CacheMarkerPlacement.LAST_BLOCK)
                )
            i = start - 1
            continue
        if _can_carry(m):
            placement = (
                CacheMarkerPlacement.MESSAGE
                if m.role is Role.TOOL
                else CacheMarkerPlacement.LAST_BLOCK
            )
            picked.append(PromptCacheHint(provider, i, ttl, placement))
        i -= 1
    hints.extend(reversed(picked))
    return hints


def cache_hints(
    transcript: Transcript,
    *,
    provider: str = "anthropic",
    native_layout: bool = True,
    ttl: PromptCacheTtl | str = PromptCacheTtl.FIVE_MINUTES,
) -> CacheHintReport:
    """All cache hints for a transcript, as a value separate from the transcript."""
    system = transcript.system_text
    tools = transcript.tools
    hints = anthropic_cache_hints(
        transcript, native_layout=native_layout, ttl=ttl, provider=provider
    )
    return CacheHintReport(
        prefix_cache_key=stable_prefix_cache_key(system, tools),
        prompt_cache_key=prompt_cache_key(system, tools, transcript.session_id),
        hints=tuple(hints),
    )


def cache_cold_tokens(
    old_tokens_prefix: Sequence[int], boundary_start: int, boundary_end: int | None = None
) -> int:
    """Tokens whose prompt cache a compaction invalidates.

    ``old_tokens_prefix`` is the prefix-sum list of the transcript before compaction
    (``TranscriptTokens.prefix``, length n + 1); messages before ``boundary_start`` are
    unchanged and stay cache-warm. Without ``boundary_end`` the result is every old token
    from ``boundary_start`` on (all cached context after the first changed message). With
    ``boundary_end`` it is the retained tail ``[boundary_end, n)``: messages that survive
    the compaction verbatim yet are cache-cold, because they now follow the new summary.
    """
    n = len(old_tokens_prefix) - 1
    if n < 0:
        raise ValueError("old_tokens_prefix must hold at least one entry (prefix[0] == 0)")
    if not 0 <= boundary_start <= n:
        raise ValueError(f"boundary_start {boundary_start} is outside 0..{n}")
    end = boundary_start if boundary_end is None else boundary_end
    if not boundary_start <= end <= n:
        raise ValueError(f"boundary_end {boundary_end} is outside {boundary_start}..{n}")
    return old_tokens_prefix[n] - old_tokens_prefix[end]
