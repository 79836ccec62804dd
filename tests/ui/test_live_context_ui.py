"""The inspector on a compacted Claude Code session: history greyed, live context worked on."""

from __future__ import annotations

from pathlib import Path

from cc_shapes import SESSION, subagent_session, two_compactions
from ui_helpers import wait_for, wait_loaded

from tinyjuice.formats import load
from tjui.app import make_app
from tjui.screens.main import MainScreen, header_text
from tjui.screens.subagents import SubagentDialog
from tjui.widgets.message_list import MessageList


async def test_history_is_greyed_and_the_session_is_the_live_context(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    t = load(path)
    start = t.live_start
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        s = screen.session
        assert s.live_from == start
        assert s.transcript.messages[0].meta.is_summary
        assert len(s.transcript.messages) == len(t.messages) - start
        lst = screen.query_one(MessageList)
        assert lst.history_rows == start and lst.count == len(t.messages) - start
        # History rows are shown, greyed and marked, but never selected.
        assert "already compacted" in lst.render_line(0).text
        assert lst.message_at_row(0) is None
        assert lst.message_at_row(start) == 0
        await pilot.press("home")
        assert lst.cursor == 0
        # The header's measured prompt is the latest one, after the reset.
        header = header_text(s, path)
        assert f"live from #{start}" in header
        assert f"{t.usage[-1].prompt_tokens:,} measured" in header
        # The boundary never reaches into the history.
        assert s.plan.start >= 0 and s.plan.end <= len(s.transcript.messages)


async def test_whole_file_keeps_every_message_live(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    app = make_app(path, whole_file=True)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        assert lst.history_rows == 0 and lst.count == len(load(path).messages)
        assert screen.session.live_from == 0


async def test_subagents_open_from_the_session_and_come_back(tmp_path: Path) -> None:
    path = subagent_session(tmp_path)
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        assert [a.id for a in screen.subagents] == ["a91c2f0"]
        assert screen.session.breakdown.subagents == 1
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, SubagentDialog))
        await pilot.press("enter")

        def opened() -> bool:
            s = app.screen
            return isinstance(s, MainScreen) and s is not screen and s.session is not None

        await wait_for(pilot, opened)
        sub = app.screen
        assert isinstance(sub, MainScreen)
        assert len(sub.session.transcript.messages) == 4
        assert sub.request.path.name == "agent-a91c2f0.jsonl"
        assert (tmp_path / SESSION / "subagents") == sub.request.path.parent
        await pilot.press("backspace")
        await wait_for(pilot, lambda: app.screen is screen)


async def test_why_it_fired_covers_every_compaction_of_the_file(tmp_path: Path) -> None:
    from tjui.screens.timeline import TimelineScreen

    path = two_compactions(tmp_path)
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        await wait_for(pilot, lambda: len(lst.history_tokens) == lst.history_rows)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        assert len(timeline.result.events) == 2
        assert timeline.result.threshold_tokens == screen.session.plan.budget.threshold_tokens


async def test_the_bar_draws_the_threshold_compress_and_explain_report(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from tjui.cli import main
    from tjui.widgets.context_bar import ContextBar

    path = two_compactions(tmp_path)
    figures = []
    for args in (["compress", "--keep-last", "1"], ["explain"]):
        res = CliRunner().invoke(main, [args[0], str(path), *args[1:], "--json"])
        data = json.loads(res.stdout)
        figures.append(
            data["budget"]["threshold_tokens"] if "budget" in data else data["threshold_tokens"]
        )
    assert figures == [167_000, 167_000]
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session.plan.budget.threshold_tokens == 167_000
        assert "┃167K" in screen.query_one(ContextBar).render().plain
