"""tinyjuice.subagents: a Claude Code session's subagent files and sidechain lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from cc_shapes import SESSION, Chain, subagent_session

from tinyjuice.formats import LoadError, load
from tinyjuice.subagents import list_subagents, open_subagent


def _with_sidechain(tmp_path: Path) -> Path:
    """A session whose subagent's lines sit in the session file (older Claude Code)."""
    c = Chain()
    c.user("find the slow query")
    c.assistant("Asking a subagent.", 4_000, [("toolu_9", "Task")])
    side_root = c.parent
    side = Chain(sidechain=True, agent="b77e01d")
    side.parent = side_root
    side.user("Look for N+1 queries in orders/")
    side.assistant("orders/views.py loops over order.items", 2_000)
    c.lines += side.lines
    c.result("toolu_9", "orders/views.py has an N+1 query")
    return c.write(tmp_path / f"{SESSION}.jsonl")


def test_sidechain_subagents_are_listed_and_open(tmp_path: Path) -> None:
    t = load(_with_sidechain(tmp_path))
    (agent,) = list_subagents(t)
    assert (agent.id, agent.source, agent.messages, agent.path) == ("b77e01d", "sidechain", 2, None)
    sub = open_subagent(t, "b77e01d")
    assert sub.messages[0].text == "Look for N+1 queries in orders/"
    assert sub.extra["subagent"] == "b77e01d" and sub.compactions == ()
    with pytest.raises(LoadError, match="no subagent"):
        open_subagent(t, "nope")


def test_files_are_listed_without_reading_them_and_bad_ones_say_why(tmp_path: Path) -> None:
    path = subagent_session(tmp_path)
    folder = tmp_path / SESSION / "subagents"
    (folder / "agent-broken.jsonl").write_text("not json at all\n")
    t = load(path)
    listed = {a.id: a for a in list_subagents(t)}
    assert listed["a91c2f0"].messages == 4 and listed["a91c2f0"].error is None
    assert listed["broken"].messages == 0 and "broken" in (listed["broken"].error or "")
    quick = {a.id: a.messages for a in list_subagents(t, read_files=False)}
    assert quick == {"a91c2f0": None, "broken": None}
    assert len(open_subagent(t, "a91c2f0").messages) == 4


def test_other_formats_have_no_subagents(tmp_path: Path) -> None:
    p = tmp_path / "chat.json"
    p.write_text('[{"role": "user", "content": "hi"}]')
    assert list_subagents(load(p)) == []
