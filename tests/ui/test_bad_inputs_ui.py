"""The inspector on inputs that are not regular files, and quitting during a slow load
(issue #12 item 11)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from ui_helpers import wait_for, write_openai_session

import tjui.screens.main as main_screen
from tjui.app import make_app
from tjui.screens.error import ErrorDialog


async def test_a_fifo_opens_the_error_dialog_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    app = make_app(fifo)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorDialog), timeout=5)
        text = str(app.screen.query_one("#error-message").render())
        assert "named pipe" in text and "not a regular file" in text
        await pilot.press("escape")  # the dialog's quit key (q would type into its field)
        await wait_for(pilot, lambda: app.return_code is not None, timeout=5)


async def test_q_quits_while_a_slow_load_is_still_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_openai_session(tmp_path / "slow.json", exchanges=2)
    release = threading.Event()
    reading: list[threading.Thread] = []
    real = main_screen.load_source

    def slow_load(*args, **kw):  # type: ignore[no-untyped-def]
        reading.append(threading.current_thread())
        release.wait(30)  # a read that takes (far) longer than the user waits
        return real(*args, **kw)

    monkeypatch.setattr(main_screen, "load_source", slow_load)
    app = make_app(path)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: bool(reading), timeout=5)
            await pilot.press("q")
            await wait_for(pilot, lambda: app.return_code is not None, timeout=5)
        # The reader is a daemon thread: the process can end without waiting for it.
        assert reading[0].daemon
    finally:
        release.set()
