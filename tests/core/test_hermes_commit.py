"""Committing to a Hermes state.db: in place, child session, compression_locks, undo."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tinyjuice.atomic import sha256_hex
from tinyjuice.formats import load
from tinyjuice.formats._hermes_state import create_schema, write_session
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress
from tinyjuice.report import Status
from tinyjuice.store import (
    Archive,
    ChangedSinceCommit,
    CommitError,
    CommitMode,
    CommitState,
    LeaseBusy,
    StaleSourceError,
    commit,
    history,
    load_source,
    undo,
)
from tinyjuice.store.hermes_commit import read_snapshot, undo_child, undo_in_place
from tinyjuice.tokens import RoughCounter

SID = "20250915_152740_c41a9e"


def _transcript(tmp_path: Path, exchanges: int = 10):  # type: ignore[no-untyped-def]
    messages: list[dict] = []
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"Step {i}: run tests for module {i}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": "terminal",
                            "arguments": json.dumps({"cmd": "pytest"}),
                        },
                    }
                ],
            }
        )
        out = "\n".join(f"case_{k} PASSED" for k in range(40))
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": out})
        messages.append({"role": "assistant", "content": f"Module {i} is green."})
    src = tmp_path / "seed.json"
    src.write_text(json.dumps({"model": "anthropic/claude-sonnet-4", "messages": messages}))
    return load(src)


def make_db(tmp_path: Path, *, locks: bool = True) -> Path:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    create_schema(conn)
    if not locks:
        conn.execute("DROP TABLE compression_locks")
    write_session(conn, _transcript(tmp_path), SID, started_at=1_757_000_000.0,
                  counters={"input_tokens": 1234})  # fmt: skip
    write_session(conn, _transcript(tmp_path, 3), "other_session", started_at=1_756_000_000.0)
    conn.close()
    return path


def rows(path: Path, session: str = SID) -> list[tuple[int, int, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT id, active, compacted FROM messages WHERE session_id = ? ORDER BY id",
            (session,),
        ).fetchall()
    finally:
        conn.close()


def compacted(source, keep_last: int = 2):  # type: ignore[no-untyped-def]
    result = compress(
        source.transcript,
        CompactionOptions(keep_last=keep_last, force=True),
        counter=RoughCounter(),
    )
    assert result.report.status is Status.COMPACTED
    return result


def test_in_place_archives_rows_and_inserts_the_compacted_list(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    before_rows = rows(db)
    other_before = read_snapshot(db, "other_session")
    source = load_source(db, session=SID)
    assert source.ref.is_db and source.sha256 == sha256_hex(read_snapshot(db, SID))
    result = compacted(source)
    record = commit(result, source)
    assert record.mode is CommitMode.IN_PLACE and record.target_session == SID
    after = rows(db)
    old_ids = [r[0] for r in before_rows]
    assert [r for r in after if r[0] in old_ids] == [(i, 0, 1) for i in old_ids]
    new = [r for r in after if r[0] not in old_ids]
    assert len(new) == len(result.transcript.messages) and all(r[1:] == (1, 0) for r in new)
    assert record.plan["inserted_ids"] == [r[0] for r in new]
    back = load(db, session=SID)  # same session id, compacted view
    assert [m.text for m in back.messages] == [m.text for m in result.transcript.messages]
    assert back.compactions and back.compactions[-1].extra.get("in_place") is True
    assert read_snapshot(db, "other_session") == other_before  # nothing else touched
    assert Archive().blob(record.source_sha256) == source.data

    undone = undo(record.id)
    assert undone.state is CommitState.UNDONE
    assert rows(db) == before_rows
    assert sha256_hex(read_snapshot(db, SID)) == source.sha256  # byte-identical snapshot


def test_child_ends_the_session_and_starts_one_with_lineage(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    before_rows = rows(db)
    source = load_source(db, session=SID)
    result = compacted(source)
    record = commit(result, source, mode="child")
    child = record.target_session
    assert child and child != SID
    assert rows(db) == before_rows  # parent rows untouched
    conn = sqlite3.connect(db)
    parent = conn.execute(
        "SELECT ended_at, end_reason FROM sessions WHERE id = ?", (SID,)
    ).fetchone()
    lineage = conn.execute(
        "SELECT parent_session_id FROM sessions WHERE id = ?", (child,)
    ).fetchone()
    conn.close()
    assert parent[0] is not None and parent[1] == "compression"
    assert lineage == (SID,)
    back = load(db, session=child)
    assert len(back.messages) == len(result.transcript.messages)

    undo(record.id)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE id = ?", (child,)).fetchone() == (0,)
    assert conn.execute(
        "SELECT COUNT(*) FROM messages WHERE session_id = ?", (child,)
    ).fetchone() == (0,)
    conn.close()
    assert sha256_hex(read_snapshot(db, SID)) == source.sha256


def test_a_live_hermes_compression_lock_is_honoured(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    source = load_source(db, session=SID)
    result = compacted(source)
    conn = sqlite3.connect(db)
    now = time.time()
    conn.execute(
        "INSERT INTO compression_locks VALUES (?, ?, ?, ?)",
        (SID, "hermes-gateway:worker-7", now, now + 300),
    )
    conn.commit()
    conn.close()
    snapshot = read_snapshot(db, SID)
    with pytest.raises(LeaseBusy, match=r"compaction already in flight .*hermes-gateway:worker-7"):
        commit(result, source)
    assert read_snapshot(db, SID) == snapshot
    assert history(db) == []


def test_an_expired_lock_is_taken_over_and_released(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO compression_locks VALUES (?, ?, ?, ?)",
        (SID, "hermes-gateway:crashed", 100.0, 400.0),
    )
    conn.commit()
    conn.close()
    source = load_source(db, session=SID)
    record = commit(compacted(source), source)
    assert record.state is CommitState.DONE
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM compression_locks").fetchone() == (0,)
    conn.close()


def test_a_database_without_the_lock_table_still_commits(tmp_path: Path) -> None:
    db = make_db(tmp_path, locks=False)
    source = load_source(db, session=SID)
    record = commit(compacted(source), source)
    assert record.state is CommitState.DONE
    undo(record.id)
    assert sha256_hex(read_snapshot(db, SID)) == source.sha256


def test_a_turn_hermes_wrote_after_loading_makes_the_commit_stale(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    source = load_source(db, session=SID)
    result = compacted(source)
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
        (SID, "one more thing", time.time()),
    )
    conn.commit()
    conn.close()
    snapshot = read_snapshot(db, SID)
    with pytest.raises(StaleSourceError, match="reload"):
        commit(result, source)
    assert read_snapshot(db, SID) == snapshot


def test_undo_after_hermes_continued_needs_force_and_keeps_its_rows(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    before_rows = rows(db)
    source = load_source(db, session=SID)
    record = commit(compacted(source), source)
    conn = sqlite3.connect(db)
    cur = conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
        (SID, "continued after the compaction", time.time()),
    )
    later = cur.lastrowid
    conn.commit()
    conn.close()
    with pytest.raises(ChangedSinceCommit, match="--force"):
        undo(record.id)
    forced = undo(record.id, force=True)
    assert forced.forced_sha256 is not None
    assert b"continued after the compaction" in Archive().blob(forced.forced_sha256)
    after = rows(db)
    assert after[: len(before_rows)] == before_rows  # originals active again, as before
    assert after[-1] == (later, 1, 0)  # the agent's later turn is kept
    assert forced.note and "kept" in forced.note


@pytest.mark.parametrize("mode", ["in-place", "child"])
def test_a_failure_inside_the_transaction_rolls_everything_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    db = make_db(tmp_path)
    snapshot = read_snapshot(db, SID)
    conn = sqlite3.connect(db)
    sessions_before = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
    conn.close()
    source = load_source(db, session=SID)
    result = compacted(source)

    def fail_mid_transaction(point: str) -> None:
        if point == "mid-transaction":
            raise OSError("disk full")

    monkeypatch.setattr("tinyjuice.store.hermes_commit.checkpoint", fail_mid_transaction)
    with pytest.raises(OSError, match="disk full"):
        commit(result, source, mode=mode)
    assert read_snapshot(db, SID) == snapshot
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone() == sessions_before
    conn.close()
    (record,) = history(db)
    assert record.state is CommitState.ABORTED and "disk full" in (record.note or "")


def test_older_schema_without_active_flags_refuses_in_place(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, system_prompt TEXT,
            parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
            role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT,
            tool_name TEXT, timestamp REAL NOT NULL);
        """
    )
    conn.execute("INSERT INTO sessions (id, started_at) VALUES ('s1', 1.0)")
    for i in range(24):
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', ?, ?, ?)",
            ("user" if i % 2 == 0 else "assistant", f"turn {i} " * 400, float(i + 2)),
        )
    conn.commit()
    conn.close()
    source = load_source(db)
    result = compacted(source, keep_last=1)
    with pytest.raises(CommitError, match=r"older Hermes state\.db"):
        commit(result, source, mode="in-place")
    record = commit(result, source, mode="child")  # a child needs no active flags
    assert record.state is CommitState.DONE
    assert len(load(db, session=record.target_session).messages) == len(result.transcript.messages)


@pytest.mark.parametrize("column", ["order", "group", 'odd "name"'])
def test_undo_works_when_a_sessions_column_needs_quoting(tmp_path: Path, column: str) -> None:
    db = make_db(tmp_path)
    conn = sqlite3.connect(db)
    quoted = '"' + column.replace('"', '""') + '"'
    conn.execute(f"ALTER TABLE sessions ADD COLUMN {quoted} INTEGER DEFAULT 7")
    conn.commit()
    conn.close()
    before_rows = rows(db)
    source = load_source(db, session=SID)
    record = commit(compacted(source), source)
    undone = undo(record.id)
    assert undone.state is CommitState.UNDONE
    assert rows(db) == before_rows
    assert sha256_hex(read_snapshot(db, SID)) == source.sha256
    # A forced undo and a child commit go through the same statements.
    record = commit(compacted(load_source(db, session=SID)), load_source(db, session=SID))
    assert undo(record.id, force=True).state is CommitState.UNDONE
    source = load_source(db, session=SID)
    child = commit(compacted(source), source, mode="child")
    assert undo(child.id).state is CommitState.UNDONE


@pytest.mark.parametrize("mode", ["in-place", "child"])
def test_an_undo_that_would_not_restore_byte_for_byte_changes_nothing(
    tmp_path: Path, mode: str
) -> None:
    db = make_db(tmp_path)
    source = load_source(db, session=SID)
    record = commit(compacted(source), source, mode=mode)
    target = record.target_session or SID
    parent, child = read_snapshot(db, SID), read_snapshot(db, target)
    wrong = json.loads(source.data)
    wrong["messages"][0]["content"] = "not what the session held"
    undo_rows = undo_in_place if mode == "in-place" else undo_child
    with pytest.raises(CommitError, match="byte-identically"):
        undo_rows(db, record.plan, before=json.dumps(wrong).encode(), after_sha=sha256_hex(child))
    assert read_snapshot(db, SID) == parent and read_snapshot(db, target) == child


def test_write_session_commits_unless_told_to_write_inside_the_callers_transaction(
    tmp_path: Path,
) -> None:
    db = make_db(tmp_path)
    conn = sqlite3.connect(db)
    try:
        ids = write_session(conn, _transcript(tmp_path, 2), "kept", commit=True)
        seen: list[int] = []
        conn.execute("BEGIN IMMEDIATE")
        write_session(conn, _transcript(tmp_path, 2), "dropped", commit=False, on_row=seen.append)
        assert conn.in_transaction and seen == list(range(8))
        conn.rollback()
        names = {r[0] for r in conn.execute("SELECT id FROM sessions").fetchall()}
    finally:
        conn.close()
    assert len(ids) == 8 and "kept" in names and "dropped" not in names
