"""tinyjuice.store: atomic writes, the archive, leases, commit modes, stale check, undo."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
import zlib
from pathlib import Path

import orjson
import pytest
from builders import write_openai_session

from tinyjuice.atomic import temp_path_for
from tinyjuice.formats import load
from tinyjuice.lease import CompactionLease
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress
from tinyjuice.report import PersistenceRecommendation, Status
from tinyjuice.store import (
    Archive,
    ArchiveError,
    ChangedSinceCommit,
    CommitError,
    CommitMode,
    CommitState,
    LeaseBusy,
    SqliteLease,
    StaleSourceError,
    atomic_write,
    commit,
    history,
    load_source,
    plan_commit,
    undo,
)
from tinyjuice.store.archive import MIGRATIONS, SCHEMA_VERSION, CommitRecord
from tinyjuice.store.archive_lease import make_holder
from tinyjuice.tokens import RoughCounter

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def openai_session(path: Path, exchanges: int = 12) -> Path:
    return write_openai_session(path, exchanges, model="gpt-4o", indent=1)


def compacted(source, **options):  # type: ignore[no-untyped-def]
    keep = options.pop("keep_last", None if "boundary" in options else 2)
    opts = CompactionOptions(keep_last=keep, force=True, **options)
    result = compress(source.transcript, opts, counter=RoughCounter())
    assert result.report.status is Status.COMPACTED
    return result


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    return openai_session(tmp_path / "session.json")


# --------------------------------------------------------------------- atomic writes


def test_atomic_write_replaces_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    atomic_write(target, b"new contents")
    assert target.read_bytes() == b"new contents"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temp file left


def test_atomic_write_refusal_before_rename_leaves_target(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_bytes(b"old")

    def refuse() -> None:
        raise RuntimeError("changed meanwhile")

    with pytest.raises(RuntimeError):
        atomic_write(target, b"new", tag="x", before_rename=refuse)
    assert target.read_bytes() == b"old"
    assert not temp_path_for(target, "x").exists()


def test_atomic_write_new_file_mode(tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    atomic_write(target, b"{}", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# --------------------------------------------------------------------------- archive


def test_archive_lives_in_tjui_home_with_user_only_permissions() -> None:
    home = Path(os.environ["TJUI_HOME"])
    assert not home.exists()
    archive = Archive()
    assert archive.path == home / "archive.db"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(archive.path.stat().st_mode) == 0o600
    with archive.connect() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert archive.schema_version() == SCHEMA_VERSION


def test_archive_migrates_an_old_schema_keeping_rows(tmp_path: Path) -> None:
    home = tmp_path / "old"
    home.mkdir()
    conn = sqlite3.connect(home / "archive.db")
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO blobs VALUES ('ab', 2, 'raw', x'6869', 1.0)",
    )
    conn.execute(
        "INSERT INTO commits (id, state, mode, source_kind, source_path, format, target_kind,"
        " target_path, target_format, source_sha256, source_size, created_at)"
        " VALUES ('c0ffee000000', 'done', 'in-place', 'file', '/x', 'openai', 'file', '/x',"
        " 'openai', 'ab', 2, 5.0)"
    )
    conn.commit()
    conn.close()
    archive = Archive(home)
    assert archive.schema_version() == SCHEMA_VERSION == 2
    record = archive.get("c0ffee")
    assert record.state is CommitState.DONE and record.source_path == "/x"
    with archive.connect() as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "leases" in tables


def test_archive_from_a_newer_tjui_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "new"
    home.mkdir()
    conn = sqlite3.connect(home / "archive.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ArchiveError, match="newer"):
        Archive(home)


def test_blobs_are_content_addressed_compressed_and_verified() -> None:
    archive = Archive()
    data = b"tool output line\n" * 2000
    digest = archive.store_blob(data)
    assert archive.store_blob(data) == digest == hashlib.sha256(data).hexdigest()
    with archive.connect() as conn:
        rows = conn.execute("SELECT codec, length(data) FROM blobs").fetchall()
    assert len(rows) == 1
    assert rows[0][0] == "zlib" and rows[0][1] < len(data) // 10
    assert archive.blob(digest) == data
    lz = archive.store_blob(b"other bytes " * 500, codec="lzma")
    assert archive.blob(lz) == b"other bytes " * 500
    # Tampering is detected, never returned silently.
    with archive.transaction() as conn:
        conn.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (zlib.compress(b"evil"), digest))
    with pytest.raises(ArchiveError, match="corrupted"):
        archive.blob(digest)


def test_check_finds_a_damaged_original(session_file: Path) -> None:
    source = load_source(session_file)
    record = commit(compacted(source), source)
    archive = Archive()
    assert archive.check() == []
    with archive.transaction() as conn:
        conn.execute(
            "UPDATE blobs SET data = ?, codec = 'zlib' WHERE sha256 = ?",
            (zlib.compress(b"not the original"), record.source_sha256),
        )
    problems = archive.check()
    assert len(problems) == 1 and record.source_sha256[:12] in problems[0]


# ----------------------------------------------------------------------------- lease


def test_sqlite_lease_is_exclusive_and_expires() -> None:
    archive = Archive()
    now = [1000.0]
    a = SqliteLease(archive, ttl=300, clock=lambda: now[0])
    b = SqliteLease(archive, ttl=300, clock=lambda: now[0])
    assert isinstance(a, CompactionLease)
    got = a.try_acquire("file:/x")
    assert got.acquired and got.lease_id
    lost = b.try_acquire("file:/x")
    assert not lost.acquired and lost.holder == a.holder
    assert b.try_acquire("file:/other").acquired  # keys are independent
    now[0] += 200
    assert a.refresh(got.lease_id)  # refreshed: lives until 1500
    now[0] += 200
    assert not b.try_acquire("file:/x").acquired
    now[0] += 301
    took = b.try_acquire("file:/x")
    assert took.acquired and took.took_over
    assert not a.refresh(got.lease_id)  # superseded
    a.release(got.lease_id)  # a stale release must not free b's lease
    assert b.holder_of("file:/x") == b.holder
    b.release(took.lease_id or "")
    assert b.holder_of("file:/x") is None


def test_lease_of_a_dead_process_is_taken_over_at_once() -> None:
    archive = Archive()
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead = make_holder().split(":")
    dead[2] = proc.stdout.strip()
    ghost = SqliteLease(archive, holder=":".join(dead))
    assert ghost.try_acquire("file:/y").acquired
    fresh = SqliteLease(archive)
    took = fresh.try_acquire("file:/y")
    assert took.acquired and took.took_over


def test_compress_with_the_sqlite_lease_reports_busy(session_file: Path) -> None:
    source = load_source(session_file)
    other = SqliteLease(Archive())
    key = source.transcript.session_id or source.transcript.path or "transcript"
    held = other.try_acquire(key)
    assert held.acquired
    result = compress(
        source.transcript,
        CompactionOptions(keep_last=2, force=True),
        counter=RoughCounter(),
        lease=SqliteLease(Archive()),
    )
    assert result.report.status is Status.LEASE_BUSY
    assert "already in flight" in result.report.reason


# ------------------------------------------------------------------------- in place


def test_in_place_commit_archives_first_then_replaces(session_file: Path) -> None:
    os.chmod(session_file, 0o640)
    original = session_file.read_bytes()
    source = load_source(session_file)
    result = compacted(source)
    assert result.report.persistence is PersistenceRecommendation.IN_PLACE_ARCHIVE
    record = commit(result, source)
    assert record.mode is CommitMode.IN_PLACE and record.state is CommitState.DONE
    archive = Archive()
    assert archive.blob(record.source_sha256) == original
    assert record.before_sha256 == hashlib.sha256(original).hexdigest()
    assert record.after_sha256 == sha(session_file) != record.before_sha256
    assert record.after_size == session_file.stat().st_size
    assert stat.S_IMODE(session_file.stat().st_mode) == 0o640
    back = load(session_file)
    assert len(back.messages) == len(result.transcript.messages) < len(source.transcript.messages)
    assert any(m.meta.is_summary for m in back.messages)
    report = result.report
    assert (record.boundary_start, record.boundary_end) == (
        report.boundary_start,
        report.boundary_end,
    )
    assert record.profile == "hermes" and record.summary_kind == report.summary_kind.value
    assert record.tokens_before == report.before_tokens
    assert record.report is not None and record.report["after"]["tokens"] == report.after_tokens
    assert archive.check() == []


def test_undo_restores_byte_identically(session_file: Path) -> None:
    original = session_file.read_bytes()
    source = load_source(session_file)
    record = commit(compacted(source), source)
    assert session_file.read_bytes() != original
    done = undo(record.id)
    assert done.state is CommitState.UNDONE and done.undone_at is not None
    assert session_file.read_bytes() == original
    with pytest.raises(CommitError, match="already undone"):
        undo(record.id)


def test_stale_source_is_refused_and_the_agents_turn_kept(session_file: Path) -> None:
    source = load_source(session_file)
    result = compacted(source)
    doc = json.loads(session_file.read_text())
    doc["messages"].append({"role": "assistant", "content": "a turn the agent just wrote"})
    session_file.write_text(json.dumps(doc))
    appended = session_file.read_bytes()
    with pytest.raises(StaleSourceError, match="reload"):
        commit(result, source)
    assert session_file.read_bytes() == appended
    assert history(session_file) == []


def test_undo_refused_after_a_change_unless_forced(session_file: Path) -> None:
    original = session_file.read_bytes()
    source = load_source(session_file)
    record = commit(compacted(source), source)
    changed = session_file.read_bytes().replace(b'"gpt-4o"', b'"gpt-4o-mini"')
    session_file.write_bytes(changed)
    with pytest.raises(ChangedSinceCommit, match="--force"):
        undo(record.id)
    assert session_file.read_bytes() == changed
    forced = undo(record.id, force=True)
    assert session_file.read_bytes() == original
    assert forced.forced_sha256 == hashlib.sha256(changed).hexdigest()
    assert Archive().blob(forced.forced_sha256) == changed


def test_second_commit_blocks_undo_of_the_first(session_file: Path) -> None:
    source = load_source(session_file)
    first = commit(compacted(source, keep_last=6), source)
    again = load_source(session_file)
    second = commit(compacted(again, keep_last=2), again)
    with pytest.raises(ChangedSinceCommit):
        undo(first.id)
    assert undo().id == second.id  # newest undoable first
    assert sha(session_file) == first.after_sha256
    assert undo().id == first.id
    assert sha(session_file) == source.sha256


def test_engine_recommendation_child_picks_child_mode(session_file: Path) -> None:
    source = load_source(session_file)
    result = compacted(source, prefer_child_continuation=True)
    assert result.report.persistence is PersistenceRecommendation.CHILD_CONTINUATION
    record = commit(result, source)
    assert record.mode is CommitMode.CHILD


def test_nothing_to_commit_when_the_engine_changed_nothing(session_file: Path) -> None:
    source = load_source(session_file)
    result = compress(source.transcript, CompactionOptions(), counter=RoughCounter())
    assert result.report.status is Status.BELOW_THRESHOLD
    with pytest.raises(CommitError, match="nothing to commit"):
        commit(result, source)


# ------------------------------------------------------------------- child / export


def test_child_continuation_leaves_the_source_untouched(session_file: Path) -> None:
    original = session_file.read_bytes()
    source = load_source(session_file)
    result = compacted(source)
    record = commit(result, source, mode="child")
    child = Path(record.target_path)
    assert child.parent == session_file.parent and child != session_file
    assert record.before_sha256 is None
    assert session_file.read_bytes() == original
    assert len(load(child).messages) == len(result.transcript.messages)
    undo(record.id)
    assert not child.exists() and session_file.read_bytes() == original


def test_export_to_another_format_and_undo_restores_what_was_there(
    session_file: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out.json"
    target.write_text('{"previous": "file"}')
    previous = target.read_bytes()
    source = load_source(session_file)
    with pytest.raises(CommitError, match="needs a target path"):
        plan_commit(compacted(source), source, mode="export")
    record = commit(compacted(source), source, mode="export", target=target,
                    target_format="anthropic")  # fmt: skip
    assert load(target).format == "anthropic"
    assert record.before_sha256 == hashlib.sha256(previous).hexdigest()
    assert Archive().blob(record.before_sha256) == previous
    undo(record.id)
    assert target.read_bytes() == previous


def test_export_never_overwrites_the_source(session_file: Path) -> None:
    source = load_source(session_file)
    with pytest.raises(CommitError, match="commit in place instead"):
        plan_commit(compacted(source), source, mode="export", target=session_file)


def test_export_to_jsonl_writes_one_line_and_says_what_the_format_drops(tmp_path: Path) -> None:
    src = tmp_path / "anthropic.json"
    src.write_bytes((SESSIONS / "anthropic-messages.json").read_bytes())
    source = load_source(src)
    target = tmp_path / "out.jsonl"
    plan = plan_commit(
        compacted(source), source, mode="export", target=target, target_format="sharegpt"
    )
    assert plan.data is not None and plan.data.count(b"\n") == 1 and plan.data.endswith(b"\n")
    assert any(n.startswith("sharegpt export drops 1 image") for n in plan.notes), plan.notes
    # The same format loses nothing: no note.
    same = plan_commit(compacted(source), source, mode="export", target=tmp_path / "o.json")
    assert not any("drops" in n for n in same.notes)


# ------------------------------------------------------------------------ Claude Code


def _claude_copy(tmp_path: Path) -> Path:
    target = tmp_path / "fbad74b9-23d0-4f07-b965-3290aa8e3160.jsonl"
    target.write_bytes((SESSIONS / "claude-code.jsonl").read_bytes())
    return target


def test_claude_code_is_continued_as_a_compacted_child_session(tmp_path: Path) -> None:
    path = _claude_copy(tmp_path)
    original = path.read_bytes()
    source = load_source(path)
    result = compacted(source, keep_last=3)
    with pytest.raises(CommitError, match="never modified in place"):
        commit(result, source, mode="in-place")
    record = commit(result, source)  # the engine says in place; Claude Code gets a child
    assert record.mode is CommitMode.CHILD and "child session instead" in (record.note or "")
    assert path.read_bytes() == original
    child = Path(record.target_path)
    assert child.name == f"{record.target_session}.jsonl" and child.parent == tmp_path

    lines = [orjson.loads(x) for x in child.read_bytes().splitlines()]
    boundary, summary = lines[0], lines[1]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None
    assert boundary["compactMetadata"] == {
        "trigger": "manual",
        "preTokens": result.report.prompt_tokens,
    }
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    assert summary["message"]["content"] == result.summary_message.text  # type: ignore[union-attr]
    for prev, line in itertools.pairwise(lines):
        assert line["parentUuid"] == prev["uuid"]  # re-linked one after the other
    assert {line["sessionId"] for line in lines} == {record.target_session}

    back = load(child)
    assert back.format == "claude-code"
    assert len(back.messages) == len(result.transcript.messages)
    event = back.compactions[0]
    assert event.trigger.value == "manual" and event.pre_tokens == result.report.prompt_tokens
    assert event.summary_index == 0 and back.messages[0].meta.is_summary
    kept = [m for m in result.transcript.messages if m is not result.summary_message]
    assert [m.text for m in back.messages[1:]] == [m.text for m in kept]
    # Unchanged messages are copied from their original lines (signatures, usage kept).
    assert any(
        "signature" in block
        for line in lines
        if line["type"] == "assistant"
        for block in line["message"]["content"]
    )
    undo(record.id)
    assert not child.exists() and path.read_bytes() == original


# -------------------------------------------------------------------------- refusals


def test_formats_that_cannot_be_replaced_in_place(tmp_path: Path) -> None:
    codex = tmp_path / "rollout.jsonl"
    codex.write_bytes((SESSIONS / "codex-rollout.jsonl").read_bytes())
    source = load_source(codex)
    result = compacted(source, keep_last=1)
    with pytest.raises(CommitError, match="export"):
        plan_commit(result, source, mode="in-place")
    out = tmp_path / "codex-as-openai.json"
    record = commit(result, source, mode="export", target=out, target_format="openai")
    assert load(out).format == "openai" and record.state is CommitState.DONE

    multi = tmp_path / "trajectories.jsonl"
    multi.write_bytes(_trajectory(0) + b"\n" + _trajectory(1) + b"\n")
    src = load_source(multi)
    with pytest.raises(CommitError, match="several trajectories"):
        plan_commit(compacted(src), src, mode="in-place")
    single = tmp_path / "one.jsonl"
    single.write_bytes(_trajectory(0) + b"\n")
    one = load_source(single)
    record = commit(compacted(one), one)
    assert record.mode is CommitMode.IN_PLACE and load(single).format == "sharegpt"
    assert len(load(single).messages) < len(one.transcript.messages)


def _trajectory(seed: int) -> bytes:
    turns = [{"from": "system", "value": "You are a helpful agent."}]
    for i in range(8):
        turns.append({"from": "human", "value": f"Task {seed}.{i}: explain step {i} in detail."})
        turns.append({"from": "gpt", "value": f"Step {i} works like this. " * 40})
    return orjson.dumps({"conversations": turns})


def test_a_held_lease_refuses_and_changes_nothing(session_file: Path) -> None:
    original = session_file.read_bytes()
    source = load_source(session_file)
    other = SqliteLease(Archive(), holder="tjui:elsewhere:1:abcd")
    assert other.try_acquire(source.ref.key).acquired
    with pytest.raises(LeaseBusy, match="compaction already in flight"):
        commit(compacted(source), source)
    assert session_file.read_bytes() == original
    assert history() == []


def test_history_filters_by_file_and_lists_newest_first(tmp_path: Path) -> None:
    a = openai_session(tmp_path / "a.json")
    b = openai_session(tmp_path / "b.json")
    sa = load_source(a)
    first = commit(compacted(sa), sa)
    time.sleep(0.01)
    sb = load_source(b)
    second = commit(compacted(sb), sb)
    assert [r.id for r in history()] == [second.id, first.id]
    assert [r.id for r in history(a)] == [first.id]
    assert isinstance(history(a)[0], CommitRecord)
    assert Archive().get(first.id[:6]).id == first.id
