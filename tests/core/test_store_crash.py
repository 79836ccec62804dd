"""Crash safety: SIGKILL a committing process at each injected point, then check that the
source is wholly old or wholly new, the archive is consistent, recovery settles the
commit, undo works, and the lease of the dead process does not block the next commit.
Concurrency: two processes commit the same source; one wins, the other reports the lease.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tinyjuice.atomic import TEMP_SUFFIX, sha256_hex, temp_path_for
from tinyjuice.formats import load
from tinyjuice.formats._hermes_state import create_schema, write_session
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress
from tinyjuice.store import Archive, CommitState, commit, history, load_source, undo
from tinyjuice.store.hermes_commit import read_snapshot
from tinyjuice.tokens import RoughCounter

SID = "20250916_084107_a3f9c1"
RUNS = 3

CHILD = """
import sys
from tinyjuice.formats import load
from tinyjuice.store import commit, load_source

path, mode, session, compacted = sys.argv[1], sys.argv[2], sys.argv[3] or None, sys.argv[4]
commit(load(compacted), load_source(path, session=session), mode=mode)
"""

CHILD = """
import json, sys
from tinyjuice.pipeline import compress
from tinyjuice.options import CompactionOptions
from tinyjuice.store import LeaseBusy, commit, load_source
from tinyjuice.tokens import RoughCounter

path, mode, session = sys.argv[1], sys.argv[2], sys.argv[3] or None
src = load_source(path, session=session)
res = compress(src.transcript, CompactionOptions(keep_last=2, force=True), counter=RoughCounter())
try:
    rec = commit(res, src, mode=mode)
except LeaseBusy as exc:
    print(json.dumps({"status": "busy", "message": str(exc)}))
    sys.exit(3)
print(json.dumps({"status": "done", "id": rec.id}))
"""


def _messages(exchanges: int) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"Step {i}: fix src/m{i}.py"})
        messages.append({"role": "assistant", "content": f"Reading src/m{i}.py. " * 30})
        messages.append({"role": "user", "content": f"Output of step {i}: " + "ok " * 300})
        messages.append({"role": "assistant", "content": f"Step {i} done."})
    return messages


def make_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": _messages(10)}, indent=1))
    return path


def make_db(tmp_path: Path) -> Path:
    (tmp_path / "seed").mkdir()
    seed = make_file(tmp_path / "seed")
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    create_schema(conn)
    write_session(conn, load(seed), SID, started_at=1_758_000_000.0)
    conn.close()
    return path


def state_sha(path: Path, session: str | None) -> str:
    if session is None:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return sha256_hex(read_snapshot(path, session))


def run_child(
    path: Path, mode: str, session: str | None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode, session or ""],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


OLD, NEW = "old", "new"
FILE_POINTS = {
    "before-archive": OLD,
    "after-archive": OLD,
    "mid-write": OLD,
    "before-rename": OLD,
    "after-rename": NEW,
    "before-done": NEW,
}
DB_POINTS = {
    "before-archive": OLD,
    "after-archive": OLD,
    "mid-transaction": OLD,
    "before-db-commit": OLD,
    "after-transaction": NEW,
    "before-done": NEW,
}


def crash_in_child(point: str, work: Callable[[], object]) -> int:
    """Run ``work`` in a forked process with ``TJUI_CRASH_AT=point``; its wait status.

    The child is a real process (its own file descriptors and SQLite connections) killed
    by SIGKILL at the point, so nothing in it gets to clean up; forking skips the
    interpreter start-up, so every point can be crashed several times cheaply.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns into pytest
        code = 1
        try:
            os.environ["TJUI_CRASH_AT"] = point
            work()
            code = 0
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def _check_after_crash(
    tmp_path: Path, source: Path, session: str | None, mode: str, point: str, expect: str
) -> None:
    old = state_sha(source, session)
    loaded = load_source(source, session=session)
    result = compress(
        loaded.transcript, CompactionOptions(keep_last=2, force=True), counter=RoughCounter()
    )
    status = crash_in_child(point, lambda: commit(result, loaded, mode=mode))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (point, status)

    archive = Archive()
    assert archive.check() == []  # integrity_check ok; every commit's blobs present
    rows = archive.commits()
    assert len(rows) <= 1
    row = rows[0] if rows else None
    if point == "before-archive":
        assert row is None
    else:
        assert row is not None and row.state is CommitState.PENDING

    # The source: wholly the old version or wholly the new one, and it still loads.
    if mode == "in-place":
        now = state_sha(source, session)
        if expect == OLD:
            assert now == old
        else:
            assert row is not None and now == row.after_sha256 != old
        load(source, session=session)
    else:
        if session is None or expect == OLD:
            assert state_sha(source, session) == old  # a child never touches its source file
        if row is not None and session is None:
            child = Path(row.target_path)
            if expect == OLD:
                assert not child.exists()
            else:
                assert hashlib.sha256(child.read_bytes()).hexdigest() == row.after_sha256

    if point in ("mid-write", "before-rename"):
        assert row is not None  # the crash left its temporary file (and only that)
        assert temp_path_for(Path(row.target_path), row.id).exists()

    # Recovery (run by history) settles the commit; no temporary file is left behind.
    settled = {r.id: r for r in history()}
    if row is not None:
        final = settled[row.id]
        assert final.state is (CommitState.DONE if expect == NEW else CommitState.ABORTED)
        if final.state is CommitState.DONE:
            undone = undo(final.id)
            assert undone.state is CommitState.UNDONE
            assert state_sha(source, session) == old
    assert not [p for p in source.parent.iterdir() if p.name.endswith(TEMP_SUFFIX)]

    # The dead process's lease does not block the next commit.
    again = load_source(source, session=session)
    result = compress(
        again.transcript, CompactionOptions(keep_last=2, force=True), counter=RoughCounter()
    )
    assert commit(result, again, mode=mode).state is CommitState.DONE


@pytest.mark.parametrize("point", list(FILE_POINTS))
def test_sigkill_during_a_file_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    for run in range(RUNS):
        work = tmp_path / f"run{run}"
        work.mkdir()
        monkeypatch.setenv("TJUI_HOME", str(work / "home"))
        _check_after_crash(work, make_file(work), None, "in-place", point, FILE_POINTS[point])


@pytest.mark.parametrize("point", list(DB_POINTS))
def test_sigkill_during_a_state_db_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    for run in range(RUNS):
        work = tmp_path / f"run{run}"
        work.mkdir()
        monkeypatch.setenv("TJUI_HOME", str(work / "home"))
        _check_after_crash(work, make_db(work), SID, "in-place", point, DB_POINTS[point])


@pytest.mark.parametrize("point", ["mid-write", "after-rename", "mid-transaction"])
def test_sigkill_during_a_child_commit(tmp_path: Path, point: str) -> None:
    if point == "mid-transaction":
        source, session = make_db(tmp_path), SID
        expect = OLD
    else:
        source, session = make_file(tmp_path), None
        expect = FILE_POINTS[point]
    _check_after_crash(tmp_path, source, session, "child", point, expect)


@pytest.mark.parametrize("kind", ["file", "state.db"])
def test_two_processes_commit_the_same_source(tmp_path: Path, kind: str) -> None:
    source = make_file(tmp_path) if kind == "file" else make_db(tmp_path)
    session = SID if kind == "state.db" else None
    old = state_sha(source, session)
    gate = tmp_path / "gate"
    first = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(source), "in-place", session or ""],
        env={**os.environ, "TJUI_PAUSE_AT": "lease-acquired", "TJUI_PAUSE_FILE": str(gate)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not Path(str(gate) + ".reached").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first commit never took its lease"
            time.sleep(0.02)
        second = run_child(source, "in-place", session)
        assert second.returncode == 3, (second.stdout, second.stderr)
        assert "compaction already in flight" in json.loads(second.stdout)["message"]
        assert state_sha(source, session) == old  # the loser changed nothing
    finally:
        gate.touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    done = json.loads(out)
    records = history()
    assert [r.id for r in records] == [done["id"]]
    assert records[0].state is CommitState.DONE
    assert state_sha(source, session) == records[0].after_sha256 != old
