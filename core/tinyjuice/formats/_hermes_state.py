"""Hermes ``state.db`` (SQLite): schema, read-only access, session listing, and a writer.

Details: docs/formats.md (`tinyjuice.formats._hermes_state`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from tinyjuice.formats._io import SQLITE_MAGIC, LoadError, check_regular
from tinyjuice.formats._messages import injected_kind, is_summary_text
from tinyjuice.model import Message, Transcript

__all__ = [
    "COUNTER_COLUMNS",
    "STATE_SCHEMA",
    "SessionInfo",
    "create_schema",
    "list_sessions",
    "quote_ident",
    "write_session",
]

#: Per-session token counters in ``sessions`` (they are per session, not per message).
COUNTER_COLUMNS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)

#: Hermes' ``state.db`` schema (its current columns; the reader needs only ``_REQUIRED``).
#: ``scripts/make_sessions.py`` builds the sample database from it too.
STATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL DEFAULT 'cli',
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT,
    git_branch TEXT,
    billing_provider TEXT,
    billing_base_url TEXT,
    estimated_cost_usd REAL,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    compression_failure_cooldown_until REAL,
    compression_failure_error TEXT,
    compression_fallback_streak INTEGER NOT NULL DEFAULT 0,
    compression_ineffective_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS compression_locks (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_messages_active ON messages(session_id, active, id);
CREATE INDEX IF NOT EXISTS idx_compression_locks_expires ON compression_locks(expires_at);
"""

#: Columns the reader cannot do without; the others are read when present.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "sessions": ("id", "model", "system_prompt", "parent_session_id", "started_at"),
    "messages": ("id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name"),
}

_PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session in a Hermes ``state.db``, for choosing which to open."""

    id: str
    model: str | None
    started_at: float | str | None
    ended_at: float | str | None
    end_reason: str | None
    parent_session_id: str | None
    #: Active rows (the live transcript), not counting rows archived by compaction.
    message_count: int
    #: The session title when recorded, else a preview of the first real user message.
    title: str


@dataclass(frozen=True, slots=True)
class Schema:
    """The columns each Hermes table has in this database."""

    sessions: frozenset[str]
    messages: frozenset[str]
    has_locks: bool

    @property
    def has_active(self) -> bool:
        return "active" in self.messages


# ------------------------------------------------------------------------ reading


def quote_ident(name: str) -> str:
    """An SQL identifier (table or column name) quoted for SQLite: ``"order"``.

    Every name that comes from the database itself (a ``sessions`` column such as
    ``order`` or ``group``) goes through this before it is put into a statement.
    """
    return '"' + str(name).replace('"', '""') + '"'


def _uri(path: Path, params: str) -> str:
    return f"file:{quote(str(path.resolve()))}?{params}"


def _is_wal(data: bytes | bytearray) -> bool:
    return len(data) >= 20 and data.startswith(SQLITE_MAGIC) and data[18] == 2


@contextmanager
def open_readonly(path: Path, data: bytes | None = None) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` (or to ``data`` when no file)."""
    try:
        if path.is_file():
            if data is None:
                with path.open("rb") as fh:
                    data = fh.read(100)
            wal_file = path.with_name(path.name + "-wal")
            # A WAL database with no -wal file holds everything in the main file: read it
            # immutable so SQLite creates no -shm/-wal beside it. Otherwise read-only, so
            # a live session's recent (not yet checkpointed) rows are seen.
            immutable = _is_wal(data) and not wal_file.exists()
            params = "mode=ro&immutable=1" if immutable else "mode=ro"
            conn = sqlite3.connect(_uri(path, params), uri=True)
        else:
            if data is None:
                raise LoadError(path, "no such file")
            image = bytearray(data)
            if _is_wal(image):
                image[18] = image[19] = 1  # an in-memory copy cannot use WAL
            conn = sqlite3.connect(":memory:")
            conn.deserialize(bytes(image))
    except (sqlite3.Error, OSError) as exc:
        raise LoadError(path, f"cannot open SQLite database: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA query_only = ON")
        yield conn
    except sqlite3.Error as exc:
        raise LoadError(path, f"cannot read SQLite database: {exc}") from None
    finally:
        conn.close()


def _table_columns(conn: sqlite3.Connection) -> dict[str, frozenset[str]]:
    names = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    ]
    out: dict[str, frozenset[str]] = {}
    for name in names:
        if name in ("sessions", "messages", "compression_locks"):
            cols = conn.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
            out[name] = frozenset(c[1] for c in cols)
    return out


def looks_like_hermes(conn: sqlite3.Connection) -> bool:
    """True when the database has the Hermes tables and their essential columns."""
    cols = _table_columns(conn)
    return all(set(req) <= cols.get(table, frozenset()) for table, req in _REQUIRED.items())


def check_schema(conn: sqlite3.Connection, path: Path) -> Schema:
    """The database's Hermes columns; a LoadError naming what is missing otherwise."""
    cols = _table_columns(conn)
    for table, required in _REQUIRED.items():
        if table not in cols:
            raise LoadError(
                path,
                f"not a Hermes state.db: table {table!r} is missing",
                expected="a Hermes state.db with tables 'sessions' and 'messages'",
            )
        missing = [c for c in required if c not in cols[table]]
        if missing:
            raise LoadError(
                path,
                f"not a Hermes state.db: table {table!r} has no column "
                + ", ".join(repr(c) for c in missing),
                expected=f"table {table!r} with columns " + ", ".join(required),
            )
    return Schema(
        sessions=cols["sessions"],
        messages=cols["messages"],
        has_locks="compression_locks" in cols,
    )


def row_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A ``sqlite3.Row`` as a plain dict (column name → value)."""
    return dict(zip(row.keys(), tuple(row), strict=True))


def _active_clause(schema: Schema) -> str:
    return " AND active = 1" if schema.has_active else ""


def row_text(content: Any) -> str:
    """The visible text of a ``messages.content`` value (plain or a JSON list of parts)."""
    if content is None:
        return ""
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    if not isinstance(content, str):
        return str(content)
    parts = parts_from_content(content)
    if parts is None:
        return content
    return "\n".join(
        p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
    )


def parts_from_content(content: str) -> list[dict[str, Any]] | None:
    """A list of typed content parts stored as JSON text, or None for plain text."""
    if not content.startswith('[{"type"'):
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in value)
    ):
        return value
    return None


def _preview(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) <= _PREVIEW_CHARS:
        return one_line
    return one_line[: _PREVIEW_CHARS - 1].rstrip() + "…"


def _title(conn: sqlite3.Connection, schema: Schema, row: sqlite3.Row) -> str:
    if "title" in schema.sessions and isinstance(row["title"], str) and row["title"].strip():
        return _preview(row["title"])
    first: str | None = None
    for (content,) in conn.execute(
        "SELECT content FROM messages WHERE session_id = ? AND role = 'user'"
        + _active_clause(schema)
        + " ORDER BY id LIMIT 8",
        (row["id"],),
    ):
        text = row_text(content)
        if first is None:
            first = text
        if not is_summary_text(text) and injected_kind(text) is None:
            return _preview(text)
    return _preview(first or "")


def _opt(row: sqlite3.Row, schema_cols: frozenset[str], name: str) -> Any:
    return row[name] if name in schema_cols else None


def sessions_in(conn: sqlite3.Connection, schema: Schema) -> list[SessionInfo]:
    """Every session, newest (by ``started_at``) first."""
    counts = dict(
        conn.execute(
            "SELECT session_id, COUNT(*) FROM messages WHERE 1 = 1"
            + _active_clause(schema)
            + " GROUP BY session_id"
        ).fetchall()
    )
    out: list[SessionInfo] = []
    for row in conn.execute("SELECT * FROM sessions ORDER BY started_at DESC, id DESC"):
        sid = str(row["id"])
        out.append(
            SessionInfo(
                id=sid,
                model=row["model"],
                started_at=row["started_at"],
                ended_at=_opt(row, schema.sessions, "ended_at"),
                end_reason=_opt(row, schema.sessions, "end_reason"),
                parent_session_id=row["parent_session_id"],
                message_count=int(counts.get(row["id"], 0)),
                title=_title(conn, schema, row),
            )
        )
    return out


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions in the Hermes ``state.db`` at ``path``, newest first.

    Raises :class:`~tinyjuice.formats.LoadError` when the file is not a Hermes state.db.
    """
    p = Path(path)
    check_regular(p)
    with p.open("rb") as fh:
        head = fh.read(100)
    if not head.startswith(SQLITE_MAGIC):
        raise LoadError(p, "not a SQLite database", expected="a Hermes state.db")
    with open_readonly(p, head) as conn:
        return sessions_in(conn, check_schema(conn, p))


# ------------------------------------------------------------------------ writing


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the Hermes tables (``sessions``, ``messages``, ``compression_locks``)."""
    conn.executescript(STATE_SCHEMA)


#: ``messages`` columns :func:`write_session` fills (besides ``session_id``).
_ROW_COLUMNS: tuple[str, ...] = (
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "active",
    "compacted",
)


def _row_for(m: Message) -> dict[str, Any]:
    from tinyjuice.formats.openai import message_to_dict

    d = message_to_dict(m)
    content = d.get("content")
    if isinstance(content, list) or (content is not None and not isinstance(content, str)):
        content = orjson.dumps(content).decode()
    calls = d.get("tool_calls")
    reasoning = d.get("reasoning", d.get("reasoning_content"))
    return {
        "role": d["role"],
        "content": content,
        "tool_call_id": m.tool_call_id,
        "tool_calls": orjson.dumps(calls).decode() if calls else None,
        "tool_name": m.tool_name or _str_or_none(m.extra.get("tool_name")),
        "token_count": _int_or_none(m.extra.get("token_count")),
        "finish_reason": _str_or_none(m.extra.get("finish_reason")),
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "timestamp": m.extra.get("timestamp"),
        "active": 0 if m.extra.get("active") == 0 else 1,
        "compacted": 1 if m.extra.get("compacted") == 1 else 0,
    }


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# Long on purpose: one transaction writing a session's rows in the schema's order.
def write_session(
    conn: sqlite3.Connection,
    transcript: Transcript,
    session_id: str,
    *,
    started_at: float | None = None,
    ended_at: float | None = None,
    end_reason: str | None = None,
    parent_session_id: str | None = None,
    counters: Mapping[str, int] | None = None,
    compression_fallback_streak: int | None = None,
    time_step: float = 1.0,
    commit: bool = True,
    on_row: Callable[[int], None] | None = None,
) -> tuple[int, ...]:
    """Write ``transcript`` as the live rows of session ``session_id``; return the row ids.

    A new session gets a ``sessions`` row. For an existing session, its active rows are
    archived first (``active=0, compacted=1``) — Hermes' in-place compaction — and the
    transcript becomes the new active rows. Message timestamps come from a message's
    ``timestamp`` extra, else count up from the session start (or the newest row) by
    ``time_step`` seconds. ``counters`` sets the per-session token counters
    (:data:`COUNTER_COLUMNS`). The caller's connection is committed, unless ``commit``
    is False: then the rows are written inside the caller's transaction. ``on_row(i)``
    is called after the i-th message row is inserted (crash tests use it to stop a
    commit half-way through its transaction).
    """
    with conn if commit else nullcontext():
        bad = [k for k in (counters or {}) if k not in COUNTER_COLUMNS]
        if bad:
            raise ValueError(
                f"unknown counter column(s) {bad}; known: {', '.join(COUNTER_COLUMNS)}"
            )
        exists = conn.execute(
            "SELECT started_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if exists is None:
            start = started_at if started_at is not None else _default_start(transcript)
            conn.execute(
                "INSERT INTO sessions (id, model, system_prompt, parent_session_id, started_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, transcript.model, transcript.system_prompt, parent_session_id, start),
            )
        else:
            conn.execute(
                "UPDATE sessions SET model = COALESCE(?, model),"
                " system_prompt = COALESCE(?, system_prompt) WHERE id = ?",
                (transcript.model, transcript.system_prompt, session_id),
            )
            conn.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1",
                (session_id,),
            )
        updates: dict[str, Any] = dict(counters or {})
        if ended_at is not None:
            updates["ended_at"] = ended_at
        if end_reason is not None:
            updates["end_reason"] = end_reason
        if started_at is not None and exists is not None:
            updates["started_at"] = started_at
        if compression_fallback_streak is not None:
            updates["compression_fallback_streak"] = compression_fallback_streak
        if updates:
            assignments = ", ".join(f"{quote_ident(k)} = ?" for k in updates)
            conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*updates.values(), session_id)
            )
        (base,) = conn.execute(
            "SELECT MAX(COALESCE((SELECT MAX(timestamp) FROM messages WHERE session_id = ?), 0),"
            " started_at) FROM sessions WHERE id = ?",
            (session_id, session_id),
        ).fetchone()
        ids: list[int] = []
        clock = float(base)
        # Only the columns this database has (older Hermes schemas lack some).
        present = {str(c[1]) for c in conn.execute("PRAGMA table_info(messages)").fetchall()}
        columns = ["session_id", *(c for c in _ROW_COLUMNS if c in present)]
        insert = (
            f"INSERT INTO messages ({', '.join(quote_ident(c) for c in columns)})"
            f" VALUES ({', '.join(':' + c for c in columns)})"
        )
        for m in transcript.messages:
            row = _row_for(m)
            ts = row["timestamp"]
            if isinstance(ts, (int, float)) and not isinstance(ts, bool):
                clock = float(ts)
            else:
                clock += time_step
            row["timestamp"] = clock
            cur = conn.execute(insert, {"session_id": session_id, **row})
            ids.append(int(cur.lastrowid or 0))
            if on_row is not None:
                on_row(len(ids) - 1)
        session_columns = {
            str(c[1]) for c in conn.execute("PRAGMA table_info(sessions)").fetchall()
        }
        if "message_count" in session_columns and "active" in present:
            conn.execute(
                "UPDATE sessions SET message_count ="
                " (SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1) WHERE id = ?",
                (session_id, session_id),
            )
        return tuple(ids)


def _default_start(transcript: Transcript) -> float:
    value = transcript.extra.get("started_at")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return time.time()
