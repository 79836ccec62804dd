"""Boundary safety: head, tail, tool-group alignment, anchors, partial split, rejoin, sanitizer."""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import accumulate, pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyjuice.boundary import (
    BRIDGE_RESULT_TEXT,
    BoundaryIndex,
    align_end_backward,
    align_start_forward,
    anchor_tail_start,
    is_legal_boundary,
    latest_real_user_index,
    latest_visible_assistant_index,
    legal_boundaries,
    preview_boundary,
    protected_head_end,
    rejoin,
    sanitize_tool_pairs,
    select_tail_by_budget,
    snap_boundary,
    split_for_partial_compaction,
    tail_floor,
)
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall, Transcript
from tinyjuice.tokens import RoughCounter, count_transcript, message_tokens

# --------------------------------------------------------------------------- builder


class Conv:
    """A small builder for test conversations; ``at[label]`` records message indices."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.at: dict[str, int] = {}
        self._ids = 0

    def _add(self, message: Message, label: str | None) -> Conv:
        self.messages.append(message)
        if label:
            self.at[label] = len(self.messages) - 1
        return self

    def _new_id(self) -> str:
        self._ids += 1
        return f"call_{self._ids}"

    def system(
        self, text: str = "You are a careful coding agent.", label: str | None = None
    ) -> Conv:
        return self._add(Message(Role.SYSTEM, (TextPart(text),)), label)

    def user(
        self,
        text: str = "please continue",
        *,
        injected: bool = False,
        summary: bool = False,
        generated_by: str | None = None,
        label: str | None = None,
    ) -> Conv:
        meta = MessageMeta(
            is_injected=injected,
            injected_kind="agents_md" if injected else None,
            is_summary=summary,
            generated_by=generated_by,
        )
        return self._add(Message(Role.USER, (TextPart(text),), meta=meta), label)

    def assistant(
        self,
        text: str = "done",
        *,
        summary: bool = False,
        generated_by: str | None = None,
        label: str | None = None,
    ) -> Conv:
        parts = (TextPart(text),) if text else ()
        meta = MessageMeta(is_summary=summary, generated_by=generated_by)
        return self._add(Message(Role.ASSISTANT, parts, meta=meta), label)

    def exchange(self, ask: str = "next step?", answer: str = "here it is") -> Conv:
        return self.user(ask).assistant(answer)

    def call(
        self,
        *names: str,
        text: str = "",
        order: Sequence[int] | None = None,
        answered: Sequence[int] | None = None,
        outputs: Sequence[str] | None = None,
        label: str | None = None,
    ) -> Conv:
        """An assistant message with parallel calls, then results in ``order``."""
        ids = [self._new_id() for _ in names]
        calls = tuple(
            ToolCall(id=cid, name=name, arguments='{"path": "src/app.py"}')
            for cid, name in zip(ids, names, strict=True)
        )
        parts = (TextPart(text),) if text else ()
        self._add(Message(Role.ASSISTANT, parts, tool_calls=calls), label)
        for pos in order if order is not None else range(len(names)):
            if answered is not None and pos not in answered:
                continue
            out = outputs[pos] if outputs else f"output of {names[pos]} #{pos}"
            self.messages.append(
                Message(Role.TOOL, (TextPart(out),), tool_call_id=ids[pos], tool_name=names[pos])
            )
        return self

    def split_calls(self, *names: str, label: str | None = None) -> Conv:
        """Claude Code style: one assistant message per parallel call, then the results."""
        ids = [self._new_id() for _ in names]
        for k, (cid, name) in enumerate(zip(ids, names, strict=True)):
            msg = Message(Role.ASSISTANT, tool_calls=(ToolCall(id=cid, name=name),))
            self._add(msg, label if k == 0 else None)
        for cid, name in zip(ids, names, strict=True):
            self.messages.append(
                Message(Role.TOOL, (TextPart("ok"),), tool_call_id=cid, tool_name=name)
            )
        return self

    def raw(self, message: Message, label: str | None = None) -> Conv:
        return self._add(message, label)

    def build(self) -> tuple[Message, ...]:
        return tuple(self.messages)


_COUNTER = RoughCounter()


def toks(messages: Sequence[Message]) -> list[int]:
    return [message_tokens(m, _COUNTER) for m in messages]


def pairing_problems(messages: Sequence[Message]) -> list[str]:
    """Independent check: every result follows its call; every call has a later result."""
    problems: list[str] = []
    for j, m in enumerate(messages):
        if m.role is Role.TOOL and not any(
            c.id == m.tool_call_id for p in messages[:j] for c in p.tool_calls
        ):
            problems.append(f"orphan result at {j}")
        for c in m.tool_calls:
            if not any(r.role is Role.TOOL and r.tool_call_id == c.id for r in messages[j + 1 :]):
                problems.append(f"unanswered call {c.id} at {j}")
    return problems


def seam_clashes(messages: Sequence[Message]) -> list[int]:
    return [
        k
        for k, (a, b) in enumerate(pairwise(messages))
        if a.role is b.role and a.role in (Role.USER, Role.ASSISTANT)
    ]


# --------------------------------------------------------------------------- legality


def test_tool_group_is_never_split_and_tail_never_starts_on_a_result() -> None:
    c = Conv().system().user("fix the bug", label="ask")
    c.call("read_file", "grep", "terminal", order=[2, 0, 1], label="group")
    c.assistant("fixed", label="answer")
    msgs = c.build()
    g = c.at["group"]
    assert legal_boundaries(msgs) == [0, 1, 2, 6, 7]
    for i in range(g + 1, g + 4):
        assert msgs[i].role is Role.TOOL
        assert not is_legal_boundary(msgs, i)
    assert is_legal_boundary(msgs, g) and is_legal_boundary(msgs, g + 4)


def test_calls_split_across_messages_form_one_group() -> None:
    # Claude Code writes each parallel call on its own assistant line.
    c = Conv().user("look around").split_calls("Read", "Grep", "Glob", label="first")
    c.assistant("seen it")
    msgs = c.build()
    first = c.at["first"]
    # Cutting between the call messages would separate call 1 from its result at 4.
    assert [i for i in range(len(msgs) + 1) if is_legal_boundary(msgs, i)] == [0, 1, 7, 8]
    assert align_end_backward(msgs, first + 2) == first
    assert align_start_forward(msgs, first + 2) == first + 6


def test_orphan_result_is_not_a_legal_start_and_ids_bind_to_nearest_call() -> None:
    c = Conv().user("go").assistant("sure")
    c.raw(Message(Role.TOOL, (TextPart("stray"),), tool_call_id="nowhere"), label="orphan")
    c.user("again").call("terminal", label="g1").user("and again").call("terminal", label="g2")
    msgs = c.build()
    idx = BoundaryIndex(msgs)
    assert not idx.is_legal(c.at["orphan"])
    assert idx.is_legal(c.at["orphan"] + 1)
    snap = idx.snap(c.at["orphan"], "backward")
    assert snap.index == c.at["orphan"] - 1
    assert "call is missing" in snap.reason
    # Both groups are legal cut points and nothing in between is merged.
    assert idx.is_legal(c.at["g1"]) and idx.is_legal(c.at["g2"]) and idx.is_legal(c.at["g2"] - 1)


def test_alignment_is_monotonic_and_legal_with_parallel_groups() -> None:
    c = Conv().system().user("task")
    for k in range(6):
        c.call(*(["read_file", "grep", "terminal"][: 1 + k % 3]), order=None)
        c.call("a", "b", "c", order=[1, 2, 0])
        c.assistant(f"step {k}")
        c.split_calls("x", "y")
    msgs = c.build()
    idx = BoundaryIndex(msgs)
    for i in range(-2, len(msgs) + 3):
        fwd = align_start_forward(msgs, i, prepared=idx)
        back = align_end_backward(msgs, i, prepared=idx)
        clamped = min(max(i, 0), len(msgs))
        assert fwd >= clamped and back <= clamped
        assert idx.is_legal(fwd) and idx.is_legal(back)
        assert align_start_forward(msgs, fwd, prepared=idx) == fwd
        assert align_end_backward(msgs, back, prepared=idx) == back
        if 0 <= i <= len(msgs):
            assert (fwd == back == i) == idx.is_legal(i)
            if fwd < len(msgs):
                assert msgs[fwd].role is not Role.TOOL
            if back < len(msgs):
                assert msgs[back].role is not Role.TOOL


def test_snap_reasons_name_why_it_moved() -> None:
    c = Conv().system()
    for k in range(27):
        c.exchange(f"question {k}", f"answer {k}")
    c.call("read_file", "grep", label="group")
    while len(c.messages) < 300:
        c.exchange()
    msgs = c.build()[:300]
    assert c.at["group"] == 55
    back = snap_boundary(msgs, 57, direction="backward")
    assert (back.index, back.requested, back.moved) == (55, 57, True)
    assert back.reason == "moved from 57 to 55 so the tool call at 55 stays with its 2 results"
    fwd = snap_boundary(msgs, 56, direction="forward")
    assert fwd.index == 58 and fwd.reason.startswith("moved from 56 to 58")
    # nearest: 57 is one step from 58 and two from 55; 56 ties-free goes back to 55.
    assert snap_boundary(msgs, 57).index == 58
    assert snap_boundary(msgs, 56).index == 55
    end = snap_boundary(msgs, 10_000)
    assert (end.index, end.reason) == (300, "index beyond the end clamped to 300")
    assert snap_boundary(msgs, -4).index == 0
    ok = snap_boundary(msgs, 40)
    assert (ok.index, ok.moved, ok.reason) == (40, False, "legal as requested")
    with pytest.raises(ValueError):
        snap_boundary(msgs, 3, direction="sideways")


def test_snap_nearest_tie_goes_backward() -> None:
    c = Conv().user("go").call("a", "b", "c", label="g").assistant("ok")
    msgs = c.build()
    g = c.at["g"]  # results at g+1..g+3, next legal at g+4
    assert snap_boundary(msgs, g + 2).index == g  # 2 back vs 2 forward
    assert snap_boundary(msgs, g + 3).index == g + 4


def test_step_moves_by_user_exchanges_and_legal_boundaries() -> None:
    c = Conv().system()
    starts = []
    for k in range(5):
        starts.append(len(c.messages))
        c.user(f"ask {k}").call("terminal", "read_file").assistant(f"answer {k}")
        c.user("AGENTS.md context", injected=True)
    msgs = c.build()
    idx = BoundaryIndex(msgs)
    assert idx.user_indices == starts
    inside = starts[3] + 2  # a tool result of exchange 3
    s = idx.step(inside, -1)
    assert s.index == starts[3] and "back 1 exchange" in s.reason
    assert idx.step(starts[3], -2).index == starts[1]
    assert idx.step(inside, +1).index == starts[4]
    end = idx.step(starts[4], +3)
    assert end.index == len(msgs) and "end of the transcript" in end.reason
    start = idx.step(starts[0], -1)
    assert start.index == 0 and "start of the transcript" in start.reason
    assert idx.step(0, -1).moved is False
    # Legal stepping skips the results of a group.
    legal = idx.legal_indices
    here = starts[2] + 1  # the call message: legal
    nxt = idx.step_legal(here, +1)
    assert nxt.index == legal[legal.index(here) + 1] == here + 3
    assert idx.step_legal(here + 2, -1).index == here
    assert idx.step_legal(len(msgs), +1).moved is False
    assert idx.step_legal(here + 2, 0).index in (here, here + 3)


def test_user_message_inside_a_late_answered_group() -> None:
    # The user spoke while a call was running; its result arrived after the user message.
    c = Conv().user("go", label="u0").call("terminal", answered=[], label="g")
    c.user("also check the docs", label="u1")
    call_id = c.messages[c.at["g"]].tool_calls[0].id
    c.raw(Message(Role.TOOL, (TextPart("exit 0"),), tool_call_id=call_id))
    c.assistant("done", label="answer")
    msgs = c.build()
    idx = BoundaryIndex(msgs)
    assert not idx.is_legal(c.at["u1"])
    into = idx.step(c.at["u0"], +1)
    assert into.index == c.at["g"]
    assert "so the tool call at 1 stays with its 1 result" in into.reason
    past = idx.step(c.at["g"], +1)  # backward snap would not advance: go past the group
    assert past.index == c.at["answer"]
    split = split_for_partial_compaction(msgs, 1)
    assert split.tail_start == c.at["g"] and "moved from 2" in split.reason


@pytest.mark.perf
def test_boundary_index_is_fast_on_100k_messages() -> None:
    c = Conv().system()
    while len(c.messages) < 100_000:
        c.user("ask").call("terminal", "read_file", "grep", order=[2, 0, 1]).assistant("ok")
    msgs = c.build()
    t0 = time.perf_counter()
    idx = BoundaryIndex(msgs)
    build = time.perf_counter() - t0
    assert build < 5.0
    n = len(msgs)
    positions = [(k * 7919) % (n + 1) for k in range(20_000)]
    t0 = time.perf_counter()
    for p in positions:
        idx.snap(p)
        idx.step(p, -1)
        idx.step_legal(p, 1)
    per_call = (time.perf_counter() - t0) / (3 * len(positions))
    assert per_call < 1e-3, f"{per_call * 1e6:.1f} µs per call"
    assert all(idx.is_legal(idx.snap(p).index) for p in positions[:2000])


def test_prepared_index_must_match_the_messages() -> None:
    msgs = Conv().exchange().exchange().build()
    idx = BoundaryIndex(msgs[:2])
    with pytest.raises(ValueError, match="rebuild"):
        snap_boundary(msgs, 1, prepared=idx)


# --------------------------------------------------------------------------- head


def _opening() -> Conv:
    c = Conv().system("You are an agent.")
    c.user("Build a payments API in /srv/pay with FastAPI", label="first_request")
    c.assistant("Plan: scaffold, models, tests.")
    return c


def test_first_compaction_keeps_opening_framing() -> None:
    c = _opening().call("terminal", "read_file").assistant("scaffolded")
    for _ in range(5):
        c.exchange()
    msgs = c.build()
    end = protected_head_end(msgs, compaction_count=0)
    # system + 3 messages; message 3 is a call, so the head grows over its 2 results.
    assert end == 6
    assert c.at["first_request"] < end
    assert msgs[end - 1].role is Role.TOOL and msgs[end].role is Role.ASSISTANT


def test_repeated_compaction_does_not_copy_first_request() -> None:
    c = _opening()
    for _ in range(6):
        c.exchange()
    msgs = c.build()
    assert protected_head_end(msgs, compaction_count=1) == 1
    assert protected_head_end(msgs, compaction_count=2) == 1
    assert c.at["first_request"] >= protected_head_end(msgs, compaction_count=1)
    # Decay can be switched off.
    assert protected_head_end(msgs, compaction_count=3, decay=False) == 4


def test_system_prompt_protected_unless_omitted() -> None:
    c = Conv().system("rules").raw(Message(Role.DEVELOPER, (TextPart("dev rules"),)))
    for _ in range(4):
        c.exchange()
    msgs = c.build()
    assert protected_head_end(msgs, compaction_count=1) == 2
    assert protected_head_end(msgs, compaction_count=1, protect_system=False) == 0
    assert protected_head_end(msgs, compaction_count=0) == 5
    assert protected_head_end(msgs, compaction_count=0, protect_system=False) == 3
    with pytest.raises(ValueError):
        protected_head_end(msgs, protect_first_n=-1)


# --------------------------------------------------------------------------- tail


def _prose(k: int, chars: int = 400) -> str:
    return (f"turn {k}: " + "words " * chars)[:chars]


def test_huge_old_tool_result_does_not_force_all_recent_history() -> None:
    c = Conv().system().exchange("start", "ok").user("read the log")
    c.call("read_file", outputs=["L" * 200_000], label="huge")
    c.assistant("the log is long")
    for k in range(15):
        c.exchange(_prose(k), _prose(k))
    msgs = c.build()
    tokens = toks(msgs)
    huge = c.at["huge"]
    head = protected_head_end(msgs)
    tail = select_tail_by_budget(msgs, tokens, head, 1000, 3)
    assert tail > huge + 1, "the huge result must stay out of the tail"
    assert sum(tokens[tail:]) <= 1500
    assert tail > huge + 3, "not all history after the huge result is kept"
    assert head < tail

    # Recent history that fits: the tail is exactly everything after the huge group.
    short = Conv().system().exchange("start", "ok").user("read the log")
    short.call("read_file", "grep", order=[1, 0], outputs=["L" * 200_000, "x"], label="huge")
    short.assistant("long").exchange("q", "a").exchange("q2", "a2")
    smsgs = short.build()
    stail = select_tail_by_budget(smsgs, toks(smsgs), protected_head_end(smsgs), 1000, 3)
    assert stail == short.at["huge"] + 3
    assert smsgs[stail].role is Role.ASSISTANT


def test_soft_ceiling_lets_one_oversized_message_in_then_stops() -> None:
    c = Conv().system()
    for k in range(10):
        c.exchange(f"q{k}", f"a{k}")
    msgs = c.build()
    tokens = [0] + [100] * 20
    tokens[-5] = 480  # the 5th message from the end is oversized
    # Floor 3 then budget 1000: 400, +480 = 880, +100 = 980 all fit; the next 100 crosses
    # the budget (1080) but stays under the 1.5x ceiling: it is let in and the walk stops.
    assert select_tail_by_budget(msgs, tokens, 1, 1000, 3) == 21 - 7
    assert select_tail_by_budget(msgs, tokens, 1, 1000, 3, soft_ceiling_ratio=1.0) == 21 - 6
    tokens[-5] = 900  # 400 + 900 = 1300: over budget but within 1.5x -> in, then stop
    assert select_tail_by_budget(msgs, tokens, 1, 1000, 3) == 21 - 5
    tokens[-5] = 1200  # 400 + 1200 = 1600 > 1500 -> stop before it
    assert select_tail_by_budget(msgs, tokens, 1, 1000, 3) == 21 - 4
    assert select_tail_by_budget(msgs, tokens, 1, 1000, 3, soft_ceiling_ratio=2.0) == 21 - 5


def test_floor_keeps_recent_messages_even_over_budget() -> None:
    c = Conv().system()
    for k in range(6):
        c.exchange(f"q{k}", f"a{k}")
    msgs = c.build()
    tokens = [0] + [5000] * 12
    assert select_tail_by_budget(msgs, tokens, 1, 100, 3) == 13 - 3
    assert select_tail_by_budget(msgs, tokens, 1, 100, tail_floor(20)) == 13 - 8
    assert tail_floor(2) == 3 and tail_floor(5) == 5 and tail_floor(50) == 8
    with pytest.raises(ValueError, match="one count per message"):
        select_tail_by_budget(msgs, tokens[:-1], 1, 100, 3)


def test_floor_counts_whole_tool_groups() -> None:
    c = Conv().system().exchange().user("go").call("a", "b", "c", "d", label="g")
    msgs = c.build()
    tail = select_tail_by_budget(msgs, [10] * len(msgs), 1, 0, 3)
    assert tail == c.at["g"]


def test_short_transcript_does_not_rotate_into_noop() -> None:
    c = Conv().system().user("fix tests", label="ask").assistant("looking")
    c.call("terminal").assistant("found it").user("ship it", label="last").assistant("done")
    msgs = c.build()
    tokens = toks(msgs)
    head = protected_head_end(msgs, compaction_count=1)
    plain = select_tail_by_budget(msgs, tokens, head, 10_000, 3)
    assert plain == head  # everything fits: no middle
    forced = select_tail_by_budget(msgs, tokens, head, 10_000, 3, force_middle=True)
    assert head < forced < len(msgs)
    assert is_legal_boundary(msgs, forced)
    assert len(msgs) - forced >= 3  # the floor survives
    # A region of one unit cannot be split at all.
    tiny = Conv().system().user("hi").build()
    assert select_tail_by_budget(tiny, toks(tiny), 1, 10, 3, force_middle=True) == 1
    # When the floor is the whole region, the first unit still goes to the middle.
    three = Conv().system().user("a").assistant("b").user("c").build()
    assert select_tail_by_budget(three, toks(three), 1, 10_000, 3, force_middle=True) == 2


def test_boundary_is_deterministic() -> None:
    def build() -> tuple[Message, ...]:
        c = Conv().system().exchange("start", "ok")
        for k in range(30):
            c.user(_prose(k, 120)).call("read_file", "grep", order=[1, 0])
            c.split_calls("Read", "Glob").assistant(_prose(k, 90))
        return c.build()

    first, second = build(), build()
    assert first == second and first is not second
    results = set()
    for msgs in (first, second, first):
        tokens = toks(msgs)
        head = protected_head_end(msgs)
        tail = select_tail_by_budget(msgs, tokens, head, 2000, 3)
        results.add((head, tail, anchor_tail_start(msgs, tail, head_end=head)))
    assert len(results) == 1
    ((head, tail, anchored),) = results
    assert head < tail < len(first) and is_legal_boundary(first, tail)
    assert anchored <= tail and is_legal_boundary(first, anchored)


# --------------------------------------------------------------------------- anchors


def test_tail_selector_anchors_latest_real_user() -> None:
    c = Conv().system().exchange("first", "ok").user("refactor billing.py", label="ask")
    for k in range(12):
        c.call("read_file", "terminal", outputs=[_prose(k, 800), "exit 0"])
    c.user("<system-reminder>todo list</system-reminder>", injected=True)
    c.call("terminal", answered=[])  # in flight
    msgs = c.build()
    tokens = toks(msgs)
    tail = select_tail_by_budget(msgs, tokens, 1, 800, 3)
    assert tail > c.at["ask"]
    anchored = anchor_tail_start(msgs, tail, head_end=1, anchor_assistant=False)
    assert anchored == c.at["ask"]
    # The latest visible answer is the "ok" before the ask; it comes along with its question.
    assert anchor_tail_start(msgs, tail, head_end=1) == c.at["ask"] - 2
    assert latest_real_user_index(msgs) == c.at["ask"]
    assert anchor_tail_start(msgs, tail, anchor_user=False, anchor_assistant=False) == tail
    # Never moves later, and an anchor inside the head is left alone.
    assert anchor_tail_start(msgs, 1) == 1
    assert anchor_tail_start(msgs, tail, head_end=c.at["ask"] + 1) == tail


def test_latest_ask_before_in_flight_group_keeps_the_group() -> None:
    c = Conv().system().exchange().exchange().user("run the suite", label="ask")
    c.call("terminal", "terminal", answered=[1], label="group")
    msgs = c.build()
    tail = select_tail_by_budget(msgs, [50] * len(msgs), 1, 0, 0)
    assert tail == len(msgs)
    anchored = anchor_tail_start(msgs, tail, anchor_assistant=False)
    assert anchored == c.at["ask"]
    assert msgs[anchored + 1] is msgs[c.at["group"]]
    assert msgs[-1].role is Role.TOOL  # the answered half of the group is kept too
    assert anchor_tail_start(msgs, tail) == c.at["ask"] - 2  # the last answer and its ask


def test_tail_selector_anchors_latest_visible_assistant() -> None:
    c = Conv().system().exchange()
    c.user("what does retry() do?", label="question")
    c.user("AGENTS.md: be terse", injected=True)
    c.assistant("It retries with backoff.", label="answer")
    c.user("now make it jittered", label="ask")
    for _ in range(6):
        c.call("read_file", text="")  # tool-call-only assistants: not visible
    c.assistant("", label="empty")
    c.assistant("[summary of earlier work]", summary=True)
    msgs = c.build()
    assert latest_visible_assistant_index(msgs) == c.at["answer"]
    tail = len(msgs) - 2
    only_assistant = anchor_tail_start(msgs, tail, anchor_user=False)
    # The answer and the question it answers (injected context between) stay together.
    assert only_assistant == c.at["question"]
    assert anchor_tail_start(msgs, tail, anchor_assistant=False) == c.at["ask"]
    both = anchor_tail_start(msgs, tail)
    assert both == c.at["question"] <= c.at["answer"]
    # Without a preceding real user the anchor is the answer itself.
    d = Conv().system().assistant("hello, I am ready", label="answer").user("go", label="ask")
    d.call("terminal")
    dm = d.build()
    assert anchor_tail_start(dm, len(dm), anchor_user=False) == d.at["answer"]


def test_summary_metadata_excluded_from_latest_user_search() -> None:
    c = Conv().system().user("the real ask", label="ask").assistant("on it")
    c.user("[CONTEXT COMPACTION — REFERENCE ONLY] ...", summary=True)
    c.user("Environment: linux", injected=True)
    c.user("[Earlier turns were compacted]", generated_by="bridge")
    c.assistant("[CONTEXT COMPACTION] summary", summary=True)
    c.assistant("", generated_by=None)
    msgs = c.build()
    assert latest_real_user_index(msgs) == c.at["ask"]
    assert latest_visible_assistant_index(msgs) == c.at["ask"] + 1
    assert anchor_tail_start(msgs, len(msgs) - 1) == c.at["ask"]
    assert latest_real_user_index(Conv().user("s", summary=True).build()) is None


# --------------------------------------------------------------------------- partial


def _five_exchanges() -> Conv:
    c = Conv().system().user("AGENTS.md", injected=True)
    for k in range(5):
        c.user(f"ask {k}", label=f"u{k}")
        c.user("reminder", injected=True)
        c.call("terminal", "read_file", order=[1, 0])
        c.assistant(f"answer {k}")
    return c


def test_partial_split_keeps_last_n_user_exchanges() -> None:
    c = _five_exchanges()
    msgs = c.build()
    split = split_for_partial_compaction(msgs, 2)
    assert not split.no_op and not split.full
    assert (split.start, split.tail_start) == (1, c.at["u3"])
    assert (split.exchanges_kept, split.exchanges_total) == (2, 5)
    assert msgs[split.tail_start].role is Role.USER
    # Full flow: compress the head through a summary, rejoin the verbatim tail.
    summary = Message(
        Role.USER, (TextPart("summary of asks 0-2"),), meta=MessageMeta(is_summary=True)
    )
    out = rejoin(msgs[: split.start], [summary], msgs[split.tail_start :])
    kept = msgs[split.tail_start :]
    assert len(kept) == 12
    assert all(a is b for a, b in zip(out[-len(kept) :], kept, strict=True))
    asks = [m.text for m in out if m.role is Role.USER and not m.meta.is_injected]
    assert asks[-2:] == ["ask 3", "ask 4"] and "ask 2" not in asks
    assert split_for_partial_compaction(msgs, 1).tail_start == c.at["u4"]
    assert split_for_partial_compaction(msgs, 4).tail_start == c.at["u1"]


def test_partial_split_without_a_head_is_noop_or_full() -> None:
    msgs = _five_exchanges().build()
    noop = split_for_partial_compaction(msgs, 5)
    assert noop.no_op and not noop.full and "5 user exchanges" in noop.reason
    full = split_for_partial_compaction(msgs, 9, allow_full=True)
    assert full.full and not full.no_op and "full compression" in full.reason
    nobody = Conv().system().assistant("hi").build()
    assert split_for_partial_compaction(nobody, 1).no_op
    zero = split_for_partial_compaction(msgs, 0)
    assert (zero.no_op, zero.tail_start, zero.start) == (False, len(msgs), 1)
    with pytest.raises(ValueError):
        split_for_partial_compaction(msgs, -1)


def _summary(role: Role) -> Message:
    return Message(role, (TextPart("SUMMARY"),), meta=MessageMeta(is_summary=True))


@pytest.mark.parametrize("head_last", [None, Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL])
@pytest.mark.parametrize("tail_first", [None, Role.USER, Role.ASSISTANT])
@pytest.mark.parametrize("summary_role", [Role.USER, Role.ASSISTANT])
def test_partial_rejoin_avoids_same_role_adjacency(
    head_last: Role | None, tail_first: Role | None, summary_role: Role
) -> None:
    head = [Message(Role.SYSTEM, (TextPart("sys"),))]
    if head_last is Role.TOOL:
        head += Conv().user("go").call("terminal").build()
    elif head_last in (Role.USER, Role.ASSISTANT):
        head += [Message(Role.USER, (TextPart("u"),)), Message(Role.ASSISTANT, (TextPart("a"),))]
        if head_last is Role.USER:
            head.append(Message(Role.USER, (TextPart("u2"),)))
    elif head_last is None:
        head = []
    tail = [] if tail_first is None else [Message(tail_first, (TextPart("t0"),))]
    tail += [Message(Role.ASSISTANT, (TextPart("t1"),))]
    summary = _summary(summary_role)
    out = rejoin(head, [summary], tail)
    assert out[: len(head)] == head
    assert all(a is b for a, b in zip(out[-len(tail) :], tail, strict=True))
    seam = out[max(len(head) - 1, 0) : len(out) - len(tail) + 1]
    assert seam_clashes(seam) == []
    middle = out[len(head) : len(out) - len(tail)]
    assert sum(m.meta.is_summary for m in middle) == 1
    assert all(m.meta.generated_by == "bridge" for m in middle if not m.meta.is_summary)
    assert len(middle) <= 2
    if not any(m.role is not Role.SYSTEM for m in head):
        assert middle[0].role is Role.USER  # providers want a user turn first
    # The summary keeps its own role whenever that alone avoids a seam.
    before = head[-1].role if any(m.role is not Role.SYSTEM for m in head) else Role.ASSISTANT
    after = tail[0].role
    if before is not summary_role and after is not summary_role:
        assert middle == [summary]
    # When some role fits both neighbours no bridge is needed.
    if {before, after} != {Role.USER, Role.ASSISTANT}:
        assert len(middle) == 1 and middle[0].text == "SUMMARY"


def test_rejoin_merge_policy_folds_summary_into_head() -> None:
    head = [Message(Role.SYSTEM, (TextPart("sys"),)), Message(Role.USER, (TextPart("task"),))]
    tail = [Message(Role.ASSISTANT, (TextPart("reply"),)), Message(Role.USER, (TextPart("next"),))]
    bridged = rejoin(head, [_summary(Role.USER)], tail)
    assert [m.role for m in bridged] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
    ]
    assert bridged[2].meta.generated_by == "bridge"
    merged = rejoin(head, [_summary(Role.USER)], tail, on_conflict="merge")
    assert [m.role for m in merged] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    assert merged[1].text == "task\nSUMMARY"
    assert merged[2] is tail[0]
    # A seam without inserted messages gets a bridge too.
    plain = rejoin(head, [], [Message(Role.USER, (TextPart("again"),))])
    assert seam_clashes(plain) == [] and plain[2].meta.generated_by == "bridge"


def test_preview_includes_head_tail_total_and_tokens() -> None:
    c = _five_exchanges()
    msgs = c.build()
    tokens = toks(msgs)
    prefix = [0, *accumulate(tokens)]
    split = split_for_partial_compaction(msgs, 2)
    p = preview_boundary(prefix, split.start, split.tail_start)
    assert (p.head_messages, p.middle_messages, p.tail_messages) == (1, c.at["u3"] - 1, 12)
    assert p.total_messages == len(msgs)
    assert p.head_tokens == tokens[0]
    assert p.tail_tokens == sum(tokens[c.at["u3"] :])
    assert p.middle_tokens == sum(tokens[1 : c.at["u3"]])
    assert p.total_tokens == sum(tokens) == p.head_tokens + p.middle_tokens + p.tail_tokens
    counted = count_transcript(Transcript(messages=msgs, format="openai"), _COUNTER)
    assert preview_boundary(counted, split.start, split.tail_start) == p
    with pytest.raises(ValueError):
        preview_boundary(prefix, 5, 2)
    with pytest.raises(ValueError):
        preview_boundary(prefix, 0, len(msgs) + 1)


# --------------------------------------------------------------------------- sanitizer


def test_tool_result_without_retained_call_is_removed() -> None:
    c = Conv().user("go").call("read_file", "grep", label="g").assistant("ok")
    msgs = list(c.build())
    g = c.at["g"]
    # The middle swallowed the call; its results survived into the tail.
    cut = [msgs[0], *msgs[g + 1 :]]
    cut.append(Message(Role.TOOL, (TextPart("no id"),)))
    res = sanitize_tool_pairs(cut)
    assert res.removed_results == 3
    assert [m.role for m in res.messages] == [Role.USER, Role.ASSISTANT]
    assert pairing_problems(res.messages) == []
    # A duplicate result for an already answered call is removed as well.
    dup = [*msgs[: g + 2], msgs[g + 1], *msgs[g + 2 :]]
    assert sanitize_tool_pairs(dup).removed_results == 1


def test_tool_call_without_retained_result_is_stripped_or_bridged() -> None:
    c = Conv().user("go").call("read_file", "grep", "terminal", text="checking", label="g")
    c.call("terminal", label="lonely").assistant("done")
    msgs = list(c.build())
    g, lonely = c.at["g"], c.at["lonely"]
    # Keep only the grep result of the parallel group and no result for the lonely call.
    cut = [msgs[0], msgs[g], msgs[g + 2], msgs[lonely], msgs[-1]]
    stripped = sanitize_tool_pairs(cut, orphan_calls="strip")
    assert (stripped.stripped_calls, stripped.dropped_messages, stripped.bridged_calls) == (3, 1, 0)
    kept_call = stripped.messages[1]
    assert [tc.name for tc in kept_call.tool_calls] == ["grep"] and kept_call.text == "checking"
    assert len(stripped.messages) == 4  # the call-only message vanished
    assert pairing_problems(stripped.messages) == []

    bridged = sanitize_tool_pairs(cut, orphan_calls="bridge")
    assert (bridged.bridged_calls, bridged.stripped_calls, bridged.dropped_messages) == (3, 0, 0)
    assert pairing_problems(bridged.messages) == []
    stubs = [m for m in bridged.messages if m.meta.generated_by == "bridge"]
    assert [m.text for m in stubs] == [BRIDGE_RESULT_TEXT] * 3
    assert [m.tool_name for m in stubs] == ["read_file", "terminal", "terminal"]
    roles = [m.role for m in bridged.messages]
    # Stubs follow the kept result of their own message; the assistant reply stays last.
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    assert roles == [u, a, t, t, t, a, t, a]
    assert bridged.messages[2] is msgs[g + 2]  # the real grep result comes first
    with pytest.raises(ValueError):
        sanitize_tool_pairs(cut, orphan_calls="ignore")


def test_sanitize_can_keep_the_in_flight_group() -> None:
    msgs = Conv().user("go").call("terminal", "grep", answered=[1]).build()
    held = sanitize_tool_pairs(msgs, keep_in_flight=True)
    assert held.messages == msgs and held.kept_in_flight == 1
    assert sanitize_tool_pairs(msgs).stripped_calls == 1


# --------------------------------------------------------------------------- properties


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Message, ...]:
    c = Conv()
    if draw(st.booleans()):
        c.system()
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "split", "summary", "injected"]))
        if kind == "user":
            c.user("ask")
        elif kind == "assistant":
            c.assistant(draw(st.sampled_from(["answer", ""])))
        elif kind == "tools":
            k = draw(st.integers(0, 3))
            names = ["read_file", "grep", "terminal"][:k]
            if not names:
                c.assistant("thinking aloud")
                continue
            order = draw(st.permutations(range(k)))
            c.call(*names, text=draw(st.sampled_from(["", "let me look"])), order=order)
        elif kind == "split":
            c.split_calls(*["Read", "Grep", "Glob"][: draw(st.integers(1, 3))])
        elif kind == "summary":
            role = draw(st.sampled_from([Role.USER, Role.ASSISTANT]))
            c.raw(_summary(role))
        else:
            c.user("context", injected=True)
    return c.build()


def _oracle_legal(msgs: Sequence[Message], i: int) -> bool:
    n = len(msgs)
    if i in (0, n):
        return True
    if msgs[i].role is Role.TOOL:
        return False
    for j in range(i, n):
        if msgs[j].role is Role.TOOL:
            callers = [
                k
                for k in range(j)
                if any(tc.id == msgs[j].tool_call_id for tc in msgs[k].tool_calls)
            ]
            if callers and callers[-1] < i:
                return False
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.data())
def test_boundary_properties(msgs: tuple[Message, ...], data: st.DataObject) -> None:
    n = len(msgs)
    idx = BoundaryIndex(msgs)
    assert [i for i in range(n + 1) if idx.is_legal(i)] == [
        i for i in range(n + 1) if _oracle_legal(msgs, i)
    ]

    index = data.draw(st.integers(-3, n + 3))
    direction = data.draw(st.sampled_from(["nearest", "backward", "forward"]))
    snap = idx.snap(index, direction)
    assert idx.is_legal(snap.index)
    assert idx.snap(snap.index, direction).moved is False
    assert snap.moved == (snap.index != index)
    if 0 <= index <= n:
        if direction == "backward":
            assert snap.index <= index
        elif direction == "forward":
            assert snap.index >= index
    step = idx.step(index, data.draw(st.integers(-3, 3)))
    assert idx.is_legal(step.index)

    # Drop an arbitrary (possibly illegal) middle, then sanitize: no orphans either way.
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    cut = [*msgs[:a], *msgs[b:]]
    for policy in ("strip", "bridge"):
        res = sanitize_tool_pairs(cut, orphan_calls=policy)
        assert pairing_problems(res.messages) == []
        assert sanitize_tool_pairs(res.messages).messages == res.messages
        kept = len(cut) - res.removed_results - res.dropped_messages + res.bridged_calls
        assert len(res.messages) == kept

    # Rejoin around a legal boundary: no same-role seam, head and tail untouched.
    legal = idx.legal_indices
    start = data.draw(st.sampled_from(legal))
    end = data.draw(st.sampled_from([i for i in legal if i >= start]))
    inserted = data.draw(
        st.lists(st.sampled_from([Role.USER, Role.ASSISTANT]), max_size=2).map(
            lambda roles: [_summary(r) for r in roles]
        )
    )
    head, tail = list(msgs[:start]), list(msgs[end:])
    out = rejoin(head, inserted, tail)
    assert out[:start] == head
    assert all(x is y for x, y in zip(out[len(out) - len(tail) :], tail, strict=True))
    seam = out[max(start - 1, 0) : len(out) - len(tail) + 1]
    assert seam_clashes(seam) == []
    if inserted and not any(m.role is not Role.SYSTEM for m in head):
        assert out[start].role is Role.USER
