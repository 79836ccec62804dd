"""Helpers shared by the format readers: summary/injection detection, orphan flagging, media."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ParamSpec, TypeVar, cast

import orjson

from tinyjuice.markers import SUMMARY_STARTS
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Trigger,
)

__all__ = [
    "MARKER_STARTS",
    "SUMMARY_PREFIXES",
    "FinishState",
    "base64_size",
    "fast_constructor",
    "fast_paths",
    "finish",
    "finish_from",
    "in_layout",
    "injected_kind",
    "is_summary_text",
    "media_from_url",
    "meta_for_text",
    "new_message",
    "new_meta",
    "plain_meta",
    "readable_paths",
    "rest",
    "summary_events",
    "text_flags",
    "text_part",
    "thinking_part",
    "tool_call",
    "with_meta",
]

P = ParamSpec("P")
T = TypeVar("T")

#: Content prefixes that mark an agent-written compaction summary (one home: markers).
SUMMARY_PREFIXES: tuple[str, ...] = SUMMARY_STARTS

_INJECTED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("environment", re.compile(r"^\s*<environment_context>", re.S)),
    (
        "agents_md",
        re.compile(r"^\s*(# AGENTS\.md instructions|<user_instructions>|# AGENTS\.md)", re.S),
    ),
    ("system_reminder", re.compile(r"^\s*<system-reminder>", re.S)),
    ("command", re.compile(r"^\s*<(command-name|local-command-stdout|command-message)>", re.S)),
)


def is_summary_text(text: str) -> bool:
    t = text.lstrip()
    return any(t.startswith(p) for p in SUMMARY_PREFIXES)


def summary_events(
    messages: Sequence[Message], at: Sequence[int] | None = None, *, resets: bool = False
) -> list[CompactionEvent]:
    """One compaction event per summary message (``meta.is_summary``), in order.

    For formats that record a compaction only as its summary text (OpenAI, Anthropic,
    ShareGPT, Hermes): the trigger and the token counts around it are unknown. These
    files hold the compacted list itself (a protected head, the summary, the tail), all
    of it sent: by default the events do not reset the live context
    (``resets_context=False``). A reader of an append-only log, whose file keeps the
    turns a summary replaced before it, passes ``resets=True``: the agent's context then
    starts again at each summary (see :mod:`tinyjuice.model`). ``at`` lists the
    summaries' indexes when the caller has them (``finish(summaries=…)`` collects them in
    its pass); otherwise one attribute check per message finds them.
    """
    found = [i for i, m in enumerate(messages) if m.meta.is_summary] if at is None else at
    if not found:
        return []
    unknown = Trigger.UNKNOWN
    return [
        CompactionEvent(
            message_index=i,
            trigger=unknown,
            summary_index=i,
            source_id=messages[i].meta.source_id,
            resets_context=resets,
        )
        for i in found
    ]


def injected_kind(text: str) -> str | None:
    """The kind of injected context this user text is, or None for a real ask."""
    for kind, pat in _INJECTED:
        if pat.match(text):
            return kind
    return None


#: The characters a summary prefix or an injected-context marker starts with. Both
#: checks skip leading whitespace; a text starting with anything else settles them
#: without a regex.
MARKER_STARTS = frozenset("[<#")


def text_flags(role: Role, text: str) -> tuple[bool, str | None]:
    """(is_summary, injected_kind) of a message's text: what :func:`meta_for_text` derives."""
    if not text:
        return False, None
    first = text[0]
    if first not in MARKER_STARTS and not first.isspace():
        return False, None  # no prefix or marker can start here
    is_summary = (
        is_summary_text(text) if role in (Role.USER, Role.ASSISTANT, Role.SYSTEM) else False
    )
    kind = injected_kind(text) if role is Role.USER and not is_summary else None
    return is_summary, kind


def rest(obj: Mapping[str, Any], known: Iterable[str]) -> Mapping[str, Any]:
    """The keys of ``obj`` not in ``known`` (kept for write-back), or the shared empty map."""
    skip = set(known)
    out = {k: v for k, v in obj.items() if k not in skip}
    return out if out else EMPTY


def in_layout(layout: Any, parts: list[T], calls: list[T]) -> list[T]:
    """A message's content pieces then its calls, or in the order of its ``layout`` hint
    (one "p" or "c" per slot, kept by a reader) when that hint fits their numbers."""
    if (
        isinstance(layout, str)
        and layout.count("p") == len(parts)
        and layout.count("c") == len(calls)
    ):
        parts_it, calls_it = iter(parts), iter(calls)
        return [next(parts_it) if slot == "p" else next(calls_it) for slot in layout]
    return parts + calls


def base64_size(data: str) -> int:
    """Decoded byte size of a base64 payload, without decoding it."""
    s = data.strip()
    if not s:
        return 0
    pad = len(s) - len(s.rstrip("="))
    return max(0, len(s) * 3 // 4 - pad)


_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(;[^,]*)?,", re.I)


def media_from_url(url: str, extra: Mapping[str, Any] = EMPTY) -> MediaPart:
    """A MediaPart for an image URL (a ``data:`` URL or a remote one)."""
    m = _DATA_URL.match(url)
    if m:
        media_type = m.group(1) or "application/octet-stream"
        payload = url[m.end() :]
        size = base64_size(payload) if ";base64" in (m.group(2) or "") else len(payload)
        return MediaPart(
            media_type=media_type, byte_size=size, source="base64", data=url, extra=extra
        )
    ext = url.rsplit(".", 1)[-1].lower() if "." in url.rsplit("/", 1)[-1] else ""
    media_type = {
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
    }.get(ext, "image/*")
    return MediaPart(media_type=media_type, byte_size=0, source="url", data=url, extra=extra)


def valid_base64(data: str) -> bool:
    try:
        base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return False
    return True


def meta_for_text(role: Role, text: str, **kw: Any) -> MessageMeta:
    """MessageMeta with summary/injected flags derived from a message's text."""
    is_summary, kind = text_flags(role, text)
    return MessageMeta(
        is_summary=is_summary, is_injected=kind is not None, injected_kind=kind, **kw
    )


# ------------------------------------------------------------ the fast-path seam
#
# Every reader has a readable path (checked code, the model's own constructors) and, where
# it pays, a fast path that must build equal values. ``fast_paths()`` says which one runs;
# tests switch the fast paths off with :func:`readable_paths` and compare whole
# transcripts (tests/core/test_reader_fast_paths.py). Why the constructors below are
# faster: docs/formats.md, "Fast paths".

_fast = True


def fast_paths() -> bool:
    """Whether readers take their fast paths (always, except inside :func:`readable_paths`)."""
    return _fast


@contextmanager
def readable_paths() -> Iterator[None]:
    """Within: every reader takes its readable path only (for tests comparing the two)."""
    global _fast
    was, _fast = _fast, False
    try:
        yield
    finally:
        _fast = was


#: The fast constructor of one model class: a twin (a mutable slotted class laid out
#: like it) filled with plain attribute stores, then switched to the model class. Made
#: from this text for each class, as ``dataclasses`` makes an ``__init__``.
_BUILDER = """
def make(model_, twin_, new_):
    def build({params}):
        if not _fast:
            return model_({names})
        obj_ = new_(twin_)
{stores}
        obj_.__class__ = model_
        return obj_
    return build
"""


def fast_constructor(cls: Callable[P, T]) -> Callable[P, T]:
    """``cls`` (a frozen slotted dataclass) or a faster function building the same value.

    Call it positionally (the fast one takes no keywords); trailing fields with a plain
    default may be left out. The fast one is used only where the class switch works.
    """
    model: Any = cls  # (a dataclass: the type checker sees only its constructor)
    own = fields(model)
    names = tuple(f.name for f in own)
    if getattr(model, "__slots__", None) != names:
        return cls
    twin: Any = type(f"_{model.__name__}Twin", (), {"__slots__": names})
    try:
        object.__new__(twin).__class__ = model
    except TypeError:
        return cls
    optional = 0  # the trailing fields with a plain default
    for f in reversed(own):
        if f.default is MISSING:
            break
        optional += 1
    text = _BUILDER.format(
        params=", ".join(names),
        names=", ".join(names),
        stores="\n".join(f"        obj_.{n} = {n}" for n in names),
    )
    scope: dict[str, Any] = {}
    exec(text, globals(), scope)  # (our own text, above: field names only)
    build = scope["make"](model, twin, object.__new__)
    build.__defaults__ = tuple(f.default for f in own[len(own) - optional :]) or None
    return cast("Callable[P, T]", build)


#: The model's constructors, taking the fast path where it works (positional arguments
#: in field order are the cheapest).
new_message = fast_constructor(Message)
_META_FIELDS = tuple(f.name for f in fields(MessageMeta))
new_meta = fast_constructor(MessageMeta)
text_part = fast_constructor(TextPart)
thinking_part = fast_constructor(ThinkingPart)
tool_call = fast_constructor(ToolCall)


def plain_meta(role: Role, text: str, index: int | None) -> MessageMeta:
    """``meta_for_text(role, text, original_index=index)``, built directly."""
    if text and role is not Role.TOOL and (text[0] in MARKER_STARTS or text[0].isspace()):
        is_summary, kind = text_flags(role, text)
        return new_meta(is_summary, kind is not None, kind, None, index, False, False, False, None)
    return new_meta(False, False, None, None, index, False, False, False, None)


def with_meta(m: Message, **changes: Any) -> Message:
    """``m`` with these fields of its meta changed: ``replace`` of both, built directly."""
    old = m.meta
    meta = new_meta(*[changes[n] if n in changes else getattr(old, n) for n in _META_FIELDS])
    return new_message(
        m.role, m.parts, m.tool_calls, m.tool_call_id, m.tool_name, m.reasoning, meta, m.extra,
        m.hints,
    )  # fmt: skip


@dataclass(slots=True)
class FinishState:
    """:func:`finish`'s running state after the first ``count`` messages, so a list that
    keeps those messages (and grows) is finished from there (:func:`finish_from`)."""

    count: int = 0
    seen: set[str] = field(default_factory=set)
    out: list[Message] = field(default_factory=list)
    orphans: list[int] = field(default_factory=list)
    bad_args: list[int] = field(default_factory=list)
    out_of_order: int = 0
    prev_role: Role | None = None

    def copy(self) -> FinishState:
        return FinishState(
            self.count,
            set(self.seen),
            list(self.out),
            list(self.orphans),
            list(self.bad_args),
            self.out_of_order,
            self.prev_role,
        )


def finish(
    messages: Sequence[Message],
    *,
    valid_args: Mapping[int, str] | None = None,
    summaries: list[int] | None = None,
) -> tuple[tuple[Message, ...], list[str]]:
    """Number the messages, flag orphans and out-of-order results; return them with warnings.

    A message whose ``meta.original_index`` already is its position (readers that know
    it build it so) and that is not a newly found orphan is kept as it is; any other is
    rebuilt once with its index (and orphan flag). Every tool call's arguments are
    checked as JSON, except strings listed in ``valid_args`` (``id(s) -> s``: strings the
    reader produced with ``orjson.dumps``, so valid by construction). ``summaries``, when
    given, gets the index of every summary message (for :func:`summary_events`, without
    a second pass over the messages).
    """
    state = FinishState()
    _finish_run(messages, len(messages), state, valid_args or {}, summaries)
    return tuple(state.out), _finish_warnings(state)


def finish_from(
    messages: Sequence[Message],
    resume: FinishState | None,
    *,
    valid_args: Mapping[int, str] | None = None,
) -> tuple[tuple[Message, ...], list[str], FinishState]:
    """:func:`finish` of ``messages`` whose first ``resume.count`` are the messages
    ``resume`` was made from (None: from the start); also returns the state before the
    last message, to resume from when the list grows (or its last message changes)."""
    trusted = valid_args or {}
    state = FinishState() if resume is None else resume.copy()
    last = max(state.count, len(messages) - 1)
    _finish_run(messages, last, state, trusted, None)
    checkpoint = state.copy()
    _finish_run(messages, len(messages), state, trusted, None)
    return tuple(state.out), _finish_warnings(state), checkpoint


def _finish_run(
    messages: Sequence[Message],
    end: int,
    state: FinishState,
    trusted: Mapping[int, str],
    summaries: list[int] | None,
) -> None:
    """Finish messages ``state.count`` to ``end`` (exclusive) into ``state``."""
    seen = state.seen
    out = state.out
    append = out.append
    orphans = state.orphans
    bad_args = state.bad_args
    out_of_order = state.out_of_order
    prev_role = state.prev_role
    tool = Role.TOOL
    answering = (Role.ASSISTANT, Role.TOOL)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    for i in range(state.count, end):
        m = messages[i]
        calls = m.tool_calls
        if calls:
            for call in calls:
                seen.add(call.id)
                args = call.arguments
                if args and call.kind != "custom" and trusted.get(id(args)) is not args:
                    try:
                        loads(args)
                    except decode_error:
                        bad_args.append(i)
        role = m.role
        orphan = False
        if role is tool:
            orphan = m.tool_call_id is not None and m.tool_call_id not in seen
            if orphan:
                orphans.append(i)
            if prev_role not in answering:
                out_of_order += 1
        meta = m.meta
        if meta.is_summary and summaries is not None:
            summaries.append(i)
        if meta.original_index == i and (not orphan or meta.orphan):
            append(m)
        else:
            append(with_meta(m, original_index=i, orphan=meta.orphan or orphan))
        prev_role = role
    state.count = max(state.count, end)
    state.out_of_order = out_of_order
    state.prev_role = prev_role


def _finish_warnings(state: FinishState) -> list[str]:
    orphans, bad_args, out_of_order = state.orphans, state.bad_args, state.out_of_order
    warnings: list[str] = []
    if orphans:
        shown = ", ".join(f"#{i}" for i in orphans[:10])
        warnings.append(
            f"{len(orphans)} tool result(s) without a matching tool call: {shown}"
            + (" …" if len(orphans) > 10 else "")
        )
    if bad_args:
        shown = ", ".join(f"#{i}" for i in bad_args[:10])
        warnings.append(
            f"{len(bad_args)} tool call(s) with invalid JSON arguments (kept verbatim): {shown}"
        )
    if out_of_order:
        warnings.append(
            f"{out_of_order} tool result(s) out of order (not after an assistant tool call)"
        )
    return warnings
