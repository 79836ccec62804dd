"""ShareGPT trajectories: ``{"conversations": [{"from", "value"}], "tools": "<json>"}``.

Details: docs/formats.md (`tinyjuice.formats.sharegpt`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from tinyjuice._gc import gc_paused
from tinyjuice.formats._io import (
    LoadError,
    LoadOptions,
    Source,
    bad_line_warnings,
    clip,
    dump_document,
    json_type,
    key_state,
    parse_json,
    read_bytes,
)
from tinyjuice.formats._messages import (
    finish,
    in_layout,
    new_message,
    new_meta,
    plain_meta,
    rest,
    summary_events,
    text_part,
    thinking_part,
    tool_call,
)
from tinyjuice.model import (
    EMPTY,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)
from tinyjuice.tokens import TOOLS_IN_TEXT_HINT

__all__ = [
    "NAME",
    "iter_trajectories",
    "read",
    "read_all",
    "read_line",
    "sniff",
    "write",
    "write_compact",
]

NAME = "sharegpt"

_FROM_ROLE: dict[str, Role] = {
    "system": Role.SYSTEM,
    "human": Role.USER,
    "user": Role.USER,
    "gpt": Role.ASSISTANT,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function_response": Role.TOOL,
    "observation": Role.TOOL,
    "function_call": Role.ASSISTANT,
}
#: The LLaMA-Factory / glaive sender whose value is the call JSON itself.
_FUNCTION_CALL = "function_call"
_ROLE_FROM: dict[Role, str] = {
    Role.SYSTEM: "system",
    Role.DEVELOPER: "system",
    Role.USER: "human",
    Role.ASSISTANT: "gpt",
    Role.TOOL: "tool",
}
#: (opening, closing, name) of the tags whose blocks :func:`_tagged` finds in ``gpt`` values.
_GPT_TAGS = (("<think>", "</think>", "think"), ("<tool_call>", "</tool_call>", "tool_call"))
_RESPONSE_OPEN = "<tool_response>"
_RESPONSE_CLOSE = "</tool_response>"
_TOOLS_OPEN = "<tools>"
_TOOLS_CLOSE = "</tools>"
_NAME_IN_RAW = re.compile(r"""["']name["']\s*:\s*["']([^"'\\]*)["']""")
_ARGS_IN_RAW = re.compile(r"""["']arguments["']\s*:\s*""")
#: Stands in for verbatim (invalid JSON) arguments while rendering a tool call.
_SENTINEL = "\x00tinyjuice-arguments\x00"


# ------------------------------------------------------------------------------ sniff


def _is_trajectory(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    conv = obj.get("conversations")
    if not isinstance(conv, list):
        return False
    head = conv[:5]
    return all(isinstance(t, dict) and "from" in t and "value" in t for t in head)


def sniff(source: Source) -> int:
    if source.kind == "jsonl":
        head = source.head_lines(5)
        return 90 if head and all(_is_trajectory(v) for v in head) else 0
    if source.kind != "json":
        return 0
    doc = source.doc
    if isinstance(doc, dict):
        return 90 if _is_trajectory(doc) else 0
    if isinstance(doc, list) and doc:
        return 90 if all(_is_trajectory(v) for v in doc[:5]) else 0
    return 0


# ------------------------------------------------------------------ value parsing


def _body(value: str, at: int, close_at: int) -> str:
    """``value[at:close_at]`` less the one newline the Hermes layout puts inside a tag on
    either side (one copy)."""
    if at < close_at and value[at] == "\n":
        at += 1
    if at < close_at and value[close_at - 1] == "\n":
        close_at -= 1
    return value[at:close_at]


def _tagged(value: str) -> list[tuple[int, int, str, str]]:
    """Every ``<think>``/``<tool_call>`` block of a ``gpt`` value: (start, end, tag, body).

    What ``re.finditer(r"<(think|tool_call)>(.*?)</\\1>", value, re.S)`` finds (left to
    right, the shortest body), with ``str.find``; ``body`` is trimmed (:func:`_body`).
    """
    out: list[tuple[int, int, str, str]] = []
    nxt = [value.find(open_tag) for open_tag, _, _ in _GPT_TAGS]
    while True:
        a, b = nxt
        if a < 0 and b < 0:
            return out
        k = 0 if b < 0 or 0 <= a < b else 1
        start = nxt[k]
        open_tag, close_tag, tag = _GPT_TAGS[k]
        body_at = start + len(open_tag)
        close_at = value.find(close_tag, body_at)
        if close_at < 0:
            nxt[k] = -1  # never closed after here, so no later one of this tag is
            continue
        end = close_at + len(close_tag)
        out.append((start, end, tag, _body(value, body_at, close_at)))
        for j in (0, 1):
            if 0 <= nxt[j] < end:
                nxt[j] = value.find(_GPT_TAGS[j][0], end)


def _responses(value: str) -> list[str]:
    """The (trimmed) bodies of a tool value's ``<tool_response>`` blocks, in order.

    What ``re.finditer(r"<tool_response>(.*?)</tool_response>", value, re.S)`` finds;
    the regex's lazy body would cost a step per character of (long) tool output.
    """
    out: list[str] = []
    at = value.find(_RESPONSE_OPEN)
    while at >= 0:
        body_at = at + len(_RESPONSE_OPEN)
        close_at = value.find(_RESPONSE_CLOSE, body_at)
        if close_at < 0:
            break
        out.append(_body(value, body_at, close_at))
        at = value.find(_RESPONSE_OPEN, close_at + len(_RESPONSE_CLOSE))
    return out


@dataclass(slots=True)
class _Call:
    name: str
    arguments: str
    #: The id written inside the ``<tool_call>`` JSON, if any.
    inner_id: str | None
    #: How to render it back when it differs from ``{"name", "arguments"}``.
    hint: dict[str, Any] = field(default_factory=dict)
    #: Filled in by pairing: the id used in the model.
    id: str = ""
    synthetic: bool = True
    #: ``arguments`` was rendered here by orjson (so it is valid JSON).
    rendered: bool = False


def _parse_call(inner: str) -> _Call:
    try:
        obj = orjson.loads(inner)
    except orjson.JSONDecodeError:
        obj = None
    if not (isinstance(obj, dict) and isinstance(obj.get("name"), str)):
        # Not JSON (or no name): keep the text verbatim, recover what we can.
        name_m = _NAME_IN_RAW.search(inner)
        args_m = _ARGS_IN_RAW.search(inner)
        arguments = inner
        if args_m:
            arguments = inner[args_m.end() :].rstrip()
            if arguments.endswith("}"):
                arguments = arguments[:-1].rstrip()
        return _Call(name_m.group(1) if name_m else "", arguments, None, {"raw": inner})
    hint: dict[str, Any] = {}
    args = obj.get("arguments", ...)
    rendered = False
    if args is ...:
        arguments, hint["args"] = "", "absent"
    elif isinstance(args, str):
        arguments, hint["args"] = args, "string"
    else:
        arguments, rendered = orjson.dumps(args).decode(), True
    if len(obj) == 2 and args is not ... and next(iter(obj)) == "name":
        # The usual {"name", "arguments"} in that order: nothing else to keep.
        return _Call(obj["name"], arguments, None, hint, rendered=rendered)
    inner_id = obj["id"] if isinstance(obj.get("id"), str) else None
    known = ("name", "arguments", "id") if inner_id is not None else ("name", "arguments")
    other = rest(obj, known)
    if other:
        hint["extra"] = dict(other)
    if list(obj) != ["name", "arguments"]:
        hint["keys"] = list(obj)
    return _Call(obj["name"], arguments, inner_id, hint, rendered=rendered)


@dataclass(slots=True)
class _Gpt:
    parts: list[Part]
    calls: list[_Call]
    layout: str


def _parse_gpt(value: str) -> _Gpt:
    # Both tags start with "<t": without it there is no block to look for.
    matches = _tagged(value) if "<t" in value else None
    if not matches:
        return _Gpt([text_part(value)], [], "p")
    parts: list[Part] = []
    calls: list[_Call] = []
    layout: list[str] = []
    pos = 0
    for start, end, tag, inner in matches:
        # The text before a block, less the newline on either side of it (one copy).
        a = pos + 1 if pos > 0 and value.startswith("\n", pos) else pos
        b = start - 1 if start > a and value[start - 1] == "\n" else start
        if b > a:
            parts.append(text_part(value[a:b]))
            layout.append("p")
        if tag == "think":
            parts.append(thinking_part(inner, None, False, EMPTY))
            layout.append("p")
        else:
            calls.append(_parse_call(inner))
            layout.append("c")
        pos = end
    a = pos + 1 if value.startswith("\n", pos) else pos  # (pos > 0: after a block)
    if a < len(value):
        parts.append(text_part(value[a:]))
        layout.append("p")
    return _Gpt(parts, calls, "".join(layout))


def _function_calls(value: str) -> list[_Call]:
    """The calls of a ``function_call`` turn: ``{"name", "arguments"}`` or a list of them."""
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, list) and obj and all(isinstance(c, dict) for c in obj):
        return [_parse_call(orjson.dumps(c).decode()) for c in obj]
    return [_parse_call(value)]  # one call (or text that is not JSON, kept verbatim)


def _parse_function_call(value: str) -> _Gpt:
    """A LLaMA-Factory/glaive ``function_call`` turn: an assistant message of calls only."""
    calls = _function_calls(value)
    return _Gpt([], calls, "c" * len(calls))


@dataclass(slots=True)
class _Resp:
    text: str
    name: str | None
    explicit_id: str | None
    hint: dict[str, Any]
    call_id: str = ""
    synthetic: bool = False
    call_name: str | None = None


def _parse_tool_value(value: str) -> list[_Resp]:
    bodies = _responses(value)
    if not bodies:
        return [_Resp(value, None, None, {"form": "bare"})]
    out: list[_Resp] = []
    for inner in bodies:
        obj: Any = None
        if inner.lstrip().startswith("{"):
            try:
                obj = orjson.loads(inner)
            except orjson.JSONDecodeError:
                obj = None
        if not (isinstance(obj, dict) and "content" in obj):
            out.append(_Resp(inner, None, None, {"form": "text"}))
            continue
        hint: dict[str, Any] = {"form": "json", "keys": list(obj)}
        content = obj["content"]
        if isinstance(content, str):
            text = content
        else:
            text = orjson.dumps(content).decode()
            hint["content_json"] = True
        name = obj.get("name")
        if not isinstance(name, str):
            name = None
        explicit = obj.get("tool_call_id")
        if not isinstance(explicit, str):
            explicit = None
        if len(obj) > 1 + (name is not None) + (explicit is not None):
            known = ["content"]
            if name is not None:
                known.append("name")
            if explicit is not None:
                known.append("tool_call_id")
            hint["extra"] = dict(rest(obj, known))
        out.append(_Resp(text, name, explicit, hint))
    return out


# ------------------------------------------------------------------------------- read


@dataclass(slots=True)
class _Turn:
    index: int
    role: Role
    value: str
    extra: Mapping[str, Any]
    from_hint: str | None
    gpt: _Gpt | None = None
    responses: list[_Resp] | None = None


def _pair(turns: list[_Turn]) -> None:
    """Give every call an id and pair every response to a call (or leave it an orphan)."""
    pending: list[_Call] = []
    for turn in turns:
        if turn.gpt is not None and turn.gpt.calls:
            pending = []
            for k, call in enumerate(turn.gpt.calls):
                if call.inner_id is not None:
                    call.id, call.synthetic = call.inner_id, False
                else:
                    call.id = f"call_{turn.index}_{k}"
                pending.append(call)
        if turn.responses is None:
            continue
        for k, resp in enumerate(turn.responses):
            target = None
            if resp.explicit_id is not None:
                for c in pending:
                    if c.id == resp.explicit_id:
                        target = c
                        break
            if target is None and resp.name is not None:
                for c in pending:
                    if c.synthetic and c.name == resp.name:
                        target = c
                        break
            elif target is None:
                for c in pending:
                    if c.synthetic:
                        target = c
                        break
            if target is None:
                # No call to answer: keep it, flagged as an orphan by finish().
                resp.call_id = resp.explicit_id or f"orphan_{turn.index}_{k}"
                resp.synthetic = resp.explicit_id is None
                continue
            pending.remove(target)
            if target.synthetic and resp.explicit_id is not None:
                target.id, target.synthetic = resp.explicit_id, False
            resp.call_id, resp.synthetic, resp.call_name = target.id, target.synthetic, target.name


def _turns(source: Source, obj: dict[str, Any], jp: str, line: int | None) -> list[_Turn]:
    def fail(problem: str, path: str, expected: str) -> LoadError:
        return LoadError(source.path, problem, line=line, json_path=path, expected=expected)

    conv = obj.get("conversations")
    if not isinstance(conv, list):
        raise fail(
            f"'conversations' is {key_state(obj, 'conversations')}",
            f"{jp}.conversations",
            "a list of turns",
        )
    turns: list[_Turn] = []
    for i, raw in enumerate(conv):
        if not isinstance(raw, dict):
            raise fail(
                f"turn is a JSON {json_type(raw)}",
                f"{jp}.conversations[{i}]",
                "a turn object with 'from' and 'value'",
            )
        sender = raw.get("from")
        role = _FROM_ROLE.get(sender) if isinstance(sender, str) else None
        if role is None:
            raise fail(
                f"unknown sender {clip(sender)}",
                f"{jp}.conversations[{i}].from",
                "'system', 'human', 'gpt', 'tool', 'function_call' or 'observation'",
            )
        value = raw.get("value")
        if not isinstance(value, str):
            raise fail(
                f"value is {key_state(raw, 'value')}", f"{jp}.conversations[{i}].value", "a string"
            )
        from_hint = sender if sender != _ROLE_FROM[role] else None
        extra = EMPTY if len(raw) == 2 else rest(raw, ("from", "value"))
        turn = _Turn(i, role, value, extra, from_hint)
        if sender == _FUNCTION_CALL:
            turn.gpt = _parse_function_call(value)
        elif role is Role.ASSISTANT:
            turn.gpt = _parse_gpt(value)
        elif role is Role.TOOL:
            turn.responses = _parse_tool_value(value)
        turns.append(turn)
    return turns


def _call_hints(calls: Sequence[_Call]) -> list[dict[str, Any]] | None:
    hints = [dict(c.hint, inner_id=True) if c.inner_id is not None else c.hint for c in calls]
    return hints if any(hints) else None


def _messages(
    turns: list[_Turn], trusted: dict[int, str], starts: list[int] | None = None
) -> list[Message]:
    """The turns' messages, each with its index; ``trusted`` gets the rendered arguments;
    ``starts``, when given, the index of each turn's first message."""
    out: list[Message] = []
    for turn in turns:
        if starts is not None:
            starts.append(len(out))
        base: dict[str, Any] = {"from": turn.from_hint} if turn.from_hint else {}
        if turn.gpt is not None:
            g = turn.gpt
            hints = dict(base)
            if g.calls or g.layout != "p":
                hints["raw"] = turn.value
            if g.layout != "p" * len(g.parts) + "c" * len(g.calls):
                hints["layout"] = g.layout
            call_hints = _call_hints(g.calls)
            if call_hints:
                hints["calls"] = call_hints
            synthetic = tuple(c.id for c in g.calls if c.synthetic)
            if synthetic:
                hints["synthetic_call_ids"] = synthetic
            text = "\n".join([p.text for p in g.parts if isinstance(p, TextPart)])
            for c in g.calls:
                if c.rendered:
                    trusted[id(c.arguments)] = c.arguments
            out.append(
                new_message(
                    Role.ASSISTANT,
                    tuple(g.parts),
                    tuple(
                        [tool_call(c.id, c.name, c.arguments, "function", EMPTY) for c in g.calls]
                    ),
                    None,
                    None,
                    None,
                    plain_meta(Role.ASSISTANT, text, len(out)),
                    turn.extra,
                    hints or EMPTY,
                )
            )
        elif turn.responses is not None:
            for k, resp in enumerate(turn.responses):
                hints = {**base, "turn": turn.index, "response": resp.hint}
                if k == 0:
                    hints["raw"] = turn.value
                if resp.synthetic:
                    hints["synthetic_call_id"] = True
                meta = new_meta(False, False, None, None, len(out), False, False, False, None)
                out.append(
                    new_message(
                        Role.TOOL,
                        (text_part(resp.text),),
                        (),
                        resp.call_id,
                        resp.name or resp.call_name,
                        None,
                        meta,
                        turn.extra if k == 0 else EMPTY,
                        hints,
                    )
                )
        else:
            out.append(
                new_message(
                    turn.role,
                    (text_part(turn.value),),
                    (),
                    None,
                    None,
                    None,
                    plain_meta(turn.role, turn.value, len(out)),
                    turn.extra,
                    base or EMPTY,
                )
            )
    return out


def _tools_block(text: str) -> str | None:
    """The inside of the ``<tools>…</tools>`` block of a system turn, or None.

    The block's opening tag starts a line (a mention such as "given inside <tools></tools>
    XML tags" in the prose before it is not the block).
    """
    start = text.find("\n" + _TOOLS_OPEN)
    if start < 0:
        if not text.startswith(_TOOLS_OPEN):
            return None
        start = 0
    else:
        start += 1
    start += len(_TOOLS_OPEN)
    end = text.find(_TOOLS_CLOSE, start)
    return text[start:end] if end >= 0 else None


def _mark_embedded_tools(messages: list[Message], tools: tuple[Any, ...], raw: Any) -> None:
    """Hint the leading system turn whose ``<tools>`` block holds the ``tools`` schemas.

    Hermes-style trajectories write the schemas into the system turn and repeat them in
    the ``tools`` field; the prompt holds them once, and :func:`~tinyjuice.tokens.
    count_transcript` counts them once (see :data:`~tinyjuice.tokens.TOOLS_IN_TEXT_HINT`).
    Runs once per trajectory, on the system turns before the first other turn.
    """
    for i, m in enumerate(messages):
        if m.role is not Role.SYSTEM:
            return
        block = _tools_block(m.text)
        if block is None:
            continue
        inner = block.strip()
        same = isinstance(raw, str) and inner == raw.strip()
        if not same:
            try:
                same = orjson.loads(inner) == list(tools)
            except orjson.JSONDecodeError:
                same = False
        if same:
            messages[i] = replace(m, hints={**m.hints, TOOLS_IN_TEXT_HINT: True})
        return


class ReadTurns:
    """What reading a trajectory parsed of the turns :func:`write_compact` may write back
    as their own text (an assistant turn of blocks, a tool turn), by the messages made of
    them: writing checks that such a message still says what its text says, and with
    this it reads the parse kept here instead of parsing the text again. The parse is
    used for a message only while it is the object read, holding the text read.

    Looked up by message only when something is written (most dataset lines are not)."""

    __slots__ = ("_gpt", "_read", "_tools")

    def __init__(self) -> None:
        self._read: tuple[list[_Turn], list[int], Sequence[Message]] | None = None
        #: id of an assistant message → (the message, its text, the text's parse).
        self._gpt: dict[int, tuple[Message, str, _Gpt]] | None = None
        #: id of a tool turn's first message → (the turn's messages, its text, its parse).
        self._tools: dict[int, tuple[tuple[Message, ...], str, list[_Resp]]] = {}

    def keep(self, turns: list[_Turn], starts: list[int], msgs: Sequence[Message]) -> None:
        """Keep the turns, where each one's messages start, and the finished messages."""
        self._read = (turns, starts, msgs)

    def _index(self) -> dict[int, tuple[Message, str, _Gpt]]:
        gpt = self._gpt
        if gpt is None:
            gpt = self._gpt = {}
            turns, starts, msgs = self._read or ([], [], ())
            for turn, k in zip(turns, starts, strict=True):
                if turn.gpt is not None:
                    gpt[id(msgs[k])] = (msgs[k], turn.value, turn.gpt)
                elif turn.responses is not None:
                    group = tuple(msgs[k : k + len(turn.responses)])
                    self._tools[id(msgs[k])] = (group, turn.value, turn.responses)
        return gpt

    def gpt_parse(self, m: Message, raw: str) -> _Gpt | None:
        """The kept parse of ``raw`` when ``m`` is the message read from it."""
        known = self._index().get(id(m))
        return known[2] if known is not None and known[0] is m and known[1] is raw else None

    def tool_parse(self, members: Sequence[Message], raw: str) -> list[_Resp] | None:
        """The kept parse of ``raw`` when ``members`` are the messages read from it."""
        self._index()
        known = self._tools.get(id(members[0]))
        if known is None or known[1] is not raw or len(known[0]) != len(members):
            return None
        same = all(a is b for a, b in zip(known[0], members, strict=True))
        return known[2] if same else None


def _trajectory(
    source: Source,
    obj: Any,
    jp: str,
    line: int | None,
    top_form: str,
    read: ReadTurns | None = None,
) -> Transcript:
    """The trajectory in ``obj``; ``read``, when given, keeps what was parsed of its turns."""
    if not isinstance(obj, dict):
        raise LoadError(
            source.path,
            f"trajectory is a JSON {json_type(obj)}",
            line=line,
            json_path=jp,
            expected="an object with 'conversations'",
        )
    turns = _turns(source, obj, jp, line)
    _pair(turns)
    trusted: dict[int, str] = {}
    starts: list[int] | None = [] if read is not None else None
    messages = _messages(turns, trusted, starts)
    extra: dict[str, Any] = {"_top_form": top_form, "_key_order": list(obj)}
    warnings: list[str] = []
    tools: tuple[Any, ...] = ()
    raw_tools = obj.get("tools", ...)
    if isinstance(raw_tools, str):
        try:
            parsed = orjson.loads(raw_tools) if raw_tools.strip() else []
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            tools, extra["_tools_raw"] = tuple(parsed), raw_tools
        else:
            extra["tools"] = raw_tools
            warnings.append("'tools' is not a JSON list of tool schemas (kept verbatim)")
    elif isinstance(raw_tools, list):
        tools, extra["_tools_form"] = tuple(raw_tools), "list"
    elif raw_tools is not ...:
        extra["tools"] = raw_tools
    if tools:
        _mark_embedded_tools(messages, tools, raw_tools)
    summaries: list[int] = []
    msgs, found = finish(messages, valid_args=trusted, summaries=summaries)
    if read is not None and starts is not None:
        read.keep(turns, starts, msgs)
    warnings[:0] = found
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    known = ["conversations", "tools"] if model is None else ["conversations", "tools", "model"]
    # LLaMA-Factory's layout keeps the system prompt in a top-level "system" string.
    system = obj.get("system") if isinstance(obj.get("system"), str) else None
    if system is not None:
        known.append("system")
        extra["_system_key"] = True
    extra.update(rest(obj, known))
    return Transcript(
        messages=msgs,
        format=NAME,
        system_prompt=system,
        tools=tools,
        model=model,
        path=str(source.path),
        session_id=_id_text(obj.get("id")),
        compactions=tuple(summary_events(msgs, summaries)),
        extra=extra,
        warnings=tuple(warnings),
    )


def _iter_source(source: Source) -> Iterator[Transcript]:
    doc = source.doc
    if source.kind == "jsonl":
        for ln in doc.lines:
            yield _trajectory(source, ln.value, "$", ln.number, "jsonl")
    elif isinstance(doc, list):
        for i, obj in enumerate(doc):
            yield _trajectory(source, obj, f"$[{i}]", None, "list")
    else:
        yield _trajectory(source, doc, "$", None, "object")


def _count(source: Source) -> int:
    if source.kind == "jsonl":
        return len(source.doc.lines)
    return len(source.doc) if isinstance(source.doc, list) else 1


def read_all(source: Source, options: LoadOptions) -> list[Transcript]:
    """Every trajectory in a parsed source, in file order."""
    return list(_iter_source(source))


def _id_text(value: Any) -> str | None:
    """A trajectory ``id`` as the text ``--session`` gives: a string, or an integer's digits."""
    if type(value) is str:
        return value
    if type(value) is int:  # (not a bool)
        return str(value)
    return None


def _pick(source: Source, session: str, total: int) -> Transcript:
    """The trajectory ``session`` names: its ``id`` field, or its 1-based number."""
    doc = source.doc
    if source.kind == "jsonl":
        raw: list[tuple[Any, str, int | None, str]] = [
            (ln.value, "$", ln.number, "jsonl") for ln in doc.lines
        ]
    elif isinstance(doc, list):
        raw = [(obj, f"$[{i}]", None, "list") for i, obj in enumerate(doc)]
    else:
        raw = [(doc, "$", None, "object")]
    # An exact id match wins over the 1-based number; an integer id matches its digits.
    for obj, jp, line, form in raw:
        if isinstance(obj, dict) and _id_text(obj.get("id")) == session:
            return _trajectory(source, obj, jp, line, form)
    number = session.removeprefix("#")
    if number.isdigit() and 1 <= int(number) <= total:
        obj, jp, line, form = raw[int(number) - 1]
        return _trajectory(source, obj, jp, line, form)
    raise LoadError(
        source.path,
        f"no trajectory {clip(session)} among the {total} in the file",
        expected=f"a trajectory id, or a number from 1 to {total}",
    )


def read(source: Source, options: LoadOptions) -> Transcript:
    """One trajectory of the source: the one ``options.session`` names (its ``id``, or
    its 1-based number), else the first (a warning says when there are more)."""
    if source.kind not in ("json", "jsonl"):
        raise LoadError(source.path, "not a JSON file", expected="ShareGPT JSON or JSONL")
    if source.kind == "json" and not isinstance(source.doc, (dict, list)):
        raise LoadError(
            source.path,
            f"found a JSON {json_type(source.doc)}",
            json_path="$",
            expected="a trajectory object, a list of them, or one per line",
        )
    total = _count(source)
    if total == 0:
        raise LoadError(
            source.path,
            "the list holds no trajectories",
            json_path="$",
            expected="at least one trajectory",
        )
    notes: list[str] = []
    if options.session is not None:
        first = _pick(source, options.session, total)
        if total > 1:
            notes.append(f"file holds {total} trajectories; loaded trajectory {options.session}")
    else:
        first = next(_iter_source(source))
        if total > 1:
            notes.append(
                f"file holds {total} trajectories; loaded the first "
                "(--session N or a trajectory id picks another)"
            )
    if source.kind == "jsonl":
        notes += bad_line_warnings(source.doc)
    return replace(first, warnings=(*first.warnings, *notes)) if notes else first


def read_line(data: bytes, path: str = "<line>") -> tuple[Transcript, ReadTurns | None]:
    """``load_bytes(data, path, "sharegpt")`` of one line of a dataset (the same
    transcript, or the same error), and what was parsed of its turns for
    :func:`write_compact` (None when it was not read here).

    A line holding one JSON object (no line break) is read straight from the parsed
    object: ``load_bytes`` would parse it as one JSON document, weigh it as a one-line
    JSONL file too, sniff both readings (:func:`sniff` scores them alike, so the
    document wins) and read the document. Any other line, and any line that fails
    here, is ``load_bytes``'s to read or to report.
    """
    if data[:1] == b"{" and b"\n" not in data and b"\x00" not in data[:8192]:
        read = ReadTurns()
        with gc_paused(), contextlib.suppress(Exception):
            obj = orjson.loads(data)
            if type(obj) is dict:
                source = Source(path=_line_path(path), data=data, doc=obj, kind="json")
                return _trajectory(source, obj, "$", None, "object", read), read
    from tinyjuice.formats import load_bytes

    return load_bytes(data, path, NAME), None


@lru_cache(maxsize=16)
def _line_path(path: str) -> Path:
    """``Path(path)``, one object per name: a dataset's lines share it (and its text)."""
    return Path(path)


def iter_trajectories(path: str | Path, *, lenient: bool = False) -> Iterator[Transcript]:
    """Stream the trajectories of a file.

    JSONL is read one line at a time (the file is never loaded whole); a JSON list or
    object is parsed in one go. With ``lenient``, malformed JSONL lines are skipped.
    """
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError:
        read_bytes(p)  # raises the LoadError that names the problem
        raise
    with fh:
        first = b""
        for raw in fh:
            if raw.strip():
                first = raw
                break
        jsonl = False
        if first.lstrip().startswith(b"{"):
            try:
                jsonl = isinstance(orjson.loads(first), dict)
            except orjson.JSONDecodeError:
                jsonl = False
        fh.seek(0)
        if not jsonl:
            data = fh.read()
            source = Source(path=p, data=data, doc=parse_json(p, data), kind="json")
            if not isinstance(source.doc, (dict, list)):
                raise LoadError(
                    p,
                    f"found a JSON {json_type(source.doc)}",
                    json_path="$",
                    expected="a trajectory object or a list of them",
                )
            yield from _iter_source(source)
            return
        stub = Source(path=p, data=b"", doc=None, kind="jsonl")
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if lenient:
                    continue
                raise LoadError(
                    p, f"invalid JSON: {exc.msg}", line=n, expected="one trajectory object per line"
                ) from None
            if lenient and not isinstance(obj, dict):
                continue
            yield _trajectory(stub, obj, "$", n, "jsonl")


# ------------------------------------------------------------------------------ write


def _arguments_value(call: ToolCall, form: str | None) -> Any:
    if form == "string":
        return call.arguments
    if not call.arguments:
        return {}
    try:
        return orjson.loads(call.arguments)
    except orjson.JSONDecodeError:
        return _SENTINEL


def _render_call(call: ToolCall, hint: Mapping[str, Any]) -> str:
    raw = hint.get("raw")
    if isinstance(raw, str):
        again = _parse_call(raw)
        if again.name == call.name and again.arguments == call.arguments:
            return raw
    form = hint.get("args")
    keys = list(
        hint.get("keys")
        or (["name", "arguments", "id"] if hint.get("inner_id") else ["name", "arguments"])
    )
    extra = hint.get("extra", {})
    obj: dict[str, Any] = {}
    for key in keys:
        if key == "name":
            obj["name"] = call.name
        elif key == "arguments":
            if not (form == "absent" and not call.arguments):
                obj["arguments"] = _arguments_value(call, form)
        elif key == "id" and hint.get("inner_id"):
            obj["id"] = call.id
        elif key in extra:
            obj[key] = extra[key]
    if "arguments" not in keys and call.arguments:
        obj["arguments"] = _arguments_value(call, form)
    text = json.dumps(obj, ensure_ascii=False)
    # Arguments that are not JSON go in verbatim.
    return text.replace(json.dumps(_SENTINEL), call.arguments)


def _render_function_call(m: Message) -> str:
    """A ``function_call`` turn's value: the source's own text when the calls are unchanged,
    else ``{"name", "arguments"}`` (a list of them for several calls)."""
    raw = m.hints.get("raw")
    now = [(c.name, c.arguments) for c in m.tool_calls]
    if isinstance(raw, str) and [(c.name, c.arguments) for c in _function_calls(raw)] == now:
        return raw
    hints = m.hints.get("calls") or []
    rendered = [
        _render_call(c, hints[k] if k < len(hints) else {}) for k, c in enumerate(m.tool_calls)
    ]
    return rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"


def _gpt_unchanged(m: Message, raw: str, read: ReadTurns | None) -> bool:
    g = read.gpt_parse(m, raw) if read is not None else None
    if g is None:
        g = _parse_gpt(raw)
    if tuple(g.parts) != m.parts or len(g.calls) != len(m.tool_calls) or m.reasoning:
        return False
    return all(
        c.name == t.name
        and c.arguments == t.arguments
        and (c.inner_id is None or c.inner_id == t.id)
        for c, t in zip(g.calls, m.tool_calls, strict=True)
    )


def _render_gpt(m: Message, own: bool, read: ReadTurns | None) -> str:
    raw = m.hints.get("raw") if own else None
    if isinstance(raw, str) and _gpt_unchanged(m, raw, read):
        return raw
    if not m.tool_calls and not m.thinking and not m.reasoning and not own:
        return m.text
    pieces: list[str] = []
    for p in m.parts:
        if isinstance(p, ThinkingPart):
            pieces.append(f"<think>\n{p.text}\n</think>")
        elif isinstance(p, TextPart) and (p.text or len(m.parts) == 1):
            pieces.append(p.text)
        else:
            pieces.append("")  # media has no ShareGPT form
    if m.reasoning and not m.thinking:
        pieces.insert(0, f"<think>\n{m.reasoning}\n</think>")
    call_hints = m.hints.get("calls") if own else None
    calls = [
        "<tool_call>\n"
        + _render_call(c, call_hints[k] if call_hints and k < len(call_hints) else {})
        + "\n</tool_call>"
        for k, c in enumerate(m.tool_calls)
    ]
    ordered = in_layout(m.hints.get("layout") if own else None, pieces, calls)
    if len(ordered) == 1:
        return ordered[0]
    return "\n".join(s for s in ordered if s)


def _render_response(m: Message, hint: Mapping[str, Any], single: bool) -> str:
    form = hint.get("form")
    if form == "bare" and single:
        return m.text
    if form in ("text", "bare"):
        return f"<tool_response>\n{m.text}\n</tool_response>"
    if form == "json":
        keys = hint.get("keys", [])
        extra = hint.get("extra", {})
    else:
        keys = ["tool_call_id", "name", "content"]
        extra = {}
    content: Any = m.text
    if hint.get("content_json"):
        try:
            content = orjson.loads(m.text)
        except orjson.JSONDecodeError:
            content = m.text
    obj: dict[str, Any] = {}
    for key in keys:
        if key == "content":
            obj["content"] = content
        elif key == "tool_call_id" and "tool_call_id" not in extra:
            if m.tool_call_id is not None:
                obj["tool_call_id"] = m.tool_call_id
        elif key == "name" and "name" not in extra:
            if m.tool_name is not None:
                obj["name"] = m.tool_name
        elif key in extra:
            obj[key] = extra[key]
    return f"<tool_response>\n{json.dumps(obj, ensure_ascii=False)}\n</tool_response>"


def _tool_group_unchanged(members: Sequence[Message], raw: str, read: ReadTurns | None) -> bool:
    resps = read.tool_parse(members, raw) if read is not None else None
    if resps is None:
        resps = _parse_tool_value(raw)
    if len(resps) != len(members):
        return False
    for r, m in zip(resps, members, strict=True):
        if m.parts != (TextPart(r.text),):
            return False
        if r.explicit_id is not None and r.explicit_id != m.tool_call_id:
            return False
        if r.name is not None and r.name != m.tool_name:
            return False
    return True


def _render_tool_group(members: Sequence[Message], own: bool, read: ReadTurns | None) -> str:
    raw = members[0].hints.get("raw") if own else None
    if isinstance(raw, str) and _tool_group_unchanged(members, raw, read):
        return raw
    single = len(members) == 1
    return "\n".join(
        _render_response(m, m.hints.get("response", {}) if own else {}, single) for m in members
    )


def _turn(sender: str, value: str, extras: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"from": sender, "value": value}
    for extra in extras:
        # Most turns keep no other field: the shared empty mapping is not a dict, and
        # update() would walk it in Python.
        if extra is not EMPTY:
            out.update(extra)
    return out


def _conversations(
    messages: Sequence[Message], own: bool, read: ReadTurns | None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        sender = (m.hints.get("from") if own else None) or _ROLE_FROM[m.role]
        extras = [m.extra] if own else []
        if m.role is Role.TOOL:
            # One tool turn: the results split from it (same ``turn`` hint), or a run of
            # results that carry no hint (another format's, or new ones).
            key = m.hints.get("turn") if own else None
            j = i + 1
            while j < n and messages[j].role is Role.TOOL:
                if (messages[j].hints.get("turn") if own else None) != key:
                    break
                j += 1
            members = messages[i:j]
            if own:
                extras = [mm.extra for mm in members]
            out.append(_turn(sender, _render_tool_group(members, own, read), extras))
            i = j
            continue
        if sender == _FUNCTION_CALL and (not m.tool_calls or m.text or m.thinking):
            sender = "gpt"  # text cannot go in a call turn: written in the Hermes layout
        if sender == _FUNCTION_CALL:
            value = _render_function_call(m)
        else:
            value = _render_gpt(m, own, read) if m.role is Role.ASSISTANT else m.text
        out.append(_turn(sender, value, extras))
        i += 1
    return out


def _tools_value(transcript: Transcript, extra: dict[str, Any]) -> tuple[bool, Any]:
    raw = extra.pop("_tools_raw", None)
    form = extra.pop("_tools_form", None)
    if "tools" in extra:
        return False, None  # kept verbatim in extra
    tools = [dict(t) if isinstance(t, Mapping) else t for t in transcript.tools]
    if isinstance(raw, str):
        try:
            unchanged = orjson.loads(raw) == tools if raw.strip() else not tools
        except orjson.JSONDecodeError:
            unchanged = False
        if unchanged:
            return True, raw
    if form == "list":
        return True, tools
    if not tools and raw is None:
        return False, None
    return True, json.dumps(tools, ensure_ascii=False)


def _container(top_form: str, jsonl: bool | None) -> str:
    """The container to write: the file's own, unless ``jsonl`` asks for (or against) lines."""
    if jsonl is None:
        return top_form
    if jsonl:
        return "jsonl"
    return "object" if top_form == "jsonl" else top_form


def _document(
    transcript: Transcript, jsonl: bool | None, read: ReadTurns | None = None
) -> tuple[Any, bool]:
    """``(document, one line?)`` that :func:`write` dumps: the trajectory object, or a
    one-item list of it, and whether it goes on one compact line."""
    own = transcript.format == NAME
    messages = list(transcript.messages)
    conversations = _conversations(messages, own, read)
    extra = dict(transcript.extra) if own else {}
    system_key = extra.pop("_system_key", False)
    if (
        transcript.system_prompt
        and not system_key
        and not (messages and messages[0].role in (Role.SYSTEM, Role.DEVELOPER))
    ):
        conversations.insert(0, {"from": "system", "value": transcript.system_prompt})
    top_form = _container(extra.pop("_top_form", "object"), jsonl)
    order = extra.pop("_key_order", [])
    fields: dict[str, Any] = {"conversations": conversations}
    has_tools, tools = _tools_value(transcript, extra)
    if has_tools:
        fields["tools"] = tools
    if transcript.model is not None:
        fields["model"] = transcript.model
    if system_key and transcript.system_prompt is not None:
        fields["system"] = transcript.system_prompt
    fields.update(extra)
    doc = {k: fields[k] for k in order if k in fields}
    doc.update((k, v) for k, v in fields.items() if k not in doc)
    if top_form == "list":
        return [doc], False
    return doc, top_form == "jsonl"


def write(transcript: Transcript, *, jsonl: bool | None = None) -> bytes:
    """Render ``transcript`` as one ShareGPT trajectory.

    The container is the file's own (an object, a one-item list, or a JSONL line);
    ``jsonl=True`` writes one compact line ending in ``\n`` whatever the source was,
    ``jsonl=False`` a JSON document.
    """
    doc, line = _document(transcript, jsonl)
    return dump_document(doc, jsonl=line)


def write_compact(transcript: Transcript, read: ReadTurns | None = None) -> bytes:
    """:func:`write` in the file's own container, on one compact line without a line
    ending: the bytes of ``orjson.dumps(orjson.loads(write(transcript)))`` (what a
    dataset line is rewritten as), without indenting and parsing it first. ``read``:
    what reading the trajectory it came from kept (:func:`read_line`), the same bytes
    with fewer turns parsed again."""
    doc, _ = _document(transcript, None, read)
    return orjson.dumps(doc)
