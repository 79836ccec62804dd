"""A summary message in an OpenAI, Anthropic, ShareGPT or Hermes transcript is a compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import load, load_bytes
from tinyjuice.formats._common import summary_events
from tinyjuice.model import (
    CompactionEvent,
    Message,
    MessageMeta,
    Role,
    TextPart,
    Transcript,
    Trigger,
)

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())["files"]
SUMMARY = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier: fixed parser.py; tests pass."
LEGACY = "[CONTEXT SUMMARY]: Earlier: fixed parser.py."

OPENAI: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the parser."},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": SUMMARY},
    {"role": "assistant", "content": "Understood."},
    {"role": "user", "content": LEGACY},
    {"role": "user", "content": "Now the tests."},
]
ANTHROPIC: dict[str, Any] = {
    "system": "You are a coding agent.",
    "messages": [
        {"role": "user", "content": "Fix the parser."},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": [{"type": "text", "text": SUMMARY}]},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": LEGACY},
    ],
}
SHAREGPT: dict[str, Any] = {
    "conversations": [
        {"from": "system", "value": "You are a coding agent."},
        {"from": "human", "value": "Fix the parser."},
        {"from": "gpt", "value": "Done."},
        {"from": "human", "value": SUMMARY},
        {"from": "gpt", "value": "Understood."},
        {"from": "human", "value": LEGACY},
    ]
}


@pytest.mark.parametrize(
    ("fmt", "doc", "indexes"),
    [("openai", OPENAI, [3, 5]), ("anthropic", ANTHROPIC, [2, 4]), ("sharegpt", SHAREGPT, [3, 5])],
)
def test_summary_messages_are_compaction_events(fmt: str, doc: Any, indexes: list[int]) -> None:
    t = load_bytes(orjson.dumps(doc), "t.json", fmt)
    assert [i for i, m in enumerate(t.messages) if m.meta.is_summary] == indexes
    assert t.compactions == tuple(
        CompactionEvent(
            message_index=i, trigger=Trigger.UNKNOWN, summary_index=i, resets_context=False
        )
        for i in indexes
    )


def test_no_summary_no_event() -> None:
    t = load_bytes(orjson.dumps(OPENAI[:3]), "t.json", "openai")
    assert t.compactions == ()


def test_one_helper_for_every_reader() -> None:
    messages = (
        Message(Role.USER, (TextPart("hi"),)),
        Message(Role.USER, (TextPart(SUMMARY),), meta=MessageMeta(is_summary=True, source_id="7")),
    )
    assert summary_events(messages) == [
        CompactionEvent(1, Trigger.UNKNOWN, summary_index=1, source_id="7", resets_context=False)
    ]
    assert summary_events(messages[:1]) == []
    # An append-only log's reader: the agent's context starts again at the summary.
    (event,) = summary_events(messages, resets=True)
    assert event.resets_context
    t = Transcript(messages=messages, format="x", compactions=(event,))
    assert t.live_start == 1 and t.history_messages() == messages[:1]


def test_sharegpt_sample_trajectory_3_has_its_manifest_compaction() -> None:
    # tjui inspect sessions/sharegpt.jsonl --session 3 said "No past compactions recorded".
    want = MANIFEST["sharegpt.jsonl"]["trajectories"]
    for number, expected in enumerate(want, 1):
        t = load(SESSIONS / "sharegpt.jsonl", session=str(number))
        got = [(e.message_index, e.trigger.value, e.pre_tokens) for e in t.compactions]
        assert got == [(c["index"], c["trigger"], c["pre_tokens"]) for c in expected["compactions"]]


@pytest.mark.parametrize(
    "name", [n for n, e in MANIFEST.items() if e["format"] in ("openai", "anthropic", "sharegpt")]
)
def test_samples_match_the_manifest(name: str) -> None:
    t = load(SESSIONS / name)
    assert [e.message_index for e in t.compactions] == [
        c["index"] for c in MANIFEST[name]["compactions"]
    ]
