"""The commit store under faults: a write racing the rename, full disks, damaged or
locked databases, and the permission bits of what it writes (issue #12)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from test_store import compacted, openai_session, sha

import tinyjuice.atomic as atomic
from tinyjuice.store import (
    Archive,
    CommitState,
    StaleSourceError,
    commit,
    history,
    load_source,
)

APPENDED = b'\n{"role": "user", "content": "one more turn the agent wrote"}\n'


def _append_during_swap(monkeypatch: pytest.MonkeyPatch, target: Path, *, swap: bool) -> list[str]:
    """Fault injection: the agent appends to ``target`` at the exact moment between the
    commit's last stale check and the rename (whichever call performs the rename).
    ``swap=False`` takes the path for file systems without an atomic exchange."""
    real_exchange = getattr(atomic, "exchange", None)
    real_replace = os.replace
    calls: list[str] = []

    def race(dst: object) -> None:
        if not calls and Path(str(dst)) == target:
            with open(target, "ab") as fh:
                fh.write(APPENDED)
            calls.append(str(dst))

    def racing_exchange(a: Path, b: Path) -> bool:
        race(b)
        return real_exchange(a, b) if swap and real_exchange else False

    def racing_replace(src: object, dst: object) -> None:
        race(dst)
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(atomic, "exchange", racing_exchange, raising=False)
    monkeypatch.setattr(atomic.os, "replace", racing_replace)
    return calls


@pytest.mark.parametrize("swap", [True, False], ids=["renameat2-exchange", "held-open"])
def test_an_append_racing_the_rename_is_kept_and_the_commit_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: bool
) -> None:
    src = openai_session(tmp_path / "session.json")
    original = src.read_bytes()
    source = load_source(src)
    result = compacted(source)
    calls = _append_during_swap(monkeypatch, src.resolve(), swap=swap)
    with pytest.raises(StaleSourceError, match="changed while it was being replaced"):
        commit(result, source, mode="in-place")
    assert calls, "the injected append never ran: the test did not reach the rename"
    assert src.read_bytes() == original + APPENDED  # nothing the agent wrote is lost
    [record] = history(src)
    assert record.state is CommitState.ABORTED
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "tjui-home") == [
        "session.json"
    ]  # no temporary or conflict file left


def test_the_swap_keeps_the_agents_inode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that holds the file open keeps writing to the live file after the
    refusal: the very file it had is put back, not a copy."""
    if not _has_exchange(tmp_path):
        pytest.skip("this file system has no atomic exchange")
    src = openai_session(tmp_path / "session.json")
    source = load_source(src)
    result = compacted(source)
    inode = src.stat().st_ino
    _append_during_swap(monkeypatch, src.resolve(), swap=True)
    with pytest.raises(StaleSourceError):
        commit(result, source, mode="in-place")
    assert src.stat().st_ino == inode


def test_without_a_race_the_in_place_commit_still_completes(tmp_path: Path) -> None:
    src = openai_session(tmp_path / "session.json")
    source = load_source(src)
    record = commit(compacted(source), source, mode="in-place")
    assert record.state is CommitState.DONE and sha(src) == record.after_sha256
    assert Archive().blob(record.source_sha256) == source.data
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "tjui-home") == ["session.json"]


def test_exchange_swaps_two_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A")
    b.write_bytes(b"B")
    if not atomic.exchange(a, b):
        pytest.skip("this file system has no atomic exchange")
    assert (a.read_bytes(), b.read_bytes()) == (b"B", b"A")
    with pytest.raises(FileNotFoundError):
        atomic.exchange(tmp_path / "missing", a)


def _has_exchange(tmp_path: Path) -> bool:
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.write_bytes(b"")
    b.write_bytes(b"")
    try:
        return atomic.exchange(a, b)
    finally:
        a.unlink()
        b.unlink()


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_crash_between_the_swap_and_its_check_keeps_the_agents_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL right after the swap, with an append in the window: recovery finds the
    replaced file (with the append) in the temporary file and puts it back."""
    from test_store_crash import crash_in_child

    if not _has_exchange(tmp_path):
        pytest.skip("this file system has no atomic exchange")
    src = openai_session(tmp_path / "session.json")
    original = src.read_bytes()
    source = load_source(src)
    result = compacted(source)
    _append_during_swap(monkeypatch, src.resolve(), swap=True)
    status = crash_in_child("after-swap", lambda: commit(result, source, mode="in-place"))
    assert os.WIFSIGNALED(status)
    [record] = history(src)  # history runs recovery
    assert record.state is CommitState.ABORTED
    assert src.read_bytes() == original + APPENDED
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "tjui-home") == ["session.json"]


def test_a_full_archive_after_the_write_does_not_claim_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from tinyjuice.store import CommitError

    src = openai_session(tmp_path / "session.json")
    source = load_source(src)
    result = compacted(source)
    real = Archive.update_commit

    def full_when_done(conn, commit_id, **changes):  # type: ignore[no-untyped-def]
        if changes.get("state") is CommitState.DONE:
            raise sqlite3.OperationalError("database or disk is full")
        real(conn, commit_id, **changes)

    monkeypatch.setattr(Archive, "update_commit", staticmethod(full_when_done))
    with pytest.raises(CommitError, match="was written, but the archive could not record"):
        commit(result, source, mode="in-place")
    monkeypatch.setattr(Archive, "update_commit", staticmethod(real))
    [record] = history(src)  # settled by recovery
    assert record.state is CommitState.DONE and sha(src) == record.after_sha256


def test_a_write_to_the_new_file_before_the_swap_back_is_kept_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writes racing the commit: one into the original before the swap, one into the
    new version before it is swapped back. Both are kept: the original (with the first)
    is put back, the new version (with the second) is left beside it and named."""
    if not _has_exchange(tmp_path):
        pytest.skip("this file system has no atomic exchange")
    src = openai_session(tmp_path / "session.json")
    original = src.read_bytes()
    source = load_source(src)
    result = compacted(source)
    real = atomic.exchange
    second = b'\n{"role": "user", "content": "written to the new version"}\n'
    writes = [APPENDED, second]

    def racing_exchange(a: Path, b: Path) -> bool:
        if writes and Path(b) == src.resolve():
            with open(b, "ab") as fh:
                fh.write(writes.pop(0))
        return real(a, b)

    monkeypatch.setattr(atomic, "exchange", racing_exchange)
    with pytest.raises(StaleSourceError, match="meanwhile is in") as info:
        commit(result, source, mode="in-place")
    assert src.read_bytes() == original + APPENDED
    [kept] = [p for p in tmp_path.iterdir() if ".tjui-conflict-" in p.name]
    assert str(kept) in str(info.value)
    assert kept.read_bytes().endswith(second) and kept.read_bytes() != original
