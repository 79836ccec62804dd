"""Commands read and fill the analysis cache; a cached answer is the answer a run gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tjui.cli import main

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def file(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes((SESSIONS / "claude-code.jsonl").read_bytes())
    return path


def _info() -> dict:
    return json.loads(run("cache", "info", "--json"))


def test_warm_inspect_and_dry_run_equal_cold_and_uncached(
    file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (("inspect", str(file), "--json"), ("compress", str(file), "--dry-run", "--json")):
        cold = run(*args)
        warm = run(*args)
        assert warm == cold
        monkeypatch.setenv("TJUI_NO_CACHE", "1")
        assert run(*args) == cold
        monkeypatch.delenv("TJUI_NO_CACHE")
    info = _info()
    assert info["files"] == 1 and info["results"] == 2


def test_an_append_is_seen_at_once(file: Path) -> None:
    lines = file.read_bytes().splitlines(keepends=True)
    file.write_bytes(b"".join(lines[:60]))
    before = json.loads(run("inspect", str(file), "--json"))
    file.write_bytes(b"".join(lines))
    after = json.loads(run("inspect", str(file), "--json"))
    full = json.loads(run("inspect", str(SESSIONS / "claude-code.jsonl"), "--json"))
    assert after["messages"] > before["messages"]
    assert after["tokens"] == full["tokens"]


def test_no_cache_writes_nothing(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_NO_CACHE", "1")
    run("inspect", str(file), "--json")
    run("explain", str(file))
    assert not Path(os.environ["TJUI_CACHE_DIR"]).exists()


def test_cache_info_and_clear(file: Path) -> None:
    assert _info()["files"] == 0
    run("explain", str(file))
    run("inspect", str(file))
    assert _info()["files"] == 1
    assert "1 files counted" in run("cache", "info")
    cleared = json.loads(run("cache", "clear", "--json"))
    assert cleared["removed"] == 1
    assert _info()["files"] == 0


def test_info_says_when_the_cache_cannot_be_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TJUI_CACHE_DIR naming a file: every command still works, and `cache info` says
    the cache is off and why instead of "enabled yes"."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("TJUI_CACHE_DIR", str(blocker / "sub"))
    monkeypatch.delenv("TJUI_NO_CACHE", raising=False)
    data = _info()
    assert data["enabled"] is False
    assert data["problem"] == f"{blocker} is not a directory"
    assert f"no: {blocker} is not a directory" in run("cache", "info")
    run("inspect", str(SESSIONS / "openai-chat.json"))
    monkeypatch.setenv("TJUI_CACHE_DIR", str(tmp_path / "fresh"))
    assert _info()["enabled"] is True and _info()["problem"] is None
