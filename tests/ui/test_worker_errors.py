"""Failed workers are handled once, in the App: shown where they happened when the
screen can, else in the error dialog (never dropped in silence)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import wait_error_dialog, wait_for, write_openai_session

import tjui.screens.preview as preview_screen
from tjui.app import make_app
from tjui.screens.error import ErrorDialog
from tjui.screens.main import MainScreen
from tjui.screens.preview import PreviewScreen


async def test_an_unexpected_worker_failure_opens_the_error_dialog(tmp_path: Path) -> None:
    app = make_app(write_openai_session(tmp_path / "s.json", exchanges=3))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(
            pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.session is not None
        )
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._search(None, "x")  # type: ignore[arg-type]  # a search that fails
        dialog = await wait_error_dialog(pilot)
        assert "Background task failed (search)" in str(dialog.query_one("#error-title").render())
        assert "AttributeError" in str(dialog.query_one("#error-message").render())


async def test_a_failed_preview_is_said_in_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(preview_screen, "compress", broken)
    app = make_app(write_openai_session(tmp_path / "s.json", exchanges=6))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(
            pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.session is not None
        )
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        header = app.screen.query_one("#preview-header")
        await wait_for(pilot, lambda: "Preview failed: RuntimeError: boom" in str(header.render()))
        assert not isinstance(app.screen, ErrorDialog)
