"""What the report says: cache hints, the context breakdown, trajectory metrics.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

import json

from builders import (
    Conv,
    FakeProvider,
    openai_dump,
)
from pipeline_helpers import (
    LARGE,
    ROUGH,
    SMALL,
    run,
    session,
    tail_of,
)

from tinyjuice.options import CompactionOptions
from tinyjuice.report import Status
from tinyjuice.tokens import count_transcript, message_tokens

# =========================================================================== cache


def _tools() -> list[dict]:
    return [
        {"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
    ]


def test_cache_hints_reported_separately() -> None:
    t = session().transcript(context_window=SMALL, tools=_tools())
    r = run(t)
    rep = r.report
    assert rep.cache_hints and rep.cache_key and rep.cache_key.startswith("tjpfx_")
    assert not any("cache" in s.step for s in rep.steps)
    d = rep.to_dict()
    assert d["cache"]["hints"] and "cache" not in {s["step"] for s in d["steps"]}
    # Hints are reported, never written into the messages.
    assert b"cache_control" not in openai_dump(r.messages)
    for hint in rep.cache_hints:
        i = hint["message_index"]
        assert i is None or 0 <= i < len(r.messages)


def test_report_cache_key_ignores_tool_order() -> None:
    a = run(session().transcript(context_window=SMALL, tools=_tools()))
    b = run(session().transcript(context_window=SMALL, tools=list(reversed(_tools()))))
    assert a.report.cache_key == b.report.cache_key
    c = run(
        session(system="A different system prompt.").transcript(
            context_window=SMALL, tools=_tools()
        )
    )
    assert c.report.cache_key != a.report.cache_key


def test_report_cache_key_ignores_session_id() -> None:
    a = run(session().transcript(context_window=SMALL, session_id="run-2026-07-04T10:00:00"))
    b = run(session().transcript(context_window=SMALL, session_id="run-2026-07-05T11:30:00"))
    assert a.report.cache_key == b.report.cache_key


def test_retained_prefix_is_byte_identical_for_splicing() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t)
    start = r.report.boundary_start
    assert all(a is b for a, b in zip(r.messages[:start], t.messages[:start], strict=True))
    tail_of(r, t)
    # Only the retained tail after the new summary goes cache-cold.
    assert r.report.cache_cold_tokens == r.report.tail_tokens


# =========================================================================== breakdown


def test_report_separates_static_schema_cost_from_savings() -> None:
    tools = [
        {"type": "function", "function": {"name": f"tool_{k}", "description": "d" * 400}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    tokens = count_transcript(t, ROUGH)
    assert tokens.tools > 1_000
    r = run(t, CompactionOptions(force=True))
    rep = r.report
    static = tokens.system_prompt + tokens.tools
    assert rep.head_tokens + rep.middle_tokens + rep.tail_tokens + static == rep.before_tokens
    assert rep.after_tokens == static + sum(message_tokens(m, ROUGH) for m in r.messages)
    # The savings come from the conversation only; the schemas cost the same after.
    assert rep.tokens_saved <= rep.middle_tokens


def test_report_explains_trigger_without_raw_text() -> None:
    c = Conv()
    c.user("SECRET-PLAN-ALPHA is the codename")
    c.assistant("ok")
    t = c.transcript(context_window=LARGE)
    d = run(t).report.to_dict()
    dumped = json.dumps(d)
    assert "SECRET-PLAN-ALPHA" not in dumped
    assert d["status"] == "below_threshold"
    assert str(d["budget"]["threshold_tokens"]) in d["reason"].replace(",", "")
    assert d["budget"]["threshold_rule"] in ("ratio", "floor", "small_window")
    assert d["prompt_tokens"]["kind"] == "estimated"


# =========================================================================== trajectory


def test_stub_provider_compaction_is_reproducible() -> None:
    t = session().transcript(context_window=SMALL)
    a = run(t, provider=FakeProvider(["## Goal\nStub."]))
    b = run(t, provider=FakeProvider(["## Goal\nStub."]))
    assert a.report.to_dict() == b.report.to_dict()
    assert openai_dump(a.messages) == openai_dump(b.messages)
    assert a.state == b.state


def test_metrics_distinguish_below_threshold_from_failed_to_fit() -> None:
    skipped = run(session(2).transcript(context_window=LARGE))
    assert skipped.report.status is Status.BELOW_THRESHOLD
    # Schemas alone exceed the threshold: compaction runs but cannot fit.
    tools = [
        {"type": "function", "function": {"name": f"t{k}", "description": "d" * 2_000}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    assert r.report.after_tokens >= r.report.threshold_tokens
    assert any("still over the threshold" in w for w in r.report.warnings)
    assert r.state.strikes == 1
    assert not any(
        "still over" in w for w in run(session().transcript(context_window=SMALL)).report.warnings
    )
