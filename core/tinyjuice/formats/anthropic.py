"""Anthropic Messages: an object with ``system``, ``messages`` and optional ``tools``.

Content is a string or a list of blocks: ``text``, ``image``/``document`` (base64 or
URL source), ``tool_use``, ``tool_result``, ``thinking`` and ``redacted_thinking``.
Unknown blocks and keys are kept and written back.

To keep the model provider-neutral, the ``tool_result`` blocks of a user message are
split into separate :attr:`~tinyjuice.model.Role.TOOL` messages (in block order,
before the rest of that user message). Hints (``block_group``, ``block_pos``) record
where each block sat, so :func:`write` regroups them into the original user message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from tinyjuice.formats._io import (
    LoadError,
    LoadOptions,
    Source,
    clip,
    dump_document,
    expect,
    json_type,
)
from tinyjuice.formats._messages import (
    base64_size,
    fast_paths,
    finish,
    in_layout,
    injected_kind,
    media_from_url,
    meta_for_text,
    new_message,
    new_meta,
    plain_meta,
    rest,
    summary_events,
    text_flags,
    text_part,
    thinking_part,
    tool_call,
)
from tinyjuice.model import (
    EMPTY,
    MediaPart,
    Message,
    MessageMeta,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Usage,
)

__all__ = ["NAME", "read", "sniff", "write"]

NAME = "anthropic"

#: Block types only Anthropic content uses; one of them settles detection.
_MARKERS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
#: Block types of other providers; one of them rules Anthropic out.
_FOREIGN = frozenset({"image_url", "input_text", "output_text", "input_image", "function_call"})
#: Top-level keys of other formats' JSON objects.
_OTHER_TOPS = ("session_id", "history", "conversations", "trajectory", "trajectory_format")
#: Message keys of other formats (OpenAI, ShareGPT, SWE-agent).
_OTHER_MSG_KEYS = ("tool_calls", "tool_call_id", "from", "thought", "message_type")


# ------------------------------------------------------------------------------ sniff


def _score_messages(items: list[Any]) -> int:
    """-1: not Anthropic; 90: Anthropic-only blocks seen; 40: plain user/assistant."""
    score = 40
    for m in items[:50]:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return -1
        if any(k in m for k in _OTHER_MSG_KEYS):
            return -1
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if not isinstance(kind, str):
                continue
            if kind in _FOREIGN:
                return -1
            if kind in _MARKERS:
                score = 90
    return score


def sniff(source: Source) -> int:
    if source.kind != "json":
        return 0
    doc = source.doc
    if isinstance(doc, list):
        return 80 if doc and _score_messages(doc) >= 90 else 0
    if not isinstance(doc, dict) or any(k in doc for k in _OTHER_TOPS):
        return 0
    messages = doc.get("messages")
    if not isinstance(messages, list):
        return 0
    score = _score_messages(messages)
    if score < 0:
        return 0
    if "system" in doc and isinstance(doc["system"], (str, list, type(None))):
        return max(score, 85)
    # Plain user/assistant strings without a top-level system: OpenAI's claim is better.
    return score if score >= 90 else 30


# ------------------------------------------------------------------------------- read


def _text_of(block: Mapping[str, Any]) -> str | None:
    text = block.get("text")
    return text if block.get("type") == "text" and isinstance(text, str) else None


def _system(source: Source, value: Any, extra: dict[str, Any]) -> str | None:
    if value is None or value == "":
        extra["system"] = value  # no prompt, written back as it was
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts: list[str] = []
        for j, block in enumerate(value):
            expect(source.path, block, dict, f"$.system[{j}]", "a text block object")
            text = _text_of(block)
            if text is not None:
                texts.append(text)
        extra["_system_blocks"] = value
        return "\n".join(texts) if texts else None
    raise LoadError(
        source.path,
        f"system is a JSON {json_type(value)}",
        json_path="$.system",
        expected="a string or a list of text blocks",
    )


def _media(source: Source, block: Mapping[str, Any], bp: str) -> Part:
    src = expect(
        source.path,
        block.get("source"),
        dict,
        f"{bp}.source",
        "an object with type 'base64' (media_type, data) or 'url' (url)",
    )
    extra: dict[str, Any] = {"_block": dict(rest(block, ("source",)))}
    src_rest = rest(src, ("type", "media_type", "data", "url"))
    if src_rest:
        extra["_source"] = dict(src_rest)
    src_type = src.get("type")
    if src_type == "base64":
        data = expect(source.path, src.get("data"), str, f"{bp}.source.data", "a base64 string")
        media_type = src.get("media_type")
        if not isinstance(media_type, str):
            # Write back exactly what was there: no key, or a non-string value.
            extra["_media_type"] = {"value": media_type} if "media_type" in src else "absent"
            media_type = "application/octet-stream"
        return MediaPart(
            media_type=media_type,
            byte_size=base64_size(data),
            source="base64",
            data=f"data:{media_type};base64,{data}",
            extra=extra,
        )
    if src_type == "url":
        url = expect(source.path, src.get("url"), str, f"{bp}.source.url", "a URL string")
        part = media_from_url(url)
        if isinstance(src.get("media_type"), str):
            extra["_url_media_type"] = True
            part = replace(part, media_type=src["media_type"])
        return replace(part, source="url", data=url, extra=extra)
    return _raw_part(block)


def _raw_part(block: Mapping[str, Any]) -> MediaPart:
    """An unmodelled block (server tool use, search results, ...), kept whole."""
    kind = block.get("type")
    return MediaPart(
        media_type=f"application/x-anthropic-{kind if isinstance(kind, str) else 'unknown'}",
        byte_size=len(orjson.dumps(block)),
        source="placeholder",
        extra={"_raw": block},
    )


def _block_part(source: Source, block: Any, bp: str) -> Part:
    """One non-tool content block → a Part."""
    expect(source.path, block, dict, bp, "a content block object with a 'type'")
    kind = block.get("type")
    if kind == "text":
        text = expect(source.path, block.get("text"), str, f"{bp}.text", "a string")
        return TextPart(text, extra=rest(block, ("type", "text")))
    if kind in ("image", "document"):
        return _media(source, block, bp)
    if kind == "thinking":
        text = expect(source.path, block.get("thinking"), str, f"{bp}.thinking", "a string")
        sig = block.get("signature")
        known = ("type", "thinking", "signature") if isinstance(sig, str) else ("type", "thinking")
        return ThinkingPart(
            text, signature=sig if isinstance(sig, str) else None, extra=rest(block, known)
        )
    if kind == "redacted_thinking":
        return ThinkingPart("", redacted=True, extra=rest(block, ("type",)))
    if not isinstance(kind, str):
        raise LoadError(
            source.path,
            "content block has no string 'type'",
            json_path=f"{bp}.type",
            expected="a block type such as 'text', 'image', 'tool_use' or 'tool_result'",
        )
    return _raw_part(block)


def _tool_use(source: Source, block: Mapping[str, Any], bp: str) -> ToolCall:
    call_id = expect(source.path, block.get("id"), str, f"{bp}.id", "a string tool_use id")
    name = expect(source.path, block.get("name"), str, f"{bp}.name", "a string tool name")
    extra: dict[str, Any] = dict(rest(block, ("type", "id", "name", "input")))
    if "input" not in block:
        arguments, extra["_input_form"] = "", "absent"
    elif isinstance(block["input"], str):
        # A stringified input: keep the string verbatim (it may not even be JSON).
        arguments, extra["_input_form"] = block["input"], "string"
    else:
        if not isinstance(block["input"], dict):
            extra["_input_form"] = "json"
        # Compact orjson keeps key order and values, so loads() gives back an equal object.
        arguments = orjson.dumps(block["input"]).decode()
    return ToolCall(
        id=call_id, name=name, arguments=arguments, kind="function", extra=extra or EMPTY
    )


def _meta(role: Role, parts: Sequence[Part]) -> MessageMeta:
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    meta = meta_for_text(role, "\n".join(texts))
    if meta.is_injected and any(t.strip() and injected_kind(t) is None for t in texts[1:]):
        # A reminder block followed by the user's own words: a real ask.
        meta = replace(meta, is_injected=False, injected_kind=None)
    return meta


def _content(source: Source, raw: Mapping[str, Any], key: str, jp: str) -> tuple[Any, str]:
    content = raw.get(key, ...)
    if content is ...:
        return [], "absent"
    if content is None:
        return [], "null"
    if isinstance(content, str):
        return content, "string"
    if isinstance(content, list):
        return content, "parts"
    raise LoadError(
        source.path,
        f"{key} is a JSON {json_type(content)}",
        json_path=f"{jp}.{key}",
        expected="a string or a list of content blocks",
    )


def _tool_result(
    source: Source, block: Mapping[str, Any], bp: str, group: int, pos: int, names: dict[str, str]
) -> Message:
    use_id = expect(
        source.path,
        block.get("tool_use_id"),
        str,
        f"{bp}.tool_use_id",
        "the string id of a tool_use block",
    )
    content, form = _content(source, block, "content", bp)
    if form == "string":
        parts: list[Part] = [TextPart(content)]
    else:
        parts = [_block_part(source, b, f"{bp}.content[{k}]") for k, b in enumerate(content)]
    hints: dict[str, Any] = {"content_form": form, "block_group": group, "block_pos": pos}
    if "is_error" in block:
        hints["is_error"] = block["is_error"]
    return Message(
        role=Role.TOOL,
        parts=tuple(parts),
        tool_call_id=use_id,
        tool_name=names.get(use_id),
        meta=MessageMeta(is_error=block.get("is_error") is True),
        extra=rest(block, ("type", "tool_use_id", "content", "is_error")),
        hints=hints,
    )


def _assistant(
    source: Source, raw: Mapping[str, Any], jp: str, content: Any, form: str, names: dict[str, str]
) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout: list[str] = []
    if form == "string":
        parts.append(TextPart(content))
    else:
        for j, block in enumerate(content):
            bp = f"{jp}.content[{j}]"
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call = _tool_use(source, block, bp)
                names[call.id] = call.name
                calls.append(call)
                layout.append("c")
            else:
                parts.append(_block_part(source, block, bp))
                layout.append("p")
    hints: dict[str, Any] = {"content_form": form}
    lay = "".join(layout)
    if lay != "p" * len(parts) + "c" * len(calls):
        hints["layout"] = lay
    return Message(
        role=Role.ASSISTANT,
        parts=tuple(parts),
        tool_calls=tuple(calls),
        meta=_meta(Role.ASSISTANT, parts),
        extra=rest(raw, ("role", "content")),
        hints=hints,
    )


def _user(
    source: Source,
    raw: Mapping[str, Any],
    jp: str,
    index: int,
    content: Any,
    form: str,
    names: dict[str, str],
) -> list[Message]:
    msg_extra = rest(raw, ("role", "content"))
    if form == "string":
        parts: list[Part] = [TextPart(content)]
        return [
            Message(
                Role.USER,
                tuple(parts),
                meta=_meta(Role.USER, parts),
                extra=msg_extra,
                hints={"content_form": form},
            )
        ]
    results: list[Message] = []
    parts, positions = [], []
    for j, block in enumerate(content):
        bp = f"{jp}.content[{j}]"
        if isinstance(block, dict) and block.get("type") == "tool_result":
            results.append(_tool_result(source, block, bp, index, j, names))
        else:
            parts.append(_block_part(source, block, bp))
            positions.append(j)
    if not results:
        return [
            Message(
                Role.USER,
                tuple(parts),
                meta=_meta(Role.USER, parts),
                extra=msg_extra,
                hints={"content_form": form},
            )
        ]
    if parts:
        hints = {"content_form": "parts", "block_group": index, "block_pos": tuple(positions)}
        results.append(
            Message(
                Role.USER, tuple(parts), meta=_meta(Role.USER, parts), extra=msg_extra, hints=hints
            )
        )
    elif msg_extra:
        first = results[0]
        results[0] = replace(first, hints={**first.hints, "msg_extra": dict(msg_extra)})
    return results


def _usage(raw: Any, index: int) -> Usage | None:
    if not isinstance(raw, dict):
        return None

    def n(key: str) -> int:
        v = raw.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    if not any(k in raw for k in ("input_tokens", "output_tokens")):
        return None
    return Usage(
        input_tokens=n("input_tokens"),
        cache_read_tokens=n("cache_read_input_tokens"),
        cache_write_tokens=n("cache_creation_input_tokens"),
        output_tokens=n("output_tokens"),
        message_index=index,
    )


# --------------------------------------------------------------------- fast path
#
# The common message shapes, built directly; anything else returns None *before*
# changing any state, and the readable functions above read (or report) that message.
# Both must give equal transcripts (docs/formats.md, "Fast paths").

_ABSENT: Any = object()
_TEXT_KEYS = ("type", "text")
_THINKING_KEYS = ("type", "thinking", "signature")
_RESULT_KEYS = ("type", "tool_use_id", "content", "is_error")
_ROLE_CONTENT = ("role", "content")


def _leftover(obj: dict[str, Any], known: tuple[str, ...]) -> Mapping[str, Any]:
    """``rest(obj, known)`` for an ``obj`` that holds every key of ``known``."""
    if len(obj) == len(known):
        return EMPTY
    return {k: v for k, v in obj.items() if k not in known}


def _fast_text(block: dict[str, Any]) -> TextPart | None:
    text = block.get("text")
    if type(text) is not str:
        return None
    return text_part(text) if len(block) == 2 else TextPart(text, _leftover(block, _TEXT_KEYS))


def _fast_assistant(
    raw: dict[str, Any],
    content: list[Any],
    index: int,
    names: dict[str, str],
    trusted: dict[int, str],
) -> Message | None:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    texts: list[str] = []
    in_order = True  # no part after a call: the layout needs no hint
    dumps = orjson.dumps
    for block in content:
        if type(block) is not dict:
            return None
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if type(text) is not str:
                return None
            parts.append(
                text_part(text) if len(block) == 2 else TextPart(text, _leftover(block, _TEXT_KEYS))
            )
            texts.append(text)
            in_order = in_order and not calls
        elif kind == "tool_use":
            call_id = block.get("id")
            name = block.get("name")
            arguments = block.get("input")
            if type(call_id) is not str or type(name) is not str or type(arguments) is not dict:
                return None
            args = dumps(arguments).decode()
            trusted[id(args)] = args  # orjson's own output: valid JSON
            extra = EMPTY if len(block) == 4 else _leftover(block, ("type", "id", "name", "input"))
            calls.append(tool_call(call_id, name, args, "function", extra))
        elif kind == "thinking":
            text = block.get("thinking")
            if type(text) is not str:
                return None
            sig = block.get("signature")
            if type(sig) is str:
                extra = EMPTY if len(block) == 3 else _leftover(block, _THINKING_KEYS)
            else:
                sig = None
                extra = rest(block, ("type", "thinking"))
            parts.append(thinking_part(text, sig, False, extra))
            in_order = in_order and not calls
        else:
            return None
    hints: dict[str, Any] = {"content_form": "parts"}
    if not in_order:  # (only text, thinking and tool_use blocks got here)
        hints["layout"] = "".join(["c" if b["type"] == "tool_use" else "p" for b in content])
    for call in calls:
        names[call.id] = call.name
    meta = plain_meta(Role.ASSISTANT, "\n".join(texts), index)
    extra = _leftover(raw, _ROLE_CONTENT)
    return new_message(
        Role.ASSISTANT, tuple(parts), tuple(calls), None, None, None, meta, extra, hints
    )


def _fast_result(
    block: dict[str, Any], group: int, pos: int, index: int, names: dict[str, str]
) -> Message | None:
    use_id = block.get("tool_use_id")
    if type(use_id) is not str:
        return None
    found = 2  # "type" and "tool_use_id"
    inner = block.get("content", _ABSENT)
    parts: tuple[Part, ...]
    if type(inner) is str:
        parts, form, found = (text_part(inner),), "string", 3
    elif inner is _ABSENT:
        parts, form = (), "absent"
    elif inner is None:
        parts, form, found = (), "null", 3
    elif type(inner) is list:
        got: list[Part] = []
        for b in inner:
            part = _fast_text(b) if type(b) is dict and b.get("type") == "text" else None
            if part is None:
                return None
            got.append(part)
        parts, form, found = tuple(got), "parts", 3
    else:
        return None
    hints: dict[str, Any] = {"content_form": form, "block_group": group, "block_pos": pos}
    is_error = block.get("is_error", _ABSENT)
    if is_error is not _ABSENT:
        hints["is_error"] = is_error
        found += 1
    meta = new_meta(False, False, None, None, index, False, is_error is True, False, None)
    extra = EMPTY if len(block) == found else rest(block, _RESULT_KEYS)
    return new_message(Role.TOOL, parts, (), use_id, names.get(use_id), None, meta, extra, hints)


def _fast_user(
    raw: dict[str, Any], content: list[Any], group: int, start: int, names: dict[str, str]
) -> list[Message] | None:
    results: list[Message] = []
    parts: list[Part] = []
    texts: list[str] = []
    positions: list[int] = []
    for j, block in enumerate(content):
        if type(block) is not dict:
            return None
        kind = block.get("type")
        if kind == "tool_result":
            result = _fast_result(block, group, j, start + len(results), names)
            if result is None:
                return None
            results.append(result)
        elif kind == "text":
            part = _fast_text(block)
            if part is None:
                return None
            parts.append(part)
            texts.append(part.text)
            positions.append(j)
        else:
            return None
    msg_extra = _leftover(raw, _ROLE_CONTENT)
    if results and not parts:
        # (Keys beside the content go on the first result: the generic path does that.)
        return None if msg_extra else results
    is_summary, kind = text_flags(Role.USER, "\n".join(texts))
    if kind is not None and any(t.strip() and injected_kind(t) is None for t in texts[1:]):
        kind = None  # a reminder block followed by the user's own words: a real ask
    meta = new_meta(
        is_summary, kind is not None, kind, None, start + len(results), False, False, False, None
    )
    if results:
        hints = {"content_form": "parts", "block_group": group, "block_pos": tuple(positions)}
    else:
        hints = {"content_form": "parts"}
    results.append(
        new_message(Role.USER, tuple(parts), (), None, None, None, meta, msg_extra, hints)
    )
    return results


# Long for speed: one pass over the request with no per-field helper calls; the
# format tests pin what it reads.
def read(source: Source, options: LoadOptions) -> Transcript:
    doc = source.doc
    top_extra: dict[str, Any] = {}
    tools: tuple[Any, ...] = ()
    model: str | None = None
    system_prompt: str | None = None
    if isinstance(doc, list):
        raw_messages, base = doc, "$"
        top_extra["_top_form"] = "list"
    else:
        expect(
            source.path,
            doc,
            dict,
            "$",
            "an object with 'messages' (and optional 'system', 'tools')",
        )
        raw_messages = expect(
            source.path, doc.get("messages"), list, "$.messages", "a list of messages"
        )
        base = "$.messages"
        if "system" in doc:
            system_prompt = _system(source, doc["system"], top_extra)
        if isinstance(doc.get("tools"), list) and doc["tools"]:
            tools = tuple(doc["tools"])
        elif "tools" in doc:  # an empty list, or not a list: written back as it was
            top_extra["tools"] = doc["tools"]
        if isinstance(doc.get("model"), str):
            model = doc["model"]
        elif "model" in doc:
            top_extra["model"] = doc["model"]
        top_extra.update(rest(doc, ("messages", "system", "tools", "model")))
        top_extra["_key_order"] = list(doc)
    messages: list[Message] = []
    usage: list[Usage] = []
    names: dict[str, str] = {}
    trusted: dict[int, str] = {}
    fast = fast_paths()
    for i, raw in enumerate(raw_messages):
        if fast and type(raw) is dict and type(raw.get("content")) is list:
            role = raw.get("role")
            if role == "assistant":
                msg = _fast_assistant(raw, raw["content"], len(messages), names, trusted)
                if msg is not None:
                    messages.append(msg)
                    measured = _usage(raw.get("usage"), len(messages) - 1)
                    if measured is not None:
                        usage.append(measured)
                    continue
            elif role == "user":
                split = _fast_user(raw, raw["content"], i, len(messages), names)
                if split is not None:
                    messages.extend(split)
                    continue
        jp = f"{base}[{i}]"
        expect(source.path, raw, dict, jp, "a message object with 'role' and 'content'")
        role = raw.get("role")
        if role not in ("user", "assistant"):
            raise LoadError(
                source.path,
                f"unknown role {clip(role)}",
                json_path=f"{jp}.role",
                expected="'user' or 'assistant' (Anthropic has no system or tool role)",
            )
        content, form = _content(source, raw, "content", jp)
        if role == "assistant":
            messages.append(_assistant(source, raw, jp, content, form, names))
            measured = _usage(raw.get("usage"), len(messages) - 1)
            if measured is not None:
                usage.append(measured)
        else:
            messages.extend(_user(source, raw, jp, i, content, form, names))
    if model is None:
        # API responses saved as messages carry the model; it stays in their extra.
        model = next(
            (r["model"] for r in reversed(raw_messages) if isinstance(r.get("model"), str)), None
        )
        if model is not None:
            top_extra["_derived_model"] = model
    summaries: list[int] = []
    msgs, warnings = finish(messages, valid_args=trusted, summaries=summaries)
    return Transcript(
        messages=msgs,
        format=NAME,
        system_prompt=system_prompt,
        tools=tools,
        model=model,
        path=str(source.path),
        compactions=tuple(summary_events(msgs, summaries)),
        usage=tuple(usage),
        extra=top_extra or EMPTY,
        warnings=tuple(warnings),
    )


# ------------------------------------------------------------------------------ write


def _data_payload(part: MediaPart) -> str:
    data = part.data or ""
    if data.startswith("data:") and "," in data:
        return data.split(",", 1)[1]
    return data


def _media_block(part: MediaPart, own: bool) -> dict[str, Any]:
    extra = part.extra if own else EMPTY
    raw = extra.get("_raw")
    if isinstance(raw, dict):  # (the block as read, kept by _raw_part)
        return raw
    if part.source == "placeholder" and not part.data:
        return {"type": "text", "text": f"[image: {part.media_type}, {part.byte_size} bytes]"}
    block_rest = dict(extra.get("_block", {"type": "image"}))
    kind = block_rest.pop("type", "image")
    src: dict[str, Any]
    if part.source == "url" or not (part.data or "").startswith("data:"):
        src = {"type": "url", "url": part.data or ""}
        if extra.get("_url_media_type"):
            src["media_type"] = part.media_type
    else:
        src = {"type": "base64"}
        form = extra.get("_media_type")
        if form is None:
            src["media_type"] = part.media_type
        elif isinstance(form, dict):
            src["media_type"] = form.get("value")
        src["data"] = _data_payload(part)
    src.update(extra.get("_source", {}))
    return {"type": kind, "source": src, **block_rest}


def _part_block(part: Part, own: bool) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text, **(part.extra if own else {})}
    if isinstance(part, ThinkingPart):
        if part.redacted:
            data = part.extra.get("data", "") if part.extra else ""
            return {"type": "redacted_thinking", **(part.extra if own else {"data": data})}
        block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
        if part.signature is not None:
            block["signature"] = part.signature
        if own:
            block.update(part.extra)
        return block
    return _media_block(part, own)


def _call_block(call: ToolCall, own: bool) -> dict[str, Any]:
    extra = dict(call.extra) if own else {}
    form = extra.pop("_input_form", None)
    block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.name}
    args = call.arguments
    if form == "string":
        block["input"] = args
    elif not args:
        if form != "absent":
            block["input"] = {}
    else:
        try:
            block["input"] = orjson.loads(args)
        except orjson.JSONDecodeError:
            block["input"] = args  # invalid JSON: keep the text verbatim, never drop it
    block.update(extra)
    return block


#: The text of a converted turn that would otherwise have no content: the API rejects
#: empty content and empty text blocks (an empty final assistant turn aside).
EMPTY_TURN_TEXT = "(empty)"


def _part_blocks(m: Message, own: bool) -> list[dict[str, Any]]:
    """The content blocks of a message's parts.

    A transcript from another format loses its blank text parts (OpenAI-style
    ``"content": ""`` beside tool calls): the API rejects empty text blocks. An
    Anthropic transcript's own blocks are written back as they were.
    """
    if own:
        return [_part_block(p, own) for p in m.parts]
    return [
        _part_block(p, own) for p in m.parts if not (type(p) is TextPart and not p.text.strip())
    ]


def _content_value(m: Message, blocks: list[Any], own: bool) -> tuple[bool, Any]:
    """(present, value) of a message's ``content`` for its stored form.

    For another format's message, (False, None) when it has nothing to say (no blocks).
    """
    if not own:
        if not blocks:
            return False, None
        if len(blocks) == 1 and not m.tool_calls and len(m.parts) == 1:
            part = m.parts[0]
            if type(part) is TextPart:
                return True, part.text
        return True, blocks
    form = m.hints.get("content_form")
    simple = m.parts[0] if len(m.parts) == 1 and not m.tool_calls else None
    if form == "string" and isinstance(simple, TextPart) and not simple.extra:
        return True, simple.text
    if not blocks and form in ("absent", "null"):
        return form == "null", None
    if form is None and isinstance(simple, TextPart) and not simple.extra:
        return True, simple.text
    return True, blocks


def _tool_result_block(m: Message, own: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or ""}
    # (Converted: an empty result has no ``content``, which the API allows.)
    present, value = _content_value(m, _part_blocks(m, own), own)
    if present:
        block["content"] = value
    hint = m.hints.get("is_error", ...) if own else ...
    if hint is not ... and (hint is True) == m.meta.is_error:
        block["is_error"] = hint
    elif m.meta.is_error:
        block["is_error"] = True
    if own:
        block.update(m.extra)
    return block


def _group_to_dict(members: list[Message], own: bool) -> dict[str, Any]:
    entries: list[tuple[Any, dict[str, Any]]] = []
    known = True
    msg_extra: Mapping[str, Any] = EMPTY
    for m in members:
        if m.role is Role.TOOL:
            pos = m.hints.get("block_pos") if own else None
            entries.append((pos, _tool_result_block(m, own)))
            known = known and isinstance(pos, int)
            if own and "msg_extra" in m.hints and not msg_extra:
                msg_extra = m.hints["msg_extra"]
        else:
            blocks = _part_blocks(m, own)
            positions = m.hints.get("block_pos") if own else None
            if not (isinstance(positions, (list, tuple)) and len(positions) == len(blocks)):
                positions, known = [None] * len(blocks), False
            entries.extend(zip(positions, blocks, strict=True))
            if own:
                msg_extra = m.extra
    if known:
        entries.sort(key=lambda e: e[0])
    return {"role": "user", "content": [b for _, b in entries], **msg_extra}


def _message_to_dict(m: Message, own: bool) -> dict[str, Any]:
    role = "assistant" if m.role is Role.ASSISTANT else "user"
    part_blocks = _part_blocks(m, own)
    if m.reasoning and not m.thinking:
        # Reasoning kept beside content (Hermes, Codex): a thinking block with no
        # signature (conversion_losses says the API will not accept it back).
        part_blocks.insert(0, {"type": "thinking", "thinking": m.reasoning})
    call_blocks = [_call_block(c, own) for c in m.tool_calls]
    blocks = in_layout(m.hints.get("layout") if own else None, part_blocks, call_blocks)
    out: dict[str, Any] = {"role": role}
    present, value = _content_value(m, blocks, own)
    if present:
        out["content"] = value
    elif not own:
        out["content"] = EMPTY_TURN_TEXT  # never an empty turn
    if own:
        out.update(m.extra)
    return out


def _group_key(m: Message, own: bool) -> Any:
    return m.hints.get("block_group") if own else None


def messages_to_dicts(messages: Sequence[Message], own: bool) -> list[dict[str, Any]]:
    """Messages → Anthropic message dicts (tool results grouped into user turns)."""
    out: list[dict[str, Any]] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        key = _group_key(m, own)
        if m.role is Role.TOOL or key is not None:
            members, j = [m], i + 1
            if key is not None:
                while (
                    j < n
                    and _group_key(messages[j], own) == key
                    and messages[j].role in (Role.TOOL, Role.USER)
                ):
                    members.append(messages[j])
                    j += 1
            else:
                while (
                    j < n and messages[j].role is Role.TOOL and _group_key(messages[j], own) is None
                ):
                    members.append(messages[j])
                    j += 1
                # Text the user sent after the results belongs to the same user turn.
                if j < n and messages[j].role is Role.USER and _group_key(messages[j], own) is None:
                    members.append(messages[j])
                    j += 1
            out.append(_group_to_dict(members, own))
            i = j
            continue
        if m.role in (Role.SYSTEM, Role.DEVELOPER):
            # No in-band system role: carry the text as a user turn.
            out.append({"role": "user", "content": m.text if m.text.strip() else EMPTY_TURN_TEXT})
        else:
            out.append(_message_to_dict(m, own))
        i += 1
    return out


def _system_value(transcript: Transcript, lead: list[str], own: bool) -> tuple[bool, Any]:
    extra = transcript.extra if own else EMPTY
    text = "\n".join([t for t in [transcript.system_prompt, *lead] if t])
    blocks = extra.get("_system_blocks")
    if isinstance(blocks, list):
        current = "\n".join(
            t for t in (_text_of(b) for b in blocks if isinstance(b, dict)) if t is not None
        )
        if current == text:
            return True, blocks
        last = next(
            (b for b in reversed(blocks) if isinstance(b, dict) and _text_of(b) is not None), {}
        )
        return True, [{**last, "type": "text", "text": text}] if text else []
    if "system" in extra and not text:
        return True, extra["system"]
    return (True, text) if text else (False, None)


def write(transcript: Transcript, *, jsonl: bool | None = None) -> bytes:
    """Render ``transcript`` as an Anthropic Messages request object.

    With ``jsonl`` the object is written compact on one line (one JSONL record).

    A transcript read from Anthropic comes back as the same JSON value when it was not
    changed. Others are converted: leading system messages join ``system``, tool
    results are grouped into user messages, and reasoning kept beside content becomes a
    thinking block without a signature (kept for inspection; the API would reject it).
    """
    own = transcript.format == NAME
    messages = list(transcript.messages)
    lead: list[str] = []
    while messages and messages[0].role in (Role.SYSTEM, Role.DEVELOPER):
        lead.append(messages.pop(0).text)
    body = messages_to_dicts(messages, own)
    extra = dict(transcript.extra) if own else {}
    if (
        extra.get("_top_form") == "list"
        and not transcript.tools
        and not transcript.system_prompt
        and not lead
        and not jsonl
    ):
        return dump_document(body, jsonl=False)
    fields: dict[str, Any] = {}
    model = transcript.model
    if model is not None and model != extra.get("_derived_model"):
        fields["model"] = model
    has_system, system = _system_value(transcript, lead, own)
    if has_system:
        fields["system"] = system
    fields["messages"] = body
    if transcript.tools:
        fields["tools"] = list(transcript.tools)
        extra.pop("tools", None)
    order = extra.pop("_key_order", [])
    for key in ("_top_form", "_system_blocks", "_derived_model"):
        extra.pop(key, None)
    if "system" in extra:
        extra.pop("system")
    fields.update(extra)
    doc = {k: fields[k] for k in order if k in fields}
    doc.update((k, v) for k, v in fields.items() if k not in doc)
    return dump_document(doc, jsonl=jsonl)
