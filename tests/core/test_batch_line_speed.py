"""The batch's per-line shortcuts (issue #14) give exactly what the long way round gives:
reading a ShareGPT line (:func:`tinyjuice.formats.sharegpt.read_line`), writing it back
with what the read kept (``write_compact(..., read)``) and rendering a summary whose
body needs no redaction (``tinyjuice.fit._summary_message``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.trajectories import trajectory_line
from tinyjuice.budget import SummaryKind
from tinyjuice.fit import _summary_message
from tinyjuice.formats import LoadError, load_bytes
from tinyjuice.formats.sharegpt import read_line, write_compact
from tinyjuice.model import Role, TextPart
from tinyjuice.summary import SummaryError, render_summary_message

REPO = Path(__file__).resolve().parents[2]


def _sample_lines() -> list[bytes]:
    lines = [trajectory_line(i).rstrip(b"\n") for i in range(40)]
    for name in ("sharegpt.jsonl", "sharegpt-glaive.jsonl"):
        lines += [ln for ln in (REPO / "sessions" / name).read_bytes().splitlines() if ln.strip()]
    return lines


def _odd_lines() -> list[bytes]:
    good = trajectory_line(3).rstrip(b"\n")
    turn = {"from": "gpt", "value": "<tool_call>\n{bad json\n</tool_call>"}
    return [
        b"",
        b"   ",
        b"[]",
        b"[" + good + b"]",
        b"{}",
        b'{"conversations": 3}',
        b'{"conversations": [{"from": "alien", "value": "x"}]}',
        b'{"conversations": [{"from": "human", "value": 7}]}',
        b'{"conversations": [], "tools": "not json"}',
        orjson.dumps({"conversations": [turn], "id": 4, "model": "m", "system": "s"}),
        good[:-5],
        b"  " + good,
        good + b"  ",
        good.replace(b'"value"', b'"value"', 1) + b"\r",
        b'{"conversations": [{"from": "human", "value": "a\x00b"}]}',
        b"\xef\xbb\xbf" + good,
        good.replace(b"}", b"}\n", 1),
    ]


def _load(data: bytes) -> tuple[str, object]:
    try:
        return "ok", load_bytes(data, "<line>", "sharegpt")
    except LoadError as exc:
        return "error", (exc.problem, exc.line, exc.json_path, exc.expected, str(exc))


@pytest.mark.parametrize("data", _sample_lines() + _odd_lines())
def test_read_line_is_load_bytes(data: bytes) -> None:
    expected = _load(data)
    try:
        got: tuple[str, object] = ("ok", read_line(data)[0])
    except LoadError as exc:
        got = ("error", (exc.problem, exc.line, exc.json_path, exc.expected, str(exc)))
    assert got == expected


@pytest.mark.parametrize("data", _sample_lines())
def test_write_compact_with_what_the_read_kept_is_the_same_bytes(data: bytes) -> None:
    transcript, read = read_line(data)
    assert read is not None
    msgs = transcript.messages
    variants = [transcript, replace(transcript, messages=msgs[: len(msgs) // 2])]
    for k, m in enumerate(msgs):
        # A message changed in place of the one read (the same hints, so the same text
        # to check against), and a tool turn cut short.
        if m.role is Role.ASSISTANT or m.role is Role.TOOL:
            changed = replace(m, parts=(TextPart(m.text + " (edited)"),))
            variants.append(replace(transcript, messages=(*msgs[:k], changed, *msgs[k + 1 :])))
            variants.append(replace(transcript, messages=(*msgs[:k], *msgs[k + 1 :])))
            variants.append(replace(transcript, messages=(*msgs[:k], replace(m), *msgs[k + 1 :])))
    for t in variants:
        assert write_compact(t, read) == write_compact(t)


_SECRETY = st.sampled_from(
    [
        "password=hunter2hunter2",
        "AKIAIOSFODNN7EXAMPLE",
        "token: ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "api_key = 'sk-abcdefghijklmnopqrstuvwxyz012345'",
        "-----BEGIN RSA PRIVATE KEY-----",
        "\\n",
        "\\u0070assword=x",
        "[CONTEXT COMPACTION — REFERENCE ONLY]",
        "## Facts",
        "src/app.py",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_SECRETY, st.text(max_size=30)), max_size=8).map("\n".join),
    st.sampled_from([SummaryKind.FALLBACK, SummaryKind.LLM]),
    st.booleans(),
)
def test_summary_message_is_render_summary_message(
    text: str, kind: SummaryKind, redact: bool
) -> None:
    def outcome(fn: Callable[[], object]) -> object:
        try:
            return fn()
        except SummaryError as exc:
            return ("error", str(exc))

    fast = outcome(lambda: _summary_message(text, kind, redact))
    slow = outcome(lambda: render_summary_message(text, kind=kind, role=Role.USER, redact=redact))
    assert fast == slow
