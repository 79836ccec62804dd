"""Where ``compress`` puts the middle: protected head, budgeted tail, tool groups,
anchors, manual boundaries.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise

from builders import (
    Conv,
    anthropic_roles,
    openai_dump,
    orphan_calls,
    orphan_results,
)
from pipeline_helpers import (
    LARGE,
    ROUGH,
    SMALL,
    assert_unchanged,
    more_steps,
    parallel_session,
    run,
    session,
    summary_of,
)

from tinyjuice.boundary import BoundaryIndex, is_legal_boundary
from tinyjuice.model import Message, Role, TextPart
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import plan_boundary
from tinyjuice.report import PersistenceRecommendation, Status
from tinyjuice.tokens import count_transcript, message_tokens

# =========================================================================== head


def test_first_compaction_keeps_opening_task_framing() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t)
    first = t.messages[c.at["first"]]
    assert r.messages[0] is t.messages[0]  # system prompt
    assert any(m is first for m in r.messages)
    assert r.report.compaction_count == 1 and r.state.compaction_count == 1


def test_repeated_compaction_does_not_copy_first_request_again() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r1 = run(t)
    first = t.messages[c.at["first"]]
    assert any(m is first for m in r1.messages)
    t2, _ = more_steps(r1.transcript, 100, 6)
    r2 = run(t2, state=r1.state)
    assert r2.report.status is Status.COMPACTED
    assert r2.report.compaction_count == 2
    assert not any(m.is_real_user and m.text == first.text for m in r2.messages)
    # Only the system prompt is protected after the first compaction.
    assert r2.report.boundary_start == 1


def test_system_prompt_survives_compaction_unless_unprotected() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    kept = run(t)
    assert kept.messages[0] is t.messages[0] and kept.messages[0].role is Role.SYSTEM
    dropped = run(t, CompactionOptions(protect_system=False, protect_first_n=0))
    assert dropped.report.status is Status.COMPACTED
    assert dropped.report.boundary_start == 0
    assert not any(m.role is Role.SYSTEM for m in dropped.messages)
    assert dropped.messages[0].role is Role.USER


# =========================================================================== tail


def test_huge_old_tool_result_does_not_bloat_the_tail() -> None:
    c = Conv()
    c.user("dump the whole database table", label="first")
    c.assistant("Dumping.")
    c.user("go")
    c.terminal("psql -c 'select * from events'", lines=4_000, label="huge")
    c.assistant("That is 4,000 rows.")
    for i in range(12):
        c.exchange(f"Question {i} about src/q_{i}.py?", f"Answer {i}: see src/q_{i}.py line {i}.")
    t = c.transcript(context_window=LARGE)
    r = run(t, CompactionOptions(force=True))
    assert r.report.status is Status.COMPACTED
    huge = t.messages[c.at["huge"] + 1]
    assert not any(m is huge for m in r.messages)
    assert r.report.boundary_end > c.at["huge"] + 1
    assert r.report.after_tokens < r.report.before_tokens // 5


def test_forced_short_transcript_still_compacts() -> None:
    c = Conv().exchange("Why does the build fail?", "Let me look.")
    c.user("Run the suite")
    c.terminal("pytest -q", lines=200, exit_code=1)
    c.assistant("One failure in tests/test_app.py.")
    c.exchange("Fix it", "Fixed.")
    t = c.transcript(context_window=LARGE)
    assert len(t.messages) == 9
    auto = run(t)
    assert auto.report.status is Status.BELOW_THRESHOLD
    # Everything fits the tail budget; force falls back to the 3-message floor.
    forced = run(t, CompactionOptions(force=True, protect_first_n=0, protect_last_n=3))
    assert forced.report.status is Status.COMPACTED, forced.report.reason
    assert forced.report.tail_messages == 3
    assert forced.report.middle_messages >= 1
    assert forced.messages[-2:] == t.messages[-2:]
    # Nothing worth compressing: an honest no-op, not an empty rotation.
    tiny = Conv().exchange("a", "b").exchange("c", "d").exchange("e", "f")
    noop = run(tiny.transcript(context_window=LARGE), CompactionOptions(force=True))
    assert noop.report.status is Status.NOOP
    assert noop.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE


def test_compress_is_deterministic() -> None:
    t = session().transcript(context_window=SMALL)
    a, b = run(t), run(t)
    assert a.report == b.report
    assert openai_dump(a.messages) == openai_dump(b.messages)
    p1 = plan_boundary(t, CompactionOptions(), counter=ROUGH)
    p2 = plan_boundary(t, CompactionOptions(), tokens=count_transcript(t, ROUGH))
    assert (
        (p1.start, p1.end) == (p2.start, p2.end) == (a.report.boundary_start, a.report.boundary_end)
    )


def test_tail_selection_is_budget_aware() -> None:
    t = session(10).transcript(context_window=SMALL)
    small = run(t, CompactionOptions(tail_target_ratio=0.10, anchor_latest_assistant=False))
    big = run(t, CompactionOptions(tail_target_ratio=0.60, anchor_latest_assistant=False))
    assert small.report.tail_tokens < big.report.tail_tokens
    assert small.report.tail_messages < big.report.tail_messages
    budget = int(small.report.threshold_tokens * 0.10)
    # The tail holds at most 1.5 × budget unless the 8-message floor needs more.
    floor_tokens = sum(message_tokens(m, ROUGH) for m in t.messages[-8:])
    assert small.report.tail_tokens <= max(int(budget * 1.5), floor_tokens)


# =========================================================================== tool groups


def test_no_orphaned_tool_results_after_compaction() -> None:
    c = parallel_session()
    t = c.transcript(context_window=SMALL)
    for boundary in range(1, len(t.messages)):
        r = run(t, CompactionOptions(boundary=boundary))
        assert not orphan_results(r.messages), boundary
        assert r.report.boundary_end is not None
        assert is_legal_boundary(t.messages, r.report.boundary_end)


def test_no_unanswered_tool_calls_after_compaction() -> None:
    c = parallel_session()
    t = c.transcript(context_window=SMALL)
    for keep in range(0, 8):
        r = run(t, CompactionOptions(keep_last=keep))
        assert not orphan_calls(r.messages), keep
        for m in r.messages:
            assert not (
                m.role is Role.ASSISTANT
                and m.tool_calls
                and not any(
                    x.role is Role.TOOL and x.tool_call_id == m.tool_calls[0].id for x in r.messages
                )
            )


def test_sanitization_after_summary_insertion() -> None:
    # A broken log: an interrupted call in the protected head (never answered) and a
    # stray result in the tail whose call was never logged.
    c = Conv()
    c.user("start", label="first")
    c.in_flight("terminal", {"command": "sleep 100"}, label="interrupted")
    c.user("never mind that; do the steps")
    for i in range(5):
        c.terminal(f"make step{i}", lines=40)
        c.assistant(f"step {i}")
        c.user(f"next {i}")
    c.raw(Message(Role.TOOL, (TextPart("stray output"),), tool_call_id="ghost", tool_name="x"))
    c.assistant("Finished.")
    t = c.transcript(context_window=SMALL)
    strip = run(t, CompactionOptions(protect_first_n=2, force=True))
    assert strip.report.status is Status.COMPACTED
    assert strip.report.sanitizer["stripped_calls"] == 1
    assert strip.report.sanitizer["removed_results"] == 1
    assert not orphan_results(strip.messages) and not orphan_calls(strip.messages)
    summary_of(strip)  # the summary was inserted, and the sanitizer ran on the joined list
    bridge = run(t, CompactionOptions(protect_first_n=2, force=True, orphan_calls="bridge"))
    assert bridge.report.sanitizer["bridged_calls"] == 1
    assert not orphan_results(bridge.messages) and not orphan_calls(bridge.messages)
    stub = [m for m in bridge.messages if m.meta.generated_by == "bridge" and m.role is Role.TOOL]
    assert (
        len(stub) == 1 and stub[0].tool_call_id == t.messages[c.at["interrupted"]].tool_calls[0].id
    )


def test_orphan_call_policy_strip_or_bridge_in_pipeline() -> None:
    c = Conv()
    c.user("go", label="first")
    c.in_flight("terminal", {"command": "make"}, label="orphan")  # interrupted, never answered
    c.user("continue")
    for i in range(6):
        c.terminal(f"make step{i}", lines=60)
        c.exchange(f"q{i}", f"a{i}")
    t = c.transcript(context_window=LARGE)
    call = t.messages[c.at["orphan"]].tool_calls[0]
    opts = CompactionOptions(force=True, protect_first_n=3)
    stripped = run(t, opts)
    assert stripped.report.status is Status.COMPACTED
    assert stripped.report.boundary_start > c.at["orphan"]  # the call is in the kept head
    assert not any(call.id in [x.id for x in m.tool_calls] for m in stripped.messages)
    assert stripped.report.sanitizer["stripped_calls"] == 1
    bridged = run(t, dataclasses.replace(opts, orphan_calls="bridge"))
    assert any(
        m.tool_call_id == call.id and m.meta.generated_by == "bridge" for m in bridged.messages
    )
    assert not orphan_calls(bridged.messages) and not orphan_results(bridged.messages)


# =========================================================================== anchors


def test_most_recent_user_ask_outside_compressed_middle() -> None:
    c = session(4, last_answer=None)
    for i in range(8):  # a long autonomous run after the last ask
        c.terminal(f"pytest tests/test_run_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    last = t.messages[c.at["last"]]
    assert r.report.boundary_end <= c.at["last"]
    assert any(m is last for m in r.messages)
    assert not (r.report.boundary_start <= c.at["last"] < r.report.boundary_end)


def test_last_assistant_answer_outside_compressed_middle() -> None:
    c = session(4)
    c.user("now run the slow suite", label="slow")
    for i in range(8):  # tool-only turns: no visible answer after "slow"
        c.terminal(f"pytest tests/slow_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    answer = t.messages[c.at["last_answer"]]
    anchored = run(t)
    assert anchored.report.boundary_end <= c.at["last_answer"]
    assert any(m is answer for m in anchored.messages)
    # The ask it answered stays with it.
    assert any(m is t.messages[c.at["last"]] for m in anchored.messages)
    loose = run(t, CompactionOptions(anchor_latest_assistant=False))
    assert loose.report.boundary_end > c.at["last_answer"]
    assert not any(m is answer for m in loose.messages)


def test_summary_messages_excluded_from_latest_user_anchor() -> None:
    c = session(4, last_answer=None)
    c.injected("<environment_context>cwd=/work/repo</environment_context>", kind="environment")
    c.agent_summary("## Goal\nAn agent-written summary that must not count as the ask.")
    for i in range(8):
        c.terminal(f"pytest tests/test_run_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    r = run(t)
    assert r.report.boundary_end <= c.at["last"]
    assert any(m is t.messages[c.at["last"]] for m in r.messages)


# =========================================================================== partial


def test_keep_last_2_preserves_last_two_exchanges_verbatim() -> None:
    c = session()
    t = c.transcript(context_window=LARGE)  # manual: works below the threshold
    r = run(t, CompactionOptions(keep_last=2))
    assert r.report.status is Status.COMPACTED
    start = c.at["ask5"]
    assert r.report.boundary_end == start and r.report.boundary_requested == start
    kept = t.messages[start:]
    assert r.messages[len(r.messages) - len(kept) :] == kept
    assert all(a is b for a, b in zip(r.messages[len(r.messages) - len(kept) :], kept, strict=True))
    assert sum(m.is_real_user for m in kept) == 2
    assert "keeping the last 2" in (r.report.snap_reason or "")


def test_partial_rejoin_keeps_role_alternation() -> None:
    t = parallel_session().transcript(context_window=LARGE)
    for keep in range(1, 7):
        r = run(t, CompactionOptions(keep_last=keep))
        assert r.report.status is Status.COMPACTED
        roles = anthropic_roles(r.transcript)
        assert roles[0] == "user"
        assert all(a != b for a, b in pairwise(roles)), (keep, roles)


def test_plan_boundary_preview_counts_and_tokens() -> None:
    t = session().transcript(context_window=SMALL)
    tokens = count_transcript(t, ROUGH)
    index = BoundaryIndex(t.messages)
    plan = plan_boundary(t, CompactionOptions(keep_last=2), tokens, index=index)
    assert plan.head_messages + plan.middle_messages + plan.tail_messages == plan.total_messages
    assert plan.total_messages == len(t.messages)
    assert plan.head_tokens + plan.middle_tokens + plan.tail_tokens == tokens.messages_total
    assert plan.total_tokens == tokens.total
    assert plan.projected_tokens < plan.total_tokens
    assert not plan.no_op
    r = run(t, CompactionOptions(keep_last=2))
    assert (plan.start, plan.end) == (r.report.boundary_start, r.report.boundary_end)
    # Planning never mutates anything.
    assert count_transcript(t, ROUGH) == tokens


def test_explicit_boundary_snaps_and_says_why() -> None:
    c = parallel_session()
    t = c.transcript(context_window=LARGE)
    inside = c.at["par3"] + 2  # between two results of a parallel group
    assert not is_legal_boundary(t.messages, inside)
    r = run(
        t,
        CompactionOptions(boundary=inside, anchor_latest_user=False, anchor_latest_assistant=False),
    )
    assert r.report.status is Status.COMPACTED
    assert r.report.boundary_requested == inside
    assert r.report.boundary_end != inside
    assert is_legal_boundary(t.messages, r.report.boundary_end)
    assert "tool" in (r.report.snap_reason or "").lower()


def test_keep_last_covering_everything_is_noop() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, CompactionOptions(keep_last=50))
    assert r.report.status is Status.NOOP
    assert "nothing to compress" in r.report.reason
    assert_unchanged(r, t)


def test_no_op_reasons_say_which_side_left_nothing() -> None:
    """A policy tail that keeps everything, or reaches the protected head, is said so;
    a chosen boundary inside the head is named as one."""
    from tinyjuice.model import Message, Role, TextPart, Transcript
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import plan_boundary

    msgs = [Message(role=Role.SYSTEM, parts=(TextPart("rules"),))]
    for k in range(6):
        msgs.append(Message(role=Role.USER, parts=(TextPart(f"ask {k}"),)))
        msgs.append(Message(role=Role.ASSISTANT, parts=(TextPart(f"done {k}"),)))
    t = Transcript(messages=tuple(msgs), format="openai")
    budget_plan = plan_boundary(t, CompactionOptions())
    assert budget_plan.no_op
    assert "kept tail" in budget_plan.reason
    assert "the boundary (" not in budget_plan.reason
    chosen = plan_boundary(t, CompactionOptions(boundary=1))
    assert chosen.no_op
    assert chosen.reason.startswith("nothing to compress: the boundary (")


def test_a_keep_last_no_op_gives_its_reason_once_in_the_plan() -> None:
    """The reason a keep-last count leaves nothing is the plan's no-op reason, not also
    its boundary's (every view printing both said it twice)."""
    from tinyjuice.model import Message, Role, TextPart, Transcript
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import plan_boundary

    msgs = (
        Message(role=Role.USER, parts=(TextPart("fix the test"),)),
        Message(role=Role.ASSISTANT, parts=(TextPart("fixed"),)),
    )
    plan = plan_boundary(Transcript(messages=msgs, format="openai"), CompactionOptions(keep_last=2))
    assert plan.no_op and "leaves nothing to compress" in plan.reason
    assert "leaves nothing to compress" not in plan.snap_reason
