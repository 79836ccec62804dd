"""Following a growing transcript: appended bytes only, partial lines, truncation, rewrites."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from fakehome import claude_records

from tinyjuice.follow import ChangeKind, FileTail, live_status
from tinyjuice.formats import load_bytes
from tinyjuice.tokens import count_transcript

SID = "5e5e5e5e-0000-4000-8000-000000000001"


def _lines(records: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _session(tmp_path: Path, turns: int = 2) -> tuple[Path, list[dict[str, object]]]:
    records = claude_records(SID, turns=turns + 2)
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(_lines(records[: 1 + 2 * turns]))
    return path, records


def _bump(path: Path) -> None:
    """Make sure the mtime moves even on a coarse clock."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_appended_lines_are_read_from_the_offset(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    tail = FileTail(path)
    assert tail.poll() is None
    before = len(tail.data)
    extra = _lines(records[5:7])
    with path.open("ab") as fh:
        fh.write(extra)
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.APPENDED
    assert change.read == len(extra) and len(change.data) == before + len(extra)
    assert len(load_bytes(change.data, path).messages) == 6
    assert tail.poll() is None


def test_a_half_written_line_is_held_until_complete(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    tail = FileTail(path)
    line = json.dumps(records[5]).encode() + b"\n"
    with path.open("ab") as fh:
        fh.write(line[:40])
    _bump(path)
    assert tail.poll() is None and tail.pending == 40
    with path.open("ab") as fh:
        fh.write(line[40:])
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.APPENDED and change.pending == 0
    assert change.data.endswith(line)


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_a_rewrite_caught_before_its_first_line_is_said_with_that_line(
    tmp_path: Path, how: str
) -> None:
    """A poll between emptying a JSON-lines file and writing it again sees nothing to
    load: the truncation (or replacement) is reported with the first complete lines."""
    path, records = _session(tmp_path)
    tail = FileTail(path)
    if how == "truncated":
        path.write_bytes(b"")
    else:
        other = tmp_path / "other.jsonl"
        other.write_bytes(b"")
        os.replace(other, path)
    _bump(path)
    assert tail.poll() is None
    line = _lines(records[:1])
    path.write_bytes(line[:20])  # half a line: still nothing to say
    _bump(path)
    assert tail.poll() is None
    path.write_bytes(_lines(records[:3]))
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind(how)
    assert change.data == _lines(records[:3]) and change.pending == 0
    assert change.sha256 == hashlib.sha256(change.data).hexdigest()
    path.write_bytes(_lines(records[:4]))
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.APPENDED  # said once


def test_truncation_and_replacement_reload_whole(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    tail = FileTail(path)
    path.write_bytes(_lines(records[:3]))  # shorter: truncated
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.TRUNCATED
    assert change.data == _lines(records[:3])
    other = tmp_path / "other.jsonl"
    other.write_bytes(_lines(records[:5]))
    os.replace(other, path)  # another inode at the path
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.REPLACED
    assert len(load_bytes(change.data, path).messages) == 4


def test_a_rewrite_in_place_of_the_same_length_is_noticed(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    tail = FileTail(path)
    data = path.read_bytes()
    changed = data[:-10] + data[-10:].replace(b"Z", b"Y").replace(b"}", b" ")[:-1] + b"\n"
    with path.open("r+b") as fh:  # same inode, same size, different bytes
        fh.write(changed + _lines(records[5:6]))
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.REPLACED


def test_a_json_document_is_reloaded_on_any_change(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    tail = FileTail(path)
    assert not tail.jsonl
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi again"}]}))
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.REPLACED


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    path, _ = _session(tmp_path)
    tail = FileTail(path)
    path.unlink()
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.MISSING


def test_live_status_predicts_the_next_compaction(sessions_dir: Path) -> None:
    from tinyjuice.formats import load

    transcript = load(sessions_dir / "claude-code.jsonl")
    status = live_status(transcript, count_transcript(transcript))
    assert status.policy == "claude-code" and status.context_window == 200_000
    assert status.headroom_tokens == status.threshold_tokens - status.live_tokens
    assert 0 < status.live_tokens < status.threshold_tokens
    assert status.turns_left is not None and status.turns_left >= 1
    assert "compaction in" in status.prediction()
    small = live_status(transcript, count_transcript(transcript), context_window=20_000)
    assert small.headroom_tokens < 0 and small.prediction() == "compaction due on the next call"
    assert set(status.to_dict()) >= {"live_tokens", "percent", "turns_to_compaction"}


def test_the_sha256_of_what_was_read_is_kept_up_to_date(tmp_path: Path) -> None:
    import hashlib

    path, records = _session(tmp_path)
    tail = FileTail(path)
    assert tail._hash is None  # hashed on first use (by the poll's thread), not on start
    assert tail.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    with path.open("ab") as fh:
        fh.write(_lines(records[5:6]) + b'{"half": ')
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.APPENDED and change.pending
    assert change.sha256 == hashlib.sha256(change.data).hexdigest() == tail.sha256
    path.write_bytes(_lines(records[:2]))  # truncated: reloaded, hashed whole
    _bump(path)
    change = tail.poll()
    assert change is not None and change.kind is ChangeKind.TRUNCATED
    assert change.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
