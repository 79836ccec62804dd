"""What redaction covers: everything that leaves the original.

The Hermes profile summarises its middle away, so no writer writes those messages:
their source records are dropped (never scanned), and what the result exposes of them
(``compacted_middle``, the summary, the provider's request) is their redacted text.
The rules profile keeps its middle in the transcript a writer writes: there the source
records are redacted. ``report.redactions`` counts the messages redaction changed among
what leaves (docs/compaction.md, "What redaction covers").
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import orjson
import pytest
from builders import FakeProvider
from pipeline_helpers import ROUGH, SMALL, assert_no_secrets, run, secret_session

from tinyjuice.analysis import TranscriptAnalysis
from tinyjuice.formats import load
from tinyjuice.model import EMPTY, Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import compress
from tinyjuice.redact import redact_messages, without_source_fields
from tinyjuice.report import Status
from tinyjuice.tokens import count_transcript

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
FORCED = CompactionOptions(protect_first_n=0, force=True)


def _dump(value: object) -> str:
    """Every byte of ``value`` (messages, their source fields included) as text."""
    return orjson.dumps(
        value, default=lambda o: dict(o) if hasattr(o, "keys") else repr(o)
    ).decode()


def _with_records(t: Transcript, secrets: dict[str, str]) -> tuple[Transcript, set[int]]:
    """``t`` with a source record holding secrets on every message of its middle half (in
    the message, its parts and its tool calls); and the indices given one."""
    n = len(t.messages)
    marked = set(range(2, n - 4))
    record = {
        "toolUseResult": {"stdout": f"export AWS_ACCESS_KEY_ID={secrets['aws']}"},
        "password": "hunter2Secr3tPw",
        "note": f"token {secrets['github']}",
    }
    out: list[Message] = []
    for i, m in enumerate(t.messages):
        if i in marked:
            parts = tuple(
                dataclasses.replace(p, extra={"raw": secrets["openai"]})
                if isinstance(p, TextPart)
                else p
                for p in m.parts
            )
            calls = tuple(
                dataclasses.replace(c, extra={"raw": secrets["jwt"]}) for c in m.tool_calls
            )
            m = dataclasses.replace(m, parts=parts, tool_calls=calls, extra=record)
        out.append(m)
    return dataclasses.replace(t, messages=tuple(out)), marked


def _secret_transcript() -> tuple[Transcript, dict[str, str], set[int]]:
    c, s = secret_session()
    t, marked = _with_records(c.transcript(context_window=SMALL), s)
    return t, {**s, "password": "hunter2Secr3tPw"}, marked


def test_summarised_away_source_records_never_leave_the_result() -> None:
    t, s, marked = _secret_transcript()
    r = run(t, FORCED)
    assert r.report.status is Status.COMPACTED
    start, end = r.report.boundary_start, r.report.boundary_end
    assert marked & set(range(start, end)), "the records really were in the middle"
    assert r.compacted_middle
    for m in r.compacted_middle:
        assert m.extra is EMPTY or not m.extra
        assert not any(p.extra for p in m.parts)
        assert not any(c.extra for c in m.tool_calls)
    assert r.summary_message is not None
    # (The head and the verbatim tail are the original's own messages, as they were.)
    everything = _dump([list(r.compacted_middle), r.summary_message]) + json.dumps(
        r.report.to_dict()
    )
    assert_no_secrets(everything + (r.appendix or ""), s)


def test_the_provider_is_sent_no_source_records() -> None:
    t, s, _ = _secret_transcript()
    provider = FakeProvider()
    r = run(t, FORCED, provider)
    assert r.report.status is Status.COMPACTED
    (request,) = provider.requests
    assert all(not m.extra for m in request.messages)
    assert_no_secrets(_dump(list(request.messages)), s)


def test_rules_profile_redacts_the_source_records_it_writes() -> None:
    """The rules keep their middle in the transcript a writer writes: records stay, redacted."""
    t, s, _ = _secret_transcript()
    r = run(t, dataclasses.replace(FORCED, profile=Profile.RULES))
    assert r.report.status is Status.COMPACTED
    # (Rule 5: user messages are never touched, not even redacted.)
    kept = [m for m in r.compacted_middle if m.role is not Role.USER]
    assert kept and any(m.extra for m in kept), "the rules keep the records"
    assert all(m in r.messages for m in kept), "and a writer writes them"
    assert_no_secrets(_dump(kept), s)
    assert "[REDACTED:" in _dump([m.extra for m in kept])


def test_an_auth_argument_is_redacted_in_what_leaves() -> None:
    """A tool call's ``{"Auth": …}`` argument in the middle is redacted in what leaves
    (the provider's request, ``compacted_middle``): "auth" is a sensitive key, though it
    holds no needle of the batched scan, which once let it through."""
    value = "Zq8-hunter2-not-a-real-secret"
    c, _ = secret_session()
    t = c.transcript(context_window=SMALL)

    def with_auth(call: ToolCall) -> ToolCall:
        args = {**json.loads(call.arguments or "{}"), "Auth": value}
        return dataclasses.replace(call, arguments=json.dumps(args))

    msgs = tuple(
        dataclasses.replace(m, tool_calls=tuple(map(with_auth, m.tool_calls))) for m in t.messages
    )
    provider = FakeProvider()
    r = run(dataclasses.replace(t, messages=msgs), FORCED, provider)
    assert r.report.status is Status.COMPACTED
    (request,) = provider.requests
    sent = [m for m in request.messages if m.tool_calls]
    assert sent and value not in _dump(list(request.messages))
    assert all("[REDACTED:" in call.arguments for m in sent for call in m.tool_calls)
    assert value not in _dump(list(r.compacted_middle))


def test_redactions_count_only_what_leaves() -> None:
    """A message whose only secret is in its (dropped) source record is not counted."""
    c, s = secret_session()
    plain = c.transcript(context_window=SMALL)
    with_records, _ = _with_records(plain, s)
    base = run(plain, FORCED).report
    assert base.redactions > 0
    assert run(with_records, FORCED).report.redactions == base.redactions
    rules = dataclasses.replace(FORCED, profile=Profile.RULES)
    assert run(with_records, rules).report.redactions > run(plain, rules).report.redactions


def test_the_analysis_gives_the_same_result_and_reuses_its_work() -> None:
    t, _, _ = _secret_transcript()
    tokens = count_transcript(t, ROUGH)
    analysis = TranscriptAnalysis()
    alone = run(t, FORCED, tokens=tokens)
    first = run(t, FORCED, tokens=tokens, analysis=analysis)
    fresh = analysis.redacted_fresh
    again = run(t, FORCED, tokens=tokens, analysis=analysis)
    assert analysis.redacted_fresh == fresh, "the second run scans nothing again"
    for r in (first, again):
        assert r.compacted_middle == alone.compacted_middle
        assert r.messages == alone.messages
        assert r.report == alone.report
    # The same objects each run: what is remembered for them is found again.
    assert all(a is b for a, b in zip(first.compacted_middle, again.compacted_middle, strict=True))


def _reference(m: Message) -> Message:
    """The readable path :func:`without_source_fields` must equal."""
    return dataclasses.replace(
        m,
        parts=tuple(dataclasses.replace(p, extra=EMPTY) for p in m.parts),
        tool_calls=tuple(dataclasses.replace(c, extra=EMPTY) for c in m.tool_calls),
        extra=EMPTY,
    )


def test_without_source_fields() -> None:
    plain = Message(Role.USER, (TextPart("hi"),))
    full = Message(
        Role.ASSISTANT,
        (TextPart("x", extra={"a": 1}),),
        (ToolCall("c1", "shell", "{}", extra={"b": 2}),),
        tool_call_id="c0",
        tool_name="t",
        reasoning="r",
        extra={"line": 3},
        hints={"h": 1},
    )
    # One call (its own path) and several, each with a record only on its calls.
    one = Message(Role.ASSISTANT, (), (ToolCall("c2", "shell", "{}", extra={"b": 2}),))
    bare = ToolCall("c3", "shell", "{}")
    two = dataclasses.replace(one, tool_calls=(bare, *one.tool_calls))
    got = without_source_fields([plain, full, one, two])
    assert got[0] is plain
    assert got[1:] == [_reference(m) for m in (full, one, two)]
    assert got[3].tool_calls[0] is bare
    assert got[1].hints == {"h": 1} and got[1].reasoning == "r"
    # Without its record a message is redacted as its texts alone would be.
    assert redact_messages(got)[0] == got


@pytest.mark.parametrize(
    "name",
    ["claude-code.jsonl", "openai-chat.json", "anthropic-messages.json", "codex-rollout.jsonl"],
)
def test_without_source_fields_equals_the_readable_path(name: str) -> None:
    messages = load(SESSIONS / name).messages
    got = without_source_fields(messages)
    assert got == [_reference(m) for m in messages]
    assert all(not m.extra and not any(p.extra for p in m.parts) for m in got)


def test_compress_without_redaction_keeps_the_records() -> None:
    """``redact=False`` leaves the middle as it was: nothing is dropped or changed."""
    t, _, _ = _secret_transcript()
    opts = dataclasses.replace(FORCED, redact=False)
    r = compress(t, opts, counter=ROUGH, now=10_000.0)
    start, end = r.report.boundary_start, r.report.boundary_end
    assert start is not None and end is not None
    middle = t.messages[start:end]
    undigested = [
        (m, o)
        for m, o in zip(r.compacted_middle, middle, strict=True)
        if m.meta.generated_by is None
    ]
    assert undigested and all(m is o for m, o in undigested)


def test_the_analysis_strips_each_message_once() -> None:
    messages = load(SESSIONS / "claude-code.jsonl").messages
    analysis = TranscriptAnalysis()
    first = analysis.without_source_fields(messages[2:])  # the first run: one pass
    assert first == [_reference(m) for m in messages[2:]]
    # Later runs get the same objects back, and strip only the messages not seen yet.
    again = analysis.without_source_fields(messages)
    assert again == [_reference(m) for m in messages]
    assert all(a is b for a, b in zip(first, again[2:], strict=True))
