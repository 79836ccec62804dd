"""Text holding terminal control sequences is drawn visibly in every one-line preview, as
the detail pane draws it (``␛[2m``), never sent to the terminal as styling."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.widgets import OptionList
from ui_helpers import wait_loaded

from tinyjuice.discovery import SessionRow
from tinyjuice.formats.catalog import SessionEntry
from tjui.app import make_app
from tjui.screens.browser import _cells
from tjui.screens.preview import Block, PreviewView, _one_row
from tjui.screens.sessions import SessionPicker
from tjui.widgets.message_list import MessageList

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
RAW = "<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m"
SHOWN = "<local-command-stdout>␛[2mCompacted (ctrl+o to see full summary)␛[22m"


async def test_a_list_row_shows_an_escape_code_and_keeps_its_width(tmp_path: Path) -> None:
    path = tmp_path / "cc.jsonl"
    path.write_bytes((SESSIONS / "claude-code.jsonl").read_bytes())
    async with make_app(path).run_test(size=(200, 45)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        messages = screen.session.transcript.messages
        index = next(i for i, m in enumerate(messages) if RAW in m.text)
        await pilot.press("end")
        await pilot.pause()
        strip = lst.render_line(lst.row_of(index) - lst.scroll_offset.y)
        text = "".join(segment.text for segment in strip)
        assert "\x1b" not in text
        assert "[command] <local-command-stdout>␛[2mCompacted (ctrl+o" in text
        assert strip.cell_length == cell_len(text) == lst.scrollable_content_region.width


class PreviewHost(App[None]):
    def compose(self) -> ComposeResult:
        yield PreviewView()


async def test_the_previews_columns_show_escape_codes() -> None:
    async with PreviewHost().run_test(size=(200, 10)) as pilot:
        view = pilot.app.query_one(PreviewView)
        view.set_blocks([Block("#3 user", (RAW,), "kept as is", ("\x07bell\tend",), "kept")])
        await pilot.pause()
        text = "".join(segment.text for segment in view.render_line(1))
        assert SHOWN in text and "␇bell   end" in text
        assert "\x1b" not in text and "\x07" not in text


def test_session_titles_and_scorecard_rows_show_them_too() -> None:
    row = SessionRow("claude-code", "/s.jsonl", 10, 0.0, title=f"{RAW} [/x]")
    title = _cells(row, 0.0)[2]
    assert str(title) == f"{SHOWN} [/x]"  # not markup either: "[/x]" would not parse
    assert _one_row("#4 fact: \x1b[31mred") == "#4 fact: ␛[31mred"


async def test_the_session_pickers_titles_show_them() -> None:
    # A Hermes session's title is the picker's detail.
    entries = [SessionEntry("a", "a", 3, f"gpt-4o · {RAW}"), SessionEntry("b", "b", 5)]
    app = App[None]()
    async with app.run_test(size=(160, 20)) as pilot:
        await app.push_screen(SessionPicker(entries, None))
        await pilot.pause()
        prompt = str(app.screen.query_one(OptionList).get_option_at_index(0).prompt)
        assert prompt.endswith(f"a · 3 msgs · gpt-4o · {SHOWN}")
