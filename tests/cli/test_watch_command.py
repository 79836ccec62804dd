"""`tjui watch`: a line at the start and per change; stops on --once, --timeout, Ctrl+C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import parsed_lines
from click.testing import CliRunner
from fakehome import claude_records

from tjui.cli import main

SID = "4d4d4d4d-0000-4000-8000-000000000001"


def _write(path: Path, records: list[dict[str, object]], mode: str = "w") -> None:
    with path.open(mode, encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


def _start(path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tjui.cli",
            "watch",
            str(path),
            "--json",
            "--interval",
            "0.05",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TJUI_TOKENIZER": "rough"},
    )


def test_once_prints_the_current_state(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    _write(path, claude_records(SID, turns=2))
    result = CliRunner().invoke(
        main, ["watch", str(path), "--once", "--json", "--warn-at", "0.001%"]
    )
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    data = json.loads(line)
    assert data["messages"] == 4 and data["policy"] == "claude-code"
    assert data["warning"] is True and data["event"] is None
    assert data["headroom_tokens"] == data["threshold_tokens"] - data["live_tokens"]


def test_a_line_per_append_and_a_reload_notice(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    records = claude_records(SID, turns=4)
    _write(path, records[:5])
    proc = _start(path, "--timeout", "20")
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    _write(path, records[5:7], mode="a")
    second = json.loads(proc.stdout.readline())
    assert (first["messages"], second["messages"]) == (4, 6)
    assert second["live_tokens"] > first["live_tokens"] and second["event"] is None
    _write(path, records[:3])  # truncated: reloaded
    third = json.loads(proc.stdout.readline())
    assert third["messages"] == 2 and third["event"] == "truncated: reloaded"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def test_timeout_stops_cleanly(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    _write(path, claude_records(SID, turns=1))
    start = time.monotonic()
    result = CliRunner().invoke(
        main, ["watch", str(path), "--timeout", "0.3", "--interval", "0.05"]
    )
    assert result.exit_code == 0 and time.monotonic() - start < 5
    assert len(result.stdout.splitlines()) == 1 and "compaction in" in result.stdout


def test_bad_warn_level_and_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("not json\n")
    result = CliRunner().invoke(main, ["watch", str(path), "--once"])
    assert result.exit_code == 2 and "tjui: error" in result.stderr
    result = CliRunner().invoke(main, ["watch", str(path), "--once", "--warn-at", "eighty"])
    assert result.exit_code == 2 and "percentage" in result.stderr


def test_a_change_is_read_and_counted_from_what_was_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """watch follows through core's incremental path: only the appended lines are
    parsed, and the status is the one a fresh load gives."""
    from tinyjuice.follow import FollowedFile, live_status
    from tinyjuice.formats import load_bytes
    from tinyjuice.tokens import count_transcript, default_counter
    from tjui.commands.watch import _status

    path = tmp_path / f"{SID}.jsonl"
    records = claude_records(SID, turns=4)
    _write(path, records[:5])
    followed = FollowedFile(path)
    _status(followed, path.read_bytes(), None)
    _write(path, records[5:7], mode="a")
    appended = b"".join(json.dumps(r).encode() + b"\n" for r in records[5:7])
    with parsed_lines(monkeypatch) as parsed:
        status = _status(followed, path.read_bytes(), None)
    assert parsed and all(raw in appended for raw in parsed)
    whole = load_bytes(path.read_bytes(), path)
    assert status == live_status(whole, count_transcript(whole, default_counter()))
