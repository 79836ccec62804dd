"""OpenAI Chat Completions messages: a JSON list, or an object with ``messages``.

Reads ``role`` system/developer/user/assistant/tool (legacy ``function`` results as
tool), string/null/part-list content, ``tool_calls`` with raw argument strings,
``tool_call_id``/``name`` on results, and ``reasoning``/``reasoning_content``. Every
key it does not model is kept in ``extra`` and written back.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    MARKER_STARTS,
    fast_paths,
    finish,
    media_from_url,
    meta_for_text,
    new_message,
    new_meta,
    plain_meta,
    rest,
    summary_events,
    text_part,
    tool_call,
)
from tinyjuice.model import (
    EMPTY,
    MediaPart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)

NAME = "openai"

_ROLES = {r.value for r in Role} | {"function"}
_MSG_KEYS = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "reasoning",
    "reasoning_content",
)
#: Role names read as themselves (``function`` takes the generic path).
_ROLE_OF: dict[str, Role] = {r.value: r for r in Role}
_CALL_KEYS = frozenset(("id", "type", "function"))
#: (keys modelled on tool results, keys modelled on other messages) per ``extra_known``.
_KNOWN: dict[tuple[str, ...], tuple[frozenset[str], frozenset[str]]] = {}
_ABSENT: Any = object()


# ------------------------------------------------------------------------------ sniff


def _looks_like_messages(items: Any) -> int:
    if not isinstance(items, list) or not items:
        return 0
    sample = items[:50]
    if not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in _ROLES
        for m in sample
    ):
        return 0
    score = 50
    for m in sample:
        if "tool_calls" in m or m.get("role") in ("tool", "function", "developer", "system"):
            score = 70
        content = m.get("content")
        if isinstance(content, list):
            kinds = {b.get("type") for b in content if isinstance(b, dict)}
            if kinds & {"tool_use", "tool_result", "thinking", "redacted_thinking", "image"}:
                return 0  # Anthropic blocks
            if "image_url" in kinds:
                score = 70
        if "from" in m or "message_type" in m or "thought" in m:
            return 0
    return score


def sniff(source: Source) -> int:
    doc = source.doc
    if source.kind != "json":
        return 0
    if isinstance(doc, list):
        return _looks_like_messages(doc)
    if isinstance(doc, dict) and "messages" in doc:
        if "session_id" in doc or "history" in doc or "system" in doc:
            return 0
        return _looks_like_messages(doc["messages"])
    return 0


# ------------------------------------------------------------------------------- read


def _parts(source: Source, content: list[Any], jp: str) -> list[Part]:
    parts: list[Part] = []
    for j, block in enumerate(content):
        bp = f"{jp}[{j}]"
        if isinstance(block, str):
            parts.append(TextPart(block, extra={"_form": "bare"}))
            continue
        expect(source.path, block, dict, bp, "a content part object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(TextPart(block["text"], extra=rest(block, ("type", "text"))))
        elif kind == "image_url" and isinstance(block.get("image_url"), (dict, str)):
            iu = block["image_url"]
            url = iu if isinstance(iu, str) else iu.get("url", "")
            extra: dict[str, Any] = dict(rest(block, ("type", "image_url")))
            if isinstance(iu, dict):
                extra["_image_url"] = dict(rest(iu, ("url",)))
            else:
                extra["_form"] = "url_string"
            parts.append(media_from_url(str(url), extra=extra or EMPTY))
        else:
            # An unmodelled part (audio, file, ...): keep it whole.
            parts.append(
                MediaPart(
                    media_type=f"application/x-openai-{kind or 'unknown'}",
                    byte_size=len(orjson.dumps(block)),
                    source="placeholder",
                    extra={"_raw": block},
                )
            )
    return parts


def _tool_calls(source: Source, calls: Any, jp: str) -> tuple[ToolCall, ...]:
    expect(source.path, calls, list, jp, "a list of tool calls")
    out: list[ToolCall] = []
    for j, call in enumerate(calls):
        cp = f"{jp}[{j}]"
        expect(source.path, call, dict, cp, "a tool call object")
        fn = call.get("function") or {}
        expect(source.path, fn, dict, f"{cp}.function", "an object with name and arguments")
        args = fn.get("arguments", "")
        extra: dict[str, Any] = dict(rest(call, ("id", "type", "function")))
        fn_rest = rest(fn, ("name", "arguments"))
        if fn_rest:
            extra["_function"] = dict(fn_rest)
        if not isinstance(args, str):
            extra["_arguments_form"] = "object"
            args = orjson.dumps(args).decode()
        if "arguments" not in fn:
            extra["_arguments_form"] = "absent"
        out.append(
            ToolCall(
                id=str(call.get("id", "")),
                name=str(fn.get("name", "")),
                arguments=args,
                kind=str(call.get("type", "function")),
                extra=extra or EMPTY,
            )
        )
    return tuple(out)


def known_keys(extra_known: tuple[str, ...] = ()) -> tuple[frozenset[str], frozenset[str]]:
    """The message keys :func:`fast_message` models: (on tool results, on other messages)."""
    known = _KNOWN.get(extra_known)
    if known is None:
        on_tool = frozenset(_MSG_KEYS + extra_known)
        known = _KNOWN[extra_known] = (on_tool, on_tool - {"name"})
    return known


def _fast_calls(calls: list[Any]) -> tuple[ToolCall, ...] | None:
    """Plain ``{"id", "type", "function": {"name", "arguments": str}}`` calls, or None."""
    out: list[ToolCall] = []
    for call in calls:
        if type(call) is not dict:
            return None
        fn = call.get("function")
        if type(fn) is not dict or len(fn) != 2:
            return None
        name = fn.get("name")
        args = fn.get("arguments")
        call_id = call.get("id")
        kind = call.get("type")
        if type(name) is not str or type(args) is not str:
            return None
        if type(call_id) is not str or type(kind) is not str:
            return None
        # With those three keys found, a longer call holds only keys kept in extra.
        extra: Mapping[str, Any] = EMPTY
        if len(call) > 3:
            extra = {}
            for key in call:  # (a plain loop: cheaper than a comprehension for a few keys)
                if key not in _CALL_KEYS:
                    extra[key] = call[key]
        out.append(tool_call(call_id, name, args, kind, extra))
    return tuple(out)


# Long for speed: the fast path of one message (no per-field helper calls); it must
# equal the readable path (docs/formats.md, "Fast paths").
def fast_message(
    raw: Any, index: int, known: tuple[frozenset[str], frozenset[str]]
) -> Message | None:
    """The common message shapes, read without the generic path's checks and JSON paths.

    Returns the Message :func:`message_from_dict` builds (``original_index`` set to
    ``index``), or None for anything less common (part lists, ``function`` results, odd
    value types), which the generic path reads (and reports, when it is bad). Values
    that the generic path drops or that Hermes keeps aside (a non-string
    ``tool_call_id``, a non-string tool ``name``) also send the message there. The
    message's ``hints`` is a new dict the caller may still add to.
    """
    if type(raw) is not dict:
        return None
    role_s = raw.get("role")
    role = _ROLE_OF.get(role_s) if type(role_s) is str else None
    if role is None:
        return None
    # ``seen`` counts the keys found so far: when it reaches len(raw), no other key
    # (reasoning, an empty tool_calls, a null id or name, keys for extra) can be there.
    seen = 1
    content = raw.get("content", _ABSENT)
    hints: dict[str, Any]
    if type(content) is str:
        parts: tuple[Part, ...] = (text_part(content),)
        text = content
        hints = {"content_form": "string"}
        seen = 2
    elif content is None:
        parts, text, hints, seen = (), "", {"content_form": "null"}, 2
    elif content is _ABSENT:
        parts, text, hints = (), "", {"content_form": "absent"}
    else:
        return None
    raw_calls = raw.get("tool_calls")
    calls: tuple[ToolCall, ...] = ()
    if raw_calls:
        if type(raw_calls) is not list:
            return None
        parsed = _fast_calls(raw_calls)
        if parsed is None:
            return None
        calls = parsed
        seen += 1
    call_id = raw.get("tool_call_id")
    if call_id is not None:
        if type(call_id) is not str:
            return None
        seen += 1
    tool_name = None
    if role is Role.TOOL:
        tool_name = raw.get("name")
        if tool_name is not None:
            if type(tool_name) is not str:
                return None
            seen += 1
    reasoning = None
    extra: Mapping[str, Any] = EMPTY
    if seen < len(raw):
        if call_id is None and "tool_call_id" in raw:
            return None  # null: the generic path drops it, Hermes keeps it aside
        if tool_name is None and role is Role.TOOL and "name" in raw:
            return None  # likewise
        if not raw_calls and "tool_calls" in raw:
            hints["empty_tool_calls"] = raw_calls
        if "reasoning" in raw or "reasoning_content" in raw:
            for key in ("reasoning", "reasoning_content"):
                value = raw.get(key)
                if type(value) is str:
                    reasoning = value
                    hints["reasoning_key"] = key
                    break
                if key in raw:
                    hints[f"{key}_raw"] = value
        keys = known[0] if role is Role.TOOL else known[1]
        found: dict[str, Any] | None = None
        for key in raw:  # (a plain loop: cheaper than a comprehension for a few keys)
            if key not in keys:
                if found is None:
                    found = {}
                found[key] = raw[key]
        if found is not None:
            extra = found
    if text and role is not Role.TOOL and (text[0] in MARKER_STARTS or text[0].isspace()):
        meta = plain_meta(role, text, index)
    else:  # (no flags to derive: plain_meta's common case, one call fewer per message)
        meta = new_meta(False, False, None, None, index, False, False, False, None)
    return new_message(role, parts, calls, call_id, tool_name, reasoning, meta, extra, hints)


def message_from_dict(
    source: Source,
    raw: Any,
    jp: str,
    *,
    extra_known: tuple[str, ...] = (),
    index: int | None = None,
) -> Message:
    """One OpenAI-style message dict → Message (shared with Hermes and SWE-agent).

    ``index`` is the message's ``original_index`` when the caller knows it.
    """
    expect(source.path, raw, dict, jp, "a message object with a role")
    role_s = raw.get("role")
    if not isinstance(role_s, str) or role_s not in _ROLES:
        raise LoadError(
            source.path,
            f"unknown role {clip(role_s)}",
            json_path=f"{jp}.role",
            expected="system, developer, user, assistant or tool",
        )
    role = Role.TOOL if role_s == "function" else _ROLE_OF[role_s]
    hints: dict[str, Any] = {}
    if role_s == "function":
        hints["role"] = "function"
    content = raw.get("content", ...)
    parts: list[Part]
    if content is ...:
        parts, hints["content_form"] = [], "absent"
    elif content is None:
        parts, hints["content_form"] = [], "null"
    elif isinstance(content, str):
        parts, hints["content_form"] = [TextPart(content)], "string"
    elif isinstance(content, list):
        parts, hints["content_form"] = _parts(source, content, f"{jp}.content"), "parts"
    else:
        raise LoadError(
            source.path,
            "content is a JSON " + json_type(content),
            json_path=f"{jp}.content",
            expected="a string, null or a list of parts",
        )
    calls = (
        _tool_calls(source, raw["tool_calls"], f"{jp}.tool_calls") if raw.get("tool_calls") else ()
    )
    if "tool_calls" in raw and not raw.get("tool_calls"):
        hints["empty_tool_calls"] = raw["tool_calls"]
    reasoning = None
    for key in ("reasoning", "reasoning_content"):
        if isinstance(raw.get(key), str):
            reasoning = raw[key]
            hints["reasoning_key"] = key
            break
        if key in raw:
            hints[f"{key}_raw"] = raw[key]
    tool_name = None
    known = list(_MSG_KEYS) + list(extra_known)
    if role is Role.TOOL:
        tool_name = raw.get("name") if isinstance(raw.get("name"), str) else None
    else:
        known.remove("name")
    text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return Message(
        role=role,
        parts=tuple(parts),
        tool_calls=calls,
        tool_call_id=raw.get("tool_call_id") if isinstance(raw.get("tool_call_id"), str) else None,
        tool_name=tool_name,
        reasoning=reasoning,
        meta=meta_for_text(role, text, original_index=index),
        extra=rest(raw, known),
        hints=hints or EMPTY,
    )


def read(source: Source, options: LoadOptions) -> Transcript:
    doc = source.doc
    top_extra: dict[str, Any] = {}
    tools: tuple[Any, ...] = ()
    model = None
    if isinstance(doc, list):
        raw_messages, base = doc, ""
        top_extra["_top_form"] = "list"
    else:
        expect(source.path, doc, dict, "$", "a list of messages or an object with 'messages'")
        raw_messages = expect(
            source.path, doc.get("messages"), list, "$.messages", "a list of messages"
        )
        base = ".messages"
        if isinstance(doc.get("tools"), list):
            tools = tuple(doc["tools"])
        elif "tools" in doc:
            top_extra["tools"] = doc["tools"]
        model = doc.get("model") if isinstance(doc.get("model"), str) else None
        top_extra.update(rest(doc, ("messages", "tools", "model")))
        if "model" in doc and model is None:
            top_extra["model"] = doc["model"]
    known = known_keys()
    fast = fast_paths()
    messages: list[Message] = []
    append = messages.append
    for i, m in enumerate(raw_messages):
        msg = fast_message(m, i, known) if fast else None
        append(msg if msg is not None else message_from_dict(source, m, f"${base}[{i}]", index=i))
    summaries: list[int] = []
    msgs, warnings = finish(messages, summaries=summaries)
    return Transcript(
        messages=msgs,
        format=NAME,
        tools=tools,
        model=model,
        path=str(source.path),
        compactions=tuple(summary_events(msgs, summaries)),
        extra=top_extra or EMPTY,
        warnings=tuple(warnings),
    )


# ------------------------------------------------------------------------------ write


def _part_to_dict(part: Part) -> Any:
    if isinstance(part, TextPart):
        if part.extra.get("_form") == "bare":
            return part.text
        return {"type": "text", "text": part.text, **part.extra}
    if isinstance(part, MediaPart):
        if "_raw" in part.extra:
            return part.extra["_raw"]
        extra = {k: v for k, v in part.extra.items() if not k.startswith("_")}
        if part.extra.get("_form") == "url_string":
            return {"type": "image_url", "image_url": part.data or "", **extra}
        image_url = {"url": part.data or "", **part.extra.get("_image_url", {})}
        if part.source == "placeholder" and not part.data:
            return {"type": "text", "text": f"[image: {part.media_type}, {part.byte_size} bytes]"}
        return {"type": "image_url", "image_url": image_url, **extra}
    # ThinkingPart has no OpenAI content form; written as reasoning by the caller.
    return None


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    extra = dict(call.extra)
    form = extra.pop("_arguments_form", None)
    fn_extra = extra.pop("_function", {})
    # Other private ("_") keys are other formats' rendering hints: never written here.
    extra = {k: v for k, v in extra.items() if not k.startswith("_")}
    extra["_function"] = fn_extra
    fn: dict[str, Any] = {"name": call.name}
    if form == "object":
        try:
            fn["arguments"] = orjson.loads(call.arguments)
        except orjson.JSONDecodeError:
            fn["arguments"] = call.arguments
    elif form != "absent":
        fn["arguments"] = call.arguments
    fn.update(extra.pop("_function", {}))
    return {"id": call.id, "type": call.kind, "function": fn, **extra}


#: Formats whose message objects are OpenAI-shaped: their extra keys mean the same here.
OPENAI_SHAPED: frozenset[str] = frozenset(("openai", "hermes"))


def message_to_dict(m: Message, *, own_extra: bool = True) -> dict[str, Any]:
    """Message → OpenAI-style dict (shared with Hermes and SWE-agent).

    ``own_extra=False`` leaves out the message's source-only fields (a SWE-agent
    ``thought``, a Codex item type…): written into another format they would make the
    file read as its source format again."""
    hints = m.hints
    out: dict[str, Any] = {"role": hints.get("role", m.role.value)}
    form = hints.get("content_form")
    visible = [p for p in m.parts if not isinstance(p, ThinkingPart)]
    if form is None:
        if not visible:
            form = "null" if m.role is Role.ASSISTANT and m.tool_calls else "string"
        elif len(visible) == 1 and isinstance(visible[0], TextPart) and not visible[0].extra:
            form = "string"
        else:
            form = "parts"
    if form == "string":
        out["content"] = m.text
    elif form == "null":
        out["content"] = None if not visible else m.text
    elif form == "parts":
        out["content"] = [d for d in (_part_to_dict(p) for p in visible) if d is not None]
    if m.tool_calls:
        out["tool_calls"] = [_call_to_dict(c) for c in m.tool_calls]
    elif "empty_tool_calls" in hints:
        out["tool_calls"] = hints["empty_tool_calls"]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.tool_name is not None:
        out["name"] = m.tool_name
    reasoning = m.reasoning
    if reasoning is None and m.thinking:
        reasoning = "\n".join(p.text for p in m.thinking if not p.redacted) or None
    if reasoning is not None:
        out[hints.get("reasoning_key", "reasoning")] = reasoning
    for key in ("reasoning", "reasoning_content"):
        if f"{key}_raw" in hints:
            out[key] = hints[f"{key}_raw"]
    if own_extra:
        out.update(m.extra)
    return out


def write(transcript: Transcript, *, jsonl: bool | None = None) -> bytes:
    """Render ``transcript`` as Chat Completions messages (a list, or ``{"messages": …}``).

    With ``jsonl`` the object is written compact on one line (one JSONL record).
    """
    own = transcript.format in OPENAI_SHAPED
    messages = [message_to_dict(m, own_extra=own) for m in transcript.messages]
    if transcript.system_prompt and not (
        transcript.messages and transcript.messages[0].role in (Role.SYSTEM, Role.DEVELOPER)
    ):
        messages.insert(0, {"role": "system", "content": transcript.system_prompt})
    extra = dict(transcript.extra) if transcript.format == NAME else {}
    top_form = extra.pop("_top_form", None)
    if top_form == "list" and not transcript.tools and not transcript.model and not jsonl:
        return dump_document(messages, jsonl=False)
    doc: dict[str, Any] = {}
    if transcript.model:
        doc["model"] = transcript.model
    doc["messages"] = messages
    if transcript.tools:
        doc["tools"] = list(transcript.tools)
    doc.update(extra)
    return dump_document(doc, jsonl=jsonl)
