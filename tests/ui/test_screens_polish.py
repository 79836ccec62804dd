"""Dialogs over a dimmed screen, a footer everywhere, export proposals, the status line,
the ✂ rule kept in view, fields following the boundary, Help and Quit at 80×24."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.screen import ModalScreen
from textual.widgets import Input, Select, Static
from textual.widgets._footer import FooterKey
from ui_helpers import wait_for, wait_loaded

from tinyjuice.store import CommitMode
from tjui.app import make_app
from tjui.paths import demo_session
from tjui.screens.commit import CommitDialog
from tjui.screens.jump import JumpDialog
from tjui.widgets.message_list import MessageList

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def _footer_keys(screen) -> dict[str, FooterKey]:  # type: ignore[no-untyped-def]
    return {k.description: k for k in screen.query(FooterKey)}


async def test_dialogs_dim_the_screen_behind_and_have_a_footer() -> None:
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("colon")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, JumpDialog))
        dialog = pilot.app.screen
        assert isinstance(dialog, ModalScreen)
        assert 0 < dialog.styles.background.a < 1  # see-through: the list shows, dimmed
        assert "Cancel" in _footer_keys(dialog)


async def test_commit_dialog_footer_lists_its_keys() -> None:
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommitDialog))
        await pilot.pause()
        keys = {k.key for k in _footer_keys(pilot.app.screen).values()}
        assert {"ctrl+s", "m", "u"} <= keys


async def test_export_mode_proposes_a_path_and_a_format(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    shutil.copy(SESSIONS / "openai-chat.json", path)
    async with make_app(path).run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("c")
        await wait_for(
            pilot,
            lambda: isinstance(pilot.app.screen, CommitDialog) and pilot.app.screen.plan,
        )
        dialog = pilot.app.screen
        assert isinstance(dialog, CommitDialog)
        while dialog.mode is not CommitMode.EXPORT:
            await pilot.press("m")
            await pilot.pause()
        await wait_for(pilot, lambda: dialog.plan is not None)
        assert dialog.query_one("#commit-format", Select).value == "openai"
        target = dialog.query_one("#commit-target", Input).value
        assert target == str(tmp_path.resolve() / "chat.export.json")
        assert dialog.plan is not None and dialog.plan.mode is CommitMode.EXPORT


async def test_help_and_quit_stay_in_the_footer_at_80x24() -> None:
    async with make_app(demo_session()).run_test(size=(80, 24)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.pause()
        keys = _footer_keys(screen)
        for name in ("Help", "Quit"):
            assert name in keys
            region = keys[name].region
            assert region.width and region.right <= 80


async def test_boundary_keys_keep_the_rule_in_view_and_the_field_follows() -> None:
    async with make_app(demo_session()).run_test(size=(80, 24)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        await pilot.press("number_sign", "2", "enter")
        await pilot.pause()
        field = screen.query_one("#keep-last", Input)
        assert field.value == "2"
        for key in ["left_curly_bracket"] * 6 + ["right_square_bracket"] * 3:
            await pilot.press(key)
            await pilot.pause()
            rule = lst.rule_row
            top = int(lst.scroll_y)
            assert rule is not None and top <= rule < top + lst.scrollable_content_region.height
        assert field.value == ""  # no longer "2": the boundary moved another way


async def test_a_long_status_reason_wraps_instead_of_being_cut() -> None:
    async with make_app(demo_session()).run_test(size=(80, 24)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("number_sign", "2", "enter")
        await pilot.pause()
        status = screen.query_one("#boundary-status", Static)
        text = str(status.render())
        assert len(text) > status.content_size.width
        assert status.size.height >= 2
        assert "profile hermes" in text
