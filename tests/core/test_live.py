"""tinyjuice.live: the live context after a reset, and commits that keep the history."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from cc_shapes import two_compactions
from click.testing import CliRunner

from tinyjuice.formats import load
from tinyjuice.live import live_split, live_view, with_history
from tinyjuice.model import CompactionEvent, Message, Role, TextPart, Transcript, Usage
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionOptions
from tinyjuice.store import load_source, plan_commit
from tjui.cli import main


def _msg(role: Role, text: str, **meta: object) -> Message:
    m = Message(role, (TextPart(text),))
    return replace(m, meta=replace(m.meta, **meta)) if meta else m


def _transcript() -> Transcript:
    msgs = (
        _msg(Role.USER, "old ask"),
        _msg(Role.ASSISTANT, "old answer"),
        _msg(Role.USER, "summary of the old turns", is_summary=True),
        _msg(Role.USER, "new ask"),
        _msg(Role.ASSISTANT, "new answer"),
    )
    return Transcript(
        messages=tuple(
            replace(m, meta=replace(m.meta, original_index=i)) for i, m in enumerate(msgs)
        ),
        format="openai",
        compactions=(
            CompactionEvent(message_index=2, summary_index=2),
            CompactionEvent(message_index=4, summary_index=None, resets_context=False),
        ),
        usage=(Usage(input_tokens=900, message_index=1), Usage(input_tokens=300, message_index=4)),
    )


def test_live_start_comes_from_the_last_resetting_event() -> None:
    t = _transcript()
    assert t.live_start == 2  # the in-place event after it does not move it
    assert [m.text for m in t.history_messages()] == ["old ask", "old answer"]
    assert t.live_messages()[0].meta.is_summary
    in_place = replace(t, compactions=(replace(t.compactions[0], resets_context=False),))
    assert in_place.live_start == 0 and live_view(in_place) is in_place


def test_live_view_reindexes_messages_usage_and_events() -> None:
    live = live_view(_transcript())
    assert [m.text for m in live.messages] == [
        "summary of the old turns",
        "new ask",
        "new answer",
    ]
    assert [m.meta.original_index for m in live.messages] == [0, 1, 2]
    assert [(u.message_index, u.prompt_tokens) for u in live.usage] == [(2, 300)]
    assert [(e.message_index, e.summary_index) for e in live.compactions] == [(0, 0), (2, None)]
    assert live.live_start == 0  # a live view is its own live context


def test_with_history_puts_the_history_back_unchanged() -> None:
    t = _transcript()
    split = live_split(t)
    compacted = replace(split.live, messages=split.live.messages[1:], compactions=(), usage=())
    back = with_history(split, compacted)
    assert back.messages[:2] == t.messages[:2]
    assert [m.text for m in back.messages[2:]] == ["new ask", "new answer"]
    # The summary went away, but the reset is still where the live part starts.
    assert back.live_start == 2
    assert [u.message_index for u in back.usage] == [1]


def test_commit_in_place_keeps_the_history_export_does_not(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    asks = [f"ask {i}: " + f"count the pallets in aisle {i} again " * 40 for i in range(16)]
    doc = []
    for i, ask in enumerate(asks):
        doc += [{"role": "user", "content": ask}, {"role": "assistant", "content": f"done {i}"}]
    path.write_text(json.dumps(doc))
    loaded = load_source(path)
    # A reader following the contract marks a reset at message 6 (an append-only log).
    t = replace(loaded.transcript, compactions=(CompactionEvent(message_index=6),))
    loaded = replace(loaded, transcript=t)
    split = live_split(t)
    result = compress(split.live, CompactionOptions(keep_last=1, force=True))
    assert result.changed
    plan = plan_commit(result, loaded, mode="in-place", split=split)
    written = json.loads(plan.data)
    assert written[:6] == doc[:6]  # the history, exactly as it was
    assert len(written) < len(doc)
    export = plan_commit(result, loaded, mode="export", target=tmp_path / "out.json", split=split)
    assert "ask 0" not in export.data.decode()


def test_claude_code_child_commit_holds_only_the_compacted_live_context(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    res = CliRunner().invoke(
        main, ["compress", str(path), "--keep-last", "1", "--commit", "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    child = Path(data["commit"]["target_path"])
    text = child.read_text()
    assert "before-first" not in text and "between: step" not in text
    assert "latest ask: write the totals" in text
    assert len(load(child).messages) < len(load(path).live_messages())
