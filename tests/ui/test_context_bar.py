"""The context bar: a colour per category, a legend that never splits an entry, the
measured-but-unrecorded part drawn from core's figure, free space and the buffer."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import wait_loaded

from tjui.app import make_app
from tjui.paths import demo_session
from tjui.widgets.context_bar import (
    BAR_PALETTE,
    BUCKET_STYLE,
    UNRECORDED_LABEL,
    ContextBar,
    _k,
    bar_palette,
)

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def test_every_category_has_its_own_colour_on_both_themes() -> None:
    for dark in (True, False):
        palette = bar_palette(dark=dark)
        colours = [palette[f"bar-{style}"] for style in BUCKET_STYLE.values()]
        assert len(set(colours)) == len(colours)
    assert set(bar_palette(dark=True).values()).isdisjoint(bar_palette(dark=False).values())
    assert {f"bar-{s}" for s in BUCKET_STYLE.values()} <= {f"bar-{k}" for k in BAR_PALETTE}


async def test_the_theme_switch_recolours_the_bar() -> None:
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        bar = screen.query_one(ContextBar)
        dark = bar.get_component_rich_style("context-bar--tool-output").color
        pilot.app.theme = "textual-light"
        await pilot.pause()
        light = bar.get_component_rich_style("context-bar--tool-output").color
        assert dark is not None and light is not None and dark != light
        assert light.triplet is not None
        assert light.triplet.hex.upper() == bar_palette(dark=False)["bar-tool-output"].upper()


async def test_unrecorded_part_of_a_measured_prompt_is_drawn_from_core() -> None:
    async with make_app(SESSIONS / "claude-code.jsonl").run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        b = screen.session.breakdown
        assert b.unrecorded_tokens > 0
        assert b.unrecorded_tokens == b.measured_prompt_tokens - b.counted_at_measurement
        text = str(screen.query_one(ContextBar).render())
        assert f"{UNRECORDED_LABEL} {_k(b.unrecorded_tokens)}" in text
        bar_line = text.splitlines()[0]
        assert "░" in bar_line and "▒" in bar_line and "·" in bar_line
        assert "free space" in text and "autocompact buffer" in text


@pytest.mark.parametrize("width", [80, 100, 160])
async def test_legend_entries_never_split_from_their_swatch(width: int) -> None:
    async with make_app(SESSIONS / "claude-code.jsonl").run_test(size=(width, 48)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.session is not None
        bar = screen.query_one(ContextBar)
        lines = str(bar.render()).splitlines()[4:]
        window = screen.session.plan.context_window
        for bucket in screen.session.breakdown.categories:
            if bucket.tokens <= 0:
                continue
            entry = f"{_k(bucket.tokens)} {100 * bucket.tokens / window:.1f}%"
            assert any(entry in line for line in lines), (entry, lines)
        for line in lines:
            assert len(line) <= bar.size.width
