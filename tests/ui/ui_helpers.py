"""Shared helpers for the Pilot tests."""

from __future__ import annotations

from pathlib import Path

import builders
from textual.pilot import Pilot

from tjui.screens.error import ErrorDialog
from tjui.screens.main import MainScreen


async def wait_for(pilot: Pilot, predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    waited = 0.0
    while not predicate():
        await pilot.pause(0.05)
        waited += 0.05
        if waited > timeout:
            raise AssertionError("timed out waiting for the app")


async def wait_loaded(pilot: Pilot, *, exact: bool = True) -> MainScreen:
    app = pilot.app

    def ready() -> bool:
        screen = app.screen
        if not isinstance(screen, MainScreen) or screen.session is None:
            return False
        return not exact or screen.session.tokens.counter != "rough"

    await wait_for(pilot, ready)
    screen = app.screen
    assert isinstance(screen, MainScreen)
    await pilot.pause()
    return screen


async def wait_error_dialog(pilot: Pilot) -> ErrorDialog:
    """The error dialog, once composed (it is the screen before its widgets exist)."""
    app = pilot.app

    def ready() -> bool:
        return isinstance(app.screen, ErrorDialog) and bool(app.screen.query("#error-title"))

    await wait_for(pilot, ready)
    screen = app.screen
    assert isinstance(screen, ErrorDialog)
    return screen


def write_openai_session(path: Path, exchanges: int = 40) -> Path:
    """The UI tests' session: two calls per exchange (pytest and a file read)."""
    return builders.write_openai_session(path, exchanges, read_file_lines=80)
