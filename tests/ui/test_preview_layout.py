"""The preview's layout and keys: stacked below 120 columns, the summary in one key,
End in one press, weak scores coloured, cancel puts the previous preview back."""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from test_preview_summary import Host, completion, preview_of, server, session, wait_for
from textual.widgets import Input, OptionList, Select, Static

from tinyjuice.review import CATEGORIES
from tjui.screens.preview import (
    POOR_BELOW,
    WEAK_BELOW,
    PreviewView,
    report_header,
    scorecard_options,
)

__all__ = ["server"]  # the fixture, used by name below


@pytest.mark.parametrize(("width", "stacked"), [(80, True), (110, True), (160, False)])
async def test_scorecard_stacks_under_the_columns_below_120(width: int, stacked: bool) -> None:
    app = Host(session())
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        await pilot.pause()
        screen = preview_of(app)
        view = screen.query_one(PreviewView)
        card = screen.query_one("#preview-scorecard", OptionList)
        assert screen.has_class("-stacked") is stacked
        if stacked:
            assert card.region.y >= view.region.bottom
            assert view.region.width >= width - 2  # both columns get the full width
        else:
            assert card.region.x >= view.region.right and card.region.y == view.region.y


async def test_summary_in_one_key_and_end_in_one_press() -> None:
    app = Host(session())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        view = screen.query_one(PreviewView)
        await pilot.press("m")
        await pilot.pause()
        summary_row = next(
            view._starts[k] for k, b in enumerate(view._blocks) if b.kind == "summary"
        )
        assert view.scroll_y == min(summary_row, view.max_scroll_y)
        await pilot.press("home")
        await pilot.pause()
        assert view.scroll_y == 0
        await pilot.press("end")
        await pilot.pause()
        assert view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y


async def test_summary_key_works_before_the_new_lines_are_laid_out() -> None:
    # Right after set_blocks, until the next layout, the view has no scrollbar yet for its
    # new lines; the jump must not wait for one (a key pressed as the preview appears).
    app = Host(session())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        view = preview_of(app).query_one(PreviewView)
        blocks = list(view._blocks)
        view.set_blocks([])
        await pilot.pause()
        assert not view.show_vertical_scrollbar
        view.set_blocks(blocks)
        assert view.scroll_to_summary()
        summary_row = next(view._starts[k] for k, b in enumerate(blocks) if b.kind == "summary")
        assert summary_row > 0 and view.scroll_y == min(summary_row, view.max_scroll_y)
        view.action_top()
        view.action_bottom()
        assert view.scroll_y == view.max_scroll_y > 0


async def test_weak_scores_take_the_themes_warning_and_error_colours() -> None:
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        review = screen.review
        assert review is not None
        weak, poor = Style(color="#111111"), Style(color="#222222")
        rows, _ = scorecard_options(review, {"weak": weak, "poor": poor})
        by_cat = {
            str(r.prompt).split()[0]: r.prompt for r in rows if str(r.prompt).startswith("  ")
        }
        graded = 0
        for cat in CATEGORIES:
            total = review.total(cat)
            if not total:
                continue
            share = review.found(cat) / total
            prompt = by_cat[cat.value]
            assert isinstance(prompt, Text)
            expected = poor if share < POOR_BELOW else weak if share < WEAK_BELOW else None
            assert (prompt.style or None) == expected, cat
            graded += expected is not None
        assert graded, "the fallback leaves some category short"
        # On screen, the colours are the theme's.
        card = screen.query_one("#preview-scorecard", OptionList)
        styles = [card.get_option_at_index(i).prompt for i in range(card.option_count)]
        colours = {str(p.style.color.triplet.hex) for p in styles if isinstance(p, Text) and isinstance(p.style, Style) and p.style.color}  # fmt: skip
        theme = app.theme_variables
        assert colours <= {theme["warning"].lower(), theme["error"].lower()} and colours


async def test_cancel_restores_the_previous_preview_header_and_focus(server: Any) -> None:
    server.replies.append(completion("## Goal\nLATE-ANSWER", delay=0.8))
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        before = screen.result
        assert before is not None
        header = screen.query_one("#preview-header", Static)
        screen.query_one("#preview-focus", Input).value = "payments"
        screen.query_one("#preview-provider", Select).value = "local"
        await wait_for(pilot, lambda: screen.generating and len(server.bodies) == 1)
        assert app.s.options.focus_topic == "payments"
        screen.query_one(PreviewView).focus()
        await pilot.press("x")
        await pilot.pause()
        assert str(header.render()) == report_header(before.report)
        assert app.s.options.focus_topic is None
        assert screen.query_one("#preview-focus", Input).value == ""
        assert app.s.current_result is before
