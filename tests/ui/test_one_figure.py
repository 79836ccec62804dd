"""One figure everywhere: the main screen's "after", the preview and the commit dialog
show the same number with the same label, and a no-op boundary says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static
from ui_helpers import wait_for, wait_loaded

from tinyjuice.report import Profile
from tjui.app import make_app
from tjui.paths import demo_session
from tjui.screens.commit import CommitDialog
from tjui.screens.main import MainScreen
from tjui.screens.preview import PreviewScreen
from tjui.screens.timeline import TimelineScreen
from tjui.widgets.context_bar import ContextBar

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def _bar(screen: MainScreen) -> str:
    return str(screen.query_one(ContextBar).render())


async def _after_on_main(pilot, screen: MainScreen) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: screen.session is not None and screen.session.current_result)
    await pilot.pause()
    assert screen.session is not None and screen.session.current_result is not None
    report = screen.session.current_result.report
    return report.after_tokens, report.tokens_kind


@pytest.mark.parametrize(
    ("path", "profile"),
    [
        (SESSIONS / "openai-chat.json", Profile.HERMES),
        (demo_session(), Profile.HERMES),
        (demo_session(), Profile.RULES),
    ],
    ids=["openai-hermes", "demo-hermes", "demo-rules"],
)
async def test_main_preview_and_commit_show_the_same_after_figure(
    path: Path, profile: Profile
) -> None:
    async with make_app(path).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        if profile is Profile.RULES:
            await pilot.press("o")
        after, kind = await _after_on_main(pilot, screen)
        assert screen.session is not None and screen.session.options.profile is profile
        figure = f"{after:,} {kind}"
        assert f"after ◆ {figure}" in _bar(screen)

        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: isinstance(pilot.app.screen, PreviewScreen) and pilot.app.screen.result,
        )
        preview = pilot.app.screen
        assert isinstance(preview, PreviewScreen) and preview.result is not None
        assert preview.result.report.after_tokens == after
        assert f"→ {figure}" in str(preview.query_one("#preview-header", Static).render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: pilot.app.screen is screen)
        assert f"after ◆ {figure}" in _bar(screen)

        await pilot.press("c")
        await wait_for(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, CommitDialog) and pilot.app.screen.plan is not None
            ),
        )
        dialog = pilot.app.screen
        assert isinstance(dialog, CommitDialog) and dialog.result is not None
        assert dialog.result.report.after_tokens == after
        assert f"→ {figure}" in str(dialog.query_one("#commit-figures", Static).render())


async def test_moving_the_boundary_drops_the_old_figure_until_core_recomputes() -> None:
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        first, _ = await _after_on_main(pilot, screen)
        await pilot.press("left_curly_bracket")
        assert screen.session is not None
        # Never the previous boundary's figure: computing, then the new one.
        assert f"◆ {first:,}" not in _bar(screen)
        second, kind = await _after_on_main(pilot, screen)
        assert second != first
        assert f"after ◆ {second:,} {kind}" in _bar(screen)


async def test_a_no_op_boundary_says_so_where_it_is_set() -> None:
    async with make_app(SESSIONS / "openai-chat.json").run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("home", "t")  # keep from message 0: nothing left to compress
        await pilot.pause()
        assert screen.session is not None and screen.session.plan.no_op
        assert "no-op:" in _bar(screen) and "after ◆" not in _bar(screen)
        status = str(screen.query_one("#boundary-status", Static).render())
        assert "no-op:" in status


async def test_header_and_timeline_label_the_same_prompt_alike() -> None:
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        b = screen.session.breakdown
        header = str(screen.query_one("#file-header", Static).render())
        assert f"prompt {b.total_tokens:,} {b.total_kind.value}" in header
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TimelineScreen))
        timeline = pilot.app.screen
        assert isinstance(timeline, TimelineScreen)
        now = timeline.result.current
        assert now.tokens == b.total_tokens
        assert now.kind is b.total_kind


async def test_a_measured_header_figure_is_the_timelines_last_reading() -> None:
    async with make_app(SESSIONS / "claude-code.jsonl").run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        measured = screen.session.breakdown.measured_prompt_tokens
        assert measured is not None
        assert f"prompt {measured:,} measured" in str(
            screen.query_one("#file-header", Static).render()
        )
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TimelineScreen))
        timeline = pilot.app.screen
        assert isinstance(timeline, TimelineScreen)
        now = timeline.result.current
        detail = str(timeline.query_one("#timeline-detail", Static).render())
        # A different number (the next request) is named as such, beside the reading.
        assert now.tokens != measured
        assert f"next request (last reading {measured:,} + messages since)" in detail
