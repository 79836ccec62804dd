"""Users' complaints about compaction (docs/policies.md) as scenarios, the rules profile,
and invariants of ``compress``.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise

import orjson
import pytest
from builders import (
    Conv,
    FakeProvider,
    anthropic_roles,
    coding_session,
    openai_dump,
    orphan_calls,
    orphan_results,
)
from pipeline_helpers import (
    NOW,
    ROUGH,
    SMALL,
    assert_unchanged,
    big_write,
    early,
    more_steps,
    parallel_session,
    run,
    session,
    summary_of,
)

from tinyjuice.budget import record_reading
from tinyjuice.formats import dumps
from tinyjuice.model import Role, Usage
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import plan_boundary
from tinyjuice.report import Status
from tinyjuice.summary import (
    END_MARKER,
    FailureClass,
)
from tinyjuice.tokens import RoughCounter, count_transcript

# =========================================================================== POLICIES scenarios


def test_scenario_529_summary_failure_never_drops_middle_silently() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider([FailureClass.SERVER]))  # HTTP 529 overloaded
    rep = r.report
    # Either nothing changed, or the middle was replaced by a fallback that says so.
    assert rep.status is Status.COMPACTED
    assert rep.dropped and rep.failure_class == "server" and rep.summary_kind.value == "fallback"
    assert rep.warnings and "server" in rep.warnings[0]
    s = summary_of(r).text
    middle = t.messages[rep.boundary_start : rep.boundary_end]
    for m in middle:
        if m.is_real_user:
            assert m.text in s
    strict = run(
        t, CompactionOptions(abort_on_summary_failure=True), FakeProvider([FailureClass.SERVER])
    )
    assert strict.report.status is Status.ABORTED
    assert_unchanged(strict, t)


def test_scenario_compaction_loop_with_heavy_tool_schemas_backs_off() -> None:
    tools = [
        {"type": "function", "function": {"name": f"t{k}", "description": "d" * 2_000}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    state = None
    statuses = []
    for _ in range(4):
        r = run(t, state=state)
        statuses.append(r.report.status)
        state = r.state
        if r.changed:
            t, _ = more_steps(r.transcript, 300 + len(statuses) * 10, 2)
    assert statuses[:2] == [Status.COMPACTED, Status.COMPACTED]
    assert statuses[2:] == [Status.BACKED_OFF, Status.BACKED_OFF]
    assert state.auto_blocked


def test_scenario_measured_reading_still_over_threshold_backs_off() -> None:
    # The estimate says compaction worked; the provider keeps measuring over the threshold.
    c = session()
    state = None
    t = c.transcript(context_window=SMALL)
    statuses = []
    for k in range(4):
        r = run(t, CompactionOptions(force=False), state=state)
        statuses.append(r.report.status)
        state = r.state
        base = r.transcript if r.changed else t
        grown, gc = more_steps(base, 400 + 10 * k, 6)
        t = dataclasses.replace(
            grown, usage=(Usage(input_tokens=7_500, message_index=len(gc.messages) - 1),)
        )
    assert statuses[0] is Status.COMPACTED
    assert Status.BACKED_OFF in statuses
    assert state.auto_blocked or state.low_savings_backoff
    # A reading below the threshold lifts the block.
    cleared = record_reading(state, 1_000, plan_boundary(t, counter=ROUGH).budget)
    assert not cleared.auto_blocked


def test_scenario_threshold_is_visible_in_report() -> None:
    t = session().transcript(context_window=SMALL)
    d = run(t).report.to_dict()
    b = d["budget"]
    assert b["context_window"] == SMALL and b["context_window_source"] == "transcript"
    assert b["threshold_tokens"] == 6_800 and b["threshold_rule"] == "small_window"
    assert b["effective_window"] == SMALL
    unknown = run(session().transcript()).report
    assert unknown.context_window_source == "default"


def test_scenario_latest_user_message_and_in_flight_call_survive() -> None:
    c = session(last_answer=None)
    c.in_flight("terminal", {"command": "make release"}, label="inflight")
    t = c.transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(),
        CompactionOptions(force=True),
        CompactionOptions(keep_last=1),
    ):
        r = run(t, opts)
        assert r.report.status is Status.COMPACTED
        assert r.messages[-1] is t.messages[-1]
        assert r.messages[-1].tool_calls[0].arguments == '{"command":"make release"}'
        assert r.messages[-2] is t.messages[c.at["last"]]
    for profile in (Profile.HERMES, Profile.RULES):
        r = run(t, CompactionOptions(profile=profile, force=True))
        assert r.messages[-1] is t.messages[-1], profile


def test_scenario_stale_task_in_summary_is_marked_historical() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider(["## Historical Pending Asks\n- Drop the users table."]))
    s = summary_of(r)
    assert "REFERENCE ONLY" in s.text and END_MARKER in s.text
    assert s.meta.is_summary and not s.is_real_user
    i = r.messages.index(s)
    assert any(m.is_real_user for m in r.messages[i + 1 :])


def test_scenario_report_says_what_was_dropped() -> None:
    t = session(8).transcript(context_window=SMALL)
    r = run(t, CompactionOptions(include_preview=True))
    d = r.report.to_dict()
    assert d["failure"]["dropped"] is True
    assert d["zones"]["middle"]["messages"] > 0
    assert d["digests"]["count"] == len(d["digests"]["items"]) > 0
    assert {s["step"] for s in d["steps"]} >= {"prune", "summary"}
    assert "archive" in d["recoverable"]
    assert d["preview"]["summary"] == summary_of(r).text
    # The original stays untouched in memory: the undo path.
    assert t.messages == session(8).transcript(context_window=SMALL).messages


def test_scenario_compacted_history_starts_with_user_for_anthropic() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r1 = run(t)
    t2, _ = more_steps(r1.transcript, 100, 6)
    r2 = run(t2, state=r1.state)  # the head has decayed to the system prompt only
    r3 = run(t, CompactionOptions(protect_system=False, protect_first_n=0))
    r4 = run(t, CompactionOptions(profile=Profile.RULES, force=True))
    for r in (r1, r2, r3, r4):
        assert r.report.status is Status.COMPACTED
        roles = anthropic_roles(r.transcript)
        assert roles[0] == "user", roles
        assert all(a != b for a, b in pairwise(roles)), roles


def test_scenario_no_orphaned_tool_results() -> None:
    c = parallel_session()
    t = c.transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(),
        CompactionOptions(profile=Profile.RULES, force=True),
        CompactionOptions(keep_last=3),
        CompactionOptions(boundary=c.at["par2"] + 1),
    ):
        r = run(t, opts)
        assert not orphan_results(r.messages) and not orphan_calls(r.messages)
        raw = orjson.loads(dumps(r.transcript, "anthropic"))
        used = {
            b["id"]
            for m in raw["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }
        results = {
            b["tool_use_id"]
            for m in raw["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        assert results <= used and used <= results


def test_scenario_no_truncated_argument_json() -> None:
    def setup(c: Conv) -> None:
        big_write("src/huge.py", '{"nested": "json inside a string"}\n' * 1_000)(c)
        c.user("apply")
        c.call("apply_patch", {"patch": "*** Begin Patch\n" + "+line\n" * 2_000}, "ok")
        c.assistant("applied")

    t = early(setup, then=setup).transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(force=True),
        CompactionOptions(profile=Profile.RULES, force=True),
        CompactionOptions(keep_last=1),
    ):
        r = run(t, opts)
        assert r.report.status is Status.COMPACTED
        for m in r.messages:
            for call in m.tool_calls:
                json.loads(call.arguments)
        raw = orjson.loads(dumps(r.transcript, "openai"))
        for m in raw if isinstance(raw, list) else raw["messages"]:
            for call in m.get("tool_calls") or ():
                json.loads(call["function"]["arguments"])


def test_rules_profile_compacts_without_summary() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t, CompactionOptions(profile=Profile.RULES))
    rep = r.report
    assert rep.status is Status.COMPACTED and rep.profile is Profile.RULES
    assert rep.summary_kind.value == "none" and rep.dropped is False
    assert rep.rules_applied and rep.after_tokens < rep.before_tokens
    assert not any(m.meta.is_summary for m in r.messages)
    # Rule 5: every user message is the same object.
    originals = [m for m in t.messages if m.role is Role.USER]
    assert [m for m in r.messages if m.role is Role.USER] == originals
    assert all(any(m is o for m in r.messages) for o in originals)


def test_rules_profile_threshold_is_60_percent() -> None:
    c = session()
    est = count_transcript(c.transcript(), ROUGH).total
    window = int(
        est / 0.65
    )  # 65% full: over the rules trigger, under Hermes' 0.85 small-window rule
    t = c.transcript(context_window=window)
    assert run(t, CompactionOptions(profile=Profile.RULES)).report.threshold_tokens == int(
        window * 0.6
    )
    assert run(t, CompactionOptions(profile=Profile.RULES)).report.status is Status.COMPACTED
    assert run(t).report.status is Status.BELOW_THRESHOLD
    custom = CompactionOptions(
        profile=Profile.RULES, rules={"compaction": {"trigger_threshold": 0.9}}
    )
    assert run(t, custom).report.status is Status.BELOW_THRESHOLD


def test_tokens_for_a_different_transcript_are_rejected() -> None:
    t = session().transcript(context_window=SMALL)
    other = count_transcript(session(2).transcript(), ROUGH)
    with pytest.raises(ValueError, match="different transcript"):
        run(t, tokens=other)


def test_input_transcript_is_never_modified() -> None:
    t = session().transcript(context_window=SMALL)
    snapshot = openai_dump(t.messages)
    ids = [id(m) for m in t.messages]
    for opts in (
        CompactionOptions(),
        CompactionOptions(profile=Profile.RULES),
        CompactionOptions(keep_last=1),
    ):
        run(t, opts)
    assert openai_dump(t.messages) == snapshot and [id(m) for m in t.messages] == ids


def test_compaction_event_recorded() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t)
    (event,) = r.transcript.compactions
    s = summary_of(r)
    assert r.messages[event.summary_index] is s
    assert event.pre_tokens == r.report.before_tokens and event.post_tokens == r.report.after_tokens
    assert r.transcript.usage == ()  # old usage readings no longer describe the prompt
    t2, _ = more_steps(r.transcript, 100, 6)
    r2 = run(t2, state=r.state)
    assert len(r2.transcript.compactions) >= 1
    for e in r2.transcript.compactions:
        if e.summary_index is not None:
            assert r2.messages[e.summary_index].meta.is_summary


def test_transient_failure_with_fallback_keeps_the_provider_cooldown() -> None:
    t = session().transcript()
    result = run(t, CompactionOptions(keep_last=1), FakeProvider([FailureClass.RATE_LIMIT]))
    assert result.report.status.value == "compacted"
    assert result.report.summary_kind.value == "fallback"
    assert result.report.failure_class == "rate_limit"
    assert result.state.cooldown_until is not None and result.state.cooldown_until > NOW


def test_summary_event_points_at_the_inserted_summary() -> None:
    t = session().transcript()
    result = run(t, CompactionOptions(keep_last=1))
    event = result.transcript.compactions[-1]
    inserted = result.transcript.messages[event.summary_index]
    assert inserted.meta.is_summary and inserted.meta.generated_by == "summary"
    assert result.summary_message is inserted


def test_an_anchored_boundary_says_only_that_it_moved() -> None:

    from tinyjuice.pipeline import plan_boundary
    from tinyjuice.tokens import count_transcript

    t = coding_session(4).transcript()
    last = len(t.messages) - 1  # legal, but it would put the latest ask in the summary
    plan = plan_boundary(
        t, CompactionOptions(boundary=last, force=True), count_transcript(t, RoughCounter())
    )
    assert plan.end < last
    assert "moved back" in plan.snap_reason
    assert "as requested" not in plan.snap_reason
