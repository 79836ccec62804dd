"""Pilot tests: loading, the boundary (keys, drag, keep-last N) equal to core, preview, help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ui_helpers import wait_error_dialog, wait_for, wait_loaded, write_openai_session

from tinyjuice.boundary import BoundaryIndex
from tinyjuice.formats import load
from tinyjuice.pipeline import compress, plan_boundary
from tjui.app import make_app
from tjui.screens.help import HelpScreen
from tjui.screens.preview import PreviewScreen, PreviewView
from tjui.widgets.message_list import MessageList

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"


def _core_plan(screen, **changes):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    s = screen.session
    return plan_boundary(s.transcript, replace(s.options, **changes), s.tokens, counter=s.counter)


async def test_loads_and_moves_cursor(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        assert lst.count == len(load(path).messages) == 202
        await pilot.press("down", "down", "down")
        assert lst.cursor == 3
        await pilot.press("end")
        assert lst.cursor == 201


async def test_boundary_keys_match_core(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        s = screen.session
        index = BoundaryIndex(s.transcript.messages)
        before = s.plan.end
        await pilot.press("left_square_bracket")
        expected = index.step_legal(before, -1).index
        assert s.plan.end == expected
        assert s.plan.end < before
        # Every legal boundary: never inside a tool group.
        assert index.is_legal(s.plan.end)
        await pilot.press("left_curly_bracket")
        assert s.transcript.messages[s.plan.end].role.value == "user"
        core = _core_plan(screen)
        assert (
            core.start,
            core.end,
            core.middle_tokens,
            core.tail_tokens,
            core.projected_tokens,
        ) == (
            s.plan.start,
            s.plan.end,
            s.plan.middle_tokens,
            s.plan.tail_tokens,
            s.plan.projected_tokens,
        )
        lst = screen.query_one(MessageList)
        assert lst.rule_row == s.plan.end


async def test_keep_last_input_matches_core(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("number_sign")
        await pilot.press("3", "enter")
        s = screen.session
        core = _core_plan(screen, keep_last=3, boundary=None)
        assert s.plan.end == core.end
        assert s.plan.tail_tokens == core.tail_tokens
        users_in_tail = [m for m in s.transcript.messages[s.plan.end :] if m.is_real_user]
        assert len(users_in_tail) == 3


async def test_drag_boundary_snaps_through_core(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_loaded(pilot)
        s = screen.session
        lst = screen.query_one(MessageList)
        # Put the boundary on screen, then drag the rule up by 4 rows (onto a tool group).
        s.set_boundary(20)
        screen._refresh_boundary()
        lst.scroll_to(y=0, animate=False)
        await pilot.pause()
        rule_y = lst.rule_row - int(lst.scroll_y)
        await pilot.mouse_down(lst, offset=(10, rule_y))
        await pilot.hover(lst, offset=(10, rule_y - 3))
        await pilot.pause()
        await pilot.mouse_up(lst, offset=(10, rule_y - 3))
        await pilot.pause()
        requested = 20 - 3
        core = plan_boundary(
            s.transcript,
            __import__("dataclasses").replace(s.options, boundary=requested, keep_last=None),
            s.tokens,
            counter=s.counter,
        )
        assert s.plan.end == core.end
        assert s.plan.end != requested or BoundaryIndex(s.transcript.messages).is_legal(requested)
        assert BoundaryIndex(s.transcript.messages).is_legal(s.plan.end)


async def test_compress_up_to_here_and_keep_from_here(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        lst.cursor = 50  # a user message: index 1 + 5k
        await pilot.press("t")
        assert screen.session.plan.end == _core_plan(screen, boundary=50).end
        await pilot.press("u")
        assert screen.session.plan.end == _core_plan(screen, boundary=51).end


async def test_preview_figures_equal_core_report(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        screen.session.keep_last(5)
        screen._refresh_boundary()
        s = screen.session
        await pilot.press("p")
        await wait_for(
            pilot, lambda: isinstance(app.screen, PreviewScreen) and app.screen.result is not None
        )
        preview = app.screen
        assert isinstance(preview, PreviewScreen)
        core = compress(s.transcript, s.compaction_options(), tokens=s.tokens, counter=s.counter)
        got = preview.result.report
        assert got.to_dict() == core.report.to_dict()
        header = str(preview.query_one("#preview-header").render())
        assert f"{core.report.before_tokens:,} → {core.report.after_tokens:,}" in header
        view = preview.query_one(PreviewView)
        assert view.total_lines > 0
        await pilot.press("escape")
        assert not isinstance(app.screen, PreviewScreen)


async def test_help_screen_lists_every_binding(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json", exchanges=3)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from rich.console import Console

        console = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
        console.print(app.screen.table)
        text = console.export_text()
        for _, bindings in app.help_sections():
            for b in bindings:
                assert b.description in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_search_highlights_and_jumps(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash")
        await pilot.press(*"step 7 passes", "enter")
        lst = screen.query_one(MessageList)
        await wait_for(pilot, lambda: bool(screen._matches))
        assert "step 7 passes" in screen.session.transcript.messages[lst.cursor].text.lower()


async def test_broken_file_shows_error_dialog(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [ {"role": "user", "content": "hi"}, ')
    app = make_app(path)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await wait_error_dialog(pilot)
        text = str(dialog.query_one("#error-message").render())
        assert "broken.json" in text
        assert "invalid JSON" in text


async def test_error_dialog_opens_another_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("not json at all")
    good = write_openai_session(tmp_path / "good.json", exchanges=2)
    app = make_app(bad)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await wait_error_dialog(pilot)
        await pilot.pause()
        dialog.query_one("#error-path").value = str(good)
        await pilot.click("#error-open")
        screen = await wait_loaded(pilot)
        assert screen.request.path == good


@pytest.mark.parametrize(
    "name",
    # Every sample the manifest lists (a Cline task's history, an Aider .md included).
    sorted(json.loads((SESSIONS / "manifest.json").read_text())["files"]),
)
async def test_every_bundled_session_opens(name: str) -> None:
    app = make_app(SESSIONS / name)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        await pilot.press("end", "left_square_bracket", "right_curly_bracket", "home")
        await pilot.press("p")
        await wait_for(
            pilot, lambda: isinstance(app.screen, PreviewScreen) and app.screen.result is not None
        )


async def test_commit_from_the_inspector_and_undo(tmp_path: Path) -> None:
    from tjui.screens.commit import CommitDialog

    path = write_openai_session(tmp_path / "t.json")
    original = path.read_bytes()
    app = make_app(path)
    async with app.run_test(size=(140, 44)) as pilot:
        screen = await wait_loaded(pilot)
        screen.session.keep_last(3)
        screen._refresh_boundary()
        await pilot.press("c")
        await wait_for(
            pilot, lambda: isinstance(app.screen, CommitDialog) and app.screen.mode is not None
        )
        dialog = app.screen
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.record is not None)
        assert path.read_bytes() != original
        assert len(load(path).messages) < 202
        await pilot.press("u")
        await wait_for(pilot, lambda: dialog.undone)
        assert path.read_bytes() == original


async def test_bar_labels_a_measured_prompt_and_the_counted_figure_with_their_kinds() -> None:
    from tjui.widgets.context_bar import ContextBar

    app = make_app(SESSIONS / "claude-code.jsonl")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        bd = screen.session.breakdown
        assert bd.measured_prompt_tokens is not None
        text = str(screen.query_one(ContextBar).render())
        assert f"{bd.measured_prompt_tokens:,} measured" in text
        counted = f"(counted {bd.estimated_total_tokens:,} {bd.counted_kind.value})"
        assert counted in text, text
        assert "estimate " not in text


async def test_a_keep_last_no_op_gives_its_reason_once(tmp_path: Path) -> None:
    path = tmp_path / "cc.jsonl"
    path.write_bytes((SESSIONS / "claude-code.jsonl").read_bytes())
    app = make_app(path)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("number_sign")
        await pilot.press("2", "enter")
        plan = screen.session.plan
        assert plan.no_op and plan.reason.startswith("keeping the last 2 exchanges")
        status = str(screen.query_one("#boundary-status").render())
        assert status.count(plan.reason) == 1
        assert f"no-op: {plan.reason}" in status
