"""Aider's .aider.chat.history.md: runs, user lines, replies, Aider's own output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tinyjuice.formats import LoadError, detect, load, load_bytes
from tinyjuice.model import Role, Trigger
from tjui.cli import main

# Written the way Aider appends: "#### " per typed line, "> " lines ending in two spaces
# (added by :func:`aider_text`, so this literal has no trailing whitespace).
HISTORY = """
# aider chat started at 2026-02-11 08:02:15

> /usr/local/bin/aider --model sonnet
> Aider v0.86.1
> Main model: claude-sonnet-4-20250514 with diff edit format
> Git repo: .git with 41 files

#### say hi

Hi! What would you like to change?

> Tokens: 1.2k sent, 14 received. Cost: $0.0038 message, $0.0038 session.

# aider chat started at 2026-02-12 14:30:02

> Aider v0.86.1
> Main model: claude-sonnet-4-20250514 with diff edit format

#### /add billing/invoice.py

> Added billing/invoice.py to the chat

#### round totals half-up instead of banker's rounding
#### and keep two decimals

I'll switch to `Decimal.quantize` with `ROUND_HALF_UP`:

billing/invoice.py
```python
<<<<<<< SEARCH
#### not a user line: inside a fence
    return round(total, 2)
=======
    return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
>>>>>>> REPLACE
```

> Tokens: 4.3k sent, 2.1k cache write, 1.5k cache hit, 212 received. Cost: $0.02 message, $0.02 session.
> Applied edit to billing/invoice.py
> Commit 3f2a9c1 fix: round invoice totals half-up

#### /clear

#### now add a test for 2.345

Added `test_round_half_up` to tests/test_invoice.py.
"""


def aider_text(text: str) -> str:
    """``text`` with Aider's two trailing spaces on every user and output line."""
    marked = ("#### ", "> ")
    return "\n".join(ln + "  " if ln.startswith(marked) else ln for ln in text.split("\n"))


def write(tmp_path: Path) -> Path:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(aider_text(HISTORY))
    return path


def test_last_run_is_read(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert detect(path) == "aider"
    t = load(path)
    assert t.format == "aider" and t.session_id == "2026-02-12 14:30:02"
    assert t.model == "claude-sonnet-4-20250514"
    roles = [m.role for m in t.messages]
    assert roles == [
        Role.USER, Role.USER, Role.USER, Role.USER, Role.ASSISTANT, Role.TOOL,
        Role.USER, Role.USER, Role.ASSISTANT,
    ]  # fmt: skip
    banner, add, added, ask, reply, result, clear, ask2, _ = t.messages
    assert banner.meta.injected_kind == "aider_output" and "Aider v0.86.1" in banner.text
    assert add.meta.injected_kind == "command" and added.meta.injected_kind == "aider_output"
    assert ask.is_real_user
    assert ask.text == "round totals half-up instead of banker's rounding\nand keep two decimals"
    assert "#### not a user line" in reply.text and ">>>>>>> REPLACE" in reply.text
    assert reply.tool_calls[0].name == "aider" and result.tool_call_id == reply.tool_calls[0].id
    assert "Applied edit to billing/invoice.py" in result.text
    assert clear.meta.injected_kind == "command" and ask2.is_real_user
    (usage,) = t.usage
    assert usage.message_index == 4
    assert (usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (
        4300, 2100, 1500
    )  # fmt: skip
    assert usage.output_tokens == 212
    (event,) = t.compactions
    assert event.message_index == 7 and event.summary_index is None
    assert event.trigger is Trigger.MANUAL
    assert any("2 chats" in w for w in t.warnings)


def test_session_picks_an_earlier_run(tmp_path: Path) -> None:
    t = load(write(tmp_path), session="1")
    assert [m.role for m in t.messages] == [Role.USER, Role.USER, Role.ASSISTANT, Role.TOOL]
    assert t.usage[0].input_tokens == 1200 and not t.compactions
    with pytest.raises(LoadError) as err:
        load(write(tmp_path), session="3")
    assert "a number from 1 to 2" in str(err.value)


def test_inspect_json_lists_the_clear(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(write(tmp_path)), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "aider"
    assert [(c["index"], c["trigger"]) for c in report["compactions"]] == [(7, "manual")]


def test_project_directory_opens_its_history(tmp_path: Path) -> None:
    write(tmp_path)
    assert load(tmp_path).format == "aider"


def test_markdown_that_is_not_aider(tmp_path: Path) -> None:
    notes = tmp_path / "NOTES.md"
    notes.write_text("# Shopping\n\n- eggs\n")
    with pytest.raises(LoadError) as err:
        load(notes)
    assert "unrecognised transcript (Markdown text)" in str(err.value)
    with pytest.raises(LoadError) as err:
        load_bytes(b"# aider chat started at 2026-01-01 00:00:00\n\n", "h.md")
    assert "no messages" in str(err.value)
    with pytest.raises(LoadError):
        load_bytes(b'{"messages": []}', "x.json", "aider")
