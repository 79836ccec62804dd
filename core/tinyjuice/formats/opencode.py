"""opencode sessions (read-only): its SQLite ``opencode.db`` and the older JSON tree.

Newer opencode keeps everything in ``~/.local/share/opencode/opencode.db``: tables
``session`` (``id``, ``project_id``, ``parent_id``, ``directory``, ``title``,
``time_created``, ``time_updated``), ``message`` (``id``, ``session_id``,
``time_created``, ``data``) and ``part`` (``id``, ``message_id``, ``session_id``,
``data``), where ``data`` is the message or part as JSON. Older versions wrote the
same records as files under ``storage/``: ``session/<project>/<session>.json`` (or
``session/info/<session>.json``), ``message/<session>/<message>.json`` and
``part/<message>/<part>.json`` (or ``part/<session>/<message>/<part>.json``).

A message's ``data`` has ``role``; assistant messages add ``modelID``, ``providerID``,
``tokens`` (``input`` without cache, ``output``, ``reasoning``, ``cache.read``,
``cache.write``: read as :class:`Usage`) and ``summary: true`` on a compaction summary.
Parts: ``text`` (``synthetic`` ones were added by opencode, not typed), ``reasoning``,
``tool`` (``callID``, ``tool``, ``state`` with ``status``, ``input``, ``output`` or
``error``; a pruned output has ``state.time.compacted`` and reaches the model as a
placeholder, as here), ``file`` (attachments), ``compaction`` (on the user message
that asked for a compaction; ``auto`` tells automatic from ``/compact``) and step or
snapshot markers (skipped). Each assistant message becomes one assistant message with
its text, reasoning and calls, followed by one tool message per finished call.

``--session`` picks a session by id; otherwise the most recently updated one is read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.formats._base import SQLITE_MAGIC, LoadError, LoadOptions, Source, check_regular
from tinyjuice.formats._common import finish, media_from_url
from tinyjuice.formats._hermes_db import SessionInfo, open_readonly
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

__all__ = ["NAME", "entry_file", "is_database", "list_sessions", "read", "sniff", "storage_root"]

NAME = "opencode"

#: What opencode sends the model in place of a pruned tool output.
PRUNED_OUTPUT = "[Old tool result content cleared]"
_TABLES = {
    "session": {"id"},
    "message": {"id", "session_id", "data"},
    "part": {"message_id", "data"},
}


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    title: str | None
    updated: int
    parent_id: str | None = None
    messages: int = 0
    created: int = 0


# ------------------------------------------------------------------------------ sniff


def _db_tables(conn: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        n: {c[1] for c in conn.execute(f"PRAGMA table_info({n})")} for n in names if n in _TABLES
    }


def _is_db(conn: sqlite3.Connection) -> bool:
    cols = _db_tables(conn)
    return all(need <= cols.get(t, set()) for t, need in _TABLES.items())


def _is_session_info(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("id"), str)
        and doc["id"].startswith("ses")
        and isinstance(doc.get("time"), dict)
        and ("projectID" in doc or "directory" in doc or "title" in doc)
    )


def sniff(source: Source) -> int:
    if source.kind == "sqlite":
        try:
            with open_readonly(source.path, source.data) as conn:
                return 96 if _is_db(conn) else 0
        except LoadError:
            return 0
    if source.kind == "json" and _is_session_info(source.doc):
        return 92 if storage_root(source.path) is not None else 70
    return 0


# ------------------------------------------------------------------------- records


@dataclass(slots=True)
class _Record:
    id: str
    data: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)


def _loads(raw: Any) -> Any:
    if isinstance(raw, (bytes, str)):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
    return raw


def _db_sessions(conn: sqlite3.Connection) -> list[SessionRow]:
    cols = _db_tables(conn)["session"]
    updated = "time_updated" if "time_updated" in cols else "rowid"
    created = "time_created" if "time_created" in cols else "0"
    parent = "parent_id" if "parent_id" in cols else "NULL"
    title = "title" if "title" in cols else "NULL"
    counts = dict(conn.execute("SELECT session_id, COUNT(*) FROM message GROUP BY session_id"))
    rows = conn.execute(
        f"SELECT id, {title}, {updated}, {parent}, {created} FROM session"
        f" ORDER BY {updated} DESC, id DESC"
    )
    return [
        SessionRow(str(r[0]), r[1], count(r[2]), r[3], counts.get(r[0], 0), count(r[4]))
        for r in rows
    ]


def _db_records(conn: sqlite3.Connection, sid: str, bad: list[str]) -> list[_Record]:
    records: dict[str, _Record] = {}
    for mid, data in conn.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
        if "time_created" in _db_tables(conn)["message"]
        else "SELECT id, data FROM message WHERE session_id = ? ORDER BY id",
        (sid,),
    ):
        value = _loads(data)
        if not isinstance(value, dict):
            bad.append(f"message {mid}")
        records[str(mid)] = _Record(str(mid), value if isinstance(value, dict) else {})
    for mid, data in conn.execute(
        "SELECT message_id, data FROM part WHERE message_id IN "
        "(SELECT id FROM message WHERE session_id = ?) ORDER BY id",
        (sid,),
    ):
        value = _loads(data)
        if not isinstance(value, dict):
            bad.append(f"part of {mid}")
        elif str(mid) in records:
            records[str(mid)].parts.append(value)
    return list(records.values())


def storage_root(path: Path) -> Path | None:
    """The ``storage`` directory a session file (or directory) belongs to, or None."""
    for p in (path, *path.parents):
        if (p / "message").is_dir() and (p / "session").is_dir():
            return p
    return None


def _json_files(directory: Path, bad: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(stem, object) of each JSON file in ``directory``; unreadable ones go to ``bad``."""
    out: list[tuple[str, dict[str, Any]]] = []
    for f in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            value = orjson.loads(f.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            bad.append(f.name)
            continue
        if isinstance(value, dict):
            out.append((f.stem, value))
        else:
            bad.append(f.name)
    return out


def _tree_sessions(root: Path) -> list[tuple[SessionRow, Path]]:
    found: list[tuple[SessionRow, Path]] = []
    for f in sorted((root / "session").glob("*/*.json")):
        try:
            info = orjson.loads(f.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if _is_session_info(info):
            time = info["time"]
            n = len(list((root / "message" / info["id"]).glob("*.json")))
            row = SessionRow(
                info["id"],
                info.get("title"),
                count(time.get("updated") or time.get("created")),
                info.get("parentID"),
                n,
                count(time.get("created")),
            )
            found.append((row, f))
    found.sort(key=lambda x: (x[0].updated, x[0].id), reverse=True)
    return found


def _tree_records(root: Path, sid: str, bad: list[str]) -> list[_Record]:
    messages = _json_files(root / "message" / sid, bad)
    messages.sort(key=lambda x: (count((x[1].get("time") or {}).get("created")), x[0]))
    records = []
    for mid, data in messages:
        if isinstance(own_id := data.get("id"), str):
            mid = own_id
        parts_dir = root / "part" / mid
        if not parts_dir.is_dir():
            parts_dir = root / "part" / sid / mid
        records.append(_Record(mid, data, [p for _, p in _json_files(parts_dir, bad)]))
    return records


# -------------------------------------------------------------------------- messages


@dataclass(slots=True)
class _Built:
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    events: list[CompactionEvent] = field(default_factory=list)
    model: str | None = None
    pending_trigger: Trigger | None = None
    pruned: int = 0


def _file_part(part: dict[str, Any]) -> Part:
    mime = mime_v if isinstance(mime_v := part.get("mime"), str) else ""
    url = url_v if isinstance(url_v := part.get("url"), str) else ""
    if mime.startswith("image/") and url:
        media = media_from_url(url)
        return media if media.media_type != "image/*" else MediaPart(mime, 0, "url", url)
    name = part.get("filename") or url or "file"
    return TextPart(f"[file: {name}]")


def _tool(built: _Built, part: dict[str, Any], sid: str) -> tuple[ToolCall, Message | None]:
    state: dict[str, Any] = st if isinstance(st := part.get("state"), dict) else {}
    call_id = (
        part["callID"] if isinstance(part.get("callID"), str) else f"{sid}_{len(built.messages)}"
    )
    name = str(part.get("tool", ""))
    call = tool_call_of(call_id, name, state.get("input"))
    status = state.get("status")
    if status == "completed":
        times = state.get("time")
        compacted = isinstance(times, dict) and times.get("compacted")
        if compacted:
            built.pruned += 1
            return call, tool_result(
                call_id, name, PRUNED_OUTPUT, source_id=sid, hints={"pruned": True}
            )
        return call, tool_result(call_id, name, json_text(state.get("output")), source_id=sid)
    if status == "error":
        return call, tool_result(
            call_id, name, json_text(state.get("error")), is_error=True, source_id=sid
        )
    return call, None  # pending or running: no result yet


def _user(built: _Built, rec: _Record) -> None:
    parts: list[Part] = []
    synthetic = True
    for part in rec.parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
            synthetic = synthetic and part.get("synthetic") is True
        elif kind == "file":
            parts.append(_file_part(part))
            synthetic = False
        elif kind == "compaction":
            built.pending_trigger = Trigger.AUTO if part.get("auto") is True else Trigger.MANUAL
    if not parts:
        return
    m = text_message(Role.USER, parts, source_id=rec.id)
    if synthetic and not m.meta.is_summary:
        m = replace(m, meta=replace(m.meta, is_injected=True, injected_kind="synthetic"))
    built.messages.append(m)


def _assistant(built: _Built, rec: _Record) -> None:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for part in rec.parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            parts.append(ThinkingPart(part["text"]))
        elif kind == "tool":
            call, result = _tool(built, part, rec.id)
            calls.append(call)
            if result is not None:
                results.append(result)
    data = rec.data
    summary = data.get("summary") is True
    if not parts and not calls and not summary:
        return
    index = len(built.messages)
    built.messages.append(
        text_message(Role.ASSISTANT, parts, source_id=rec.id, tool_calls=calls, summary=summary)
    )
    built.messages += results
    if summary:
        trigger = built.pending_trigger or Trigger.UNKNOWN
        built.events.append(
            reset_event(index, summary_index=index, trigger=trigger, source_id=rec.id)
        )
        built.pending_trigger = None
    if isinstance(data.get("modelID"), str):
        built.model = data["modelID"]
    tokens = data.get("tokens")
    if isinstance(tokens, dict):
        cache: dict[str, Any] = c if isinstance(c := tokens.get("cache"), dict) else {}
        built.usage.append(
            Usage(
                input_tokens=count(tokens.get("input")),
                cache_read_tokens=count(cache.get("read")),
                cache_write_tokens=count(cache.get("write")),
                output_tokens=count(tokens.get("output")),
                reasoning_tokens=count(tokens.get("reasoning")),
                message_index=index,
            )
        )


def _build(records: Iterable[_Record]) -> _Built:
    built = _Built()
    for rec in records:
        role = rec.data.get("role")
        if role == "user":
            _user(built, rec)
        elif role == "assistant":
            _assistant(built, rec)
    return built


# ------------------------------------------------------------------------------- read


def _pick(rows: list[SessionRow], wanted: str | None, path: Path) -> tuple[SessionRow, list[str]]:
    if not rows:
        raise LoadError(
            path, "no sessions found", expected="an opencode database or storage tree with sessions"
        )
    if wanted is None:
        notes = [] if len(rows) == 1 else [
            f"{len(rows)} sessions here; loaded the most recently updated "
            "(--session ID picks another; tjui sessions lists them)"
        ]  # fmt: skip
        return rows[0], notes
    for row in rows:
        if row.id == wanted:
            return row, []
    raise LoadError(
        path,
        f"no session {wanted!r} among the {len(rows)} here",
        expected="a session id (tjui sessions lists them)",
    )


def _records(source: Source, options: LoadOptions) -> tuple[SessionRow, list[_Record], list[str]]:
    if source.kind == "sqlite":
        with open_readonly(source.path, source.data) as conn:
            if not _is_db(conn):
                raise LoadError(
                    source.path,
                    "not an opencode database",
                    expected="tables session, message and part with a 'data' column",
                )
            row, notes = _pick(_db_sessions(conn), options.session, source.path)
            unreadable: list[str] = []
            records = _db_records(conn, row.id, unreadable)
            return row, records, notes + _unreadable(unreadable)
    root = storage_root(source.path)
    doc = source.doc
    if root is None:
        raise LoadError(
            source.path,
            "no opencode storage tree around this session file",
            expected="storage/session/…/<session>.json beside storage/message/ and storage/part/",
        )
    bad: list[str] = []
    if options.session is None and _is_session_info(doc):
        row = SessionRow(doc["id"], doc.get("title"), count(doc["time"].get("updated")))
        notes = []
    else:
        row, notes = _pick([r for r, _ in _tree_sessions(root)], options.session, source.path)
    records = _tree_records(root, row.id, bad)
    return row, records, notes + _unreadable(bad)


def _unreadable(bad: list[str]) -> list[str]:
    if not bad:
        return []
    shown = ", ".join(bad[:5]) + (" …" if len(bad) > 5 else "")
    return [f"{len(bad)} record(s) that are not JSON objects were skipped: {shown}"]


def read(source: Source, options: LoadOptions) -> Transcript:
    if source.kind not in ("sqlite", "json"):
        raise LoadError(
            source.path,
            "not an opencode session",
            expected="opencode.db or a storage/session/… JSON file",
        )
    row, records, notes = _records(source, options)
    built = _build(records)
    msgs, warnings = finish(built.messages)
    if built.pruned:
        warnings.append(
            f"{built.pruned} tool output(s) pruned by opencode (read as its placeholder)"
        )
    return Transcript(
        messages=msgs,
        format=NAME,
        model=built.model,
        path=str(source.path),
        session_id=row.id,
        compactions=tuple(built.events),
        usage=tuple(built.usage),
        extra={"title": row.title} if row.title else EMPTY,
        warnings=tuple(notes + warnings),
    )


def is_database(path: Path) -> bool:
    """True when ``path`` is an opencode SQLite database (never opens a pipe or device)."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return False
        with open_readonly(path) as conn:
            return _is_db(conn)
    except (OSError, LoadError):
        return False


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions of an ``opencode.db`` or a storage tree, most recently updated first."""
    p = Path(path)
    if not p.is_dir():
        check_regular(p)  # a pipe or device is refused, never opened
    root = storage_root(p) if p.is_dir() else None
    if root is None and p.is_dir():
        root = storage_root(p / "storage")
    if root is not None:
        rows = [r for r, _ in _tree_sessions(root)]
    elif p.is_dir() and (p / "opencode.db").is_file():
        return list_sessions(p / "opencode.db")
    elif is_database(p):
        with open_readonly(p) as conn:
            rows = _db_sessions(conn)
    else:
        raise LoadError(p, "not an opencode database or storage directory")
    return [
        SessionInfo(
            id=r.id,
            model=None,
            started_at=r.created / 1000 if r.created else None,
            ended_at=None,
            end_reason=None,
            parent_session_id=r.parent_id,
            message_count=r.messages,
            title=r.title or "",
        )
        for r in rows
    ]


def entry_file(directory: Path) -> Path | None:
    """The file to open for an opencode data directory: ``opencode.db``, else the most
    recently updated session file of a ``storage`` tree (``--session`` still picks)."""
    if (directory / "opencode.db").is_file():
        return directory / "opencode.db"
    for root in (directory, directory / "storage"):
        if (root / "message").is_dir() and (root / "session").is_dir():
            found = _tree_sessions(root)
            return found[0][1] if found else None
    return None
