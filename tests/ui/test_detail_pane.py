"""The detail pane renders lazily: a huge message never holds up input."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from ui_helpers import wait_for, wait_loaded

import tjui.widgets.detail
from tjui.app import make_app
from tjui.paths import demo_session
from tjui.widgets.detail import DetailPane, message_blocks
from tjui.widgets.lazy_text import LazyText, _offsets, text_lines
from tjui.widgets.message_list import MessageList

#: The demo's 68k-token pytest log (a Hermes tool result).
HUGE = 268


def _heading(pane: DetailPane) -> str:
    return str(pane.query_one(".detail--heading").render())


async def test_app_answers_a_key_while_the_detail_pane_fills(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = threading.Event()

    def held(message):  # type: ignore[no-untyped-def]
        # The pane's body is prepared off the UI thread: hold it until the key is seen.
        assert gate.wait(20)
        return message_blocks(message)

    monkeypatch.setattr(tjui.widgets.detail, "message_blocks", held)
    # Every body goes through the worker (by default only those over SYNC_CHARS do).
    monkeypatch.setattr(tjui.widgets.detail, "SYNC_CHARS", 0)
    async with make_app(demo_session()).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.query_one(MessageList)
        pane = screen.query_one(DetailPane)
        screen.go_to(HUGE)
        screen._show_detail(HUGE)
        await pilot.pause()
        assert pane.filling and _heading(pane).startswith(f"#{HUGE} tool")
        await pilot.press("j")
        # The key was handled while the huge message's body was still being prepared.
        assert lst.cursor == HUGE + 1
        assert pane.filling
        gate.set()
        await wait_for(pilot, lambda: not pane.filling and f"#{HUGE + 1} " in _heading(pane))
        assert pane.query(LazyText)


async def test_only_the_visible_rows_are_highlighted(tmp_path: Path) -> None:
    rows = [{"i": i, "path": f"src/module_{i}.py", "ok": i % 3 == 0} for i in range(3000)]
    messages = [
        {"role": "user", "content": "list the modules"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(rows)},
        {"role": "user", "content": "thanks"},
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"messages": messages}))
    async with make_app(path).run_test(size=(160, 48)) as pilot:
        screen = await wait_loaded(pilot)
        pane = screen.query_one(DetailPane)
        screen.go_to(2)
        screen._show_detail(2)
        await wait_for(pilot, lambda: not pane.filling)
        await pilot.pause()
        body = pane.query_one(LazyText)
        assert body.line_count == 3000 * 5 + 2  # pretty-printed: 5 lines per object
        assert body.size.height >= body.line_count
        # Only what fits in the pane was highlighted, not 15,000 lines.
        assert 0 < body.highlighted <= pane.size.height
        pane.scroll_end(animate=False)
        await pilot.pause()
        assert body.highlighted <= 2 * pane.size.height


def test_text_lines_make_controls_visible_and_expand_tabs() -> None:
    assert text_lines("a\tb\r\n\x1b[31mred\x7f") == ["a       b", "␛[31mred␡"]
    assert text_lines("") == [""]


def test_fold_offsets_count_wide_characters_as_two_cells() -> None:
    assert _offsets("abcdefg", 3, fold=True) == [0, 3, 6]
    assert _offsets("漢字漢字", 4, fold=True) == [0, 2]
    assert _offsets("word wrap here", 9, fold=False) == [0, 10]


def test_a_long_multiline_json_field_is_shown_as_real_lines() -> None:
    from tinyjuice.formats import load

    message = load(demo_session()).messages[HUGE]
    blocks = message_blocks(message)
    head, body = blocks[0], blocks[1]
    assert head.lexer == "json"
    assert any("lines, below›" in line and '"output"' in line for line in head.lines)
    assert body.title is not None and str(body.title) == "output"
    output = message.text
    assert len(body.lines) == len(text_lines(json.loads(output)["output"])) > 1000
