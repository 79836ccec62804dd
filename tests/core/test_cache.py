"""The persistent analysis cache: a cached figure is always the figure a count gives."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from tinyjuice import cache as cache_mod
from tinyjuice.cache import AnalysisCache, read_source
from tinyjuice.tokens import TranscriptTokens, count_transcript, default_counter

SAMPLE = Path(__file__).resolve().parents[2] / "sessions" / "claude-code.jsonl"


def _lines() -> list[bytes]:
    return SAMPLE.read_bytes().splitlines(keepends=True)


def _count(cache: AnalysisCache, path: Path) -> tuple[TranscriptTokens, str, int, TranscriptTokens]:
    """Counts through the cache, its status, texts encoded, and a fresh count to compare."""
    source = read_source(path)
    transcript, identity = source.parse()
    counter = default_counter()
    got = cache.tokens(transcript, identity, counter, variant="v")
    fresh = count_transcript(transcript, type(counter)(counter._enc, counter.name))  # type: ignore[attr-defined]
    return got.tokens, got.status, got.encoded, fresh


@pytest.fixture
def cache(tmp_path: Path) -> AnalysisCache:
    if default_counter().name == "rough":
        pytest.skip("no tokenizer: exact counts are not cached")
    return AnalysisCache(tmp_path / "c")


@pytest.fixture
def file(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    return path


def test_second_read_is_a_hit_with_the_same_figures(cache: AnalysisCache, file: Path) -> None:
    first, status, encoded, fresh = _count(cache, file)
    assert (status, first) == ("miss", fresh) and encoded > 0
    again, status, encoded, fresh = _count(cache, file)
    assert (status, encoded) == ("hit", 0)
    assert again == fresh


def test_append_encodes_only_the_new_texts(cache: AnalysisCache, file: Path) -> None:
    lines = _lines()
    file.write_bytes(b"".join(lines[:60]))
    _, _, encoded_before, _ = _count(cache, file)
    file.write_bytes(b"".join(lines))
    got, status, encoded, fresh = _count(cache, file)
    assert status == "partial" and got == fresh
    full = AnalysisCache(file.parent / "other")
    _, _, encoded_all, _ = _count(full, file)
    assert 0 < encoded < encoded_all - encoded_before // 2


def test_edit_in_the_middle_same_size_and_mtime(cache: AnalysisCache, file: Path) -> None:
    _count(cache, file)
    data = file.read_bytes()
    st = file.stat()
    # Upper-case the first letters of a message text halfway through the file.
    at = data.index(b'"text":"', len(data) // 2) + len(b'"text":"')
    file.write_bytes(data[:at] + data[at : at + 6].upper() + data[at + 6 :])
    assert file.read_bytes() != data
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns))
    got, status, encoded, fresh = _count(cache, file)
    assert status == "partial" and got == fresh and encoded >= 1


def test_truncate_and_replace(cache: AnalysisCache, file: Path, tmp_path: Path) -> None:
    _count(cache, file)
    file.write_bytes(b"".join(_lines()[:40]))
    got, status, encoded, fresh = _count(cache, file)
    assert (status, encoded) == ("partial", 0) and got == fresh
    other = Path(__file__).resolve().parents[2] / "sessions" / "codex-rollout.jsonl"
    file.write_bytes(other.read_bytes())
    got, status, _, fresh = _count(cache, file)
    assert got == fresh and len(got.per_message) != 0


def test_version_bump_ignores_old_entries(
    cache: AnalysisCache, file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _count(cache, file)
    monkeypatch.setattr(cache_mod, "SCHEMA", cache_mod.SCHEMA + 1)
    newer = AnalysisCache(cache.directory)
    assert newer.info()["stale"] == 1 and newer.info()["files"] == 0
    got, status, _, fresh = _count(newer, file)
    assert status == "miss" and got == fresh
    assert newer.info()["stale"] == 0  # reclaimed on the write


def test_corrupted_database_is_ignored_and_rebuilt(cache: AnalysisCache, file: Path) -> None:
    _count(cache, file)
    cache.close()
    cache.path.write_bytes(b"this is not a database" * 500)
    for suffix in ("-wal", "-shm"):
        Path(f"{cache.path}{suffix}").unlink(missing_ok=True)
    reopened = AnalysisCache(cache.directory)
    got, status, _, fresh = _count(reopened, file)
    assert status == "miss" and got == fresh
    _, status, _, _ = _count(AnalysisCache(cache.directory), file)
    assert status == "hit"


def test_a_locked_cache_is_not_mistaken_for_a_damaged_one(cache: AnalysisCache, file: Path) -> None:
    _count(cache, file)
    cache.close()
    inode = cache.path.stat().st_ino
    other = sqlite3.connect(cache.path, isolation_level=None)
    other.execute("PRAGMA locking_mode=EXCLUSIVE")
    other.execute("BEGIN EXCLUSIVE")
    other.execute("UPDATE tokens SET used = used")
    try:
        got, status, _, fresh = _count(AnalysisCache(cache.directory, busy_ms=50), file)
        assert (status, got) == ("miss", fresh)
    finally:
        other.execute("ROLLBACK")
        other.close()
    # The same file, entry and all: "locked" is not "damaged" (nothing was deleted).
    assert cache.path.stat().st_ino == inode
    _, status, _, _ = _count(AnalysisCache(cache.directory), file)
    assert status == "hit"


def test_a_damaged_entry_is_never_a_wrong_figure(cache: AnalysisCache, file: Path) -> None:
    first, *_ = _count(cache, file)
    cache.close()
    db = sqlite3.connect(cache.path)
    # Same length, other numbers: only the checksum can tell.
    wrong = cache_mod._pack([n + 1 for n in first.per_message])
    db.execute("UPDATE tokens SET per_message = ?", (wrong,))
    db.commit()
    db.close()
    got, status, _, fresh = _count(AnalysisCache(cache.directory), file)
    assert status == "miss" and got == fresh


def _worker(directory: str, path: str, rounds: int) -> list[int]:
    c = AnalysisCache(Path(directory))
    totals = []
    for _ in range(rounds):
        source = read_source(path)
        transcript, identity = source.parse()
        totals.append(c.tokens(transcript, identity, default_counter(), variant="v").tokens.total)
    return totals


def test_concurrent_writers(cache: AnalysisCache, file: Path, tmp_path: Path) -> None:
    second = tmp_path / "second.jsonl"
    second.write_bytes(b"".join(_lines()[:50]))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        jobs = [
            pool.apply_async(_worker, (str(cache.directory), str(p), 4)) for p in (file, second)
        ]
        results = [j.get(timeout=120) for j in jobs]
    for path, totals in zip((file, second), results, strict=True):
        got, status, _, fresh = _count(cache, path)
        assert status == "hit" and got == fresh
        assert set(totals) == {fresh.total}
    assert cache.info()["files"] == 2


def test_least_recently_used_entries_go_first(tmp_path: Path) -> None:
    if default_counter().name == "rough":
        pytest.skip("no tokenizer")
    files = []
    for i, n in enumerate((60, 60, 30)):
        p = tmp_path / f"s{i}.jsonl"
        p.write_bytes(b"".join(_lines()[:n]))
        files.append(p)
    first = AnalysisCache(tmp_path / "c")
    for p in files[:2]:
        _count(first, p)
    two = first.info()["entry_bytes"]
    first.close()
    cache = AnalysisCache(tmp_path / "c", max_bytes=int(two * 1.05))
    idents = [read_source(p).identity for p in files]
    assert all(i is not None for i in idents)
    # Use the first again (a hit: no write): now the second is the least recently used.
    transcript, ident = read_source(files[0]).parse()
    assert cache.stored_tokens(transcript, ident, default_counter(), variant="v") is not None
    _count(cache, files[2])
    held = [cache.holds_tokens(i) for i in idents if i is not None]
    assert held == [True, False, True]
    assert cache.info()["entry_bytes"] <= cache.max_bytes


def test_multi_file_formats_and_databases_are_not_cached_by_file() -> None:
    root = Path(__file__).resolve().parents[2] / "sessions"
    assert read_source(root / "hermes-state.db").identity is None
    _, identity = read_source(root / "cline-task").parse()
    assert identity is None


def test_no_cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_NO_CACHE", "1")
    assert cache_mod.default_cache() is None
    monkeypatch.setenv("TJUI_NO_CACHE", "0")
    assert cache_mod.default_cache() is not None


def test_result_size_names_the_stored_bytes_without_hashing(
    cache: AnalysisCache, file: Path
) -> None:
    source = read_source(file)
    identity = source.identity
    assert identity is not None
    assert cache.result_size(identity.path, "k", {"a": 1}) is None
    cache.put_result(identity, "k", {"a": 1}, {"v": 2})
    assert cache.result_size(identity.path, "k", {"a": 1}) == identity.size
    assert cache.result_size(identity.path, "k", {"a": 2}) is None
    assert cache.result_size(identity.path + "x", "k", {"a": 1}) is None


def test_opening_tries_again_while_another_process_creates_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes creating the file at once: the loser's WAL switch answers "locked"
    at once, without waiting on the busy timeout (seen with four processes opening a
    new file together). It tries again rather than doing without the cache."""
    real_open = AnalysisCache._open
    calls = []

    def locked_twice(self: AnalysisCache) -> sqlite3.Connection:
        calls.append(1)
        if len(calls) <= 2:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise error
        return real_open(self)

    monkeypatch.setattr(AnalysisCache, "_open", locked_twice)
    cache = AnalysisCache(tmp_path / "c", busy_ms=5_000)
    assert cache._connect() is not None and not cache._broken and len(calls) == 3
    cache.close()


def test_a_cache_it_cannot_write_is_done_without_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def read_only(self: AnalysisCache) -> sqlite3.Connection:
        calls.append(1)
        error = sqlite3.OperationalError("attempt to write a readonly database")
        error.sqlite_errorcode = sqlite3.SQLITE_READONLY  # type: ignore[attr-defined]
        raise error

    monkeypatch.setattr(AnalysisCache, "_open", read_only)
    cache = AnalysisCache(tmp_path / "c", busy_ms=60_000)
    assert cache._connect() is None and cache._broken and len(calls) == 1


def test_a_lock_held_past_the_busy_timeout_is_done_without(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    other = sqlite3.connect(
        directory / cache_mod.DB_NAME, isolation_level=None, check_same_thread=False
    )
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN EXCLUSIVE")
    try:
        cache = AnalysisCache(directory, busy_ms=200)
        assert cache._connect() is None and cache._broken
    finally:
        other.execute("COMMIT")
        other.close()
