"""Committing to a Hermes ``state.db`` in place, the way Hermes itself does it.

Details: docs/store.md (`tinyjuice.store.hermes_commit`).
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.atomic import checkpoint, sha256_hex
from tinyjuice.formats import _hermes_state
from tinyjuice.formats._hermes_state import quote_ident as q
from tinyjuice.formats._io import LoadError
from tinyjuice.model import Transcript
from tinyjuice.store.archive import (
    ChangedSinceCommit,
    CommitError,
    SourceBusy,
    StaleSourceError,
)
from tinyjuice.store.archive_lease import LeaseBusy, holder_is_dead, make_holder

__all__ = [
    "HERMES_LOCK_TTL",
    "HermesWrite",
    "commit_child",
    "commit_in_place",
    "compression_lock",
    "db_error",
    "new_session_id",
    "read_snapshot",
    "release_lock",
    "session_snapshot",
    "undo_child",
    "undo_in_place",
]

#: Hermes' compression lock TTL (seconds); it refreshes every 60 s while it works.
HERMES_LOCK_TTL = 300.0
END_REASON = "compression"


@dataclass(frozen=True, slots=True)
class HermesWrite:
    """What a commit did to the database (kept in the commit row's plan for undo)."""

    session_id: str
    #: The session whose rows were written (the same id in place, the child otherwise).
    target_session: str
    inserted_ids: tuple[int, ...]
    #: (id, active, compacted) of each row that was active before the commit.
    archived: tuple[tuple[int, int, int], ...]
    before: bytes
    after: bytes
    #: Child mode: the parent session's snapshot after it was ended.
    parent_after: bytes | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def plan(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "target_session": self.target_session,
            "inserted_ids": list(self.inserted_ids),
            "archived": [list(a) for a in self.archived],
        }
        if self.parent_after is not None:
            out["parent_after_sha256"] = sha256_hex(self.parent_after)
        return out


# ------------------------------------------------------------------------ snapshots


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    return value


def _from_jsonable(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$base64"}:
        return base64.b64decode(value["$base64"])
    return value


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [{k: _jsonable(v) for k, v in zip(names, tuple(r), strict=True)} for r in cur.fetchall()]


def session_snapshot(conn: sqlite3.Connection, session_id: str) -> bytes:
    """Canonical bytes of a session: its ``sessions`` row and all its ``messages`` rows."""
    sessions = _rows(conn, "SELECT * FROM sessions WHERE id = ?", (session_id,))
    if not sessions:
        raise StaleSourceError(f"state.db has no session {session_id!r} any more")
    messages = _rows(conn, "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,))
    return orjson.dumps(
        {"session": sessions[0], "messages": messages},
        option=orjson.OPT_SORT_KEYS,
    )


def read_snapshot(path: Path, session_id: str) -> bytes:
    """:func:`session_snapshot` through a read-only connection (sees a live WAL).

    Raises :class:`SourceBusy` when another writer's lock keeps it from being read."""
    try:
        with _hermes_state.open_readonly(path) as conn:
            return session_snapshot(conn, session_id)
    except LoadError as exc:
        if "locked" in exc.problem or "busy" in exc.problem:
            raise _busy(path) from None
        raise


def active_ids(snapshot: bytes) -> list[int]:
    """Ids of the active rows recorded in a snapshot."""
    doc = orjson.loads(snapshot)
    return [int(m["id"]) for m in doc["messages"] if m.get("active", 1) == 1]


def new_session_id() -> str:
    """A Hermes-style session id: ``YYYYmmdd_HHMMSS_<6 hex>``."""
    return time.strftime("%Y%m%d_%H%M%S") + "_" + uuid.uuid4().hex[:6]


# ------------------------------------------------------------------- connections


#: Seconds a write waits for another writer's lock on state.db before giving up.
BUSY_TIMEOUT = 15.0


@contextmanager
def _writer(path: Path, timeout: float | None = None) -> Iterator[sqlite3.Connection]:
    """A connection for writing; SQLite errors become one clear :class:`CommitError`
    (:class:`SourceBusy` when another writer holds the lock)."""
    if not path.is_file():
        raise StaleSourceError(f"{path} does not exist any more")
    wait = BUSY_TIMEOUT if timeout is None else timeout
    try:
        conn = sqlite3.connect(path, timeout=wait, isolation_level=None)
    except sqlite3.Error as exc:
        raise db_error(path, exc) from None
    try:
        yield conn
    except sqlite3.Error as exc:
        raise db_error(path, exc) from None
    finally:
        conn.close()


def db_error(path: Path, exc: sqlite3.Error) -> CommitError:
    """What an SQLite error on a Hermes ``state.db`` means for a commit or undo."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return _busy(path)
    if "full" in text:
        return CommitError(f"the disk holding {path} is full; nothing was changed")
    return CommitError(
        f"{path} cannot be written ({text}); it may be damaged — nothing was changed"
        f" (`sqlite3 {path} 'PRAGMA integrity_check'` says more)"
    )


def _busy(path: Path) -> SourceBusy:
    return SourceBusy(
        f"{path} is locked by another writer (Hermes may be writing to it); nothing was"
        " changed — try again in a moment"
    )


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is open (SQLite ends one itself on some errors)."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction (``BEGIN IMMEDIATE``) rolled back if the body raises; the
    body commits it (some bodies check what they wrote first)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        _rollback(conn)
        raise


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(c[1]) for c in conn.execute(f"PRAGMA table_info({q(table)})").fetchall()}


@contextmanager
def compression_lock(
    path: Path,
    session_id: str,
    *,
    holder: str | None = None,
    ttl: float = HERMES_LOCK_TTL,
    clock: Callable[[], float] = time.time,
) -> Iterator[str | None]:
    """Hold Hermes' ``compression_locks`` row for ``session_id`` during the block.

    Raises :class:`LeaseBusy` when a live holder (Hermes or another tjui) has it; an
    expired row, or one whose holder process on this host is gone, is taken over, and
    rows a dead tjui left for other sessions are cleared on the way. The row is released
    on every way out of the block, in a connection of its own. Yields the holder string
    (None when the database has no lock table).
    """
    who = holder or make_holder("tjui")
    with _writer(path) as conn:
        if not _has_table(conn, "compression_locks"):
            held = False
        else:
            _take_lock(conn, path, session_id, who, clock(), ttl)
            held = True
    if not held:
        yield None
        return
    try:
        yield who
    finally:
        release_lock(path, session_id, who)


def _take_lock(
    conn: sqlite3.Connection, path: Path, session_id: str, who: str, now: float, ttl: float
) -> None:
    with _transaction(conn):
        stale = [
            (sid, h)
            for sid, h in conn.execute(
                "SELECT session_id, holder FROM compression_locks WHERE holder LIKE 'tjui%'"
            )
            if holder_is_dead(str(h))
        ]
        conn.executemany("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", stale)
        row = conn.execute(
            "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is not None:
            current, expires = str(row[0]), float(row[1])
            if expires > now and not holder_is_dead(current):
                raise LeaseBusy(f"{path.name} session {session_id}", current, expires)
        conn.execute(
            "INSERT OR REPLACE INTO compression_locks"
            " (session_id, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
            (session_id, who, now, now + ttl),
        )
        conn.execute("COMMIT")


def release_lock(path: Path, session_id: str, who: str, *, attempts: int = 3) -> bool:
    """Delete our ``compression_locks`` row; True when it is gone.

    Never raises: when another writer keeps the database locked through every attempt,
    the row stays — it names this host and process, so once this process has ended the
    next tjui to take a lock in the database clears it.
    """
    for attempt in range(attempts):
        try:
            with _writer(path) as conn:
                conn.execute(
                    "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                    (session_id, who),
                )
            return True
        except StaleSourceError:
            return True  # the database is gone, and the row with it
        except CommitError:
            if attempt + 1 < attempts:
                time.sleep(0.2)
    return False


def lock_holder(path: Path, session_id: str) -> str | None:
    """The live ``compression_locks`` holder of a session, if any."""
    with _hermes_state.open_readonly(path) as conn:
        if not _has_table(conn, "compression_locks"):
            return None
        row = conn.execute(
            "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
            (session_id,),
        ).fetchone()
    if row is None or float(row[1]) <= time.time() or holder_is_dead(str(row[0])):
        return None
    return str(row[0])


def _require_in_place_columns(conn: sqlite3.Connection, path: Path) -> None:
    missing = {"active", "compacted"} - _columns(conn, "messages")
    if missing:
        raise CommitError(
            f"{path} is an older Hermes state.db without messages."
            + "/".join(sorted(missing))
            + " columns: in-place compaction is not possible; commit it as a child or as an export instead"
        )


def _mid_transaction(total: int) -> Callable[[int], None]:
    half = max(0, total // 2 - 1)

    def on_row(i: int) -> None:
        if i == half:
            checkpoint("mid-transaction")

    return on_row


def _check_unchanged(conn: sqlite3.Connection, session_id: str, expected_sha: str) -> bytes:
    current = session_snapshot(conn, session_id)
    if sha256_hex(current) != expected_sha:
        raise StaleSourceError(
            f"session {session_id} changed since it was loaded (the agent wrote to it);"
            " reload it and compact again — nothing was changed"
        )
    return current


# ---------------------------------------------------------------------- commits


def commit_in_place(
    path: Path,
    session_id: str,
    transcript: Transcript,
    *,
    expected_sha: str,
    before_commit: Callable[[HermesWrite], None] | None = None,
) -> HermesWrite:
    """Replace the session's active rows with ``transcript``, in one transaction.

    ``expected_sha`` is the sha256 of the session snapshot as loaded: a different
    current state raises :class:`StaleSourceError` and nothing is written.
    ``before_commit`` runs with the finished write just before COMMIT (the archive
    records the plan there); if it raises, the transaction is rolled back.
    """
    with _writer(path) as conn, _transaction(conn):
        _require_in_place_columns(conn, path)
        before = _check_unchanged(conn, session_id, expected_sha)
        archived = tuple(
            (int(r[0]), int(r[1]), int(r[2]))
            for r in conn.execute(
                "SELECT id, active, compacted FROM messages"
                " WHERE session_id = ? AND active = 1 ORDER BY id",
                (session_id,),
            )
        )
        ids = _hermes_state.write_session(
            conn,
            transcript,
            session_id,
            commit=False,
            on_row=_mid_transaction(len(transcript.messages)),
        )
        after = session_snapshot(conn, session_id)
        done = HermesWrite(session_id, session_id, ids, archived, before, after)
        if before_commit is not None:
            before_commit(done)
        checkpoint("before-db-commit")
        conn.execute("COMMIT")
    checkpoint("after-transaction")
    return done


def commit_child(
    path: Path,
    session_id: str,
    transcript: Transcript,
    *,
    expected_sha: str,
    child_id: str | None = None,
    now: float | None = None,
    before_commit: Callable[[HermesWrite], None] | None = None,
) -> HermesWrite:
    """End the session (``end_reason='compression'``) and start a child holding
    ``transcript`` (``parent_session_id`` = the session), in one transaction."""
    child = child_id or new_session_id()
    stamp = time.time() if now is None else now
    with _writer(path) as conn, _transaction(conn):
        before = _check_unchanged(conn, session_id, expected_sha)
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (child,)).fetchone():
            raise CommitError(f"state.db already has a session {child!r}")
        ids = _hermes_state.write_session(
            conn,
            transcript,
            child,
            started_at=stamp,
            parent_session_id=session_id,
            commit=False,
            on_row=_mid_transaction(len(transcript.messages)),
        )
        cols = _columns(conn, "sessions")
        updates = {k: v for k, v in (("ended_at", stamp), ("end_reason", END_REASON)) if k in cols}
        if updates:
            conn.execute(
                "UPDATE sessions SET "
                + ", ".join(f"{q(k)} = ?" for k in updates)
                + " WHERE id = ?",
                (*updates.values(), session_id),
            )
        parent_after = session_snapshot(conn, session_id)
        after = session_snapshot(conn, child)
        done = HermesWrite(session_id, child, ids, (), before, after, parent_after)
        if before_commit is not None:
            before_commit(done)
        checkpoint("before-db-commit")
        conn.execute("COMMIT")
    checkpoint("after-transaction")
    return done


# ------------------------------------------------------------------------- undo


def _restore_session_row(conn: sqlite3.Connection, session_id: str, before: bytes) -> None:
    row = orjson.loads(before)["session"]
    values = {k: _from_jsonable(v) for k, v in row.items() if k != "id"}
    if values:
        conn.execute(
            "UPDATE sessions SET " + ", ".join(f"{q(k)} = ?" for k in values) + " WHERE id = ?",
            (*values.values(), session_id),
        )


def _restore_and_commit(
    conn: sqlite3.Connection, session_id: str, before: bytes, *, force: bool
) -> bytes:
    """Put the session row back as ``before`` had it and commit; return the new snapshot.

    Without ``force`` the snapshot must equal ``before`` byte for byte, or nothing is
    committed (:class:`CommitError`; the caller rolls back).
    """
    _restore_session_row(conn, session_id, before)
    restored = session_snapshot(conn, session_id)
    if not force and restored != before:
        raise CommitError(
            f"undo would not restore session {session_id} byte-identically; nothing was changed"
        )
    conn.execute("COMMIT")
    return restored


def undo_in_place(
    path: Path,
    plan: Mapping[str, Any],
    *,
    before: bytes,
    after_sha: str,
    force: bool = False,
    archive_current: Callable[[bytes], None] | None = None,
) -> bytes:
    """Re-activate the archived rows and remove the inserted ones; return the new snapshot.

    Refused (:class:`ChangedSinceCommit`) when the session changed after the commit, unless
    ``force``: then ``archive_current`` receives the current snapshot first, and rows
    written after the commit stay as they are. Without force the result must equal
    ``before`` byte for byte, or nothing is changed.
    """
    session_id = str(plan["session_id"])
    inserted = [int(i) for i in plan["inserted_ids"]]
    archived = [(int(a[0]), int(a[1]), int(a[2])) for a in plan["archived"]]
    with _writer(path) as conn, _transaction(conn):
        current = session_snapshot(conn, session_id)
        if sha256_hex(current) != after_sha:
            if not force:
                raise ChangedSinceCommit(
                    f"session {session_id} changed after the commit (the agent wrote to"
                    " it); undo with --force to archive its current state and restore"
                )
            if archive_current is not None:
                archive_current(current)
        conn.executemany("DELETE FROM messages WHERE id = ?", [(i,) for i in inserted])
        conn.executemany(
            "UPDATE messages SET active = ?, compacted = ? WHERE id = ?",
            [(a, c, i) for i, a, c in archived],
        )
        restored = _restore_and_commit(conn, session_id, before, force=force)
    return restored


def undo_child(
    path: Path,
    plan: Mapping[str, Any],
    *,
    before: bytes,
    after_sha: str,
    force: bool = False,
    archive_current: Callable[[bytes], None] | None = None,
) -> bytes:
    """Remove the child session and re-open the parent as it was; return its snapshot."""
    session_id = str(plan["session_id"])
    child = str(plan["target_session"])
    parent_after_sha = plan.get("parent_after_sha256")
    with _writer(path) as conn, _transaction(conn):
        grandchildren = conn.execute(
            "SELECT id FROM sessions WHERE parent_session_id = ?", (child,)
        ).fetchall()
        if grandchildren:
            raise CommitError(
                f"child session {child} has been continued ({grandchildren[0][0]});"
                " undo that commit first"
            )
        exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (child,)).fetchone()
        current_child = session_snapshot(conn, child) if exists else b""
        current_parent = session_snapshot(conn, session_id)
        changed = (exists and sha256_hex(current_child) != after_sha) or (
            parent_after_sha is not None and sha256_hex(current_parent) != parent_after_sha
        )
        if changed or not exists:
            if not force:
                raise ChangedSinceCommit(
                    f"child session {child} or its parent changed after the commit;"
                    " undo with --force to archive their current state and restore"
                )
            if archive_current is not None:
                archive_current(
                    orjson.dumps(
                        {
                            "child": orjson.loads(current_child) if exists else None,
                            "parent": orjson.loads(current_parent),
                        },
                        option=orjson.OPT_SORT_KEYS,
                    )
                )
        conn.execute("DELETE FROM messages WHERE session_id = ?", (child,))
        conn.execute("DELETE FROM sessions WHERE id = ?", (child,))
        restored = _restore_and_commit(conn, session_id, before, force=force)
    return restored
