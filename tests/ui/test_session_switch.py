"""Multi-session files: the header says which session is on screen, `s` switches."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from ui_helpers import wait_for, wait_loaded

from tinyjuice.formats.catalog import file_sessions
from tjui.app import make_app
from tjui.screens.main import MainScreen
from tjui.screens.sessions import SessionPicker

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def _header(screen: MainScreen) -> str:
    return str(screen.query_one("#file-header", Static).render())


async def test_sharegpt_trajectories_are_named_and_switched() -> None:
    entries = file_sessions(SESSIONS / "sharegpt.jsonl", "sharegpt")
    assert len(entries) == 3
    async with make_app(SESSIONS / "sharegpt.jsonl").run_test(size=(160, 48)) as pilot:
        first = await wait_loaded(pilot)
        await wait_for(pilot, lambda: first.sessions_in_file)
        assert "session #1 (1 of 3" in _header(first)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, SessionPicker))
        await pilot.press("down", "enter")
        await wait_for(
            pilot,
            lambda: isinstance(pilot.app.screen, MainScreen) and pilot.app.screen is not first,
        )
        second = await wait_loaded(pilot)
        await wait_for(pilot, lambda: second.sessions_in_file)
        assert "session #2 (2 of 3" in _header(second)
        assert second.session is not None
        assert len(second.session.transcript.messages) == entries[1].messages


async def test_state_db_header_names_the_session() -> None:
    entries = file_sessions(SESSIONS / "hermes-state.db", "hermes")
    async with make_app(SESSIONS / "hermes-state.db").run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        await wait_for(pilot, lambda: screen.sessions_in_file)
        assert screen.session is not None
        sid = screen.session.transcript.session_id
        assert sid and f"session {sid} (" in _header(screen)
        assert f"of {len(entries)}" in _header(screen)


async def test_a_single_session_file_says_so() -> None:
    async with make_app(SESSIONS / "openai-chat.json").run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(pilot.app.screen, MainScreen)
        assert "session" not in _header(screen)
