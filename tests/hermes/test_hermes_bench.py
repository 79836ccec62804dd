"""The benchmark's Hermes section: a clear failing row without the venv, figures with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hermes_agent import _hermes_venv

from benchmarks import RunContext
from benchmarks import hermes_engine as section


def test_without_the_venv_the_row_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_HERMES_VENV", str(tmp_path / "absent"))
    result = section.run(RunContext(sizes=(200,), quick=True, work_dir=tmp_path))
    (row,) = result["targets"]
    assert row["pass"] is False and row["value"] is None
    assert "no hermes-agent venv" in row["figure"]


@pytest.mark.hermes
def test_both_engines_compress_the_same_list(tmp_path: Path) -> None:
    _hermes_venv()  # skips (or fails under TJUI_REQUIRE_HERMES) without it
    result = section.run(RunContext(sizes=(300,), quick=True, work_dir=tmp_path))
    row = result["sizes"]["300"]
    for engine in ("tinyjuice", "hermes"):
        assert row[engine]["pairs_ok"], row
        assert row[engine]["tokens_after"] < row["tokens_before"], row
    assert result["hermes_agent"] == section.HERMES_VERSION
    assert all(t["pass"] for t in result["targets"])
