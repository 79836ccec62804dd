"""The preview shows nothing of a secret in the messages a summary replaces: their
blocks carry redacted text, and the result they come from no raw source record."""

from __future__ import annotations

from pathlib import Path

from builders import claude_code_with_secrets, secret_fragments

from tinyjuice.formats import load
from tinyjuice.pipeline import compress
from tinyjuice.tokens import RoughCounter, count_transcript
from tjui.screens.preview import build_blocks
from tjui.session import InspectorSession


def test_preview_blocks_show_no_secret_of_the_summarised_middle(tmp_path: Path) -> None:
    path = tmp_path / "secrets.jsonl"
    secrets = claude_code_with_secrets(path)
    t = load(path)
    counter = RoughCounter()
    s = InspectorSession.build(t, count_transcript(t, counter), counter)
    s.set_boundary(65)
    result = compress(
        t,
        s.compaction_options(),
        tokens=s.tokens,
        counter=s.counter,
        index=s.index,
        analysis=s.analysis,
    )
    assert result.changed and (result.report.boundary_start or 0) <= 8
    assert all(not m.extra for m in result.compacted_middle)
    blocks = build_blocks(s, result)
    shown = "\n".join(
        "\n".join((b.left_title, *b.left, b.right_title, *b.right))
        for b in blocks
        if b.kind != "kept"
    )
    right = "\n".join("\n".join((b.right_title, *b.right)) for b in blocks)
    for secret in secrets.values():
        for fragment in secret_fragments(secret):
            assert fragment not in right
    assert "hunter2Secr3tPw" not in shown
    # Redacted and without its record, a message is still summarised, not "rewritten".
    assert {b.kind for b in blocks} <= {"digest", "summarised", "summary"}
