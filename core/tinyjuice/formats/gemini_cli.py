"""Gemini CLI chat recordings (read-only).

Details: docs/formats.md (`tinyjuice.formats.gemini_cli`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tinyjuice.formats._io import (
    LoadError,
    LoadOptions,
    Source,
    bad_line_warnings,
    json_type,
    key_state,
)
from tinyjuice.formats._messages import finish, media_from_url
from tinyjuice.formats._records import (
    count,
    json_text,
    reset_event,
    text_message,
    tool_call_of,
    tool_result,
)
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    MediaPart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Trigger,
    Usage,
)

__all__ = ["NAME", "read", "sniff"]

NAME = "gemini-cli"

_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_NOTE_TYPES = frozenset({"info", "error", "warning"})
_SNAPSHOT = "<state_snapshot>"
_COMPRESSED = re.compile(r"compress\w*.*?from\s+([\d,]+)\s+to\s+([\d,]+)\s+tokens", re.I | re.S)
_COMMAND = re.compile(r"^/[a-z][\w-]*(\s+\S.*)?$", re.S)


# ------------------------------------------------------------------------------ sniff


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _TYPES and "id" in value


def sniff(source: Source) -> int:
    if source.kind == "json":
        doc = source.doc
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return 0
        if not isinstance(doc.get("sessionId"), str):
            return 0
        head = doc["messages"][:20]
        if "projectHash" in doc and all(_is_record(m) for m in head):
            return 95
        return 60 if head and all(_is_record(m) for m in head) else 0
    if source.kind != "jsonl":
        return 0
    head = source.head_lines(25)
    if len(source.doc.lines) == 1 and "messages" in head[0]:
        return 0  # one session document written on one line: read as the document
    if any("$rewindTo" in v or isinstance(v.get("$set"), dict) for v in head):
        return 95
    if any(v.get("type") == "gemini" and "id" in v for v in head):
        return 95
    first = head[0] if head else {}
    if isinstance(first.get("sessionId"), str) and isinstance(first.get("projectHash"), str):
        return 90 if all("uuid" not in v for v in head) else 0
    return 0


# ------------------------------------------------------------------------------- fold


@dataclass(slots=True)
class _Fold:
    meta: dict[str, Any] = field(default_factory=dict)
    #: The live history, by message id, in order (upserts keep a message's place).
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Messages a compression replaced, in order: kept before its summary.
    replaced: list[dict[str, Any]] = field(default_factory=list)
    rewinds: int = 0
    skipped: int = 0


def _key(record: dict[str, Any], n: int) -> str:
    return record["id"] if isinstance(record.get("id"), str) else f"#{n}"


def _is_snapshot(record: dict[str, Any]) -> bool:
    return _text_of(record.get("content")).lstrip().startswith(_SNAPSHOT)


def _replace(fold: _Fold, messages: list[Any]) -> None:
    """``$set.messages``: the new history; a compression keeps the replaced turns apart."""
    new = {_key(m, k): m for k, m in enumerate(messages) if isinstance(m, dict)}
    compressed = any(_is_snapshot(m) and k not in fold.live for k, m in new.items())
    if compressed:
        fold.replaced += [m for k, m in fold.live.items() if k not in new]
    fold.live = new


def _rewind(fold: _Fold, target: str) -> None:
    keys = list(fold.live)
    cut = keys.index(target) if target in keys else 0
    for k in keys[cut:]:
        del fold.live[k]
    fold.rewinds += 1


def _fold_lines(source: Source) -> _Fold:
    fold = _Fold()
    for ln in source.doc.lines:
        rec = ln.value
        if isinstance(rec.get("$rewindTo"), str):
            _rewind(fold, rec["$rewindTo"])
        elif isinstance(rec.get("id"), str):
            fold.live[rec["id"]] = rec
        elif isinstance(rec.get("$set"), dict):
            patch = rec["$set"]
            if isinstance(patch.get("messages"), list):
                _replace(fold, patch["messages"])
            fold.meta.update((k, v) for k, v in patch.items() if k != "messages")
        elif isinstance(rec.get("sessionId"), str):
            fold.meta.update((k, v) for k, v in rec.items() if k != "messages")
            for k, m in enumerate(rec.get("messages") or ()):
                if isinstance(m, dict):
                    fold.live[_key(m, k)] = m
        else:
            fold.skipped += 1
    return fold


def _fold_document(source: Source) -> _Fold:
    doc = source.doc
    raw = doc.get("messages")
    if not isinstance(raw, list):
        raise LoadError(
            source.path,
            f"'messages' is {key_state(doc, 'messages')}",
            json_path="$.messages",
            expected="a list of Gemini CLI message records",
        )
    fold = _Fold(meta={k: v for k, v in doc.items() if k != "messages"})
    for k, m in enumerate(raw):
        if not isinstance(m, dict):
            raise LoadError(
                source.path,
                f"message is a JSON {json_type(m)}",
                json_path=f"$.messages[{k}]",
                expected="a message record with 'type' and 'content'",
            )
        fold.live[_key(m, k)] = m
    return fold


# -------------------------------------------------------------------------- messages


def _text_of(content: Any) -> str:
    """The text of a ``content`` value: a string, a part, or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content["text"] if isinstance(content.get("text"), str) else ""
    if isinstance(content, list):
        return "".join(_text_of(p) for p in content if isinstance(p, (str, dict)))
    return ""


def _media(part: dict[str, Any]) -> MediaPart | None:
    inline = part.get("inlineData")
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        mime = inline.get("mimeType") or "application/octet-stream"
        return media_from_url(f"data:{mime};base64,{inline['data']}")
    file = part.get("fileData")
    if isinstance(file, dict) and isinstance(file.get("fileUri"), str):
        return media_from_url(file["fileUri"])
    return None


def _response_text(response: Any) -> tuple[str, bool]:
    """A functionResponse's text, and whether it reports an error."""
    if isinstance(response, dict):
        if isinstance(response.get("output"), str):
            return response["output"], False
        if isinstance(response.get("error"), str):
            return response["error"], True
    return json_text(response), False


def _result_text(result: Any) -> tuple[str, bool]:
    """The text of a tool call's ``result`` (parts, one part or a string)."""
    if isinstance(result, dict):
        result = [result]
    if not isinstance(result, list):
        return json_text(result), False
    texts: list[str] = []
    error = False
    for part in result:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            text, err = _response_text(part["functionResponse"].get("response"))
            texts.append(text)
            error = error or err
        else:
            texts.append(_text_of(part))
    return "\n".join(t for t in texts if t), error


@dataclass(slots=True)
class _Content:
    parts: list[Part] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    #: functionResponse parts: (call id when given, tool name, text, is_error).
    results: list[tuple[str | None, str | None, str, bool]] = field(default_factory=list)


def _content(content: Any, source_id: str | None) -> _Content:
    """Text, media, model function calls and user function responses of a ``content``."""
    out = _Content()
    items = content if isinstance(content, list) else [content]
    for k, part in enumerate(items):
        if isinstance(part, str):
            if part:
                out.parts.append(TextPart(part))
            continue
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            thought = part.get("thought") is True
            out.parts.append(ThinkingPart(part["text"]) if thought else TextPart(part["text"]))
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            call_id = call.get("id") if isinstance(call.get("id"), str) else f"{source_id}_{k}"
            out.calls.append(tool_call_of(call_id, str(call.get("name", "")), call.get("args")))
        elif isinstance(part.get("functionResponse"), dict):
            resp = part["functionResponse"]
            text, err = _response_text(resp.get("response"))
            call_id = resp.get("id") if isinstance(resp.get("id"), str) else None
            name = resp.get("name") if isinstance(resp.get("name"), str) else None
            out.results.append((call_id, name, text, err))
        else:
            media = _media(part)
            if media is not None:
                out.parts.append(media)
    return out


def _thoughts(raw: Any) -> list[Part]:
    parts: list[Part] = []
    for t in raw if isinstance(raw, list) else ():
        if isinstance(t, dict):
            subject, desc = t.get("subject"), t.get("description")
            pieces = [s for s in (subject, desc) if isinstance(s, str) and s]
            if pieces:
                parts.append(ThinkingPart(": ".join(pieces)))
    return parts


def _calls(raw: Any, source_id: str | None) -> tuple[list[ToolCall], list[Message]]:
    """A gemini message's ``toolCalls``: the calls, and the results recorded beside them."""
    calls: list[ToolCall] = []
    results: list[Message] = []
    for k, tc in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(tc, dict):
            continue
        call_id = tc["id"] if isinstance(tc.get("id"), str) else f"{source_id}_call_{k}"
        name = str(tc.get("name", ""))
        status = tc.get("status")
        calls.append(tool_call_of(call_id, name, tc.get("args"), {"status": status}))
        if tc.get("result") is not None:
            text, err = _result_text(tc["result"])
        elif isinstance(tc.get("resultDisplay"), str):
            text, err = tc["resultDisplay"], False
        elif isinstance(status, str) and status not in ("success", "executing", "scheduled"):
            text, err = f"[{status}]", True
        else:
            continue
        err = err or status in ("error", "cancelled")
        results.append(tool_result(call_id, name, text, is_error=err, source_id=source_id))
    return calls, results


def _usage(tokens: Any, index: int) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cached = count(tokens.get("cached"))
    return Usage(
        input_tokens=max(count(tokens.get("input")) - cached, 0) + count(tokens.get("tool")),
        cache_read_tokens=cached,
        output_tokens=count(tokens.get("output")),
        reasoning_tokens=count(tokens.get("thoughts")),
        message_index=index,
    )


@dataclass(slots=True)
class _Built:
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    #: Indexes of the compression summaries (``<state_snapshot>`` user messages).
    summaries: list[int] = field(default_factory=list)
    commands: list[tuple[int, str]] = field(default_factory=list)
    model: str | None = None
    #: Calls made and not answered yet, (id, name) in order; ids already answered.
    pending: list[tuple[str, str]] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)

    def answer(self, result: Message) -> None:
        """Add a tool result, unless its call was answered already (history rewritten
        after a compression repeats results as functionResponse parts)."""
        call_id = result.tool_call_id or ""
        if call_id in self.answered:
            return
        self.answered.add(call_id)
        self.pending = [p for p in self.pending if p[0] != call_id]
        self.messages.append(result)

    def call_for(self, call_id: str | None, name: str | None, fallback: str) -> str:
        """The call a response answers: its own id, else the first pending call of that
        name (or the first pending one), else ``fallback`` (an orphan)."""
        if call_id is not None:
            return call_id
        for pid, pname in self.pending:
            if name is None or pname == name:
                return pid
        return fallback


def _user(built: _Built, rec: dict[str, Any], sid: str | None) -> None:
    c = _content(rec.get("content"), sid)
    for k, (call_id, name, text, err) in enumerate(c.results):
        target = built.call_for(call_id, name, f"{sid}_response_{k}")
        built.answer(tool_result(target, name, text, is_error=err, source_id=sid))
    if not c.parts:
        return
    text = "\n".join(p.text for p in c.parts if isinstance(p, TextPart))
    snapshot = text.lstrip().startswith(_SNAPSHOT)
    m = text_message(Role.USER, c.parts, source_id=sid, summary=snapshot)
    if not snapshot and _COMMAND.match(text.strip()):
        # A slash command the CLI ran: not an ask the model answers.
        m = replace(m, meta=replace(m.meta, is_injected=True, injected_kind="command"))
        built.commands.append((len(built.messages), text.strip().split()[0]))
    if snapshot:
        built.summaries.append(len(built.messages))
    built.messages.append(m)


def _gemini(built: _Built, rec: dict[str, Any], sid: str | None) -> None:
    c = _content(rec.get("content"), sid)
    calls, results = _calls(rec.get("toolCalls"), sid)
    # A rewritten history holds the calls as functionCall parts too: toolCalls win.
    recorded = {call.id for call in calls}
    calls += [call for call in c.calls if call.id not in recorded]
    parts = _thoughts(rec.get("thoughts")) + c.parts
    index = len(built.messages)
    extra = {"model": rec["model"]} if isinstance(rec.get("model"), str) else EMPTY
    built.messages.append(
        text_message(Role.ASSISTANT, parts, source_id=sid, tool_calls=calls, extra=extra)
    )
    built.pending += [(call.id, call.name) for call in calls]
    for result in results:
        built.answer(result)
    if isinstance(rec.get("model"), str):
        built.model = rec["model"]
    measured = _usage(rec.get("tokens"), index)
    if measured is not None:
        built.usage.append(measured)


def _build(records: Iterable[dict[str, Any]]) -> _Built:
    built = _Built()
    for rec in records:
        kind = rec.get("type")
        sid = rec["id"] if isinstance(rec.get("id"), str) else None
        if kind == "user":
            _user(built, rec, sid)
        elif kind == "gemini":
            _gemini(built, rec, sid)
        elif kind in _NOTE_TYPES:
            built.notes.append({**rec, "_at": len(built.messages)})
        else:
            built.notes.append({**rec, "_at": len(built.messages), "_unknown": True})
    return built


def _events(built: _Built, messages: tuple[Message, ...]) -> list[CompactionEvent]:
    counts = [
        (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
        for note in built.notes
        if note.get("type") == "info" and (m := _COMPRESSED.search(_text_of(note.get("content"))))
    ]
    events: list[CompactionEvent] = []
    previous = -1
    for k, i in enumerate(built.summaries):
        manual = any(previous < at < i and cmd == "/compress" for at, cmd in built.commands)
        pre, post = counts[k] if k < len(counts) else (None, None)
        events.append(
            reset_event(
                i,
                summary_index=i,
                trigger=Trigger.MANUAL if manual else Trigger.UNKNOWN,
                pre=pre,
                post=post,
                source_id=messages[i].meta.source_id,
            )
        )
        previous = i
    return events


def read(source: Source, options: LoadOptions) -> Transcript:
    if source.kind == "json":
        if not isinstance(source.doc, dict):
            raise LoadError(
                source.path,
                f"found a JSON {json_type(source.doc)}",
                json_path="$",
                expected="a Gemini CLI session object with 'sessionId' and 'messages'",
            )
        fold = _fold_document(source)
    elif source.kind == "jsonl":
        fold = _fold_lines(source)
    else:
        raise LoadError(source.path, "not JSON", expected="a Gemini CLI session (.json or .jsonl)")
    if not isinstance(fold.meta.get("sessionId"), str) and not fold.live and not fold.replaced:
        raise LoadError(
            source.path,
            "no session metadata and no message records",
            expected="a Gemini CLI session: a 'sessionId' record and message records",
        )
    built = _build([*fold.replaced, *fold.live.values()])
    msgs, warnings = finish(built.messages)
    if fold.rewinds:
        warnings.append(f"{fold.rewinds} rewind(s) replayed: the messages they dropped are gone")
    if fold.skipped:
        warnings.append(f"{fold.skipped} record(s) of an unknown kind skipped")
    if source.kind == "jsonl":
        warnings += bad_line_warnings(source.doc)
    extra = {k: v for k, v in fold.meta.items() if k not in ("sessionId",)}
    if built.notes:
        extra["notes"] = built.notes
    return Transcript(
        messages=msgs,
        format=NAME,
        model=built.model,
        path=str(source.path),
        session_id=fold.meta.get("sessionId")
        if isinstance(fold.meta.get("sessionId"), str)
        else None,
        compactions=tuple(_events(built, msgs)),
        usage=tuple(built.usage),
        extra=extra or EMPTY,
        warnings=tuple(warnings),
    )
