"""The "Why it fired" timeline screen: markers, jump, policy switcher, glyphs, snapshot."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Select, Static

from tinyjuice.formats import load
from tinyjuice.model import (
    CompactionEvent,
    Message,
    MessageMeta,
    Role,
    TextPart,
    Transcript,
    Trigger,
    Usage,
)
from tinyjuice.tokens import RoughCounter, TranscriptTokens, count_transcript
from tjui.app import STYLESHEET
from tjui.screens.timeline import TimelineScreen
from tjui.widgets.timeline import ESTIMATED, EVENT_MARK, MEASURED, RESERVE_LINE, TimelineChart

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
ROUGH = RoughCounter()


def mixed_transcript() -> Transcript:
    """Claude-Code-shaped: turns measured and unmeasured, an auto and a manual compaction."""
    msgs: list[Message] = []
    usage: list[Usage] = []
    events: list[CompactionEvent] = []
    measured = 30_000
    for turn in range(36):
        if turn in (14, 26):
            events.append(
                CompactionEvent(
                    len(msgs),
                    Trigger.AUTO if turn == 14 else Trigger.MANUAL,
                    pre_tokens=172_000 if turn == 14 else 120_000,
                    summary_index=len(msgs),
                )
            )
            msgs.append(
                Message(Role.USER, (TextPart("summary " * 900),), meta=MessageMeta(is_summary=True))
            )
            measured = 20_000
        else:
            msgs.append(Message(Role.USER, (TextPart("ask " * 400),)))
        if turn % 3 != 2 or turn in (14, 26):  # others have no recorded usage: estimated
            usage.append(Usage(input_tokens=measured, message_index=len(msgs)))
        msgs.append(Message(Role.ASSISTANT, (TextPart("work " * 2_000),)))
        measured += 10_000
    return Transcript(
        messages=tuple(msgs),
        format="claude-code",
        model="claude-sonnet-4-20250514",
        compactions=tuple(events),
        usage=tuple(usage),
    )


class Host(App[None]):
    CSS_PATH = STYLESHEET  # the screens' layout

    def __init__(self, screen_factory) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.factory = screen_factory
        self.results: list[int | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.factory(), self.results.append)


def host(transcript: Transcript, tokens: TranscriptTokens | None = None, **kw: object) -> Host:
    counted = tokens or count_transcript(transcript, ROUGH)
    return Host(lambda: TimelineScreen(transcript, counted, **kw))


def plot_rows(chart: TimelineChart) -> str:
    """The chart's plot area (without the marker, axis and legend rows)."""
    return "\n".join(chart.render().plain.splitlines()[:-3])


async def screen_of(pilot: Pilot) -> TimelineScreen:
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, TimelineScreen)
    return screen


async def test_markers_select_and_jump_to_the_compaction() -> None:
    t = mixed_transcript()
    app = host(t)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await screen_of(pilot)
        chart = screen.query_one(TimelineChart)
        assert screen.result.policy.name.value == "claude-code"
        assert chart.selected == 1  # the latest compaction first
        assert "#2 at message" in str(screen.query_one("#timeline-detail", Static).render())
        await pilot.press("left")
        assert chart.selected == 0
        detail = str(screen.query_one("#timeline-detail", Static).render())
        assert "#1 at message" in detail and "auto" in detail
        await pilot.press("left")  # stays on the first
        assert chart.selected == 0
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [t.compactions[0].message_index]


async def test_clicking_a_marker_selects_it() -> None:
    app = host(mixed_transcript())
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await screen_of(pilot)
        chart = screen.query_one(TimelineChart)
        assert chart.selected == 1
        marker_row = chart.render().plain.splitlines()[-3]
        first = marker_row.index(EVENT_MARK)
        await pilot.click(TimelineChart, offset=(first + 1, chart.content_size.height - 3))
        assert chart.selected == 0
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_policy_switcher_recomputes_the_lines() -> None:
    app = host(mixed_transcript())
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await screen_of(pilot)
        chart = screen.query_one(TimelineChart)
        assert screen.result.threshold_tokens == 167_000
        assert "167K" in chart.render().plain
        await pilot.press("p")  # claude-code → codex (90% of 200K)
        await pilot.pause()
        assert screen.result.policy.name.value == "codex"
        assert screen.result.threshold_tokens == 180_000
        assert "180K" in chart.render().plain
        screen.query_one(Select).value = "rules"
        await pilot.pause()
        assert screen.result.threshold_tokens == 120_000
        assert screen.result.events[0].threshold_tokens == 120_000
        assert "120K" in plot_rows(chart)
        assert "60%" in str(screen.query_one("#timeline-rule", Static).render())


async def test_measured_and_estimated_points_use_different_glyphs() -> None:
    mixed = host(mixed_transcript())
    async with mixed.run_test(size=(100, 30)) as pilot:
        rows = plot_rows((await screen_of(pilot)).query_one(TimelineChart))
        assert MEASURED in rows and ESTIMATED in rows
    t = load(SESSIONS / "claude-code.jsonl")  # every turn measured
    measured = host(t)
    async with measured.run_test(size=(100, 30)) as pilot:
        rows = plot_rows((await screen_of(pilot)).query_one(TimelineChart))
        assert MEASURED in rows and ESTIMATED not in rows
    d = load(SESSIONS / "hermes-gateway.jsonl")  # nothing measured
    estimated = host(d, context_window=4_000)
    async with estimated.run_test(size=(100, 30)) as pilot:
        rows = plot_rows((await screen_of(pilot)).query_one(TimelineChart))
        assert ESTIMATED in rows and MEASURED not in rows


async def test_reservation_line_and_no_compactions() -> None:
    t = load(SESSIONS / "openai-chat.json")
    app = host(t, policy="hermes:max_output=8000", context_window=16_000)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await screen_of(pilot)
        chart = screen.query_one(TimelineChart)
        assert screen.result.threshold.output_reservation == 8_000
        assert RESERVE_LINE in plot_rows(chart)
        assert EVENT_MARK not in chart.render().plain.splitlines()[-3]
        assert "No compactions" in str(screen.query_one("#timeline-detail", Static).render())
        await pilot.press("enter")  # nothing to jump to: the screen stays
        await pilot.pause()
        assert pilot.app.screen is screen
        await pilot.press("q")
        await pilot.pause()
    assert app.results == [None]


def test_timeline_snapshot(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def settle(pilot: Pilot) -> None:
        await pilot.pause()

    app = host(mixed_transcript(), policy="hermes:max_output=32000")
    assert snap_compare(app, terminal_size=(100, 30), run_before=settle)


async def test_a_policy_that_does_not_fit_falls_back_with_a_warning() -> None:
    app = host(mixed_transcript(), policy="claude-code:buffer=50k", context_window=30_000)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await screen_of(pilot)
        assert screen.result.window.context_window == 30_000
        assert screen.result.policy.name.value == "hermes"  # the 33K buffer does not fit either
        assert any("buffer" in n.message for n in pilot.app._notifications)
