from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "sessions"

# Tests never touch the user's real config or archive, and never fetch tokenizers.
os.environ.setdefault("TJUI_HOME", str(ROOT / ".pytest-tjui-home"))


@pytest.fixture
def sessions_dir() -> Path:
    return SESSIONS


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_HOME", str(tmp_path / "tjui-home"))
    monkeypatch.setenv("TJUI_CONFIG", str(tmp_path / "tjui-config.toml"))
    # The analysis cache too: never the user's, never shared between tests.
    monkeypatch.setenv("TJUI_CACHE_DIR", str(tmp_path / "tjui-cache"))
    monkeypatch.delenv("TJUI_NO_CACHE", raising=False)
