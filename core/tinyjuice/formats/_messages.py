"""Helpers shared by the format readers: summary/injection detection, orphan flagging, media."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    "SUMMARY_PREFIXES",
    "FinishState",
    "base64_size",
    "finish",
    "finish_from",
    "indexed_message",
    "injected_kind",
    "is_summary_text",
    "media_from_url",
    "meta_for_text",
    "new_message",
    "new_meta",
    "plain_meta",
    "rest",
    "summary_events",
    "text_flags",
    "text_part",
    "thinking_part",
    "tool_call",
]

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
_MARKER_STARTS = frozenset("[<#")


def text_flags(role: Role, text: str) -> tuple[bool, str | None]:
    """(is_summary, injected_kind) of a message's text: what :func:`meta_for_text` derives."""
    if not text:
        return False, None
    first = text[0]
    if first not in _MARKER_STARTS and not first.isspace():
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


# ------------------------------------------------------------------ fast construction
#
# Readers build one Message (with a MessageMeta and usually a TextPart) per source
# message, and the generated frozen-dataclass ``__init__`` (one ``object.__setattr__``
# call per field) is most of a load's cost. These helpers fill a plain slotted twin of
# the class (same ``__slots__``, so the same memory layout) with ordinary attribute
# stores, then set the instance's ``__class__`` to the model class: the result *is* a
# model instance, frozen from then on, with every field set exactly as the constructor
# would set it. If a model class ever changes its fields, or the interpreter refuses
# the class switch, the helpers fall back to the ordinary constructor.

_MESSAGE_FIELDS = (
    "role", "parts", "tool_calls", "tool_call_id", "tool_name", "reasoning", "meta", "extra",
    "hints",
)  # fmt: skip
_META_FIELDS = (
    "is_summary", "is_injected", "injected_kind", "source_id", "original_index", "orphan",
    "is_error", "sidechain", "generated_by",
)  # fmt: skip
_TEXT_FIELDS = ("text", "extra", "kind")
_CALL_FIELDS = ("id", "name", "arguments", "kind", "extra")
#: The builders below make a twin and re-class it in place; the type checker sees only
#: ``Any`` (the twins are made at run time), hence their ``type: ignore[no-any-return]``.
_new = object.__new__


def _twin(cls: type, fields: tuple[str, ...]) -> Any:
    """A mutable slotted class laid out like ``cls``, or None when that cannot work."""
    if getattr(cls, "__slots__", None) != fields:
        return None
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": fields, "__module__": __name__})
    probe: object = _new(twin)
    for name in fields:
        setattr(probe, name, None)
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return twin if type(probe) is cls else None


_MessageTwin: Any = _twin(Message, _MESSAGE_FIELDS)
_MetaTwin: Any = _twin(MessageMeta, _META_FIELDS)
_TextTwin: Any = _twin(TextPart, _TEXT_FIELDS)
_CallTwin: Any = _twin(ToolCall, _CALL_FIELDS)
_ThinkingTwin: Any = _twin(ThinkingPart, ("text", "signature", "redacted", "extra", "kind"))


def new_message(
    role: Role,
    parts: tuple[Any, ...],
    tool_calls: tuple[ToolCall, ...],
    tool_call_id: str | None,
    tool_name: str | None,
    reasoning: str | None,
    meta: MessageMeta,
    extra: Mapping[str, Any],
    hints: Mapping[str, Any],
) -> Message:
    """``Message(...)`` with every field given, without the dataclass ``__init__``."""
    if _MessageTwin is None:
        return Message(
            role=role,
            parts=parts,
            tool_calls=tool_calls,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            reasoning=reasoning,
            meta=meta,
            extra=extra,
            hints=hints,
        )
    m = _new(_MessageTwin)
    m.role = role
    m.parts = parts
    m.tool_calls = tool_calls
    m.tool_call_id = tool_call_id
    m.tool_name = tool_name
    m.reasoning = reasoning
    m.meta = meta
    m.extra = extra
    m.hints = hints
    m.__class__ = Message
    return m  # type: ignore[no-any-return]


def new_meta(
    is_summary: bool,
    is_injected: bool,
    injected_kind: str | None,
    source_id: str | None,
    original_index: int | None,
    orphan: bool,
    is_error: bool,
    sidechain: bool,
    generated_by: str | None,
) -> MessageMeta:
    """``MessageMeta(...)`` with every field given, without the dataclass ``__init__``."""
    if _MetaTwin is None:
        return MessageMeta(
            is_summary=is_summary,
            is_injected=is_injected,
            injected_kind=injected_kind,
            source_id=source_id,
            original_index=original_index,
            orphan=orphan,
            is_error=is_error,
            sidechain=sidechain,
            generated_by=generated_by,
        )
    m = _new(_MetaTwin)
    m.is_summary = is_summary
    m.is_injected = is_injected
    m.injected_kind = injected_kind
    m.source_id = source_id
    m.original_index = original_index
    m.orphan = orphan
    m.is_error = is_error
    m.sidechain = sidechain
    m.generated_by = generated_by
    m.__class__ = MessageMeta
    return m  # type: ignore[no-any-return]


def plain_meta(role: Role, text: str, index: int | None) -> MessageMeta:
    """``meta_for_text(role, text, original_index=index)``, built directly."""
    if text and role is not Role.TOOL:
        first = text[0]
        if first in _MARKER_STARTS or first.isspace():
            is_summary, kind = text_flags(role, text)
            return new_meta(
                is_summary, kind is not None, kind, None, index, False, False, False, None
            )
    if _MetaTwin is None:
        return MessageMeta(original_index=index)
    m = _new(_MetaTwin)
    m.is_summary = False
    m.is_injected = False
    m.injected_kind = None
    m.source_id = None
    m.original_index = index
    m.orphan = False
    m.is_error = False
    m.sidechain = False
    m.generated_by = None
    m.__class__ = MessageMeta
    return m  # type: ignore[no-any-return]


def indexed_message(
    role: Role,
    parts: tuple[Any, ...],
    tool_calls: tuple[ToolCall, ...],
    tool_call_id: str | None,
    tool_name: str | None,
    reasoning: str | None,
    extra: Mapping[str, Any],
    hints: Mapping[str, Any],
    text: str,
    index: int | None,
) -> Message:
    """``new_message(...)`` with ``meta = plain_meta(role, text, index)``, in one call."""
    if _MessageTwin is None or _MetaTwin is None:
        meta = plain_meta(role, text, index)
        return new_message(
            role, parts, tool_calls, tool_call_id, tool_name, reasoning, meta, extra, hints
        )
    if text and role is not Role.TOOL and (text[0] in _MARKER_STARTS or text[0].isspace()):
        meta = plain_meta(role, text, index)
    else:  # no flags to derive: plain_meta's common case, inline (once per message)
        meta = _new(_MetaTwin)
        meta.is_summary = False
        meta.is_injected = False
        meta.injected_kind = None
        meta.source_id = None
        meta.original_index = index
        meta.orphan = False
        meta.is_error = False
        meta.sidechain = False
        meta.generated_by = None
        meta.__class__ = MessageMeta
    m = _new(_MessageTwin)
    m.role = role
    m.parts = parts
    m.tool_calls = tool_calls
    m.tool_call_id = tool_call_id
    m.tool_name = tool_name
    m.reasoning = reasoning
    m.meta = meta
    m.extra = extra
    m.hints = hints
    m.__class__ = Message
    return m  # type: ignore[no-any-return]


def text_part(text: str) -> TextPart:
    """``TextPart(text)``, without the dataclass ``__init__``."""
    if _TextTwin is None:
        return TextPart(text)
    p = _new(_TextTwin)
    p.text = text
    p.extra = EMPTY
    p.kind = "text"
    p.__class__ = TextPart
    return p  # type: ignore[no-any-return]


def thinking_part(
    text: str, signature: str | None, redacted: bool, extra: Mapping[str, Any]
) -> ThinkingPart:
    """``ThinkingPart(...)`` with every field given, without the dataclass ``__init__``."""
    if _ThinkingTwin is None:
        return ThinkingPart(text, signature=signature, redacted=redacted, extra=extra)
    p = _new(_ThinkingTwin)
    p.text = text
    p.signature = signature
    p.redacted = redacted
    p.extra = extra
    p.kind = "thinking"
    p.__class__ = ThinkingPart
    return p  # type: ignore[no-any-return]


def tool_call(id: str, name: str, arguments: str, kind: str, extra: Mapping[str, Any]) -> ToolCall:
    """``ToolCall(...)`` with every field given, without the dataclass ``__init__``."""
    if _CallTwin is None:
        return ToolCall(id=id, name=name, arguments=arguments, kind=kind, extra=extra)
    c = _new(_CallTwin)
    c.id = id
    c.name = name
    c.arguments = arguments
    c.kind = kind
    c.extra = extra
    c.__class__ = ToolCall
    return c  # type: ignore[no-any-return]


def _renumbered(m: Message, index: int, orphan: bool) -> Message:
    meta = m.meta
    new = new_meta(
        meta.is_summary,
        meta.is_injected,
        meta.injected_kind,
        meta.source_id,
        index,
        meta.orphan or orphan,
        meta.is_error,
        meta.sidechain,
        meta.generated_by,
    )
    return new_message(
        m.role,
        m.parts,
        m.tool_calls,
        m.tool_call_id,
        m.tool_name,
        m.reasoning,
        new,
        m.extra,
        m.hints,
    )


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
            append(_renumbered(m, i, orphan))
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
