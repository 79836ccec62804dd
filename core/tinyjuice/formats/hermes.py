"""Hermes agent transcripts: session log JSON, gateway JSONL, and ``state.db`` (SQLite).

Details: docs/formats.md (`tinyjuice.formats.hermes`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from tinyjuice.formats import _hermes_state as _db
from tinyjuice.formats._hermes_state import SessionInfo, list_sessions
from tinyjuice.formats._io import (
    LoadError,
    LoadOptions,
    Source,
    bad_line_warnings,
    clip,
    clip_text,
    expect,
)
from tinyjuice.formats._messages import fast_paths, finish, summary_events
from tinyjuice.formats.openai import (
    OPENAI_SHAPED,
    fast_message,
    known_keys,
    message_from_dict,
    message_to_dict,
)
from tinyjuice.model import EMPTY, CompactionEvent, Message, Role, Transcript, Trigger

__all__ = ["NAME", "SessionInfo", "list_sessions", "read", "sniff", "write"]

NAME = "hermes"

#: The session log keys written from Transcript fields, in Hermes' order (the order used
#: for transcripts that did not come from a session log).
_DEFAULT_ORDER = ("session_id", "model", "system_prompt", "tools", "message_count", "messages")
#: Message hint holding the source's key order, so a write puts keys back in place.
_KEYS_HINT = "hermes_keys"
#: Message hint holding each tool call's key order.
_CALL_KEYS_HINT = "hermes_call_keys"
#: ``messages`` columns turned into message fields (the rest go to ``extra``).
_ROW_SKIP = frozenset(
    ("id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name",
     "reasoning", "active", "compacted")
)  # fmt: skip
_MAX_IDS_SHOWN = 20
_KNOWN = known_keys()


# ------------------------------------------------------------------------------ sniff


def _is_session_log(doc: Any) -> bool:
    return isinstance(doc, dict) and "session_id" in doc and isinstance(doc.get("messages"), list)


def _compact_log(source: Source) -> Source | None:
    """A session log written on one line (so parsed as JSONL) as a JSON source."""
    lines = source.doc.lines
    if len(lines) == 1 and not source.doc.bad_lines and _is_session_log(lines[0].value):
        return Source(path=source.path, data=source.data, doc=lines[0].value, kind="json")
    return None


def sniff(source: Source) -> int:
    if source.kind == "json":
        return 95 if _is_session_log(source.doc) else 0
    if source.kind == "jsonl":
        lines = source.doc.lines
        if _compact_log(source) is not None:
            return 95
        return 95 if lines and lines[0].value.get("role") == "session_meta" else 0
    if source.kind == "sqlite":
        # The only SQLite format: a non-Hermes database still gets a low score so the
        # reader can say which table or column is missing.
        try:
            with _db.open_readonly(source.path, source.data) as conn:
                return 95 if _db.looks_like_hermes(conn) else 5
        except LoadError:
            return 5
    return 0


# ------------------------------------------------------------------------------- read


def read(source: Source, options: LoadOptions) -> Transcript:
    if source.kind == "sqlite":
        return _read_db(source, options)
    if source.kind == "jsonl":
        single = _compact_log(source)
        return _read_log(single) if single is not None else _read_gateway(source, options)
    return _read_log(source)


def _completed(fast: Message, raw: dict[str, Any]) -> Message:
    """A fast-path message with Hermes' key-order hints added.

    The common shapes have no odd-typed keys to keep aside, so nothing to fix. The
    hints dict is the fast path's own, new one: completed here, before any use.
    """
    hints: dict[str, Any] = fast.hints  # type: ignore[assignment]
    hints[_KEYS_HINT] = tuple(raw)
    calls = fast.tool_calls
    if calls:
        raw_calls = raw["tool_calls"]
        if len(calls) == 1:
            hints[_CALL_KEYS_HINT] = (tuple(raw_calls[0]),)
        else:
            hints[_CALL_KEYS_HINT] = tuple([tuple(c) for c in raw_calls])
    return fast


def _message(source: Source, raw: Any, jp: str | None, index: int | None = None) -> Message:
    """One message; ``jp`` None means ``$.messages[index]`` (built only when needed)."""
    fast = fast_message(raw, index, _KNOWN) if index is not None and fast_paths() else None
    if fast is not None:
        return _completed(fast, raw)
    if jp is None:
        jp = f"$.messages[{index}]"
    m = message_from_dict(source, raw, jp, index=index)
    fix: dict[str, Any] = {}
    # Keys the OpenAI reader models but drops when their value has an odd type.
    if m.role is Role.TOOL and "name" in raw and not isinstance(raw["name"], str):
        fix["name"] = raw["name"]
    if "tool_call_id" in raw and not isinstance(raw["tool_call_id"], str):
        fix["tool_call_id"] = raw["tool_call_id"]
    hints = {**m.hints, _KEYS_HINT: tuple(raw)}
    if m.tool_calls:
        hints[_CALL_KEYS_HINT] = tuple(tuple(c) for c in raw["tool_calls"])
    return replace(m, extra={**m.extra, **fix} if fix else m.extra, hints=hints)


def _read_log(source: Source) -> Transcript:
    path = source.path
    doc = expect(
        path, source.doc, dict, "$", "a Hermes session log object with session_id and messages"
    )
    raw_messages = expect(path, doc.get("messages"), list, "$.messages", "a list of messages")
    messages: list[Message] = []
    append = messages.append
    on = fast_paths()
    for i, m in enumerate(raw_messages):
        fast = fast_message(m, i, _KNOWN) if on else None
        append(_completed(fast, m) if fast is not None else _message(source, m, None, i))
    summaries: list[int] = []
    msgs, warnings = finish(messages, summaries=summaries)

    fields: dict[str, Any] = {}
    for key in ("session_id", "model", "system_prompt"):
        if isinstance(doc.get(key), str):
            fields[key] = doc[key]
    tools = doc.get("tools")
    if isinstance(tools, list):
        fields["tools"] = tuple(tools)
    extra: dict[str, Any] = {
        "_hermes_source": "session_log",
        "_key_order": tuple(doc),
        "_messages_at_load": len(raw_messages),
    }
    extra.update((k, v) for k, v in doc.items() if k != "messages" and k not in fields)
    count = doc.get("message_count")
    if isinstance(count, int) and not isinstance(count, bool) and count != len(raw_messages):
        warnings.append(
            f"message_count says {count} but the log holds {len(raw_messages)} messages"
        )
    return Transcript(
        messages=msgs,
        format=NAME,
        system_prompt=fields.get("system_prompt"),
        tools=fields.get("tools", ()),
        model=fields.get("model"),
        path=str(path),
        session_id=fields.get("session_id"),
        compactions=tuple(summary_events(msgs, summaries)),
        extra=extra,
        warnings=tuple(warnings),
    )


def _read_gateway(source: Source, options: LoadOptions) -> Transcript:
    path = source.path
    lines = source.doc.lines
    warnings: list[str] = list(bad_line_warnings(source.doc))
    meta: dict[str, Any] = {}
    body = lines
    if lines and lines[0].value.get("role") == "session_meta":
        meta, body = dict(lines[0].value), lines[1:]
    else:
        warnings.append("no session_meta line; every line was read as a message")

    messages: list[Message] = []
    skipped: list[int] = []
    extra_meta: list[int] = []
    for line in body:
        if line.value.get("role") == "session_meta":
            extra_meta.append(line.number)
            continue
        try:
            messages.append(_message(source, line.value, "$", len(messages)))
        except LoadError as exc:
            if options.lenient:
                skipped.append(line.number)
                continue
            raise LoadError(
                path, exc.problem, line=line.number, json_path=exc.json_path, expected=exc.expected
            ) from None
    if skipped:
        shown = ", ".join(str(n) for n in skipped[:10])
        warnings.append(f"skipped {len(skipped)} line(s) that are not valid messages: {shown}")
    if extra_meta:
        shown = ", ".join(str(n) for n in extra_meta[:10])
        warnings.append(f"ignored {len(extra_meta)} further session_meta line(s): {shown}")

    summaries: list[int] = []
    msgs, more = finish(messages, summaries=summaries)
    warnings += more
    tools = meta.get("tools")
    if "tools" in meta and not isinstance(tools, list):
        raise LoadError(
            path,
            "session_meta tools is not a list",
            line=lines[0].number,
            json_path="$.tools",
            expected="a list of tool schemas",
        )
    extra: dict[str, Any] = {"_hermes_source": "gateway"}
    mapped = {
        k: meta[k] for k in ("session_id", "model", "system_prompt") if isinstance(meta.get(k), str)
    }
    extra.update((k, v) for k, v in meta.items() if k not in ("role", "tools") and k not in mapped)
    return Transcript(
        messages=msgs,
        format=NAME,
        system_prompt=mapped.get("system_prompt"),
        tools=tuple(tools or ()),
        model=mapped.get("model"),
        path=str(path),
        session_id=mapped.get("session_id"),
        compactions=tuple(summary_events(msgs, summaries)),
        extra=extra,
        warnings=tuple(warnings),
    )


# ---------------------------------------------------------------------------- state.db


def _row_message(source: Source, row: sqlite3.Row, columns: frozenset[str]) -> Message:
    rid = row["id"]
    jp = f"messages[id={rid}]"
    content = row["content"]
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    raw: dict[str, Any] = {"role": row["role"]}
    if isinstance(content, str):
        parts = _db.parts_from_content(content)
        raw["content"] = parts if parts is not None else content
    elif content is None:
        raw["content"] = None
    else:
        raw["content"] = str(content)
    calls_text = row["tool_calls"]
    if calls_text:
        try:
            calls = orjson.loads(calls_text)
        except orjson.JSONDecodeError as exc:
            raise LoadError(
                source.path,
                f"tool_calls is not valid JSON ({exc.msg})",
                json_path=f"{jp}.tool_calls",
                expected="a JSON list of tool calls",
            ) from None
        if calls:
            raw["tool_calls"] = calls
    if row["tool_call_id"] is not None:
        raw["tool_call_id"] = row["tool_call_id"]
    if row["tool_name"] is not None:
        raw["name" if row["role"] == "tool" else "tool_name"] = row["tool_name"]
    if "reasoning" in columns and row["reasoning"] is not None:
        raw["reasoning"] = row["reasoning"]
    for col, value in _db.row_dict(row).items():
        if col not in _ROW_SKIP and value is not None:
            raw[col] = value
    if "active" in columns and not row["active"]:
        raw["active"] = row["active"]
        raw["compacted"] = row["compacted"] if "compacted" in columns else 0
    m = message_from_dict(source, raw, jp)
    return replace(m, meta=replace(m.meta, source_id=str(rid)))


def _choose_session(
    source: Source, conn: sqlite3.Connection, wanted: str | None
) -> tuple[str, list[str]]:
    ids = [
        str(r[0]) for r in conn.execute("SELECT id FROM sessions ORDER BY started_at DESC, id DESC")
    ]
    if not ids:
        raise LoadError(
            source.path, "state.db holds no sessions", expected="a Hermes state.db with a session"
        )
    if wanted is not None:
        if wanted not in ids:
            shown = ", ".join(clip_text(i, 40) for i in ids[:_MAX_IDS_SHOWN])
            more = f" and {len(ids) - _MAX_IDS_SHOWN} more" if len(ids) > _MAX_IDS_SHOWN else ""
            raise LoadError(
                source.path,
                f"no session {clip(wanted)} in state.db",
                expected=f"one of the {len(ids)} session id(s): {shown}{more}",
            )
        return wanted, []
    if len(ids) == 1:
        return ids[0], []
    return ids[0], [
        f"state.db holds {len(ids)} sessions; opened {ids[0]} (newest); pass --session to choose"
    ]


def _read_db(source: Source, options: LoadOptions) -> Transcript:
    path = source.path
    with _db.open_readonly(path, source.data) as conn:
        schema = _db.check_schema(conn, path)
        sid, warnings = _choose_session(source, conn, options.session)
        session = conn.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchone()
        where = "session_id = ?"
        if schema.has_active and not options.include_inactive:
            where += " AND active = 1"
        rows = conn.execute(f"SELECT * FROM messages WHERE {where} ORDER BY id", (sid,)).fetchall()
        archived = _archived(conn, schema, sid)
        children = [
            str(r[0])
            for r in conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ? ORDER BY started_at, id",
                (sid,),
            )
        ]
        lock = None
        if schema.has_locks:
            lock = conn.execute(
                "SELECT holder, acquired_at, expires_at FROM compression_locks WHERE session_id = ?",
                (sid,),
            ).fetchone()

    messages = [_row_message(source, r, schema.messages) for r in rows]
    summaries: list[int] = []
    msgs, more = finish(messages, summaries=summaries)
    warnings += more
    inactive = sum(1 for m in msgs if "active" in m.extra)
    if inactive:
        warnings.append(
            f"includes {inactive} inactive row(s) archived by compaction (extra active=0)"
        )

    extra: dict[str, Any] = {"_hermes_source": "state_db"}
    extra.update(
        (k, v)
        for k, v in _db.row_dict(session).items()
        if k not in ("id", "model", "system_prompt")
    )
    if children:
        extra["child_session_ids"] = children
        if extra.get("end_reason") == "compression":
            # Hermes compacted this session into a child: the agent's live context
            # continues there, and this whole session is its history.
            extra["continued_in"] = children[-1]
            warnings.append(
                f"session {sid} was compacted into child session {children[-1]}: the agent's"
                f" live context continues there (open it with --session {children[-1]})"
            )
    if lock is not None:
        extra["compression_lock"] = _db.row_dict(lock)
    events = summary_events(msgs, summaries)
    if archived is not None:
        count, last_id, tokens = archived
        extra["archived_rows"] = count
        events = _in_place_event(msgs, events, count, last_id, tokens)
    model = session["model"]
    system_prompt = session["system_prompt"]
    return Transcript(
        messages=msgs,
        format=NAME,
        system_prompt=system_prompt if isinstance(system_prompt, str) else None,
        model=model if isinstance(model, str) else None,
        path=str(path),
        session_id=sid,
        compactions=tuple(events),
        extra=extra,
        warnings=tuple(warnings),
    )


def _archived(
    conn: sqlite3.Connection, schema: _db.Schema, sid: str
) -> tuple[int, int, int | None] | None:
    """(row count, last row id, summed token_count or None) of compacted rows, or None."""
    if not schema.has_active:
        return None
    cond = "session_id = ? AND active = 0"
    if "compacted" in schema.messages:
        cond += " AND compacted = 1"
    tokens = "SUM(token_count)" if "token_count" in schema.messages else "NULL"
    missing = "SUM(token_count IS NULL)" if "token_count" in schema.messages else "COUNT(*)"
    count, last_id, total, unknown = conn.execute(
        f"SELECT COUNT(*), MAX(id), {tokens}, {missing} FROM messages WHERE {cond}", (sid,)
    ).fetchone()
    if not count:
        return None
    return int(count), int(last_id), (int(total) if total is not None and not unknown else None)


def _in_place_event(
    msgs: Sequence[Message],
    events: list[CompactionEvent],
    count: int,
    last_id: int,
    tokens: int | None,
) -> list[CompactionEvent]:
    """Mark the in-place compaction: the first summary among the rows written after it."""
    info: dict[str, Any] = {"in_place": True, "archived_rows": count}
    if tokens is not None:
        info["archived_token_count"] = tokens
    start = next(
        (
            i
            for i, m in enumerate(msgs)
            if m.meta.source_id is not None and int(m.meta.source_id) > last_id
        ),
        None,
    )
    if start is None:
        return events
    # The new active rows (head copy, summary, tail) are the live context; archived rows
    # loaded before them (include_inactive) are history: the event resets there.
    resets = start > 0 and msgs[start - 1].extra.get("active") == 0
    for j, ev in enumerate(events):
        if ev.message_index >= start:
            if resets:
                ev = replace(ev, message_index=start, resets_context=True)
            return [*events[:j], replace(ev, extra=info), *events[j + 1 :]]
    event = CompactionEvent(
        message_index=start,
        trigger=Trigger.UNKNOWN,
        source_id=msgs[start].meta.source_id,
        extra=info,
        resets_context=resets,
    )
    return sorted([*events, event], key=lambda e: e.message_index)


# ------------------------------------------------------------------------------ write


def _message_out(m: Message, own: bool) -> dict[str, Any]:
    d = message_to_dict(m, own_extra=own)
    keys = m.hints.get(_KEYS_HINT)
    if keys is None:
        # A message from elsewhere: write it the way Hermes logs tool results.
        if m.role is Role.TOOL and m.tool_name is not None and "tool_name" not in d:
            d["tool_name"] = m.tool_name
        return d
    call_keys = m.hints.get(_CALL_KEYS_HINT)
    if call_keys is not None and len(call_keys) == len(d.get("tool_calls", ())):
        d["tool_calls"] = [_reorder(c, k) for c, k in zip(d["tool_calls"], call_keys, strict=True)]
    return _reorder(d, keys)


def _reorder(d: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    out = {k: d[k] for k in order if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


def write(transcript: Transcript, *, jsonl: bool | None = None) -> bytes:
    """Render ``transcript`` as a Hermes session log (``session_<id>.json``).

    With ``jsonl`` it is written in the gateway layout instead: a ``session_meta`` line,
    then one message a line, each compact and ending in ``\n``.
    """
    if jsonl:
        return _write_gateway(transcript)
    return _write_log(transcript)


def _write_gateway(transcript: Transcript) -> bytes:
    extra = transcript.extra if transcript.format == NAME else EMPTY
    meta: dict[str, Any] = {"role": "session_meta", "tools": list(transcript.tools)}
    for key, value in (
        ("session_id", transcript.session_id),
        ("model", transcript.model),
        ("system_prompt", transcript.system_prompt),
    ):
        if value is not None:
            meta[key] = value
    # The source's other top-level fields (platform, base_url, ...); a recorded
    # message_count would be stale after compaction.
    for key, value in extra.items():
        if not key.startswith("_") and key not in ("message_count", "messages", "role"):
            meta.setdefault(key, value)
    own = transcript.format in OPENAI_SHAPED
    lines = [meta, *(_message_out(m, own) for m in transcript.messages)]
    return b"".join([orjson.dumps(line) + b"\n" for line in lines])


def _write_log(transcript: Transcript) -> bytes:
    extra = transcript.extra if transcript.format == NAME else EMPTY
    from_log = extra.get("_hermes_source") == "session_log"
    public = {k: v for k, v in extra.items() if not k.startswith("_")} if from_log else {}
    own = transcript.format in OPENAI_SHAPED
    messages = [_message_out(m, own) for m in transcript.messages]

    count: Any = len(messages)
    if "message_count" in public and extra.get("_messages_at_load") == len(messages):
        count = public["message_count"]  # unchanged length: keep the recorded value
    values: dict[str, Any] = {
        "session_id": transcript.session_id
        if transcript.session_id is not None
        else public.get("session_id"),
        "model": transcript.model if transcript.model is not None else public.get("model"),
        "system_prompt": transcript.system_prompt
        if transcript.system_prompt is not None
        else public.get("system_prompt"),
        "tools": list(transcript.tools) if transcript.tools else public.get("tools", []),
        "message_count": count,
        "messages": messages,
    }
    if not from_log:
        return orjson.dumps({k: values[k] for k in _DEFAULT_ORDER}, option=orjson.OPT_INDENT_2)

    order = extra.get("_key_order") or _DEFAULT_ORDER
    doc: dict[str, Any] = {}
    for key in order:
        if key in values:
            doc[key] = values[key]
        elif key in public:
            doc[key] = public[key]
    for key, value in public.items():
        doc.setdefault(key, value)
    for key in _DEFAULT_ORDER:
        if key in doc:
            continue
        value = values[key]
        if (
            key in ("session_id", "messages")
            or (key == "tools" and transcript.tools)
            or (key in ("model", "system_prompt") and value is not None)
        ):
            doc[key] = value
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
