"""The session browser (Pilot): rows from a fake home, filter, sort, open and come back."""

from __future__ import annotations

from pathlib import Path

from fakehome import NOW
from textual.widgets import DataTable, Input
from ui_helpers import wait_for, wait_loaded

from tjui.app import make_browser_app
from tjui.screens.browser import BrowserScreen
from tjui.screens.main import MainScreen


async def _filled(pilot) -> BrowserScreen:  # type: ignore[no-untyped-def]
    def ready() -> bool:
        s = pilot.app.screen
        return isinstance(s, BrowserScreen) and bool(s.rows) and not s.filling

    await wait_for(pilot, ready)
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, BrowserScreen)
    return screen


async def test_rows_newest_first_with_exact_figures(fake_home: Path) -> None:
    app = make_browser_app(now=lambda: NOW)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _filled(pilot)
        agents = [r.agent for r in screen.shown]
        assert agents[0] == "claude-code" and agents[-1] == "demo"
        assert set(agents) >= {"codex", "hermes", "gemini", "opencode", "cline", "roo"}
        table = screen.query_one(DataTable)
        first = [str(c) for c in table.get_row_at(0)]
        assert first[0] == "claude-code" and first[3] == "1m ago"
        assert first[4] == "4" and first[7] == "0"  # exact messages, compactions
        gemini = screen.shown[agents.index("gemini")]
        assert str(table.get_row(gemini.key)[4]) == "2"  # exact, from the Gemini CLI reader


async def test_typing_filters_and_enter_opens_then_esc_returns(fake_home: Path) -> None:
    app = make_browser_app(now=lambda: NOW)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _filled(pilot)
        await pilot.press(*"tidepool")
        await wait_for(pilot, lambda: len(screen.shown) == 1)
        assert screen.shown[0].agent == "codex"
        await pilot.press("enter")
        main = await wait_loaded(pilot, exact=False)
        assert main.request.path == Path(screen.shown[0].path)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        assert screen.query_one("#filter", Input).value == "tidepool"
        await pilot.press("escape")  # Esc in the browser clears the filter
        await wait_for(pilot, lambda: len(screen.shown) == len(screen.rows))


async def test_sorting_by_any_column(fake_home: Path) -> None:
    app = make_browser_app(now=lambda: NOW)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _filled(pilot)
        await pilot.press("ctrl+s")  # last activity → messages
        assert screen.sort_column == "messages"
        counts = [r.messages or 0 for r in screen.shown[:-1]]
        assert counts == sorted(counts, reverse=True) and screen.shown[-1].agent == "demo"
        await pilot.press("ctrl+r")
        assert [r.messages or 0 for r in screen.shown[:-1]] == sorted(counts)
        screen.sort_column = "size"
        screen.action_sort_reverse()
        sizes = [r.size for r in screen.shown[:-1]]
        assert sizes in (sorted(sizes), sorted(sizes, reverse=True))


async def test_an_unreadable_session_is_listed_not_opened(fake_home: Path) -> None:
    from fakehome import broken_session

    broken_session(fake_home)
    app = make_browser_app(now=lambda: NOW)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _filled(pilot)
        row = next(r for r in screen.shown if r.error)
        assert str(screen.query_one(DataTable).get_row(row.key)[5]) == "—"
        await pilot.press(*"broken")
        await wait_for(pilot, lambda: len(screen.shown) == 1)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.screen is screen
        assert any("invalid JSON" in n.message for n in app._notifications)


async def test_an_empty_machine_still_lists_the_demo() -> None:
    app = make_browser_app(now=lambda: NOW)
    async with app.run_test(size=(120, 20)) as pilot:
        screen = await _filled(pilot)
        assert [r.agent for r in screen.shown] == ["demo"]
        await pilot.press("enter")
        main = await wait_loaded(pilot, exact=False)
        assert isinstance(main, MainScreen) and main.request.path.name == "demo.json"
