"""A Hermes state.db that another writer holds, a tjui that died holding Hermes'
compression lock, and a damaged database: clear errors, no row left behind (issue #12)."""

from __future__ import annotations

import importlib
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from test_hermes_commit import SID, _transcript, compacted, make_db
from test_store_crash import crash_in_child

from tinyjuice.formats._hermes_db import write_session
from tinyjuice.store import (
    CommitError,
    CommitState,
    SourceBusy,
    StaleSourceError,
    commit,
    hermes_db,
    history,
    load_source,
)
from tinyjuice.store.hermes_db import read_snapshot

commit_module = importlib.import_module("tinyjuice.store.commit")


def lock_rows(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT session_id, holder FROM compression_locks").fetchall()
    finally:
        conn.close()


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def hold_write_lock(db: Path, seconds: float, *, exclusive: bool = False) -> threading.Event:
    """Another writer takes the database lock and keeps it for ``seconds``; the event is
    set once it holds it."""
    held = threading.Event()

    def writer() -> None:
        conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE" if exclusive else "BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    threading.Thread(target=writer, daemon=True).start()
    assert held.wait(5)
    return held


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hermes_db, "BUSY_TIMEOUT", 0.3, raising=False)


def test_a_writer_locking_the_db_after_loading_is_a_clear_busy_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_waits: None
) -> None:
    db = make_db(tmp_path)
    source = load_source(db, session=SID)
    result = compacted(source)
    snapshot = read_snapshot(db, SID)
    real_check = commit_module._check_source

    def check_then_hermes_writes(src):  # type: ignore[no-untyped-def]
        real_check(src)
        hold_write_lock(db, 1.0)  # Hermes starts a write right after our stale check

    monkeypatch.setattr(commit_module, "_check_source", check_then_hermes_writes)
    with pytest.raises(SourceBusy, match="locked by another writer") as caught:
        commit(result, source)
    assert not isinstance(caught.value, StaleSourceError)  # not "changed since loaded"
    time.sleep(1.2)
    assert read_snapshot(db, SID) == snapshot
    assert lock_rows(db) == []  # our compression_locks row is released
    (record,) = history(db)
    assert record.state is CommitState.ABORTED


def test_a_db_locked_for_reading_is_busy_not_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = make_db(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")  # a rollback journal: writers block readers
    conn.close()
    source = load_source(db, session=SID)
    result = compacted(source)
    real_take = hermes_db._take_lock

    def take_then_hermes_writes(*args):  # type: ignore[no-untyped-def]
        real_take(*args)
        hold_write_lock(db, 6.5, exclusive=True)

    monkeypatch.setattr(hermes_db, "_take_lock", take_then_hermes_writes, raising=False)
    with pytest.raises(SourceBusy, match="locked by another writer"):
        commit(result, source)
    assert lock_rows(db) == []


def test_a_row_left_by_a_dead_tjui_is_reclaimed(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    host = socket.gethostname()
    now = time.time()
    conn = sqlite3.connect(db)
    conn.executemany(
        "INSERT INTO compression_locks VALUES (?, ?, ?, ?)",
        [
            ("other_session", f"tjui-commit:{host}:{dead_pid()}:0badc0de", now, now + 300),
            ("third_session", f"tjui-commit:elsewhere:{dead_pid()}:0badc0de", now, now + 300),
        ],
    )
    conn.commit()
    conn.close()
    source = load_source(db, session=SID)
    assert commit(compacted(source), source).state is CommitState.DONE
    # Ours (this host, process gone) is cleared; another host's row is not ours to judge.
    assert [r[0] for r in lock_rows(db)] == ["third_session"]


def test_a_tjui_killed_holding_the_lock_does_not_hold_the_session(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    source = load_source(db, session=SID)
    result = compacted(source)
    conn = sqlite3.connect(db)
    write_session(conn, _transcript(tmp_path), "second_session", started_at=1_757_100_000.0)
    conn.close()
    crash_in_child("lease-acquired", lambda: commit(result, source))
    assert [r[0] for r in lock_rows(db)] == [SID]  # SIGKILL: no chance to release
    assert hermes_db.lock_holder(db, SID) is None  # recognised as a dead tjui's row
    again = load_source(db, session="second_session")
    assert commit(compacted(again), again).state is CommitState.DONE
    assert lock_rows(db) == []  # the next commit in the database cleared it


def _damage_table(db: Path, table: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    (page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with open(db, "r+b") as fh:
        fh.seek((page - 1) * size)
        fh.write(b"\xff" * size)


def test_a_damaged_but_loadable_db_gives_a_clear_error(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    _damage_table(db, "compression_locks")  # loading never reads that table
    source = load_source(db, session=SID)
    with pytest.raises(CommitError, match=r"cannot be written .*damaged"):
        commit(compacted(source), source)
    assert history(db) == []
