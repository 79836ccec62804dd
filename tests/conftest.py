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


@pytest.fixture(autouse=True)
def _no_real_session_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session discovery (``tjui ls``, the browser) never reads the real agents' stores."""
    from fakehome import ROOT_VARS

    empty = tmp_path / "no-agent-stores"
    for var in ROOT_VARS:
        monkeypatch.setenv(var, str(empty / var.lower()))


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding every agent's store (tests/fakehome.py), with the roots pointed at it."""
    from fakehome import build_fake_home

    home = tmp_path / "home"
    for var, root in build_fake_home(home).items():
        monkeypatch.setenv(var, str(root))
    return home
